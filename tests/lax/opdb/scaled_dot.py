"""Op records for scaled_dot (revax/_src/lax/scaled_dot.py): block-scaled dots of float32 and
float8 operands with power-of-two scales (reference: each scale repeated over its block, the
products rounded to bfloat16 and contracted in float64)."""
import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord

_BF16 = ml_dtypes.bfloat16


def _ref(dnums, out_dtype):
  def ref(lhs, rhs, ls, rs):
    (lc, rc), (lb, rb) = dnums
    sides = []
    for x, s, c in ((lhs, ls, lc), (rhs, rs, rc)):
      for d in c:
        s = np.repeat(s, x.shape[d] // s.shape[d], axis=d)
      sides.append((x.astype(_BF16).astype(np.float64) * s.astype(_BF16).astype(np.float64))
                   .astype(_BF16).astype(np.float64))
    letters = "abcdefgh"
    lhs_sub = [letters[d] for d in range(lhs.ndim)]
    rhs_sub = [letters[lhs.ndim + d] for d in range(rhs.ndim)]
    for i, j in zip(lc + lb, rc + rb):
      rhs_sub[j] = lhs_sub[i]
    out = ([lhs_sub[d] for d in lb] + [lhs_sub[d] for d in range(lhs.ndim)
                                       if d not in lc and d not in lb]
           + [rhs_sub[d] for d in range(rhs.ndim) if d not in rc and d not in rb])
    spec = f"{''.join(lhs_sub)},{''.join(rhs_sub)}->{''.join(out)}"
    return np.einsum(spec, *sides).astype(out_dtype)
  return ref


def _pow2(shape, dtype=np.float32):
  return lambda rng: (2.0 ** rng.integers(-3, 3, shape)).astype(dtype)


def _record(name, lhs_shape, rhs_shape, ls_shape, rs_shape, dnums, dtype=np.float32,
            out=None, **kw):
  def args(rng):
    return (rng.standard_normal(lhs_shape).astype(dtype),
            rng.standard_normal(rhs_shape).astype(dtype),
            _pow2(ls_shape, np.float32 if dtype == np.float32 else ml_dtypes.float8_e8m0fnu)(rng),
            _pow2(rs_shape, np.float32 if dtype == np.float32 else ml_dtypes.float8_e8m0fnu)(rng))
  fun = lambda l, r, a, b: lax.scaled_dot(l, r, lhs_scale=a, rhs_scale=b, dimension_numbers=dnums,
                                          preferred_element_type=out)
  return OpRecord(f"scaled_dot_{name}", "scaled_dot", fun, args,
                  _ref(dnums, _BF16 if out is None else out), grad_order=0, rtol=2e-2,
                  atol=5e-2, **kw)


RECORDS = [
    _record("f32", (4, 32), (32, 8), (4, 2), (2, 8), (((1,), (0,)), ((), ()))),
    _record("f32_out_f32", (3, 16), (16, 5), (3, 4), (4, 5), (((1,), (0,)), ((), ())),
            out=np.float32),
    _record("fp8_batched", (2, 4, 16), (2, 16, 3), (2, 4, 2), (2, 2, 3),
            (((2,), (1,)), ((0,), (0,))), dtype=ml_dtypes.float8_e4m3fn),
    _record("rhs_transposed", (2, 8), (3, 8), (2, 4), (3, 4), (((1,), (1,)), ((), ()))),
]
