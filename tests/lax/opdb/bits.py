"""Op records for the bit-level primitives (revax/_src/lax/bits.py): population_count and clz
over integer dtypes (references from NumPy's bitwise_count and int.bit_length), and
reduce_precision over float dtypes and target formats (reference: jax.lax, the test oracle,
plus the format's own rounding where ml_dtypes has it)."""
import functools

import jax
import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

r0 = functools.partial(OpRecord, grad_order=0)


def _popcount_ref(x):
  width = x.dtype.itemsize * 8
  return np.bitwise_count(x.view(f"uint{width}")).astype(x.dtype)


def _clz_ref(x):
  width = x.dtype.itemsize * 8
  u = x.view(f"uint{width}")
  return np.vectorize(lambda v: width - int(v).bit_length(), otypes=[np.int64])(u).astype(x.dtype) \
      if x.size else x.copy()


def _full_range(shape, dtype):
  info = np.iinfo(dtype)
  return rand(shape, dtype, info.min, info.max)


def _edges(dtype):
  info = np.iinfo(dtype)
  return lambda rng: (np.array([0, 1, -1 if info.min < 0 else 2, info.min, info.max, 64],
                               dtype),)


def _int_records():
  recs = []
  for name, fun, ref in (("population_count", lax.population_count, _popcount_ref),
                         ("clz", lax.clz, _clz_ref)):
    for dt, short in ((np.int32, "i32"), (np.uint8, "u8"), (np.int8, "i8"), (np.uint32, "u32"),
                      (np.int16, "i16")):
      recs.append(r0(f"{name}_{short}", name, fun, args_of(_full_range((3, 5), dt)), ref))
      recs.append(r0(f"{name}_{short}_edges", name, fun, _edges(dt), ref, vmap=False))
    recs.append(r0(f"{name}_i32_0d", name, fun, args_of(_full_range((), np.int32)), ref))
    recs.append(r0(f"{name}_i32_zero_size", name, fun, args_of(_full_range((0, 2), np.int32)),
                   ref, vmap=False))
  return recs


def _rp(e, m):
  return lambda x: lax.reduce_precision(x, e, m)


def _rp_ref(e, m):
  return lambda x: np.asarray(jax.lax.reduce_precision(x, e, m))


def _as_format(fmt):
  """Reference by a round trip through the format itself (round to nearest even)."""
  return lambda x: x.astype(fmt).astype(x.dtype)


def _reduce_precision_records():
  recs = []
  for (e, m), dt, short in [((8, 7), np.float32, "f32_bf16"), ((5, 10), np.float32, "f32_f16"),
                            ((4, 3), np.float32, "f32_e4m3"), ((5, 2), np.float16, "f16_e5m2"),
                            ((8, 7), ml_dtypes.bfloat16, "bf16_same"),
                            ((11, 52), np.float32, "f32_wider")]:
    recs.append(OpRecord(f"reduce_precision_{short}", "reduce_precision", _rp(e, m),
                         args_of(rand((3, 4), dt, -100.0, 100.0)), _rp_ref(e, m), rtol=0, atol=0,
                         grad_order=0))  # piecewise constant: finite differences see 0
  recs.append(OpRecord("reduce_precision_f32_as_bf16", "reduce_precision", _rp(8, 7),
                       args_of(rand((4, 4), np.float32, -1e3, 1e3)),
                       _as_format(ml_dtypes.bfloat16), rtol=0, atol=0, grad_order=0))
  edges = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, 3e38, 65504.0, 65520.0, 1e-8],
                   np.float32)
  recs.append(r0("reduce_precision_f32_edges", "reduce_precision", _rp(5, 10),
                 lambda rng: (edges.copy(),), _rp_ref(5, 10), vmap=False, rtol=0, atol=0))
  return recs


def _mulhi_ref(x, y):
  """The high word of the exact product, in Python integers."""
  x, y = np.broadcast_arrays(x, y)
  width = x.dtype.itemsize * 8
  out = [(int(a) * int(b)) >> width for a, b in zip(x.ravel(), y.ravel())]
  return np.array(out, np.int64).astype(x.dtype).reshape(x.shape)


def _mulhi_records():
  recs = []
  for dt, short in ((np.int32, "i32"), (np.uint32, "u32"), (np.int8, "i8"), (np.uint16, "u16"),
                    (np.int16, "i16"), (np.uint8, "u8")):
    recs.append(r0(f"mulhi_{short}", "mulhi", lax.mulhi,
                   args_of(_full_range((3, 4), dt), _full_range((3, 4), dt)), _mulhi_ref))
    recs.append(r0(f"mulhi_{short}_edges", "mulhi", lax.mulhi,
                   lambda rng, e=_edges(dt): (e(rng)[0], e(rng)[0][::-1].copy()), _mulhi_ref,
                   vmap=False))
  recs.append(r0("mulhi_i32_broadcast_rows", "mulhi", lax.mulhi,
                 args_of(_full_range((3, 4), np.int32), _full_range((1, 4), np.int32)),
                 _mulhi_ref))
  recs.append(r0("mulhi_u32_0d", "mulhi", lax.mulhi,
                 args_of(_full_range((), np.uint32), _full_range((), np.uint32)), _mulhi_ref))
  return recs


RECORDS = _int_records() + _reduce_precision_records() + _mulhi_records()
