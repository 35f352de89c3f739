"""Accuracy of revax's linear algebra (jitted: XLA's cholesky/triangular_solve expansions and
revax's lax algorithms) against NumPy/LAPACK, on well- and ill-conditioned matrices.

Run: REVAX_ENABLE_X64=1 python benchmarks/linalg_accuracy.py [n]

Matrices are U diag(s) V^T with random orthogonal U, V and singular values s log-spaced from 1
down to 1/cond (symmetric positive definite ones use U = V). Printed per dtype and condition
number: backward errors (||reconstruction - A|| / ||A||, Frobenius), loss of orthogonality
(||Q^H Q - I||), and forward errors against NumPy (eigenvalues and singular values relative to
||A||_2; the smallest singular value relative to itself; solve relative to NumPy's x).
"""
from __future__ import annotations

import sys

import numpy as np

import revax
import revax.lax.linalg as lin
import revax.numpy as rnp


def _orth(rng, n):
  q, _ = np.linalg.qr(rng.standard_normal((n, n)))
  return q


def _matrices(n, cond, seed=0):
  rng = np.random.default_rng(seed)
  s = np.logspace(0, -np.log10(cond), n)
  u, v = _orth(rng, n), _orth(rng, n)
  return (u * s) @ v.T, (u * s) @ u.T, s


def _fro(x):
  return float(np.linalg.norm(x))


def report(n, dtype, cond):
  a64, spd64, s_true = _matrices(n, cond)
  a, spd = a64.astype(dtype), spd64.astype(dtype)
  b = np.random.default_rng(1).standard_normal((n, 2)).astype(dtype)
  an, sn = _fro(a64), _fro(spd64)
  eye = np.eye(n)
  out = {}
  L = np.asarray(revax.jit(lin.cholesky)(spd), np.float64)
  out["cholesky  ||LL^T-A||/||A||"] = _fro(L @ L.T - spd64) / sn
  x = np.asarray(revax.jit(rnp.linalg.solve)(a, b), np.float64)
  x_np = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
  out["solve     ||Ax-b||/(||A|| ||x||)"] = _fro(a64 @ x - b) / (an * _fro(x))
  out["solve     ||x-x_lapack||/||x_lapack|| (f64 LAPACK on the same input)"] = _fro(x - x_np) / _fro(x_np)
  lu_, _, perm = (np.asarray(t) for t in revax.jit(lin.lu)(a))
  l = np.tril(lu_, -1).astype(np.float64) + eye
  u = np.triu(lu_).astype(np.float64)
  out["lu        ||PA-LU||/||A||"] = _fro(a64[perm] - l @ u) / an
  q, r = (np.asarray(t, np.float64) for t in revax.jit(lin.qr)(a))
  out["qr        ||QR-A||/||A||"] = _fro(q @ r - a64) / an
  out["qr        ||Q^TQ-I||"] = _fro(q.T @ q - eye)
  v, w = (np.asarray(t, np.float64) for t in revax.jit(lin.eigh)(spd))
  w_true = np.sort(s_true)
  out["eigh      max|w-w_true|/||A||_2"] = float(np.max(np.abs(w - w_true)))
  out["eigh      ||AV-VW||/||A||"] = _fro(spd64 @ v - v * w) / sn
  out["eigh      ||V^TV-I||"] = _fro(v.T @ v - eye)
  uu, ss, vh = (np.asarray(t, np.float64) for t in revax.jit(
      lambda m: lin.svd(m, full_matrices=False))(a))
  out["svd       max|s-s_true|/||A||_2"] = float(np.max(np.abs(ss - s_true)))
  out["svd       |s_min-s_min_true|/s_min_true"] = abs(ss[-1] - s_true[-1]) / s_true[-1]
  out["svd       ||U S V^H-A||/||A||"] = _fro((uu * ss) @ vh - a64) / an
  out["svd       ||U^TU-I||, ||V^TV-I||"] = max(_fro(uu.T @ uu - eye), _fro(vh @ vh.T - eye))
  # LAPACK (NumPy) on the same rounded input, for scale
  s_np = np.linalg.svd(a, compute_uv=False).astype(np.float64)
  out["svd (LAPACK, same dtype) max|s-s_true|/||A||_2"] = float(np.max(np.abs(s_np - s_true)))
  w_np = np.linalg.eigvalsh(spd).astype(np.float64)
  out["eigh (LAPACK, same dtype) max|w-w_true|/||A||_2"] = float(np.max(np.abs(w_np - w_true)))
  return out


def main():
  n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
  if not revax.config.x64_enabled:
    raise SystemExit("run with REVAX_ENABLE_X64=1 (float64 rows)")
  for dtype in (np.float32, np.float64):
    for cond in (1e1, 1e4 if dtype == np.float32 else 1e10):
      print(f"\n{np.dtype(dtype).name}, n={n}, cond={cond:.0e}")
      for k, v in report(n, dtype, cond).items():
        print(f"  {k:70s} {v:.2e}")


if __name__ == "__main__":
  main()
