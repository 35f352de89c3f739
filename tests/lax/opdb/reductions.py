"""Op records for the reductions: reduce_sum/prod/max/min/and/or, argmax/argmin and the monoid
`reduce` wrapper. Edge cases: 0-d operands, zero-size reduced axes (the identity), NaNs, ties,
-0.0 against 0.0, integer wrap-around, negative axes."""
import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

_bf16 = ml_dtypes.bfloat16


def _with_nans(shape, dtype=np.float32, every=3):
  """Uniform values with a NaN at every `every`-th flat position."""
  def make(rng):
    x = rng.uniform(-3, 3, shape).astype(dtype)
    x.reshape(-1)[::every] = np.nan
    return x
  return make


def _separated(shape, dtype=np.float32):
  """Distinct values at least 0.3 apart: finite differences never reorder them (no near-ties)."""
  def make(rng):
    n = int(np.prod(shape))
    x = (rng.permutation(n) - n / 2) * 0.4 + rng.uniform(0, 0.1, n)
    return x.reshape(shape).astype(dtype)
  return make


def _ties(shape, dtype=np.float32):
  """Small integers (many ties), with -0.0 and 0.0 mixed in for floats."""
  def make(rng):
    x = rng.integers(-2, 3, shape).astype(dtype)
    if np.issubdtype(np.dtype(dtype), np.floating):
      x = np.where(x == 0, np.where(rng.random(shape) < 0.5, -0.0, 0.0), x).astype(dtype)
    return x
  return make


def _wrap(x):
  return np.asarray(x)


def _red(name, fn, axes):
  return lambda x: fn(x, axes)


def _np_sum(axes):
  return lambda x: _wrap(np.sum(x, axis=axes, dtype=x.dtype))


def _np_prod(axes):
  return lambda x: _wrap(np.prod(x, axis=axes, dtype=x.dtype))


def _np_ext(fn, initial):
  def ref(axes):
    def r(x):
      with np.errstate(invalid="ignore"):
        return _wrap(fn(x, axis=axes, initial=initial(x.dtype))).astype(x.dtype)
    return r
  return ref


def _lowest(d):
  d = np.dtype(d)
  if d == np.bool_:
    return False
  return -np.inf if d.kind in "fc" or d == _bf16 else np.iinfo(d).min


def _highest(d):
  d = np.dtype(d)
  if d == np.bool_:
    return True
  return np.inf if d.kind in "fc" or d == _bf16 else np.iinfo(d).max


_np_max = _np_ext(np.max, _lowest)
_np_min = _np_ext(np.min, _highest)


def _np_and(axes):
  def r(x):
    if x.dtype == np.bool_:
      return _wrap(np.all(x, axis=axes))
    return _wrap(np.bitwise_and.reduce(x, axis=axes, initial=~np.zeros((), x.dtype)))
  return r


def _np_or(axes):
  def r(x):
    if x.dtype == np.bool_:
      return _wrap(np.any(x, axis=axes))
    return _wrap(np.bitwise_or.reduce(x, axis=axes, initial=np.zeros((), x.dtype)))
  return r


def _np_xor(axes):
  def r(x):
    return _wrap(np.bitwise_xor.reduce(x, axis=axes, initial=np.zeros((), x.dtype)))
  return r


def _record(prim, fn, ref, tag, shape, axes, dtype=np.float32, make=None, np_axes=None, **kw):
  exact = not (np.dtype(dtype).kind in "fc" or np.dtype(dtype) == _bf16)
  if exact:
    kw.setdefault("grad_order", 0)
  np_axes = axes if np_axes is None else np_axes
  return OpRecord(f"{prim}_{tag}", prim, lambda x: fn(x, axes),
                  args_of(make or rand(shape, dtype)), ref(tuple(np_axes)), **kw)


_SUM = [
    _record("reduce_sum", lax.reduce_sum, _np_sum, "f32_rows", (3, 4), (1,), linear=True),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "f32_all", (2, 3, 4), (0, 2, 1), linear=True),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "f32_negative_axis", (2, 3, 4), (-1,),
            np_axes=(2,), linear=True),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "f32_no_axes", (2, 3), (), linear=True),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "f32_0d", (), (), linear=True),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "f32_zero_size", (0, 3), (0,), linear=True),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "f32_zero_size_kept", (3, 0), (0,),
            linear=True),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "i32", (4, 5), (0,), np.int32),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "i8_wraps", (40,), (0,), np.int8,
            make=rand((40,), np.int8, 60, 120)),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "u8", (3, 7), (1,), np.uint8,
            make=rand((3, 7), np.uint8, 0, 200)),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "f16", (4, 6), (1,), np.float16, rtol=2e-2,
            atol=2e-2, linear=True),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "bf16", (4, 6), (0,), _bf16, rtol=5e-2,
            atol=5e-2, grad_order=0),  # not `linear`: the dot-product test's 1e-4 is below bf16
    _record("reduce_sum", lax.reduce_sum, _np_sum, "c64", (3, 4), (1,), np.complex64,
            linear=True, grad_order=0),
    _record("reduce_sum", lax.reduce_sum, _np_sum, "f32_nan", (3, 4), (1,),
            make=_with_nans((3, 4)), grad_order=0),
]

