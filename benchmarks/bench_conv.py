"""Convolutional network run time, revax vs JAX, side by side in one process.

Run: python benchmarks/bench_conv.py [--quick]

Measures the steady-state run time of
  - a jitted training step of a small CNN on MNIST-shaped data (batch 64, 28x28x1, NHWC):
    conv 3x3 (32) -> relu -> conv 3x3 stride 2 (64) -> relu -> global mean pool -> dense 10 ->
    log_softmax cross-entropy; gradient; SGD update. Each library runs its own nn.relu,
    nn.log_softmax and nn.one_hot, so the activations are measured too;
  - jitted per-example gradients (vmap of grad) of the same network on 16 examples, where the
    convolution's batching rule folds the mapped axis into the convolution's feature groups.
Each library's call is timed in interleaved rounds (revax, JAX, revax, ...) so that load from other
processes hits both alike; a value is the median round's mean time per call, a ratio the median of
the per-round ratios (paired); revax's compiled program also runs directly on the runtime in the
same rounds (`timing.revax_program_directly`).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from timing import describe, libraries, revax_program_directly, row, time_interleaved

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


def calls_of(libs, make, batch):
  images, labels = data(batch, 1)
  calls, outs = {}, {}
  for name, (lib, np_mod) in libs.items():
    fn = make(lib, np_mod)
    params = lib.device_put(cnn_params())
    x, y = lib.device_put(images), lib.device_put(labels)
    outs[name] = [np.asarray(leaf) for leaf in lib.tree_util.tree_leaves(fn(params, x, y))]
    calls[name] = lambda fn=fn, p=params, x=x, y=y, lib=lib: lib.block_until_ready(fn(p, x, y))
    if name == "revax":
      calls["revax direct"] = revax_program_directly(fn, params, x, y)
  for r, j in zip(outs["revax"], outs["jax"], strict=True):
    np.testing.assert_allclose(r, j, rtol=2e-3, atol=2e-4)
  return calls


def rows(quick: bool):
  """[(label, unit, revax value, JAX value, target ratio)] for benchmarks/run.py."""
  libs = libraries()
  rounds = 5 if quick else 15
  out = []
  t = time_interleaved(calls_of(libs, train_step, BATCH), number=3 if quick else 10,
                       rounds=rounds)
  out.append(row(f"CNN training step (conv-relu-conv-relu-meanpool-dense, batch {BATCH}, "
                 f"{SIZE}x{SIZE}x1, fwd+grad+SGD), jitted", t, 1.05))
  t = time_interleaved(calls_of(libs, per_example_grads, PER_EXAMPLE_BATCH),
                       number=3 if quick else 10, rounds=rounds)
  out.append(row(f"CNN per-example gradients (jit(vmap(grad)), {PER_EXAMPLE_BATCH} examples)", t,
                 None))
  return out


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
