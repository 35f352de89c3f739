"""Op records for the shape primitives and their wrappers (expand_dims, broadcast,
broadcast_to_rank bind broadcast_in_dim)."""
import itertools

import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

_bf16 = ml_dtypes.bfloat16


def _rand(shape, dtype=np.float32):
  """Random values; bfloat16 ones in [-1, 1], where its rounding leaves finite differences at
  check_grads' bfloat16 step accurate."""
  return rand(shape, dtype, -1.0, 1.0) if np.dtype(dtype) == _bf16 else rand(shape, dtype)


def _shape_op(name, primitive, fun, shape, ref, dtype=np.float32, **kw):
  """A record of a linear, invertible (unless told otherwise) shape op of one operand."""
  exact = np.dtype(dtype) in (np.dtype(np.int32), np.dtype(np.bool_))
  kw.setdefault("linear", not exact)
  kw.setdefault("invertible", True)
  if exact:
    kw.setdefault("grad_order", 0)
  return OpRecord(name, primitive, fun, args_of(_rand(shape, dtype)), ref, **kw)


# --- broadcast_in_dim and its wrappers -----------------------------------------------------------
_BROADCAST = [
    _shape_op("broadcast_in_dim_f32", "broadcast_in_dim",
              lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), (3, 1),
              lambda x: np.broadcast_to(x, (2, 3, 4)), invertible=False),
    _shape_op("broadcast_in_dim_middle_i32", "broadcast_in_dim",
              lambda x: lax.broadcast_in_dim(x, (2, 5, 3), (0, 2)), (2, 3),
              lambda x: np.broadcast_to(x[:, None, :], (2, 5, 3)), np.int32, invertible=False),
    _shape_op("broadcast_in_dim_0d_bool", "broadcast_in_dim",
              lambda x: lax.broadcast_in_dim(x, (2, 2), ()), (),
              lambda x: np.broadcast_to(x, (2, 2)), np.bool_, invertible=False),
    _shape_op("broadcast_in_dim_zero_size_bf16", "broadcast_in_dim",
              lambda x: lax.broadcast_in_dim(x, (0, 3), (1,)), (3,),
              lambda x: np.broadcast_to(x, (0, 3)), _bf16, invertible=False),
    _shape_op("broadcast_leading_f32", "broadcast_in_dim", lambda x: lax.broadcast(x, (4, 2)),
              (3,), lambda x: np.broadcast_to(x, (4, 2, 3)), invertible=False),
    _shape_op("broadcast_0d_i32", "broadcast_in_dim", lambda x: lax.broadcast(x, (3,)), (),
              lambda x: np.full((3,), x), np.int32, invertible=False),
    _shape_op("broadcast_to_rank_f32", "broadcast_in_dim", lambda x: lax.broadcast_to_rank(x, 4),
              (2, 3), lambda x: x.reshape(1, 1, 2, 3)),
    _shape_op("expand_dims_f32", "broadcast_in_dim", lambda x: lax.expand_dims(x, (0, -1, 2)),
              (2, 3), lambda x: x.reshape(1, 2, 1, 3, 1)),
    _shape_op("expand_dims_0d_bool", "broadcast_in_dim", lambda x: lax.expand_dims(x, (0,)), (),
              lambda x: x.reshape(1), np.bool_),
    _shape_op("expand_dims_zero_size_bf16", "broadcast_in_dim",
              lambda x: lax.expand_dims(x, (1,)), (0, 2), lambda x: x.reshape(0, 1, 2), _bf16),
]


