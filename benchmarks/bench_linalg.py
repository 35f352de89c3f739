"""Linear algebra run time, revax vs JAX, one library per process (processes.time_apart).

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

from processes import jitted_child_calls, time_apart
from timing import describe, row

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _spd(n, seed=0):
  a = np.random.default_rng(seed).standard_normal((n, n))
  return (a @ a.T / n + np.eye(n)).astype(np.float32)


def _general(n, seed=0):
  a = np.random.default_rng(seed).standard_normal((n, n))
  return (a / np.sqrt(n) + 2 * np.eye(n)).astype(np.float32)


CASES = [
  # (label, function of the numpy module, inputs, outputs compared (indices into the result
  #  tuple; None: the one result), number of calls, target); tolerance 1e-3 (rtol and atol)
  ("jit(jnp.linalg.solve) 256x256, 16 rhs", lambda m: m.linalg.solve,
   lambda: (_general(256), _general(256, 1)[:, :16]), None, 20, None),
  ("jit(jnp.linalg.solve) 1024x1024, 16 rhs", lambda m: m.linalg.solve,
   lambda: (_general(1024), _general(1024, 1)[:, :16]), None, 2, None),
  ("jit(jnp.linalg.cholesky) 256x256", lambda m: m.linalg.cholesky, lambda: (_spd(256),),
   None, 20, 1.5),
  ("jit(jnp.linalg.cholesky) 1024x1024", lambda m: m.linalg.cholesky, lambda: (_spd(1024),),
   None, 3, 1.5),
  ("jit(jnp.linalg.eigh) 256x256 (values and vectors)", lambda m: m.linalg.eigh,
   lambda: (_spd(256),), (0,), 2, None),  # the values (vectors: signs and order vary)
  ("jit(jnp.linalg.svd) 256x256 (values and vectors)",
   lambda m: (lambda x: m.linalg.svd(x, full_matrices=False)), lambda: (_general(256),),
   (1,), 2, None),  # the singular values
]


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool):
  """One library's calls of case `group` (its index in CASES) for processes.time_apart."""
  _, make_fn, args, compared, number, _ = CASES[int(group)]
  f = lib.jit(make_fn(np_mod))
  spec = jitted_child_calls(lib_name, lib, f, lib.device_put(args()),
                            max(1, number // (3 if quick else 1)), 3 if quick else 5,
                            rtol=1e-3, atol=1e-3, warmup=1)
  if compared is not None:
    spec = spec._replace(outputs=[spec.outputs[i] for i in compared])
  return spec


def rows(quick: bool):
  """[`timing.row` tuples] for benchmarks/run.py: each library in its own processes."""
  t = time_apart("bench_linalg", [str(i) for i in range(len(CASES))], quick)
  return [row(label, t[str(i)], target, unit="ms", scale=1e3)
          for i, (label, _, _, _, _, target) in enumerate(CASES)]


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
