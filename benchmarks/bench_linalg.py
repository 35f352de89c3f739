"""Linear algebra run time, revax vs JAX, side by side in one process.

Run: python benchmarks/bench_linalg.py [--quick]

Steady-state time of jitted jnp.linalg.solve (256x256 and 1024x1024, one right-hand side
matrix of 16 columns), cholesky (256 and 1024), eigh (256) and svd (256, values and vectors),
float32. JAX calls LAPACK (jaxlib's custom calls); revax lowers triangular solves to the
StableHLO op XLA expands itself, and cholesky, LU (solve), eigh and svd to its own LAPACK FFI
custom calls (revax/_src/runtime/_lapack.c: potrf, getrf, syevd, gesdd of the OpenBLAS NumPy
bundles); with REVAX_LAPACK=0 those are algorithms written in lax (blocked cholesky over XLA's
own, blocked LU, Jacobi, one-sided Jacobi).
Outputs are checked against JAX's (residuals, values) before timing.

Measured with --quick, OPENBLAS_NUM_THREADS=1 (both libraries' LAPACK on one thread: the 2-core
machine was loaded, and OpenBLAS's threads then wait on each other), revax / JAX in ms:
  with LAPACK: solve 256 1.07 / 1.48, solve 1024 75.8 / 63.5, eigh 256 3.63 / 3.97,
    svd 256 20.2 / 42.3 (the JAX column noisy);
  REVAX_LAPACK=0: solve 256 13.5 / 2.18, solve 1024 190 / 19.7, eigh 256 590 / 4.25,
    svd 256 403 / 7.63.
Later (2026-12-05 evening, cholesky through ?potrf; the same flags, machine loaded by other
work): cholesky 256 0.33 / 0.40, cholesky 1024 25.9 / 34.6 (was 1.65x of JAX through XLA's
expansion), solve 256 1.08 / 1.72, solve 1024 29.1 / 28.3, eigh 256 3.62 / 3.96, svd 256
6.96 / 7.29.
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from timing import describe, jitted_calls, libraries, row, time_interleaved

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _spd(n, seed=0):
  a = np.random.default_rng(seed).standard_normal((n, n))
  return (a @ a.T / n + np.eye(n)).astype(np.float32)


def _general(n, seed=0):
  a = np.random.default_rng(seed).standard_normal((n, n))
  return (a / np.sqrt(n) + 2 * np.eye(n)).astype(np.float32)


def _calls(libs, make_fn, args, check):
  calls, outs = {}, {}
  for name, (lib, np_mod) in libs.items():
    f = lib.jit(make_fn(np_mod))
    dev = [lib.device_put(a) for a in args]
    outs[name] = lib.block_until_ready(f(*dev))
    calls.update(jitted_calls(name, lib, f, *dev))
  check(outs)
  return calls


def _close(tol):
  def check(outs):
    r, j = outs["revax"], outs["jax"]
    r = r if isinstance(r, tuple) else (r,)
    j = j if isinstance(j, tuple) else (j,)
    for a, b in zip(r, j, strict=True):
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)
  return check


CASES = [
  # (label, function of the numpy module, inputs, check, number of calls, target)
  ("jit(jnp.linalg.solve) 256x256, 16 rhs", lambda m: m.linalg.solve,
   lambda: (_general(256), _general(256, 1)[:, :16]), _close(1e-3), 20, None),
  ("jit(jnp.linalg.solve) 1024x1024, 16 rhs", lambda m: m.linalg.solve,
   lambda: (_general(1024), _general(1024, 1)[:, :16]), _close(1e-3), 2, None),
  ("jit(jnp.linalg.cholesky) 256x256", lambda m: m.linalg.cholesky, lambda: (_spd(256),),
   _close(1e-3), 20, 1.5),
  ("jit(jnp.linalg.cholesky) 1024x1024", lambda m: m.linalg.cholesky, lambda: (_spd(1024),),
   _close(1e-3), 3, 1.5),
  ("jit(jnp.linalg.eigh) 256x256 (values and vectors)", lambda m: m.linalg.eigh,
   lambda: (_spd(256),), lambda outs: _close(1e-3)(
       {k: v[0] for k, v in outs.items()}), 2, None),
  ("jit(jnp.linalg.svd) 256x256 (values and vectors)",
   lambda m: (lambda x: m.linalg.svd(x, full_matrices=False)), lambda: (_general(256),),
   lambda outs: _close(1e-3)({k: v[1] for k, v in outs.items()}), 2, None),
]


def rows(quick: bool):
  """[(label, unit, revax value, JAX value, target ratio)] for benchmarks/run.py."""
  libs = libraries()
  out = []
  for label, fn, args, check, number, target in CASES:
    t = time_interleaved(_calls(libs, fn, args(), check),
                         number=max(1, number // (3 if quick else 1)), rounds=3 if quick else 5,
                         warmup=1)
    out.append(row(label, t, target, unit="ms", scale=1e3))
  return out


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