_PROD = [
    _record("reduce_prod", lax.reduce_prod, _np_prod, "f32", (3, 4), (1,), rtol=1e-5),
    _record("reduce_prod", lax.reduce_prod, _np_prod, "f32_two_axes", (2, 3, 2), (0, 2)),
    _record("reduce_prod", lax.reduce_prod, _np_prod, "f32_with_zeros", (3, 5), (1,),
            make=lambda rng: np.where(rng.random((3, 5)) < 0.3, 0.0,
                                      rng.uniform(-2, 2, (3, 5))).astype(np.float32),
            grad_order=2),
    _record("reduce_prod", lax.reduce_prod, _np_prod, "f32_zero_size", (2, 0), (1,)),
    _record("reduce_prod", lax.reduce_prod, _np_prod, "i32_wraps", (3, 12), (1,), np.int32,
            make=rand((3, 12), np.int32, -100, 100)),
    _record("reduce_prod", lax.reduce_prod, _np_prod, "0d_i32", (), (), np.int32),
]

_MAX = [
    _record("reduce_max", lax.reduce_max, _np_max, "f32", (3, 4), (1,), make=_separated((3, 4))),
    _record("reduce_max", lax.reduce_max, _np_max, "f32_all", (3, 4), (0, 1),
            make=_separated((3, 4))),
    _record("reduce_max", lax.reduce_max, _np_max, "f32_nan", (4, 5), (1,),
            make=_with_nans((4, 5), every=7), grad_order=0),
    _record("reduce_max", lax.reduce_max, _np_max, "f32_zero_size", (0, 3), (0,), grad_order=0),
    _record("reduce_max", lax.reduce_max, _np_max, "i32", (4, 5), (0,), np.int32),
    _record("reduce_max", lax.reduce_max, _np_max, "i32_zero_size", (3, 0), (1,), np.int32),
    _record("reduce_max", lax.reduce_max, _np_max, "u8", (6,), (0,), np.uint8,
            make=rand((6,), np.uint8, 0, 255)),
    _record("reduce_max", lax.reduce_max, _np_max, "bool", (3, 4), (1,), np.bool_),
    _record("reduce_max", lax.reduce_max, _np_max, "bool_zero_size", (0,), (0,), np.bool_),
    _record("reduce_max", lax.reduce_max, _np_max, "bf16", (3, 4), (1,), _bf16, grad_order=0),
    _record("reduce_max", lax.reduce_max, _np_max, "0d_f32", (), ()),
]

_MIN = [
    _record("reduce_min", lax.reduce_min, _np_min, "f32", (3, 4), (0,), make=_separated((3, 4))),
    _record("reduce_min", lax.reduce_min, _np_min, "f32_nan", (4, 5), (0,),
            make=_with_nans((4, 5), every=6), grad_order=0),
    _record("reduce_min", lax.reduce_min, _np_min, "f32_zero_size", (2, 0), (1,), grad_order=0),
    _record("reduce_min", lax.reduce_min, _np_min, "i32", (4, 5), (1,), np.int32),
    _record("reduce_min", lax.reduce_min, _np_min, "i8_zero_size", (0, 2), (0,), np.int8),
    _record("reduce_min", lax.reduce_min, _np_min, "bool", (3, 4), (0,), np.bool_),
    _record("reduce_min", lax.reduce_min, _np_min, "f16", (5,), (0,), np.float16,
            make=_separated((5,), np.float16)),
]

_LOGICAL = [
    _record("reduce_and", lax.reduce_and, _np_and, "bool", (3, 4), (1,), np.bool_),
    _record("reduce_and", lax.reduce_and, _np_and, "bool_zero_size", (2, 0), (1,), np.bool_),
    _record("reduce_and", lax.reduce_and, _np_and, "i32", (3, 4), (0,), np.int32,
            make=rand((3, 4), np.int32, -2**31, 2**31 - 1)),
    _record("reduce_and", lax.reduce_and, _np_and, "u8_zero_size", (0,), (0,), np.uint8),
    _record("reduce_or", lax.reduce_or, _np_or, "bool", (3, 4), (0, 1), np.bool_),
    _record("reduce_or", lax.reduce_or, _np_or, "bool_zero_size", (0, 3), (0,), np.bool_),
    _record("reduce_or", lax.reduce_or, _np_or, "u8", (5, 3), (0,), np.uint8,
            make=rand((5, 3), np.uint8, 0, 255)),
    _record("reduce_or", lax.reduce_or, _np_or, "i16", (5, 3), (1,), np.int16,
            make=rand((5, 3), np.int16, -1000, 1000)),
    _record("reduce_xor", lax.reduce_xor, _np_xor, "i32", (3, 4), (1,), np.int32,
            make=rand((3, 4), np.int32, -2**31, 2**31 - 1)),
    _record("reduce_xor", lax.reduce_xor, _np_xor, "u32_both_axes", (3, 4), (0, 1), np.uint32,
            make=rand((3, 4), np.uint32, 0, 2**32 - 1)),
    _record("reduce_xor", lax.reduce_xor, _np_xor, "bool", (4, 5), (0,), np.bool_),
    _record("reduce_xor", lax.reduce_xor, _np_xor, "i8_negative_axis", (2, 3, 4), (-1,),
            np.int8, np_axes=(2,)),
    _record("reduce_xor", lax.reduce_xor, _np_xor, "u8_zero_size", (0, 3), (0,), np.uint8),
    _record("reduce_xor", lax.reduce_xor, _np_xor, "i32_no_axes", (3,), (), np.int32),
]


