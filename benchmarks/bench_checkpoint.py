"""checkpoint: XLA temp memory and step time of jit(grad) of a 64-block residual MLP (width 256,
batch 64), plain and with every block checkpointed, revax beside JAX.

Run: python benchmarks/bench_checkpoint.py [--quick]
"""
from __future__ import annotations

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


def _measure(lib, np_, remat, calls):
  ws, x = _inputs()
  g = lib.jit(lib.grad(_loss(np_, remat)))
  temp = g.lower(ws, x).compile().memory_analysis().temp_size_in_bytes
  dws, dx = lib.device_put(ws), lib.device_put(x)
  lib.block_until_ready(g(dws, dx))
  best = float("inf")
  for _ in range(3):
    t = time.perf_counter()
    for _ in range(calls):
      lib.block_until_ready(g(dws, dx))
    best = min(best, (time.perf_counter() - t) / calls * 1e6)
  return temp, best


def rows(quick: bool) -> list:
  import jax
  import jax.numpy as jnp

  import revax
  import revax.numpy as rnp
  calls = 3 if quick else 10
  r_plain = _measure(revax, rnp, None, calls)
  r_ck = _measure(revax, rnp, revax.checkpoint, calls)
  j_plain = _measure(jax, jnp, None, calls)
  j_ck = _measure(jax, jnp, jax.checkpoint, calls)
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
