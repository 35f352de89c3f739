"""Op records for custom_linear_solve (a diagonal symmetric solve, and a dense solve through lu, with its transposed solve:
the gradient suite differentiates it implicitly, the transpose suite checks it is linear in b,
the vmap suite batches b and the matrix). custom_root has no primitive of its own (a
custom_jvp function); tests/lax/test_solves.py compares it with jax."""
import numpy as np

import revax.lax as lax
import revax.numpy as rnp
from tests.lax.op_db import OpRecord, args_of, rand


def _well_conditioned(n):
  def make(rng):
    return (rng.standard_normal((n, n)) * 0.3 + 2 * np.eye(n)).astype(np.float32)
  return make


def _dense_solve(b, a):
  return lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, r: rnp.linalg.solve(a, r),
                                 lambda vm, r: rnp.linalg.solve(a.T, r))


def _diagonal_solve(b, d):
  return lax.custom_linear_solve(lambda x: d * x, b, lambda mv, r: r / d, symmetric=True)


RECORDS = [
    OpRecord("custom_linear_solve_diagonal_symmetric", "custom_linear_solve", _diagonal_solve,
             args_of(rand((2, 3)), rand((2, 3), low=0.5, high=2.0)), lambda b, d: b / d,
             linear=True),
    OpRecord("custom_linear_solve_dense", "custom_linear_solve", _dense_solve,
             args_of(rand((3,)), _well_conditioned(3)),
             lambda b, a: np.linalg.solve(a.astype(np.float64), b).astype(np.float32),
             rtol=1e-4, atol=1e-5, linear=True),
]
