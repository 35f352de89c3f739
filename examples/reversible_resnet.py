"""A reversible residual network trained on scikit-learn's bundled digits, and what
`revax.invertible` saves.

A reversible block splits its activations in two halves and couples them additively,

    y1 = x1 + F(x2)        y2 = x2 + G(y1)

so its inputs can be rebuilt from its outputs (x2 = y2 - G(y1), x1 = y1 - F(x2)). Wrapping the
stack of blocks in `revax.invertible` makes reverse mode use that: the backward pass rebuilds each
block's inputs while the gradient walks back, instead of storing every block's activations, so
the memory of a gradient step stops growing with depth. Nothing is written by hand: revax finds
the inverses by dataflow over the traced program (F and G here are convolutions and tanh; they
are only ever evaluated forwards, the coupling's `add` is what gets undone).

The script
  1. trains a convolutional reversible network (3x3 convolutions, `revax.lax.conv_general_dilated`)
     for a few epochs on the 8x8 digits (no download), with the stack under `revax.invertible`,
     and prints the train and test accuracy;
  2. compiles `jit(grad(loss))` of a reversible MLP (dense tanh couplings, width 256,
     batch 64) at depths 8/16/32/64 in three variants (plain grad, `invertible` over the stack,
     `checkpoint` per block) and prints XLA's peak temp memory and the step time of each;
  3. plots temp memory and step time against depth (linear axes) to a PNG.

Run:  python examples/reversible_resnet.py [--quick] [--epochs N] [--plot PATH]
Needs the `examples` extra (scikit-learn, tqdm, matplotlib); revax is the only array library.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import revax
import revax.lax as lax
import revax.nn as nn
import revax.numpy as rnp
import revax.random as random
from revax.example_libraries import optimizers

MODES = ("plain", "invertible", "checkpoint")
NUM_CLASSES = 10
CHECKPOINT_NOTE = """\
plain grad keeps two activations per block; invertible keeps none (its temp is the backward
walk's working set, the same at every depth). checkpoint per block also stores two (each block's
inputs), but XLA:CPU parks them in the weight-gradient output buffers, which the backward pass
writes only later, so they do not appear as temp memory."""


# --- data ----------------------------------------------------------------------------------------
def load_digits(test_fraction: float = 0.2, seed: int = 0):
  """scikit-learn's 1797 8x8 digits as NHWC float32 images in [0, 1] and int32 labels.

  Returns:
    ((train_images, train_labels), (test_images, test_labels)), split at random by `seed`.
  """
  from sklearn.datasets import load_digits as sklearn_digits
  digits = sklearn_digits()
  images = (digits.images / 16.0).astype(np.float32)[..., None]
  labels = digits.target.astype(np.int32)
  order = np.random.default_rng(seed).permutation(len(labels))
  n_test = int(round(len(labels) * test_fraction))
  test, train = order[:n_test], order[n_test:]
  return (images[train], labels[train]), (images[test], labels[test])


# --- the reversible stack ------------------------------------------------------------------------
def reversible_block(residual, params, x1, x2):
  """One additive coupling: y1 = x1 + F(x2), y2 = x2 + G(y1), with F, G = residual(f/g, .)."""
  f, g = params
  y1 = x1 + residual(f, x2)
  return y1, x2 + residual(g, y1)


def make_stack(residual, mode: str):
  """`stack(blocks, x1, x2)`: the blocks applied in turn, differentiated as `mode` says.

  Args:
    residual: `residual(params, x) -> F(x)`, the function inside each coupling.
    mode: 'plain' (reverse mode stores every block's activations), 'invertible' (the whole
      stack under `revax.invertible`: activations are rebuilt from the outputs) or
      'checkpoint' (each block under `revax.checkpoint`: its inputs are stored, its insides
      recomputed).

  Returns:
    A function `(blocks, x1, x2) -> (y1, y2)`, the same one in every mode.
  """
  if mode not in MODES:
    raise ValueError(f"mode must be one of {MODES}, got {mode!r}")

  def block(params, x1, x2):
    return reversible_block(residual, params, x1, x2)
  if mode == "checkpoint":
    block = revax.checkpoint(block)

  def stack(blocks, x1, x2):
    for params in blocks:
      x1, x2 = block(params, x1, x2)
    return x1, x2
  return revax.invertible(stack) if mode == "invertible" else stack


def conv3x3(x, w):
  """A 'SAME' 3x3 convolution of NHWC images with an HWIO kernel."""
  return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def conv_residual(params, x):
  w, b = params
  return rnp.tanh(conv3x3(x, w) + b)


def dense_residual(w, x):
  return rnp.tanh(x @ w)


# --- the classifier ------------------------------------------------------------------------------
def init_params(key, depth: int, channels: int):
  """Parameters of the digits classifier: a 3x3 stem to 2*channels feature maps, `depth`
  reversible conv blocks on `channels` + `channels`, and a dense head on 2x2-average-pooled
  features."""
  keys = iter(random.split(key, 2 + 2 * depth))

  def normal(shape, scale):
    return random.normal(next(keys), shape) * scale
  c = channels
  stem = (normal((3, 3, 1, 2 * c), 1 / 3), rnp.zeros(2 * c))
  blocks = [tuple((normal((3, 3, c, c), 0.5 / np.sqrt(9 * c)), rnp.zeros(c)) for _ in range(2))
            for _ in range(depth)]
  head = (normal((16 * 2 * c, NUM_CLASSES), 1 / np.sqrt(32 * c)), rnp.zeros(NUM_CLASSES))
  return {"stem": stem, "blocks": blocks, "head": head}


def predict(params, images, mode: str = "invertible"):
  """Logits (N, 10) of NHWC images (N, 8, 8, 1)."""
  w, b = params["stem"]
  h = conv3x3(images, w) + b
  c = h.shape[-1] // 2
  x1, x2 = make_stack(conv_residual, mode)(params["blocks"], h[..., :c], h[..., c:])
  h = nn.avg_pool(nn.relu(rnp.concatenate([x1, x2], axis=-1)), (2, 2), strides=(2, 2))
  w, b = params["head"]
  return h.reshape(h.shape[0], -1) @ w + b


def loss(params, images, labels, mode: str = "invertible"):
  """Mean cross-entropy of the predicted class distribution."""
  log_probs = nn.log_softmax(predict(params, images, mode))
  return -rnp.mean(rnp.sum(log_probs * nn.one_hot(labels, NUM_CLASSES), axis=-1))


def accuracy(params, images, labels) -> float:
  logits = revax.jit(lambda p, x: predict(p, x, "plain"))(params, images)
  return float(np.mean(np.argmax(np.asarray(logits), axis=-1) == labels))


def train(params, images, labels, *, epochs: int, batch_size: int = 64, step_size: float = 3e-3,
          mode: str = "invertible", seed: int = 0, progress: bool = True):
  """Adam on mini-batches (reshuffled every epoch; the last partial batch is dropped).

  Args:
    params: initial parameters (`init_params`).
    images, labels: the training set.
    epochs: passes over the training set.
    batch_size, step_size: mini-batch size and Adam's step size.
    mode: how the reversible stack is differentiated (see `make_stack`).
    seed: seeds the shuffling.
    progress: show a tqdm progress bar.

  Returns:
    (trained parameters, the loss of every step as a list of floats).
  """
  opt_init, opt_update, get_params = optimizers.adam(step_size)

  @revax.jit
  def step(i, opt_state, x, y):
    value, grads = revax.value_and_grad(loss)(get_params(opt_state), x, y, mode)
    return value, opt_update(i, grads, opt_state)

  steps_per_epoch = len(labels) // batch_size
  if steps_per_epoch == 0:
    raise ValueError(f"batch_size {batch_size} exceeds the {len(labels)} training examples")
  rng = np.random.default_rng(seed)
  opt_state, losses = opt_init(params), []
  bar = None
  if progress:
    from tqdm import tqdm
    bar = tqdm(total=epochs * steps_per_epoch, desc=f"training ({mode})", unit="step")
  for epoch in range(epochs):
    order = rng.permutation(len(labels))
    for k in range(steps_per_epoch):
      batch = order[k * batch_size:(k + 1) * batch_size]
      value, opt_state = step(len(losses), opt_state, images[batch], labels[batch])
      losses.append(float(value))
      if bar is not None:
        bar.update()
        bar.set_postfix(epoch=epoch + 1, loss=f"{losses[-1]:.3f}")
  if bar is not None:
    bar.close()
  return get_params(opt_state), losses


# --- memory and time against depth ---------------------------------------------------------------
def mlp_grad(depth: int, width: int, batch: int, mode: str, seed: int = 0):
  """`jit(grad(loss))` of a reversible MLP (dense tanh couplings on two halves of
  `width`) and arguments for it: (jitted grad, (blocks, x1, x2))."""
  rng = np.random.default_rng(seed)
  blocks = [tuple((rng.standard_normal((width, width)) * 0.02).astype(np.float32)
                  for _ in range(2)) for _ in range(depth)]
  x1, x2 = (rng.standard_normal((batch, width)).astype(np.float32) for _ in range(2))
  stack = make_stack(dense_residual, mode)

  def mlp_loss(blocks, x1, x2):
    y1, y2 = stack(blocks, x1, x2)
    return (y1 ** 2).sum() + (y2 ** 2).sum()
  return revax.jit(revax.grad(mlp_loss)), (blocks, x1, x2)


def compile_grad(depth: int, width: int, batch: int, mode: str):
  """(jitted grad, its arguments on the device, XLA temp bytes) of the reversible MLP."""
  grad_fn, args = mlp_grad(depth, width, batch, mode)
  temp = grad_fn.lower(*args).compile().memory_analysis().temp_size_in_bytes
  args = revax.device_put(args)
  revax.block_until_ready(grad_fn(*args))
  return grad_fn, args, temp


def step_times(programs, calls: int = 3, rounds: int = 3) -> list:
  """Best seconds per call of each (jitted fn, args); the programs take turns, round by round,
  so that load from other processes hits them alike."""
  best = [float("inf")] * len(programs)
  for _ in range(rounds):
    for k, (fn, args) in enumerate(programs):
      start = time.perf_counter()
      for _ in range(calls):
        out = fn(*args)
      revax.block_until_ready(out)
      best[k] = min(best[k], (time.perf_counter() - start) / calls)
  return best


def memory_table(depths=(8, 16, 32, 64), width: int = 256, batch: int = 64, calls: int = 3,
                 progress: bool = True) -> dict:
  """{(mode, depth): (XLA temp bytes, seconds per step)} of the reversible MLP's jit(grad)."""
  bar = None
  if progress:
    from tqdm import tqdm
    bar = tqdm(total=len(depths) * len(MODES), desc="compiling jit(grad) per depth and mode",
               unit="program")
  results = {}
  for depth in depths:
    compiled = []
    for mode in MODES:
      compiled.append(compile_grad(depth, width, batch, mode))
      if bar is not None:
        bar.update()
    times = step_times([(fn, args) for fn, args, _ in compiled], calls)
    for mode, (_, _, temp), seconds in zip(MODES, compiled, times, strict=True):
      results[mode, depth] = (temp, seconds)
  if bar is not None:
    bar.close()
  return results