# --- reshape -------------------------------------------------------------------------------------
_RESHAPE = [
    _shape_op("reshape_f32", "reshape", lambda x: lax.reshape(x, (4, 6)), (2, 3, 4),
              lambda x: x.reshape(4, 6)),
    _shape_op("reshape_dimensions_f32", "reshape", lambda x: lax.reshape(x, (6, 4), (2, 0, 1)),
              (2, 3, 4), lambda x: np.transpose(x, (2, 0, 1)).reshape(6, 4)),
    _shape_op("reshape_list_sizes_i32", "reshape", lambda x: lax.reshape(x, [3, 2]), (6,),
              lambda x: x.reshape(3, 2), np.int32),
    _shape_op("reshape_to_0d_bool", "reshape", lambda x: lax.reshape(x, ()), (1, 1),
              lambda x: x.reshape(()), np.bool_),
    _shape_op("reshape_from_0d_bf16", "reshape", lambda x: lax.reshape(x, (1, 1, 1)), (),
              lambda x: x.reshape(1, 1, 1), _bf16),
    _shape_op("reshape_zero_size_f32", "reshape", lambda x: lax.reshape(x, (0, 5, 0)), (3, 0),
              lambda x: x.reshape(0, 5, 0)),
]


# --- transpose -----------------------------------------------------------------------------------
_TRANSPOSE = [
    _shape_op(f"transpose_{''.join(map(str, p))}_f32", "transpose",
              lambda x, p=p: lax.transpose(x, p), (2, 3, 4), lambda x, p=p: np.transpose(x, p))
    for p in itertools.permutations(range(3)) if p != (0, 1, 2)
] + [
    _shape_op("transpose_i32", "transpose", lambda x: lax.transpose(x, [1, 0]), (3, 5),
              lambda x: x.T, np.int32),
    _shape_op("transpose_bool", "transpose", lambda x: lax.transpose(x, (1, 0)), (2, 3),
              lambda x: x.T, np.bool_),
    _shape_op("transpose_bf16", "transpose", lambda x: lax.transpose(x, (1, 0)), (4, 2),
              lambda x: x.T, _bf16),
    _shape_op("transpose_zero_size_f32", "transpose", lambda x: lax.transpose(x, (2, 0, 1)),
              (2, 0, 3), lambda x: np.transpose(x, (2, 0, 1))),
]


# --- squeeze -------------------------------------------------------------------------------------
_SQUEEZE = [
    _shape_op("squeeze_f32", "squeeze", lambda x: lax.squeeze(x, (0, 2)), (1, 3, 1, 2),
              lambda x: x.reshape(3, 2)),
    _shape_op("squeeze_negative_i32", "squeeze", lambda x: lax.squeeze(x, (-1,)), (4, 1),
              lambda x: x.reshape(4), np.int32),
    _shape_op("squeeze_to_0d_bool", "squeeze", lambda x: lax.squeeze(x, (0, 1)), (1, 1),
              lambda x: x.reshape(()), np.bool_),
    _shape_op("squeeze_bf16", "squeeze", lambda x: lax.squeeze(x, (1,)), (2, 1, 3),
              lambda x: x.reshape(2, 3), _bf16),
    _shape_op("squeeze_zero_size_f32", "squeeze", lambda x: lax.squeeze(x, (1,)), (0, 1, 2),
              lambda x: x.reshape(0, 2)),
]


# --- rev -----------------------------------------------------------------------------------------
_REV = [
    _shape_op("rev_0_f32", "rev", lambda x: lax.rev(x, (0,)), (3, 4), lambda x: x[::-1]),
    _shape_op("rev_02_f32", "rev", lambda x: lax.rev(x, (0, 2)), (2, 3, 4),
              lambda x: x[::-1, :, ::-1]),
    _shape_op("rev_none_f32", "rev", lambda x: lax.rev(x, ()), (2, 3), lambda x: x),
    _shape_op("rev_i32", "rev", lambda x: lax.rev(x, [1]), (2, 5), lambda x: x[:, ::-1],
              np.int32),
    _shape_op("rev_bool", "rev", lambda x: lax.rev(x, (0,)), (7,), lambda x: x[::-1], np.bool_),
    _shape_op("rev_bf16", "rev", lambda x: lax.rev(x, (0, 1)), (3, 2), lambda x: x[::-1, ::-1],
              _bf16),
    _shape_op("rev_0d_f32", "rev", lambda x: lax.rev(x, ()), (), lambda x: x),
    _shape_op("rev_zero_size_f32", "rev", lambda x: lax.rev(x, (0, 1)), (0, 3),
              lambda x: x[::-1, ::-1]),
]


