"""Op records for convert_element_type and bitcast_convert_type."""
import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

_bf16 = ml_dtypes.bfloat16


def _convert(dtype):
  return lambda x: lax.convert_element_type(x, dtype)


def _representable(make, dtype):
  """`make`'s values rounded to `dtype` (and kept in make's dtype)."""
  def made(rng):
    x = make(rng)
    return x.astype(np.float32).astype(dtype).astype(x.dtype)
  return made


def _const(*values):
  return lambda rng: tuple(np.asarray(v) for v in values)


# Float values at the edges of every integer type: NaN, infinities, halves, out-of-range both ways.
_EDGES = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 255.5, 256.0, -1.0, -0.5, 1e20,
                   -1e20, 65504.0, 70000.0, 127.9, -128.9, 2147483520.0, 2147483648.0, 0.0])


def _saturate_ref(dtype):
  """Reference float -> int conversion: round toward zero, saturate, NaN -> 0 (XLA's semantics)."""
  info = np.iinfo(dtype)

  def ref(x):
    out = []
    for v in np.asarray(x, np.float64).reshape(-1):
      if np.isnan(v):
        out.append(0)
      elif v >= info.max:
        out.append(info.max)
      elif v <= info.min:
        out.append(info.min)
      else:
        out.append(int(v))  # int() rounds toward zero
    return np.array(out, dtype).reshape(np.shape(x))
  return ref


def _saturating_records():
  records = []
  for src in (np.float32, np.float16, _bf16):
    for dst in (np.int32, np.int8, np.uint8, np.uint32, np.int16, np.uint16):
      name = f"convert_{np.dtype(src).name}_{np.dtype(dst).name}_saturating"
      with np.errstate(over="ignore"):  # the edges overflow float16 to inf on purpose
        edges = _EDGES.astype(src)
      records.append(OpRecord(name, "convert_element_type", _convert(dst), _const(edges),
                              _saturate_ref(dst), grad_order=0))
  return records


_WRAPAROUND = np.array([300, -300, 2**31 - 1, -2**31, 0, 1, -1, 16777217, 128, -129], np.int32)

