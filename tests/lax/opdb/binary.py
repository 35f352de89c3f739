"""Op records for the binary elementwise primitives (revax/_src/lax/binary.py).

Each function gets records over its dtypes, 0-d, zero-size and broadcasting cases, Python-scalar
operands, and XLA's edge semantics: integer division and remainder by zero and of INT_MIN by -1,
shifts by negative or too-large amounts, NaN through max/min, and signed zeros and infinities.
The references are written independently of revax's NumPy implementations (plain Python
integer arithmetic for the C-style integer operations).
"""
import functools
import math

import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand, rank_broadcasting

_bf16 = ml_dtypes.bfloat16
_SHORT = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(_bf16): "bf16",
          np.dtype(np.complex64): "c64", np.dtype(np.int32): "i32", np.dtype(np.int8): "i8",
          np.dtype(np.uint8): "u8", np.dtype(np.uint32): "u32", np.dtype(np.int16): "i16",
          np.dtype(np.bool_): "bool"}


def _quiet(fn):
  @functools.wraps(fn)
  def ref(*args):
    with np.errstate(all="ignore"):
      return fn(*args)
  return ref


def _pair(values_x, values_y, dtype):
  """Fixed operands: edge cases random draws would not hit."""
  x, y = np.asarray(values_x, dtype), np.asarray(values_y, dtype)
  return lambda rng: (x.copy(), y.copy())


# check_grads (tests/gradcheck.py) pairs tangents and cotangents with np.vdot and compares
# complex numbers, which fits no convention for complex cotangents (JAX's check_vjp conjugates the
# cotangent and compares real parts); complex derivatives are checked in test_elementwise_ad.py
# (forward mode by finite differences, reverse mode against jax.vjp) until it does.
_COMPLEX_AD_OFF = dict(grad_order=0)


def _edge(*args, **kw):
  """A record of fixed edge values: NaN, infinities and jumps have no useful finite differences,
  and batching them adds nothing."""
  return OpRecord(*args, **kw, grad_order=0, vmap=False)


def _per_element(fn):
  """A reference applying `fn(int, int) -> int` to each pair in exact Python integers, then
  wrapping to the operands' dtype."""
  def ref(x, y):
    x, y = np.broadcast_arrays(x, y)
    bits = x.dtype.itemsize * 8
    out = [fn(int(a), int(b), bits) for a, b in zip(x.ravel(), y.ravel())]
    wrapped = [v % 2**bits for v in out]
    return np.array(wrapped, np.uint64).astype(f"u{x.dtype.itemsize}").view(x.dtype).reshape(x.shape)
  return ref


def _c_div(a, b, bits):
  if b == 0:
    return -1
  q = abs(a) // abs(b)
  return q if (a < 0) == (b < 0) else -q


def _c_rem(a, b, bits):
  return a if b == 0 else a - _c_div(a, b, bits) * b


def _shift_count(b, bits):
  return b % 2**bits  # the count is read as unsigned


def _shl(a, b, bits):
  n = _shift_count(b, bits)
  return a << n if n < bits else 0


def _shr_logical(a, b, bits):
  n = _shift_count(b, bits)
  return (a % 2**bits) >> n if n < bits else 0


def _shr_arith(a, b, bits):
  n = min(_shift_count(b, bits), bits - 1)
  signed = a - 2**bits if a >= 2**(bits - 1) else a  # the bits of `a` as a signed integer
  return signed >> n


