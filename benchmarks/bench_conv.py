"""Convolutional network run time, revax vs JAX, one library per process.

Run: python benchmarks/bench_conv.py [--quick]

Measures the steady-state run time of
  - a jitted training step of a small CNN on MNIST-shaped data (batch 64, 28x28x1, NHWC):
    conv 3x3 (32) -> relu -> conv 3x3 stride 2 (64) -> relu -> global mean pool -> dense 10 ->
    log_softmax cross-entropy; gradient; SGD update. Each library runs its own nn.relu,
    nn.log_softmax and nn.one_hot, so the activations are measured too;
  - jitted per-example gradients (vmap of grad) of the same network on 16 examples, where the
    convolution's batching rule folds the mapped axis into the convolution's feature groups.
Each library runs in its own child processes (processes.py, `time_apart`: pairs alternating
which library goes first; a ratio is the median of the per-pair ratios); in revax's child,
revax's compiled program also runs directly on the runtime in the same interleaved rounds as
revax.jit (`timing.revax_program_directly`).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from processes import jitted_child_calls, time_apart
from timing import describe, row

os.environ.setdefault("JAX_PLATFORMS", "cpu")

BATCH, SIZE, CLASSES = 64, 28, 10
PER_EXAMPLE_BATCH = 16
DIMS = ("NHWC", "HWIO", "NHWC")


def cnn_params():
  rng = np.random.default_rng(0)
  he = lambda shape, fan_in: (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(
      np.float32)
  return {"conv1": (he((3, 3, 1, 32), 9), np.zeros(32, np.float32)),
          "conv2": (he((3, 3, 32, 64), 9 * 32), np.zeros(64, np.float32)),
          "dense": (he((64, CLASSES), 64), np.zeros(CLASSES, np.float32))}


def cnn_loss(lib, np_mod):
  """Mean softmax cross-entropy of the CNN on a batch (images NHWC, integer labels)."""
  def loss(params, images, labels):
    w, b = params["conv1"]
    x = lib.nn.relu(lib.lax.conv_general_dilated(images, w, (1, 1), "SAME",
                                                 dimension_numbers=DIMS) + b)
    w, b = params["conv2"]
    x = lib.nn.relu(lib.lax.conv_general_dilated(x, w, (2, 2), "SAME",
                                                 dimension_numbers=DIMS) + b)
    x = x.mean(axis=(1, 2))  # global mean pool: (batch, 64)
    w, b = params["dense"]
    log_probs = lib.nn.log_softmax(x @ w + b)
    return -(log_probs * lib.nn.one_hot(labels, CLASSES)).sum() / images.shape[0]
  return loss


def train_step(lib, np_mod, learning_rate=0.1):
  loss = cnn_loss(lib, np_mod)

  def step(params, images, labels):
    grads = lib.grad(loss)(params, images, labels)
    return lib.tree_util.tree_map(lambda p, g: p - learning_rate * g, params, grads)
  return lib.jit(step)


def per_example_grads(lib, np_mod):
  loss = cnn_loss(lib, np_mod)
  one = lambda params, image, label: lib.grad(loss)(params, image[None], label[None])
  return lib.jit(lib.vmap(one, in_axes=(None, 0, 0)))


def data(batch, seed):
  rng = np.random.default_rng(seed)
  images = rng.standard_normal((batch, SIZE, SIZE, 1)).astype(np.float32)
  labels = rng.integers(0, CLASSES, batch).astype(np.int32)
  return images, labels


# group -> (row label, target ratio)
GROUPS = {
    "cnn_step": (f"CNN training step (conv-relu-conv-relu-meanpool-dense, batch {BATCH}, "
                 f"{SIZE}x{SIZE}x1, fwd+grad+SGD), jitted", 1.05),
    "cnn_per_example": (f"CNN per-example gradients (jit(vmap(grad)), {PER_EXAMPLE_BATCH} "
                        "examples)", None),
}


def program(group: str, lib, np_mod):
  """(jitted function, device-resident (params, images, labels)) of `group` for one library."""
  make, batch = {"cnn_step": (train_step, BATCH),
                 "cnn_per_example": (per_example_grads, PER_EXAMPLE_BATCH)}[group]
  images, labels = data(batch, 1)
  return make(lib, np_mod), lib.device_put((cnn_params(), images, labels))


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool):
  """One library's calls of `group` for processes.time_apart (its own child process)."""
  f, args = program(group, lib, np_mod)
  return jitted_child_calls(lib_name, lib, f, args, 3 if quick else 10, 3 if quick else 5,
                            rtol=2e-3, atol=2e-4)


def rows(quick: bool):
  """[`timing.row` tuples] for benchmarks/run.py: each library in its own processes."""
  t = time_apart("bench_conv", list(GROUPS), quick)
  return [row(label, t[group], target) for group, (label, target) in GROUPS.items()]


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