# --- pad -----------------------------------------------------------------------------------------
def _np_pad(x, value, config):
  """Reference pad by placing each element at its output index (independent of the impl)."""
  x = np.asarray(x)
  out_shape = [lo + hi + n + max(n - 1, 0) * i for n, (lo, hi, i) in zip(x.shape, config)]
  out = np.full(out_shape, value, x.dtype)
  for idx in np.ndindex(*x.shape):
    pos = tuple(lo + k * (i + 1) for k, (lo, _, i) in zip(idx, config))
    if all(0 <= p < n for p, n in zip(pos, out_shape)):
      out[pos] = x[idx]
  return out


def _pad_record(name, shape, config, dtype=np.float32, value=-7.5, **kw):
  def fun(x, v):
    return lax.pad(x, v, config)

  def ref(x, v):
    return _np_pad(x, v, config)

  def args(rng):
    return _rand(shape, dtype)(rng), np.asarray(value, dtype)

  exact = np.dtype(dtype) in (np.dtype(np.int32), np.dtype(np.bool_))
  if exact:
    kw.setdefault("grad_order", 0)
  # with the padding value fixed, pad is linear in the operand only when that value is 0
  return OpRecord(f"pad_{name}", "pad", fun, args, ref, linear=not exact and value == 0, **kw)


_PAD = [
    _pad_record("edges_f32", (3, 4), ((1, 2, 0), (0, 3, 0))),
    _pad_record("interior_f32", (3, 4), ((0, 0, 1), (0, 0, 2)), value=0.0),
    _pad_record("interior_value_f32", (3, 2), ((1, 0, 2), (0, 1, 1))),
    _pad_record("negative_shrinks_f32", (5, 6), ((-1, -2, 0), (-3, 0, 0))),
    _pad_record("negative_to_empty_f32", (2, 3), ((-1, -1, 0), (0, 0, 0))),
    _pad_record("negative_with_interior_f32", (4, 3), ((-2, -1, 2), (-3, 1, 1)), value=0.0),
    _pad_record("mixed_sign_f32", (2, 3, 4), ((1, -1, 1), (-1, 2, 0), (0, 0, 3)), value=0.0),
    _pad_record("mixed_sign_value_f32", (2, 3), ((1, -1, 1), (-1, 2, 0))),
    _pad_record("zero_size_f32", (0, 3), ((2, 1, 5), (1, 0, 0)), value=0.0),
    _pad_record("zero_size_negative_f32", (0, 2), ((-1, 3, 2), (0, 0, 0))),
    _pad_record("0d_f32", (), ()),
    _pad_record("i32", (4,), ((1, 1, 1),), np.int32, value=-1),
    _pad_record("bool", (3, 2), ((0, 1, 1), (1, 0, 0)), np.bool_, value=True),
    _pad_record("bf16", (2, 3), ((1, -1, 1), (2, 0, 0)), _bf16, value=0.25),
    _pad_record("zero_value_bf16", (2, 3), ((1, -1, 1), (2, 0, 0)), _bf16, value=0.0),
    OpRecord("pad_python_scalar_f32", "pad", lambda x: lax.pad(x, 0.0, [(1, 1, 1)]),
             args_of(rand((3,))), lambda x: _np_pad(x, 0.0, [(1, 1, 1)]), linear=True),
]