RECORDS = _saturating_records() + [
    OpRecord("convert_f32_i32", "convert_element_type", _convert(np.int32),
             args_of(rand((7,), low=-100, high=100)), lambda x: np.trunc(x).astype(np.int32),
             grad_order=0),
    OpRecord("convert_i32_f32", "convert_element_type", _convert(np.float32),
             args_of(rand((3, 4), np.int32, -1000, 1000)), lambda x: x.astype(np.float32),
             grad_order=0),
    OpRecord("convert_i32_f32_rounding", "convert_element_type", _convert(np.float32),
             args_of(rand((50,), np.int32, -2**31, 2**31 - 1)), lambda x: x.astype(np.float32),
             grad_order=0),
    OpRecord("convert_i32_bf16_rounding", "convert_element_type", _convert(_bf16),
             args_of(rand((50,), np.int32, -2**31, 2**31 - 1)),
             lambda x: x.astype(np.float32).astype(_bf16), grad_order=0),
    OpRecord("convert_i32_f16_overflow", "convert_element_type", _convert(np.float16),
             _const(_WRAPAROUND), lambda x: x.astype(np.float64).astype(np.float16), grad_order=0),
    OpRecord("convert_i32_i8_wraps", "convert_element_type", _convert(np.int8),
             _const(_WRAPAROUND), lambda x: x.astype(np.int8), grad_order=0),
    OpRecord("convert_i32_u32_wraps", "convert_element_type", _convert(np.uint32),
             _const(_WRAPAROUND), lambda x: x.astype(np.uint32), grad_order=0),
    OpRecord("convert_u32_i32_wraps", "convert_element_type", _convert(np.int32),
             _const(np.array([2**32 - 1, 2**31, 5, 0], np.uint32)), lambda x: x.astype(np.int32),
             grad_order=0),
    OpRecord("convert_u8_f32", "convert_element_type", _convert(np.float32),
             args_of(rand((6,), np.uint8, 0, 255)), lambda x: x.astype(np.float32), grad_order=0),
    # To a narrower float: rounds, so the values are bf16-representable for the transposition
    # suite, and finite differences at float32 steps cannot resolve a bfloat16 result
    # (test_conversion.py checks its JVP exactly).
    OpRecord("convert_f32_bf16", "convert_element_type", _convert(_bf16),
             args_of(_representable(rand((4, 5), low=-1e4, high=1e4), _bf16)),
             lambda x: x.astype(_bf16), linear=True, grad_order=0),
    OpRecord("convert_f32_bf16_rounding", "convert_element_type", _convert(_bf16),
             args_of(rand((4, 5), low=-1e4, high=1e4)), lambda x: x.astype(_bf16), grad_order=0),
    # From a narrower float: exact forwards, but its transpose rounds a float32 cotangent to
    # bfloat16, so it is not in the (exact) transposition suite.
    OpRecord("convert_bf16_f32", "convert_element_type", _convert(np.float32),
             args_of(rand((4, 5), _bf16)), lambda x: x.astype(np.float32), invertible=True),
    OpRecord("convert_f16_f32", "convert_element_type", _convert(np.float32),
             args_of(rand((3, 2), np.float16)), lambda x: x.astype(np.float32)),
    OpRecord("convert_f32_f16_overflow", "convert_element_type", _convert(np.float16),
             _const(np.array([65504.0, 65520.0, 1e5, -1e5, 1e-8, 1.00048828125, np.nan, np.inf],
                             np.float32)),
             lambda x: x.astype(np.float16), grad_order=0),
    OpRecord("convert_f16_bf16", "convert_element_type", _convert(_bf16),
             args_of(rand((9,), np.float16, -60000, 60000)),
             lambda x: x.astype(np.float32).astype(_bf16), grad_order=0),
    OpRecord("convert_f16_bf16_small", "convert_element_type", _convert(_bf16),
             args_of(_representable(rand((9,), np.float16, -0.5, 0.5), _bf16)),
             lambda x: x.astype(np.float32).astype(_bf16), linear=True),
    OpRecord("convert_bf16_f16", "convert_element_type", _convert(np.float16),
             _const(np.array([1e5, -1e5, 3.0, 0.1, 1e-10, np.nan], _bf16)),
             lambda x: x.astype(np.float32).astype(np.float16), grad_order=0),
    OpRecord("convert_f32_bool", "convert_element_type", _convert(np.bool_),
             _const(np.array([0.0, -0.0, 0.5, -2.0, np.nan, np.inf], np.float32)),
             lambda x: x != 0, grad_order=0),
    OpRecord("convert_i32_bool", "convert_element_type", _convert(np.bool_),
             args_of(rand((8,), np.int32, -2, 2)), lambda x: x != 0, grad_order=0),
    OpRecord("convert_bool_f32", "convert_element_type", _convert(np.float32),
             args_of(rand((3, 2), np.bool_)), lambda x: x.astype(np.float32), grad_order=0),
    OpRecord("convert_bool_i32", "convert_element_type", _convert(np.int32),
             args_of(rand((5,), np.bool_)), lambda x: x.astype(np.int32), grad_order=0),
    OpRecord("convert_bool_bf16", "convert_element_type", _convert(_bf16),
             args_of(rand((5,), np.bool_)), lambda x: x.astype(_bf16), grad_order=0),
    # Between real and complex the map is only real-linear: check_grads' complex inner product
    # <J t, c> = <t, J^T c> does not hold for it (only its real part does), so these records
    # skip check_grads; test_conversion.py compares their gradients with jax's instead.
    OpRecord("convert_c64_f32_real_part", "convert_element_type", _convert(np.float32),
             args_of(rand((3, 3), np.complex64)), lambda x: x.real.astype(np.float32),
             grad_order=0),
    OpRecord("convert_c64_i32_real_part", "convert_element_type", _convert(np.int32),
             _const(np.array([1j, 2.9 + 3j, -3.7 + 1j, complex(np.nan, 1)], np.complex64)),
             lambda x: np.array([0, 2, -3, 0], np.int32), grad_order=0),
    OpRecord("convert_c64_bool_real_part", "convert_element_type", _convert(np.bool_),
             _const(np.array([1j, 0, 2 + 3j, complex(np.nan, 0), complex(0, np.nan)],
                             np.complex64)),
             lambda x: x.real != 0, grad_order=0),
    OpRecord("convert_f32_c64", "convert_element_type", _convert(np.complex64),
             args_of(rand((4,))), lambda x: x.astype(np.complex64), linear=True, grad_order=0),
    OpRecord("convert_c64_c64_weak", "convert_element_type",
             lambda x: lax.convert_element_type(x, np.complex64, weak_type=True),
             args_of(rand((2, 2), np.complex64)), lambda x: x, linear=True),
    OpRecord("convert_f32_f32_weak", "convert_element_type",
             lambda x: lax.convert_element_type(x, np.float32, weak_type=True),
             args_of(rand((3,))), lambda x: x, linear=True, invertible=True),
    OpRecord("convert_f32_i32_0d", "convert_element_type", _convert(np.int32),
             args_of(rand((), low=-10, high=10)), lambda x: np.trunc(x).astype(np.int32),
             grad_order=0),
    OpRecord("convert_f32_bf16_zero_size", "convert_element_type", _convert(_bf16),
             args_of(rand((0, 4))), lambda x: x.astype(_bf16), linear=True),
]


