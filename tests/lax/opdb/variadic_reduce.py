"""Op records for `reduce` with computations that are not monoids of one primitive: a smooth
associative computation (differentiable, so the gradient suite runs its tree JVP) and a
two-operand (value, index) argmax. Init values are closed over (JAX does not differentiate or
batch them)."""
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand


def _smooth(a, b):
  return a * b + a + b  # (1 + a)(1 + b) - 1


def _np_smooth(x, axes):
  return np.prod(1 + x.astype(np.float64), axis=axes).astype(np.float32) - np.float32(1)


def _argmax_pair(a, b):
  take_a = lax.ge(a[0], b[0])
  return lax.select(take_a, a[0], b[0]), lax.select(take_a, a[1], b[1])


def _argmax_values(x):
  idx = np.broadcast_to(np.arange(x.shape[1], dtype=np.int32), x.shape)
  return lax.reduce((x, idx), (np.float32(-np.inf), np.int32(0)), _argmax_pair, (1,))[1]


RECORDS = [
    OpRecord("reduce_smooth_rows", "reduce", lambda x: lax.reduce(x, 0.0, _smooth, (1,)),
             args_of(rand((3, 5), low=-0.4, high=0.4)), lambda x: _np_smooth(x, (1,)),
             rtol=1e-5, atol=1e-6),
    OpRecord("reduce_smooth_all", "reduce", lambda x: lax.reduce(x, 0.0, _smooth, (0, 1)),
             args_of(rand((2, 3), low=-0.4, high=0.4)), lambda x: _np_smooth(x, (0, 1)),
             rtol=1e-5, atol=1e-6),
    OpRecord("reduce_argmax_pair", "reduce", _argmax_values, args_of(rand((4, 7))),
             lambda x: np.argmax(x, axis=1).astype(np.int32), grad_order=0),
]
