"""Window reductions, revax vs JAX side by side: eager max_pool on a small array, steady-state
jitted max_pool / avg_pool forward, jit(grad) through max_pool (select_and_scatter_add),
per-example gradients of a pooling network (vmap(grad)), and the first-call trace+lower+compile
time of that network's gradient.

Run: python benchmarks/bench_windowed.py [--quick]   (prints revax / jax ratios)
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from timing import compile_uncached, describe, jitted_calls, row, time_interleaved

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _libs():
  import jax
  import jax.numpy as jnp
  import revax
  import revax.numpy as rnp
  import revax.nn as rnn
  jax.config.update("jax_platforms", "cpu")
  compile_uncached()

  def jax_max_pool(x, window, strides, padding):
    pads = padding if isinstance(padding, str) else ((0, 0),) + tuple(padding) + ((0, 0),)
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1,) + window + (1,),
                                 (1,) + strides + (1,), pads)

  def jax_avg_pool(x, window, strides, padding):
    pads = padding if isinstance(padding, str) else ((0, 0),) + tuple(padding) + ((0, 0),)
    return jax.lax.reduce_window(x, 0.0, jax.lax.add, (1,) + window + (1,),
                                 (1,) + strides + (1,), pads) / np.prod(window)

  return {"revax": (revax, rnp, rnn.max_pool, rnn.avg_pool),
          "jax": (jax, jnp, jax_max_pool, jax_avg_pool)}


_PADDING = ((0, 1), (1, 0))


def _network(np_mod, max_pool):
  def loss(params, x, y):
    w1, w2 = params
    h = np_mod.tanh(np_mod.dot(x, w1))
    h = np_mod.reshape(h, (16, 16, 8))
    h = max_pool(h[None], (2, 2), (2, 2), _PADDING)[0]
    return np_mod.sum((np_mod.dot(np_mod.reshape(h, (-1,)), w2) - y) ** 2)
  return loss


def _net_inputs(batch: int):
  rng = np.random.default_rng(0)
  params = (rng.standard_normal((32, 2048)).astype(np.float32) * 0.1,
            rng.standard_normal((8 * 8 * 8, 10)).astype(np.float32) * 0.1)
  return params, rng.standard_normal((batch, 32)).astype(np.float32), \
      rng.standard_normal((batch, 10)).astype(np.float32)


def rows(quick: bool):
  """Rows for benchmarks/run.py: `timing.row` tuples (revax.jit, revax's program run directly,
  jax.jit, interleaved round by round) for the jitted programs; (label, unit, revax, jax,
  target) for the eager call and the first call."""
  libs = _libs()
  calls = 20 if quick else 100
  rounds = 3 if quick else 7
  x_small = np.random.default_rng(0).standard_normal((1, 8, 8, 4)).astype(np.float32)
  x_big = np.random.default_rng(1).standard_normal((16, 64, 64, 32)).astype(np.float32)
  first = {}
  fns = {}  # kind -> {name: zero-argument call}
  for name, (lib, np_mod, max_pool, avg_pool) in libs.items():
    # eager revax ops run in NumPy on host values; jax's on device arrays
    small = x_small if name == "revax" else lib.device_put(x_small)
    big = lib.device_put(x_big)
    fwd = lib.jit(lambda x, mp=max_pool: mp(x, (3, 3), (2, 2), "SAME"))
    avg = lib.jit(lambda x, ap=avg_pool: ap(x, (3, 3), (2, 2), "SAME"))
    bwd = lib.jit(lib.grad(lambda x, mp=max_pool: (mp(x, (3, 3), (2, 2), "SAME") ** 2).sum()))
    params, xs, ys = _net_inputs(32)
    per_example = lib.jit(lib.vmap(lib.grad(_network(np_mod, max_pool)), in_axes=(None, 0, 0)))
    t0 = time.perf_counter()
    lib.block_until_ready(per_example(params, xs, ys))
    first[name] = time.perf_counter() - t0
    dparams, dxs, dys = lib.device_put((params, xs, ys))
    fns.setdefault("eager", {})[name] = (
        lambda mp=max_pool, s=small, b=lib.block_until_ready: b(mp(s, (2, 2), (2, 2), _PADDING)))
    for kind, fn, args in [("fwd", fwd, (big,)), ("avg", avg, (big,)), ("bwd", bwd, (big,)),
                           ("per_example", per_example, (dparams, dxs, dys))]:
      fns.setdefault(kind, {}).update(jitted_calls(name, lib, fn, *args))
  # each measurement alternates the libraries round by round, so load hits both alike
  numbers = {"eager": calls, "fwd": calls // 4, "avg": calls // 4, "bwd": calls // 20,
             "per_example": calls // 4}
  t = {kind: time_interleaved(per_lib, numbers[kind], rounds) for kind, per_lib in fns.items()}
  return [
      row("eager max_pool 1x8x8x4 (2x2/2, pair padding)", t["eager"], None),
      row("jit max_pool 16x64x64x32 (3x3/2, SAME)", t["fwd"], 1.2),
      row("jit avg_pool 16x64x64x32 (3x3/2, SAME)", t["avg"], 1.2),
      row("jit grad of max_pool 16x64x64x32", t["bwd"], 1.2),
      row("jit vmap(grad) pooling net, 32 examples", t["per_example"], 1.2),
      ("first call (trace+lower+compile) of that", "s", first["revax"], first["jax"], None),
  ]


if __name__ == "__main__":
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true")
  print("\n".join(describe(rows(parser.parse_args().quick))))