def _standard(name, fun, ref, dtypes, *, low=-3, high=3, y_low=None, y_high=None, prim=None,
              **kw):
  """Records over `dtypes` (a (3, 4) pair), plus 0-d, zero-size, broadcasting and
  Python-scalar records of the first dtype.

  The transformation suites (gradients, vmap) run on the records of the first dtype, except
  the zero-size ones: finite differences are too coarse in 16 bits and batching does not
  depend on the dtype."""
  prim = prim or name
  off = dict(kw, grad_order=0, vmap=False)
  y_low = low if y_low is None else y_low
  y_high = high if y_high is None else y_high
  x = lambda shape, dt: rand(shape, dt, low, high)
  y = lambda shape, dt: rand(shape, dt, y_low, y_high)
  recs = []
  for dt in dtypes:
    main = dt == dtypes[0]
    shape = (3, 4) if main else (5,)
    recs.append(OpRecord(f"{name}_{_SHORT[np.dtype(dt)]}", prim, fun,
                         args_of(x(shape, dt), y(shape, dt)), ref, **(kw if main else off)))
  dt = dtypes[0]
  s = _SHORT[np.dtype(dt)]
  scalar = 2 if np.issubdtype(dt, np.integer) else 0.75
  scalar = scalar if np.dtype(dt) != np.bool_ else True
  recs += [
      OpRecord(f"{name}_{s}_0d", prim, fun, args_of(x((), dt), y((), dt)), ref, **kw),
      OpRecord(f"{name}_{s}_zero_size", prim, fun, args_of(x((0, 3), dt), y((0, 3), dt)), ref,
               **off),
      OpRecord(f"{name}_{s}_zero_size_broadcast", prim, rank_broadcasting(fun),
               args_of(x((0, 1), dt), y((3,), dt)), ref, **off),
      OpRecord(f"{name}_{s}_broadcast", prim, rank_broadcasting(fun),
               args_of(x((2, 3, 4), dt), y((3, 1), dt)), ref, **kw),
      OpRecord(f"{name}_{s}_broadcast_0d", prim, fun, args_of(x((), dt), y((2, 3), dt)), ref,
               **kw),
      OpRecord(f"{name}_{s}_python_scalar", prim, lambda a, f=fun, c=scalar: f(a, c),
               args_of(x((4,), dt)), lambda a, r=ref, c=scalar: r(a, np.asarray(c, a.dtype)), **kw),
  ]
  return recs


_F = (np.float32, np.float16, _bf16)
_INTS = (np.int32, np.int8, np.uint8, np.uint32)
_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, np.nan, 0.0]


def _special(dtype):
  """NaN, infinities and signed zeros against each other."""
  x = np.asarray(_SPECIAL, dtype)
  return lambda rng: (x.copy(), np.roll(x, 3).copy())


def _arith_records():
  r0 = functools.partial(OpRecord, grad_order=0)
  recs = []
  # add and sub are affine in x for a fixed y, not linear: no transposition records
  for name, fun, ref, kw in [("add", lax.add, np.add, dict(invertible=True)),
                             ("sub", lax.sub, np.subtract, dict(invertible=True)),
                             ("mul", lax.mul, np.multiply, dict(invertible=True))]:
    recs += _standard(name, fun, ref, _F + (np.complex64,), **kw)
    recs += [r0(f"{name}_{_SHORT[np.dtype(dt)]}", name, fun,
                args_of(rand((3, 4), dt, -100, 100), rand((3, 4), dt, -100, 100)), _quiet(ref),
                vmap=dt == np.int32)
             for dt in _INTS]
    recs += [
        _edge(f"{name}_i8_wraps", name, fun, _pair([127, -128, 100, -100], [1, -1, 100, 100], np.int8),
           _quiet(ref)),
        _edge(f"{name}_f32_special", name, fun, _special(np.float32), _quiet(ref)),
    ]
  recs += _standard("div", lax.div, np.true_divide, _F + (np.complex64,), y_low=0.5, y_high=3,
                    invertible=True)
  int_div = _per_element(_c_div)
  recs += [
      r0("div_i32", "div", lax.div, args_of(rand((3, 4), np.int32, -100, 100),
                                            rand((3, 4), np.int32, -9, 9)), int_div),
      r0("div_u8", "div", lax.div, args_of(rand((6,), np.uint8, 0, 255),
                                           rand((6,), np.uint8, 0, 20)), int_div),
      _edge("div_i8_edges", "div", lax.div,
         _pair([7, -7, 7, -7, -128, -128, 5, 0, 0], [2, 2, -2, -2, -1, 0, 0, 0, 3], np.int8),
         int_div),
      _edge("div_u32_by_zero", "div", lax.div, _pair([7, 0, 2**32 - 1], [0, 0, 0], np.uint32),
         int_div),
      r0("div_i32_broadcast_scalar", "div", lambda x: lax.div(x, -3),
         args_of(rand((7,), np.int32, -20, 20)), lambda x: int_div(x, np.int32(-3))),
      _edge("div_f32_special", "div", lax.div, _special(np.float32), _quiet(np.true_divide)),
  ]
  int_rem = _per_element(_c_rem)
  recs += _standard("rem", lax.rem, _quiet(np.fmod), _F, y_low=0.5, y_high=3)
  recs += [
      r0("rem_i32", "rem", lax.rem, args_of(rand((3, 4), np.int32, -100, 100),
                                            rand((3, 4), np.int32, -9, 9)), int_rem),
      r0("rem_u8", "rem", lax.rem, args_of(rand((6,), np.uint8, 0, 255),
                                           rand((6,), np.uint8, 0, 20)), int_rem),
      _edge("rem_i8_edges", "rem", lax.rem,
         _pair([7, -7, 7, -7, -128, -128, 5, 0], [2, 2, -2, -2, -1, 0, 0, 0], np.int8), int_rem),
      _edge("rem_f32_special", "rem", lax.rem, _special(np.float32), _quiet(np.fmod)),
      _edge("rem_f32_signs", "rem", lax.rem,
               _pair([5.5, -5.5, 5.5, -5.5, 3.0], [2.0, 2.0, -2.0, -2.0, np.inf], np.float32),
               np.fmod),
  ]
  return recs