# --- concatenate ---------------------------------------------------------------------------------
def _concat_record(name, shapes, dimension, dtype=np.float32, **kw):
  """A record of concatenate; with the other operands fixed it is affine in the first (not
  linear), so these records are not in the transposition suite (see _CONCATENATE_LINEAR)."""
  exact = np.dtype(dtype) in (np.dtype(np.int32), np.dtype(np.bool_))
  if exact:
    kw.setdefault("grad_order", 0)
  return OpRecord(f"concatenate_{name}", "concatenate",
                  lambda *xs: lax.concatenate(xs, dimension),
                  args_of(*(_rand(s, dtype) for s in shapes)),
                  lambda *xs: np.concatenate(xs, axis=dimension), invertible=True, **kw)


_CONCATENATE = [
    _concat_record("dim0_f32", [(2, 3), (4, 3)], 0),
    _concat_record("dim1_three_f32", [(2, 3), (2, 1), (2, 5)], 1),
    _concat_record("dim2_i32", [(2, 2, 1), (2, 2, 3)], 2, np.int32),
    _concat_record("bool", [(3,), (2,)], 0, np.bool_),
    _concat_record("bf16", [(1, 4), (2, 4)], 0, _bf16),
    _concat_record("with_empty_f32", [(2, 3), (2, 0), (2, 2)], 1),
    _concat_record("all_empty_f32", [(0, 3), (0, 3)], 0),
]

# Linear in their one argument: every operand is x (or a shape op of it)
_CONCATENATE_LINEAR = [
    OpRecord("concatenate_self_f32", "concatenate", lambda x: lax.concatenate([x, x, x], 1),
             args_of(rand((2, 3))), lambda x: np.concatenate([x, x, x], 1), linear=True),
    OpRecord("concatenate_self_rev_f32", "concatenate",
             lambda x: lax.concatenate([lax.rev(x, (0,)), x], 0), args_of(rand((3, 2))),
             lambda x: np.concatenate([x[::-1], x], 0), linear=True),
]


# --- iota ----------------------------------------------------------------------------------------
def _iota_record(name, fun, ref):
  return OpRecord(f"iota_{name}", "iota", fun, lambda rng: (), ref, grad_order=0)


_IOTA = [
    _iota_record("i32", lambda: lax.iota(np.int32, 6), lambda: np.arange(6, dtype=np.int32)),
    _iota_record("f32", lambda: lax.iota(np.float32, 5), lambda: np.arange(5, dtype=np.float32)),
    _iota_record("u8_wraps", lambda: lax.iota(np.uint8, 300),
                 lambda: (np.arange(300) % 256).astype(np.uint8)),
    _iota_record("bf16_rounds", lambda: lax.iota(_bf16, 600), lambda: np.arange(600, dtype=np.float32).astype(_bf16)),
    _iota_record("f16", lambda: lax.iota(np.float16, 100),
                 lambda: np.arange(100).astype(np.float16)),
    _iota_record("c64", lambda: lax.iota(np.complex64, 4),
                 lambda: np.arange(4).astype(np.complex64)),
    _iota_record("zero_size_i32", lambda: lax.iota(np.int32, 0), lambda: np.zeros(0, np.int32)),
    _iota_record("broadcasted_dim0_i32", lambda: lax.broadcasted_iota(np.int32, (3, 4), 0),
                 lambda: np.broadcast_to(np.arange(3, dtype=np.int32)[:, None], (3, 4))),
    _iota_record("broadcasted_dim2_f32", lambda: lax.broadcasted_iota(np.float32, [2, 3, 5], 2),
                 lambda: np.broadcast_to(np.arange(5, dtype=np.float32), (2, 3, 5))),
    _iota_record("broadcasted_zero_size_f32",
                 lambda: lax.broadcasted_iota(np.float32, (0, 2), 1), lambda: np.zeros((0, 2),
                                                                                       np.float32)),
]

RECORDS = _BROADCAST + _RESHAPE + _TRANSPOSE + _SQUEEZE + _REV + _PAD + _CONCATENATE + \
    _CONCATENATE_LINEAR + _IOTA
