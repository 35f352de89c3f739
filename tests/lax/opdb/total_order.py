"""Op records for the total-order comparisons eq_to, le_to and lt_to (revax/_src/lax/
comparison.py): floats compared as XLA's TOTALORDER orders them (-NaN < -inf < ... < -0.0 <
+0.0 < ... < inf < NaN; reference: the sign-magnitude bit patterns as integers), integers and
bools as usual."""
import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

_SPECIAL = np.array([np.nan, -np.nan, -np.inf, -1.5, -0.0, 0.0, 1e-30, 2.0, np.inf], np.float32)


def _key(x):
  bits = x.view(f"int{x.dtype.itemsize * 8}").astype(np.int64)
  return np.where(bits < 0, bits ^ ((1 << (x.dtype.itemsize * 8 - 1)) - 1), bits)


def _ref(np_fn):
  def ref(x, y):
    x, y = np.broadcast_arrays(x, y)
    if x.dtype.kind in "iub":
      return np_fn(x, y)
    return np_fn(_key(np.ascontiguousarray(x)), _key(np.ascontiguousarray(y)))
  return ref


def _pairs(dtype):
  """Every pair of the special values (as rows and columns)."""
  v = _SPECIAL.astype(dtype)
  return lambda rng: (np.repeat(v, len(v)), np.tile(v, len(v)))


def _records():
  recs = []
  for name, np_fn in (("eq_to", np.equal), ("le_to", np.less_equal), ("lt_to", np.less)):
    prim = getattr(lax, f"{name}_p")
    fun = lambda x, y, p=prim: p.bind(x, y)
    for dt, short in ((np.float32, "f32"), (np.float16, "f16"), (ml_dtypes.bfloat16, "bf16")):
      recs.append(OpRecord(f"{name}_{short}_special_pairs", name, fun, _pairs(dt), _ref(np_fn),
                           grad_order=0, vmap=False))
    recs.append(OpRecord(f"{name}_f32", name, fun, args_of(rand((3, 4)), rand((3, 4))),
                         _ref(np_fn), grad_order=0))
    recs.append(OpRecord(f"{name}_i32_broadcast", name, fun,
                         args_of(rand((3, 4), np.int32), rand((1, 4), np.int32)), _ref(np_fn),
                         grad_order=0))
    recs.append(OpRecord(f"{name}_bool", name, fun,
                         args_of(rand((5,), np.bool_), rand((5,), np.bool_)), _ref(np_fn),
                         grad_order=0))
  return recs


RECORDS = _records()
