"""checkpoint: XLA temp memory and step time of jit(grad) of a 64-block residual MLP (width 256,
batch 64), plain and with every block checkpointed, revax beside JAX.

Run: python benchmarks/bench_checkpoint.py [--quick]
"""
from __future__ import annotations

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from timing import time_interleaved  # noqa: E402

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


def _compile(lib, np_, remat):
  """(zero-argument step, XLA temp bytes) of jit(grad) of the loss."""
  ws, x = _inputs()
  g = lib.jit(lib.grad(_loss(np_, remat)))
  temp = g.lower(ws, x).compile().memory_analysis().temp_size_in_bytes
  dws, dx = lib.device_put(ws), lib.device_put(x)
  lib.block_until_ready(g(dws, dx))
  return (lambda: lib.block_until_ready(g(dws, dx))), temp


def rows(quick: bool) -> list:
  import jax
  import jax.numpy as jnp

  import revax
  import revax.numpy as rnp
  calls, rounds = (3, 3) if quick else (10, 5)
  variants = {"revax plain": (revax, rnp, None), "revax ck": (revax, rnp, revax.checkpoint),
              "jax plain": (jax, jnp, None), "jax ck": (jax, jnp, jax.checkpoint)}
  compiled = {name: _compile(*v) for name, v in variants.items()}
  # the four programs alternate round by round, so load hits each alike
  us = {name: t * 1e6 for name, t in time_interleaved(
      {name: step for name, (step, _) in compiled.items()}, calls, rounds, warmup=1).items()}
  r_plain, r_ck = (compiled["revax plain"][1], us["revax plain"]), (compiled["revax ck"][1],
                                                                     us["revax ck"])
  j_plain, j_ck = (compiled["jax plain"][1], us["jax plain"]), (compiled["jax ck"][1], us["jax ck"])
  mib = lambda b: b / 2 ** 20
  return [
      ("checkpoint per block: XLA temp MiB, revax (vs revax plain)", "MiB", mib(r_ck[0]),
       mib(r_plain[0]), 0.5),
      ("checkpoint per block: XLA temp MiB, revax vs jax.checkpoint", "MiB", mib(r_ck[0]),
       mib(j_ck[0]), None),
      ("plain grad: XLA temp MiB, revax vs jax", "MiB", mib(r_plain[0]), mib(j_plain[0]), None),
      ("checkpoint per block: step, revax vs jax.checkpoint", "us", r_ck[1], j_ck[1], None),
      ("checkpoint per block: step, revax (vs revax plain)", "us", r_ck[1], r_plain[1], None),
  ]


if __name__ == "__main__":
  for label, unit, r, j, target in rows("--quick" in sys.argv):
    goal = f" (target <= {target}x)" if target else ""
    print(f"{label}: {r:.2f} {unit} / {j:.2f} {unit} = {r / j:.3f}x{goal}")