# --- bitcast_convert_type ------------------------------------------------------------------------
def _bitcast(dtype):
  return lambda x: lax.bitcast_convert_type(x, dtype)


def _bits(shape, dtype):
  """Random bit patterns of `dtype` (any value, NaNs included, as a bitcast must carry them)."""
  dtype = np.dtype(dtype)

  def make(rng):
    raw = rng.integers(0, 256, tuple(shape) + (dtype.itemsize,), dtype=np.uint8)
    return raw.view(dtype).reshape(shape)
  return make


def _view_ref(dtype):
  """Reference bitcast through NumPy views (little-endian, as the CPU is)."""
  dtype = np.dtype(dtype)

  def ref(x):
    x = np.asarray(x)
    ratio = x.dtype.itemsize / dtype.itemsize
    raw = x.reshape(-1).view(np.uint8)
    if ratio > 1:
      return raw.view(dtype).reshape(x.shape + (int(ratio),))
    if ratio < 1:
      return raw.view(dtype).reshape(x.shape[:-1])
    return raw.view(dtype).reshape(x.shape)
  return ref


def _bitcast_record(name, src, dst, shape):
  return OpRecord(f"bitcast_convert_type_{name}", "bitcast_convert_type", _bitcast(dst),
                  args_of(_bits(shape, src)), _view_ref(dst), grad_order=0)


RECORDS += [
    _bitcast_record("f32_i32", np.float32, np.int32, (3, 4)),
    _bitcast_record("i32_f32", np.int32, np.float32, (5,)),
    _bitcast_record("u32_f32_0d", np.uint32, np.float32, ()),
    _bitcast_record("f32_u8_narrows", np.float32, np.uint8, (2, 3)),
    _bitcast_record("f32_bf16_narrows_0d", np.float32, _bf16, ()),
    _bitcast_record("i8_f32_widens", np.int8, np.float32, (3, 4)),
    _bitcast_record("u16_bf16", np.uint16, _bf16, (6,)),
    _bitcast_record("bf16_i16", _bf16, np.int16, (2, 2)),
    _bitcast_record("f16_u8_narrows", np.float16, np.uint8, (4,)),
    _bitcast_record("u8_i32_widens_to_0d", np.uint8, np.int32, (4,)),
    _bitcast_record("i16_i8_zero_size", np.int16, np.int8, (0, 3)),
    _bitcast_record("u8_f16_widens_zero_size", np.uint8, np.float16, (0, 2)),
    _bitcast_record("c64_c64", np.complex64, np.complex64, (3,)),
    OpRecord("bitcast_convert_type_bool_bool", "bitcast_convert_type", _bitcast(np.bool_),
             args_of(rand((4,), np.bool_)), lambda x: x, grad_order=0),
]