def _pow_ref(x, y):
  with np.errstate(all="ignore"):
    if np.issubdtype(x.dtype, np.complexfloating):
      return np.power(x.astype(np.complex128), y.astype(np.complex128)).astype(x.dtype)
    return np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)


def _away_from_zero(shape, dtype):
  """Values of either sign with magnitudes in [0.5, 2)."""
  def make(rng):
    return (rng.uniform(0.5, 2, shape) * rng.choice([-1, 1], shape)).astype(dtype)
  return make


def _pow_records():
  recs = _standard("pow", lax.pow, _pow_ref, _F, low=0.1, high=3, y_low=-2, y_high=2)
  recs += [
      OpRecord("pow_c64", "pow", lax.pow,
               args_of(rand((2, 3), np.complex64, 0.2, 2), rand((2, 3), np.complex64, -1, 1)),
               _pow_ref, **_COMPLEX_AD_OFF),
      # order 1: check_grads cannot take finite differences of the float0 cotangent that the
      # reverse-mode derivative returns for the integer exponent; the fixed-exponent record
      # below checks the second derivative in x
      OpRecord("pow_f32_int_exponent", "pow", lax.pow,
               args_of(_away_from_zero((3, 4), np.float32), rand((3, 4), np.int32, -4, 4)),
               _pow_ref, grad_order=1),
      OpRecord("pow_f32_fixed_int_exponent", "pow",
               lambda x: lax.pow(x, np.array([-3, -1, 0, 1, 2, 5], np.int32)),
               args_of(_away_from_zero((6,), np.float32)),
               lambda x: _pow_ref(x, np.array([-3, -1, 0, 1, 2, 5], np.int32))),
      OpRecord("pow_f16_int8_exponent_broadcast", "pow", rank_broadcasting(lax.pow),
               args_of(rand((2, 3), np.float16, 0.5, 2), rand((3,), np.int8, -3, 3)), _pow_ref,
               grad_order=0),
      _edge("pow_f32_special", "pow", lax.pow,
               _pair([-2, 0, 0, 2, -8, 1, np.nan, np.inf, -np.inf, 0.0],
                     [0.5, -1, 0, 3, 1 / 3, np.nan, 0.0, -1, 3.0, 2.0], np.float32), _pow_ref),
  ]
  return recs


