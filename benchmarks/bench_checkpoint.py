"""checkpoint: XLA temp memory and step time of jit(grad) of a 64-block residual MLP (width 256,
batch 64), plain and with every block checkpointed, revax beside JAX; the checkpointed step is
also read against plain grad plus one extra forward pass (the recomputation's own cost), which
is what the fence around each block's recomputation must not add to.

Run: python benchmarks/bench_checkpoint.py [--quick]
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

DEPTH, WIDTH, BATCH = 64, 256, 64


def _loss(np_, remat, depth=DEPTH):
  def block(w, h):
    return h + np_.tanh(np_.tanh(h @ w[0]) @ w[1])
  block = remat(block) if remat is not None else block

  def loss(ws, x):
    for w in ws:
      x = block(w, x)
    return (x ** 2).sum()
  return loss


def _inputs():
  rng = np.random.default_rng(0)
  ws = [tuple((rng.standard_normal((WIDTH, WIDTH)) * 0.02).astype(np.float32) for _ in range(2))
        for _ in range(DEPTH)]
  return ws, rng.standard_normal((BATCH, WIDTH)).astype(np.float32)


def _compile(lib, np_, remat, forward_only=False):
  """(zero-argument step, XLA temp bytes) of jit(grad) of the loss (of the loss alone when
  `forward_only`)."""
  ws, x = _inputs()
  loss = _loss(np_, remat)
  g = lib.jit(loss if forward_only else lib.grad(loss))
  temp = g.lower(ws, x).compile().memory_analysis().temp_size_in_bytes
  dws, dx = lib.device_put(ws), lib.device_put(x)
  lib.block_until_ready(g(dws, dx))
  return (lambda: lib.block_until_ready(g(dws, dx))), temp


def _paired_samples(steps: dict, calls: int, rounds: int) -> tuple:
  """({name: [wall seconds per call, one per round]}, the same in process CPU seconds): every
  step runs `calls` times in each round, the steps alternating, so that load from elsewhere
  hits each round's steps alike. CPU time (all the process's threads) is the steadier figure on
  a loaded machine: other processes' load stretches wall time, not the work done."""
  for fn in steps.values():
    fn()
  wall, cpu = {name: [] for name in steps}, {name: [] for name in steps}
  for _ in range(rounds):
    for name, fn in steps.items():
      t, c = time.perf_counter(), time.process_time()
      for _ in range(calls):
        fn()
      wall[name].append((time.perf_counter() - t) / calls)
      cpu[name].append((time.process_time() - c) / calls)
  return wall, cpu


def rows(quick: bool) -> list:
  """Rows (label, unit, revax-side figure, reference figure, target ratio or None).

  Step times come from interleaved rounds; each ratio is the median of the per-round ratios. The
  fence's cost is read against `plain grad + one extra forward` of the same library, timed in
  the same round: that is what recomputing every block costs when nothing else does (checkpoint
  per block runs each block's forward twice and its backward once); in wall time and, steadier
  on a loaded machine, in CPU time. jax.checkpoint's optimization barriers are removed by this
  XLA:CPU build, so its program does not recompute (its step is about its plain grad's, its
  temp too); that row shows it.
  """
  import jax
  import jax.numpy as jnp

  import revax
  import revax.numpy as rnp
  calls, rounds = (2, 5) if quick else (4, 15)
  variants = {"revax plain": (revax, rnp, None), "revax fwd": (revax, rnp, None, True),
              "revax ck": (revax, rnp, revax.checkpoint),
              "jax plain": (jax, jnp, None), "jax fwd": (jax, jnp, None, True),
              "jax ck": (jax, jnp, jax.checkpoint)}
  compiled = {name: _compile(*v) for name, v in variants.items()}
  wall, cpu = _paired_samples({name: step for name, (step, _) in compiled.items()}, calls,
                              rounds)
  for samples in (wall, cpu):
    for lib in ("revax", "jax"):
      samples[f"{lib} plain + fwd"] = [p + f for p, f in zip(
          samples[f"{lib} plain"], samples[f"{lib} fwd"], strict=True)]

  def step(name, reference, label, target=None, samples=wall):
    """A row whose ratio is the median of the per-round ratios (paired); the figures shown
    are the reference's median and that ratio times it."""
    ref = statistics.median(samples[reference]) * 1e6
    ratio = statistics.median(a / b for a, b in zip(samples[name], samples[reference],
                                                     strict=True))
    return (label, "us", ratio * ref, ref, target)

  temp = {name: t / 2 ** 20 for name, (_, t) in compiled.items()}
  return [
      ("checkpoint per block: XLA temp MiB, revax (vs revax plain)", "MiB", temp["revax ck"],
       temp["revax plain"], 0.1),
      ("checkpoint per block: XLA temp MiB, revax vs jax.checkpoint", "MiB", temp["revax ck"],
       temp["jax ck"], None),
      ("plain grad: XLA temp MiB, revax vs jax", "MiB", temp["revax plain"], temp["jax plain"],
       None),
      step("revax ck", "revax plain + fwd",
           "checkpoint per block: step, revax (vs revax plain + one forward)", 1.1),
      step("revax ck", "revax plain + fwd",
           "checkpoint per block: CPU time, revax (vs revax plain + one forward)", 1.1,
           samples=cpu),
      step("revax ck", "revax plain", "checkpoint per block: step, revax (vs revax plain)"),
      step("jax ck", "jax plain + fwd",
           "checkpoint per block: step, jax.checkpoint (vs jax plain + one forward)"),
      step("revax ck", "jax ck", "checkpoint per block: step, revax vs jax.checkpoint"),
  ]


if __name__ == "__main__":
  for label, unit, r, j, target in rows("--quick" in sys.argv):
    goal = f" (target <= {target}x)" if target else ""
    print(f"{label}: {r:.2f} {unit} / {j:.2f} {unit} = {r / j:.3f}x{goal}")
