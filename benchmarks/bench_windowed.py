"""Window reductions, revax vs JAX: eager max_pool on a small array, steady-state jitted max_pool
/ avg_pool forward, jit(grad) through max_pool (select_and_scatter_add), per-example gradients of
a pooling network (vmap(grad)) -- these jitted ones with each library in its own processes
(processes.time_apart) -- and the first-call trace+lower+compile time of that network's
gradient.

Run: python benchmarks/bench_windowed.py [--quick]   (prints revax / jax ratios)
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from processes import jitted_child_calls, time_apart
from timing import compile_uncached, describe, row, time_interleaved

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _pools(lib_name: str):
  """(max_pool, avg_pool) of one library (jax's written with lax.reduce_window); imports only
  that library."""
  if lib_name == "revax":
    import revax.nn as rnn
    return rnn.max_pool, rnn.avg_pool
  import jax
  import jax.numpy as jnp

  def jax_max_pool(x, window, strides, padding):
    pads = padding if isinstance(padding, str) else ((0, 0),) + tuple(padding) + ((0, 0),)
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1,) + window + (1,),
                                 (1,) + strides + (1,), pads)

  def jax_avg_pool(x, window, strides, padding):
    pads = padding if isinstance(padding, str) else ((0, 0),) + tuple(padding) + ((0, 0),)
    return jax.lax.reduce_window(x, 0.0, jax.lax.add, (1,) + window + (1,),
                                 (1,) + strides + (1,), pads) / np.prod(window)

  return jax_max_pool, jax_avg_pool


def _libs():
  import jax
  import jax.numpy as jnp

  import revax
  import revax.numpy as rnp
  jax.config.update("jax_platforms", "cpu")
  compile_uncached()
  return {"revax": (revax, rnp, *_pools("revax")), "jax": (jax, jnp, *_pools("jax"))}


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


# the jitted rows, each library in its own processes: group -> (label, target, calls // number)
JITTED = {
    "fwd": ("jit max_pool 16x64x64x32 (3x3/2, SAME)", 1.2, 4),
    "avg": ("jit avg_pool 16x64x64x32 (3x3/2, SAME)", 1.2, 4),
    "bwd": ("jit grad of max_pool 16x64x64x32", 1.2, 20),
    "per_example": ("jit vmap(grad) pooling net, 32 examples", 1.2, 4),
}


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool):
  """One library's calls of jitted row `group` for processes.time_apart."""
  max_pool, avg_pool = _pools(lib_name)
  if group == "per_example":
    f = lib.jit(lib.vmap(lib.grad(_network(np_mod, max_pool)), in_axes=(None, 0, 0)))
    args = lib.device_put(_net_inputs(32))
  else:
    big = np.random.default_rng(1).standard_normal((16, 64, 64, 32)).astype(np.float32)
    args = (lib.device_put(big),)
    f = lib.jit({"fwd": lambda x: max_pool(x, (3, 3), (2, 2), "SAME"),
                 "avg": lambda x: avg_pool(x, (3, 3), (2, 2), "SAME"),
                 "bwd": lib.grad(lambda x: (max_pool(x, (3, 3), (2, 2), "SAME") ** 2).sum())
                 }[group])
  number = max(1, (20 if quick else 100) // JITTED[group][2])
  return jitted_child_calls(lib_name, lib, f, args, number, 3 if quick else 5, rtol=1e-4,
                            atol=1e-4, scaled=True)


def rows(quick: bool):
  """Rows for benchmarks/run.py: `timing.row` tuples for the jitted programs (each library in its
  own processes, processes.time_apart; revax's program also run directly in revax's child), and
  for the eager call (both libraries in this process, interleaved rounds); (label, unit, revax,
  jax, target) for the first call (in this process)."""
  apart = time_apart("bench_windowed", list(JITTED), quick)
  libs = _libs()
  calls = 20 if quick else 100
  rounds = 3 if quick else 7
  x_small = np.random.default_rng(0).standard_normal((1, 8, 8, 4)).astype(np.float32)
  first, eager = {}, {}
  for name, (lib, np_mod, max_pool, _) in libs.items():
    # eager revax ops run in NumPy on host values; jax's on device arrays
    small = x_small if name == "revax" else lib.device_put(x_small)
    params, xs, ys = _net_inputs(32)
    per_example = lib.jit(lib.vmap(lib.grad(_network(np_mod, max_pool)), in_axes=(None, 0, 0)))
    t0 = time.perf_counter()
    lib.block_until_ready(per_example(params, xs, ys))
    first[name] = time.perf_counter() - t0
    eager[name] = (lambda mp=max_pool, s=small, b=lib.block_until_ready:
                   b(mp(s, (2, 2), (2, 2), _PADDING)))
  return [
      row("eager max_pool 1x8x8x4 (2x2/2, pair padding)", time_interleaved(eager, calls, rounds),
          None),
      *[row(label, apart[group], target) for group, (label, target, _) in JITTED.items()],
      ("first call (trace+lower+compile) of that", "s", first["revax"], first["jax"], None),
  ]


if __name__ == "__main__":
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true")
  print("\n".join(describe(rows(parser.parse_args().quick))))