def _minmax_records():
  recs = []
  for name, fun, ref in [("max", lax.max, np.maximum), ("min", lax.min, np.minimum)]:
    r0 = functools.partial(OpRecord, grad_order=0)
    recs += _standard(name, fun, ref, _F)
    recs += [r0(f"{name}_{_SHORT[np.dtype(dt)]}", name, fun,
                args_of(rand((3, 4), dt, -50, 250), rand((3, 4), dt, -50, 250)), ref,
                vmap=dt == np.int32)
             for dt in _INTS + (np.bool_,)]
    recs += [
        _edge(f"{name}_f32_nan_inf", name, fun, _special(np.float32), ref),
        _edge(f"{name}_bf16_nan_inf", name, fun, _special(_bf16), ref),
        _edge(f"{name}_c64_lexicographic", name, fun,
                 _pair([1 + 2j, 1 + 3j, 2, -1j, 3 + 1j], [1 + 3j, 0 + 9j, 1, 1j, 3 + 1j],
                       np.complex64), ref),
        OpRecord(f"{name}_c64", name, fun,
                 args_of(rand((2, 3), np.complex64), rand((2, 3), np.complex64)), ref,
                 grad_order=0),
    ]
  return recs


def _atan2_nextafter_complex_records():
  recs = _standard("atan2", lax.atan2, np.arctan2, _F)
  recs.append(_edge("atan2_f32_signed_zeros_inf", "atan2", lax.atan2,
                       _pair([0.0, -0.0, 0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 1.0],
                             [0.0, 0.0, -0.0, -0.0, 0.0, np.inf, 1.0, 1.0, -np.inf],
                             np.float32), np.arctan2))
  recs += _standard("nextafter", lax.nextafter, np.nextafter, _F, grad_order=0)
  recs.append(_edge("nextafter_f32_edges", "nextafter", lax.nextafter,
                       _pair([0.0, 1.0, -1.0, np.inf, 3.0, np.nan, 1e-45, -0.0, 2.0],
                             [1.0, 2.0, -np.inf, 0.0, 3.0, 1.0, 0.0, -1.0, np.nan],
                             np.float32), np.nextafter))
  complex_ref = lambda x, y: (x + 1j * y.astype(np.complex64)).astype(np.complex64)
  # affine in x; a complex output meets check_grads' complex pairing (see _COMPLEX_AD_OFF)
  recs += _standard("complex", lax.complex, complex_ref, (np.float32,), **_COMPLEX_AD_OFF)
  return recs


def _bitwise_records():
  recs = []
  r0 = functools.partial(OpRecord, grad_order=0)
  for name, fun, ref in [("and", lax.bitwise_and, np.bitwise_and),
                         ("or", lax.bitwise_or, np.bitwise_or),
                         ("xor", lax.bitwise_xor, np.bitwise_xor)]:
    recs += _standard(name, fun, ref, (np.bool_, np.int32, np.uint8, np.int8), low=-128,
                      high=255, grad_order=0)
    recs.append(r0(f"{name}_u32_full_range", name, fun,
                   args_of(rand((6,), np.uint32, 0, 2**32 - 1),
                           rand((6,), np.uint32, 0, 2**32 - 1)), ref))
  return recs


def _shift_records():
  recs = []
  r0 = functools.partial(OpRecord, grad_order=0)
  for name, fun, fn in [("shift_left", lax.shift_left, _shl),
                        ("shift_right_logical", lax.shift_right_logical, _shr_logical),
                        ("shift_right_arithmetic", lax.shift_right_arithmetic, _shr_arith)]:
    ref = _per_element(fn)
    recs += _standard(name, fun, ref, (np.int32, np.uint8, np.int8, np.uint32, np.int16),
                      low=-100, high=100, y_low=0, y_high=7, grad_order=0)
    recs += [
        _edge(f"{name}_i32_out_of_range", name, fun,
           _pair([-5] * 8 + [12345] * 4, [0, 1, 31, 32, 33, -1, -32, 2**31 - 1, 30, 31, 32, -5],
                 np.int32), ref),
        _edge(f"{name}_u8_out_of_range", name, fun,
           _pair([200, 200, 200, 200, 200, 1, 128], [0, 1, 7, 8, 9, 255, 7], np.uint8), ref),
        _edge(f"{name}_i8_negative_values", name, fun,
           _pair([-128, -1, -7, 127, -128], [1, 7, 2, 6, 7], np.int8), ref),
    ]
  return recs


RECORDS = (_arith_records() + _pow_records() + _minmax_records()
           + _atan2_nextafter_complex_records() + _bitwise_records() + _shift_records())