def _arg(prim, fn, np_fn, tag, make, axis, index_dtype=np.int32, np_axis=None):
  np_axis = axis if np_axis is None else np_axis
  return OpRecord(f"{prim}_{tag}", prim, lambda x: fn(x, axis, index_dtype), args_of(make),
                  lambda x: np_fn(x.astype(np.float32) if x.dtype == _bf16 else x,
                                  axis=np_axis).astype(index_dtype), grad_order=0)


_ARG = [
    _arg("argmax", lax.argmax, np.argmax, "f32", rand((3, 5)), 1),
    _arg("argmax", lax.argmax, np.argmax, "f32_axis0", rand((4, 3)), 0),
    _arg("argmax", lax.argmax, np.argmax, "f32_negative_axis", rand((2, 3, 4)), -2, np_axis=1),
    _arg("argmax", lax.argmax, np.argmax, "f32_nan", _with_nans((4, 5), every=3), 1),
    _arg("argmax", lax.argmax, np.argmax, "f32_ties_signed_zeros", _ties((6, 7)), 1),
    _arg("argmax", lax.argmax, np.argmax, "i32_ties", _ties((5, 8), np.int32), 0),
    _arg("argmax", lax.argmax, np.argmax, "bool", rand((4, 6), np.bool_), 1),
    _arg("argmax", lax.argmax, np.argmax, "bf16", rand((3, 4), _bf16), 1),
    _arg("argmax", lax.argmax, np.argmax, "uint8_index", rand((3, 4)), 1, np.uint8),
    _arg("argmax", lax.argmax, np.argmax, "1d", rand((7,)), 0),
    _arg("argmax", lax.argmax, np.argmax, "zero_size_kept", rand((0, 3)), 1),
    _arg("argmin", lax.argmin, np.argmin, "f32", rand((3, 5)), 1),
    _arg("argmin", lax.argmin, np.argmin, "f32_nan", _with_nans((5, 4), every=4), 0),
    _arg("argmin", lax.argmin, np.argmin, "f32_ties_signed_zeros", _ties((6, 7)), 0),
    _arg("argmin", lax.argmin, np.argmin, "i32_ties", _ties((5, 8), np.int32), 1),
    _arg("argmin", lax.argmin, np.argmin, "u8", rand((4, 6), np.uint8, 0, 9), 1),
    _arg("argmin", lax.argmin, np.argmin, "bool", rand((4, 6), np.bool_), 0),
]

_REDUCE = [
    OpRecord("reduce_monoid_add_identity_init", "reduce_sum",
             lambda x: lax.reduce(x, 0.0, lax.add, (0,)), args_of(rand((3, 4))),
             lambda x: x.sum(0)),
    OpRecord("reduce_monoid_add_nonidentity_init", "reduce_sum",
             lambda x: lax.reduce(x, 2.0, lax.add, (1,)), args_of(rand((3, 4))),
             lambda x: x.sum(1) + np.float32(2)),
    OpRecord("reduce_monoid_max_lambda", "reduce_max",
             lambda x: lax.reduce(x, -np.inf, lambda a, b: lax.max(a, b), (0, 1)),
             args_of(_separated((3, 4))), lambda x: np.asarray(x.max())),
    OpRecord("reduce_monoid_mul_i32", "reduce_prod",
             lambda x: lax.reduce(x, np.int32(1), lax.mul, (1,)), args_of(rand((3, 4), np.int32)),
             lambda x: x.prod(1, dtype=np.int32)),
    OpRecord("reduce_monoid_or_bool", "reduce_or",
             lambda x: lax.reduce(x, False, lax.bitwise_or, (0,)),
             args_of(rand((3, 4), np.bool_)), lambda x: x.any(0)),
    OpRecord("reduce_monoid_xor_i32", "reduce_xor",
             lambda x: lax.reduce(x, np.int32(0), lax.bitwise_xor, (1,)),
             args_of(rand((3, 4), np.int32)),
             lambda x: np.bitwise_xor.reduce(x, 1)),
]

RECORDS = _SUM + _PROD + _MAX + _MIN + _LOGICAL + _ARG + _REDUCE