def format_table(results, depths) -> str:
  """Temp memory and step time per depth (rows) and mode (columns), headers in full."""
  width = max(11, *(len(m) for m in MODES))
  mib = lambda b: f"{b / 2 ** 20:{width}.2f}"
  ms = lambda s: f"{s * 1e3:{width}.2f}"
  modes = " ".join(f"{m:>{width}s}" for m in MODES)
  head = f"depth | {modes} | {modes}"
  title = f"{'':5s} | {'XLA temp memory of jit(grad) (MiB)':<{len(modes)}s} | step time (ms)"
  lines = [title, head, "-" * len(head)]
  for d in depths:
    lines.append(f"{d:5d} | " + " ".join(mib(results[m, d][0]) for m in MODES) + " | "
                 + " ".join(ms(results[m, d][1]) for m in MODES))
  return "\n".join(lines)


def plot_memory(results, depths, path: str, title: str) -> None:
  """Two panels against depth, both axes linear (a straight line is linear growth): XLA's temp
  memory of jit(grad) and the time of one step, for each mode."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  labels = {"plain": "plain grad", "invertible": "revax.invertible (whole stack)",
            "checkpoint": "revax.checkpoint (per block)"}
  fig, (mem, time_ax) = plt.subplots(1, 2, figsize=(11, 4.6))
  for mode in MODES:
    mem.plot(depths, [results[mode, d][0] / 2 ** 20 for d in depths], "o-", label=labels[mode])
    time_ax.plot(depths, [results[mode, d][1] * 1e3 for d in depths], "o-", label=labels[mode])
  for ax, ylabel in ((mem, "XLA temp memory of jit(grad) (MiB)"),
                     (time_ax, "time of one jit(grad) step (ms)")):
    ax.set_xticks(depths, [str(d) for d in depths])
    ax.set_xlim(0, max(depths) * 1.05)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("depth (reversible blocks)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
  mem.set_title("memory")
  time_ax.set_title("step time")
  mem.legend()
  fig.suptitle(title)
  fig.text(0.01, 0.01, "checkpoint lies below invertible: XLA:CPU keeps the block inputs that "
           "checkpoint stores in the weight-gradient output buffers, which temp memory does not "
           "count; invertible stores none (its temp is the backward walk's working set).",
           fontsize=8, wrap=True)
  fig.tight_layout(rect=(0, 0.05, 1, 1))
  fig.savefig(path, dpi=120)
  plt.close(fig)


# --- main ----------------------------------------------------------------------------------------
def main(argv=None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--quick", action="store_true",
                      help="a tiny configuration (seconds): 1 epoch, shallow nets, small table")
  parser.add_argument("--epochs", type=int, default=None, help="training epochs (default 8)")
  parser.add_argument("--plot", default="reversible_resnet_memory.png",
                      help="where to save the memory plot (PNG)")
  args = parser.parse_args(argv)
  if args.quick:
    depth, channels, epochs, depths, width, batch = 2, 4, 1, (2, 4), 32, 8
  else:
    depth, channels, epochs, depths, width, batch = 4, 8, 8, (8, 16, 32, 64), 256, 64
  epochs = args.epochs if args.epochs is not None else epochs

  (x_train, y_train), (x_test, y_test) = load_digits()
  print(f"digits: {len(y_train)} training and {len(y_test)} test images of 8x8")
  params = init_params(random.PRNGKey(0), depth, channels)
  start = time.perf_counter()
  params, losses = train(params, x_train, y_train, epochs=epochs, mode="invertible")
  train_acc, test_acc = accuracy(params, x_train, y_train), accuracy(params, x_test, y_test)
  print(f"reversible conv net, {depth} blocks of {channels}+{channels} channels, "
        f"{epochs} epochs in {time.perf_counter() - start:.1f} s: loss {losses[0]:.3f} -> "
        f"{losses[-1]:.3f}")
  print(f"train accuracy {train_acc:.2%}, test accuracy {test_acc:.2%}\n")

  print(f"reversible MLP (dense tanh couplings, width {width}, batch {batch})")
  results = memory_table(depths, width, batch)
  print(format_table(results, depths))
  print(CHECKPOINT_NOTE)
  plot_memory(results, depths, args.plot, f"reversible MLP, width {width}, batch {batch}")
  print(f"\nmemory and step-time plot saved to {os.path.abspath(args.plot)}")
  return {"losses": losses, "train_accuracy": train_acc, "test_accuracy": test_acc,
          "table": results}


if __name__ == "__main__":
  main()
