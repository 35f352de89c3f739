"""checkpoint: XLA temp memory and step time of jit(grad) of a 64-block residual MLP (width 256,
batch 64), plain and with every block checkpointed, revax beside JAX; the checkpointed step is
also read against plain grad plus one extra forward pass (the recomputation's own cost), which
is what the fence around each block's recomputation must not add to.

Run: python benchmarks/bench_checkpoint.py [--quick]
"""
from __future__ import annotations

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from processes import ChildCalls, time_apart  # noqa: E402
from timing import describe, revax_program_directly, row  # noqa: E402

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
  steps, temp = _compile_steps("step", lib, np_, remat, forward_only)
  return steps["step"], temp


def _compile_steps(name, lib, np_, remat, forward_only=False):
  """({name: zero-argument step}, XLA temp bytes) as `_compile`; for a revax gradient also
  "<name> direct", its compiled program run directly (`timing.revax_program_directly`)."""
  ws, x = _inputs()
  loss = _loss(np_, remat)
  g = lib.jit(loss if forward_only else lib.grad(loss))
  temp = g.lower(ws, x).compile().memory_analysis().temp_size_in_bytes
  dws, dx = lib.device_put(ws), lib.device_put(x)
  lib.block_until_ready(g(dws, dx))
  steps = {name: lambda: lib.block_until_ready(g(dws, dx))}
  if lib.__name__ == "revax" and not forward_only:
    steps[name + " direct"] = revax_program_directly(g, dws, dx)
  return steps, temp


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool) -> ChildCalls:
  """One library's steps (plain grad, one forward, checkpoint per block; a revax gradient also
  run directly) for processes.time_apart, with each variant's XLA temp bytes as `extra`."""
  variants = {"plain": (None, False), "fwd": (None, True), "ck": (lib.checkpoint, False)}
  steps, temp = {}, {}
  for variant, (remat, forward_only) in variants.items():
    name = f"{lib_name} {variant}"
    named_steps, temp[name] = _compile_steps(name, lib, np_mod, remat, forward_only)
    steps.update(named_steps)
  calls, rounds = (2, 3) if quick else (3, 7)
  return ChildCalls(steps, calls, rounds, warmup=1, extra={k: int(v) for k, v in temp.items()})


def rows(quick: bool) -> list:
  """Rows for benchmarks/run.py (`timing.row` tuples; memory rows plain tuples).

  Each library runs in its own child processes (processes.time_apart; a ratio across the
  libraries is the median of the per-pair ratios), its variants timed in interleaved rounds
  there, so that a ratio between two variants of one library is the median of the per-round
  ratios, and a revax row also shows its checkpointed program run directly on the runtime in
  the same rounds. The fence's cost is read against `plain grad + one extra forward` of the same
  library, timed in the same round: that is what recomputing every block costs when nothing else
  does (checkpoint per block runs each block's forward twice and its backward once); in wall
  time and, steadier on a loaded machine, in CPU time. jax.checkpoint's optimization barriers
  are removed by this XLA:CPU build, so its program does not recompute (its step is about its
  plain grad's, its temp too); that row shows it.
  """
  t = time_apart("bench_checkpoint", ["steps"], quick)["steps"]
  temp = {name: b / 2 ** 20 for lib in ("revax", "jax") for name, b in t.extra[lib].items()}
  sums = {f"{lib} plain + fwd": (f"{lib} plain", f"{lib} fwd") for lib in ("revax", "jax")}
  wall = t.with_sums(sums)
  cpu = wall.cpu

  def step(revax_side, reference, label, target=None, samples=wall):
    return row(label, samples, target, revax=revax_side, reference=reference)

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
      step("revax plain", "jax plain", "plain grad (64 blocks): step, revax vs jax"),
  ]


if __name__ == "__main__":
  print("\n".join(describe(rows("--quick" in sys.argv))))
