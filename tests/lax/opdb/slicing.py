"""Op records for the slicing primitives: slice, dynamic_slice, dynamic_update_slice, gather and
the scatter family. References are written independently of the NumPy impls (plain indexing,
np.add.at, explicit loops over index positions)."""
import dataclasses

import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

_bf16 = ml_dtypes.bfloat16
GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers


def _exact(dtype):
  return not np.issubdtype(np.dtype(dtype), np.inexact)


def _scalar_index(low, high, dtype=np.int32):
  """A 0-d integer start index drawn from [low, high] (out-of-bounds values included on purpose:
  dynamic_slice clamps them)."""
  return lambda rng: np.asarray(rng.integers(low, high + 1), dtype)


def _indices(shape, high, low=0, dtype=np.int32):
  return lambda rng: rng.integers(low, high, shape).astype(dtype)


def _unique_indices(n, high):
  """n distinct indices in [0, high) as an (n, 1) index array."""
  return lambda rng: rng.permutation(high)[:n].reshape(n, 1).astype(np.int32)


def _wrap_clamp(i, n, size):
  i = int(i)
  i = i + n if i < 0 else i
  return min(max(i, 0), n - size)


# --- slice ---------------------------------------------------------------------------------------
def _slice_record(name, shape, start, limit, strides=None, dtype=np.float32, **kw):
  def ref(x):
    st = strides or (1,) * len(shape)
    return x[tuple(slice(a, b, c) for a, b, c in zip(start, limit, st))]
  if _exact(dtype):
    kw.setdefault("grad_order", 0)
  return OpRecord(f"slice_{name}", "slice", lambda x: lax.slice(x, start, limit, strides),
                  args_of(rand(shape, dtype)), ref, linear=not _exact(dtype), **kw)


_SLICE = [
    _slice_record("f32", (5, 6), (1, 2), (4, 6)),
    _slice_record("strided_f32", (7, 5), (1, 0), (7, 5), (2, 3)),
    _slice_record("strided_uneven_f32", (6, 4, 3), (0, 1, 0), (5, 4, 3), (3, 2, 1)),
    _slice_record("i32", (6,), (2,), (5,), dtype=np.int32),
    _slice_record("bool", (3, 4), (0, 1), (2, 4), (1, 2), dtype=np.bool_),
    _slice_record("bf16", (4, 4), (1, 1), (3, 4), dtype=_bf16),
    _slice_record("0d_f32", (), (), ()),
    _slice_record("to_empty_f32", (4, 3), (2, 0), (2, 3)),
    _slice_record("zero_size_f32", (0, 3), (0, 1), (0, 3), (1, 2)),
    OpRecord("slice_list_args_f32", "slice", lambda x: lax.slice(x, [0, 1], [2, 3], [1, 1]),
             args_of(rand((3, 3))), lambda x: x[0:2, 1:3], linear=True),
]


# --- dynamic_slice -------------------------------------------------------------------------------
def _dynamic_slice_ref(sizes):
  def ref(x, *idx):
    starts = [_wrap_clamp(i, n, s) for i, n, s in zip(idx, x.shape, sizes)]
    return x[tuple(slice(a, a + s) for a, s in zip(starts, sizes))]
  return ref


def _dynamic_slice_record(name, shape, sizes, bounds, dtype=np.float32, index_dtype=np.int32,
                          **kw):
  if _exact(dtype):
    kw.setdefault("grad_order", 0)
  return OpRecord(f"dynamic_slice_{name}", "dynamic_slice",
                  lambda x, *idx: lax.dynamic_slice(x, idx, sizes),
                  args_of(rand(shape, dtype), *(_scalar_index(lo, hi, index_dtype)
                                                for lo, hi in bounds)),
                  _dynamic_slice_ref(sizes), linear=not _exact(dtype), **kw)


_DYNAMIC_SLICE = [
    _dynamic_slice_record("f32", (6, 5), (2, 3), [(0, 4), (0, 2)]),
    # starts beyond the end, and below -size, clamp into range
    _dynamic_slice_record("out_of_bounds_f32", (5, 4), (3, 2), [(-9, 9), (3, 8)]),
    _dynamic_slice_record("negative_wraps_f32", (7,), (3,), [(-7, -1)]),
    _dynamic_slice_record("i32", (4, 4), (1, 4), [(-2, 5), (-1, 2)], dtype=np.int32),
    _dynamic_slice_record("bool", (6,), (2,), [(0, 6)], dtype=np.bool_),
    _dynamic_slice_record("bf16_u8_index", (5, 3), (2, 2), [(0, 5), (0, 3)], dtype=_bf16,
                          index_dtype=np.uint8),
    _dynamic_slice_record("full_size_f32", (3, 2), (3, 2), [(-2, 2), (0, 3)]),
    _dynamic_slice_record("zero_size_f32", (4, 3), (0, 2), [(0, 3), (0, 2)]),
    OpRecord("dynamic_slice_0d_f32", "dynamic_slice", lambda x: lax.dynamic_slice(x, (), ()),
             args_of(rand(())), lambda x: x, linear=True),
    OpRecord("dynamic_slice_static_index_f32", "dynamic_slice",
             lambda x: lax.dynamic_slice(x, (-2, 7), (2, 2)), args_of(rand((4, 5))),
             lambda x: x[2:4, 3:5], linear=True),
]


# --- dynamic_update_slice ------------------------------------------------------------------------
def _dus_ref(x, u, *idx):
  out = np.array(x, copy=True)
  starts = [_wrap_clamp(i, n, s) for i, n, s in zip(idx, x.shape, u.shape)]
  out[tuple(slice(a, a + s) for a, s in zip(starts, u.shape))] = u
  return out


def _dus_record(name, shape, update_shape, bounds, dtype=np.float32, **kw):
  if _exact(dtype):
    kw.setdefault("grad_order", 0)
  return OpRecord(f"dynamic_update_slice_{name}", "dynamic_update_slice",
                  lambda x, u, *idx: lax.dynamic_update_slice(x, u, idx),
                  args_of(rand(shape, dtype), rand(update_shape, dtype),
                          *(_scalar_index(lo, hi) for lo, hi in bounds)), _dus_ref, **kw)


_DYNAMIC_UPDATE_SLICE = [
    _dus_record("f32", (5, 4), (2, 3), [(0, 3), (0, 1)]),
    _dus_record("out_of_bounds_f32", (4, 6), (3, 2), [(-8, 8), (2, 9)]),
    _dus_record("i32", (6,), (2,), [(-6, 6)], dtype=np.int32),
    _dus_record("bool", (3, 3), (1, 3), [(0, 3), (0, 1)], dtype=np.bool_),
    _dus_record("bf16", (4,), (3,), [(0, 2)], dtype=_bf16),
    _dus_record("zero_size_update_f32", (3, 2), (0, 2), [(0, 3), (0, 1)]),
    OpRecord("dynamic_update_slice_static_index_f32", "dynamic_update_slice",
             lambda x, u: lax.dynamic_update_slice(x, u, (1, 2)),
             args_of(rand((4, 5)), rand((2, 2))), lambda x, u: _dus_ref(x, u, 1, 2)),
    OpRecord("dynamic_update_slice_into_zeros_f32", "dynamic_update_slice",
             lambda u, i: lax.dynamic_update_slice(np.zeros((5, 3), np.float32), u, (i, 1)),
             args_of(rand((2, 2)), _scalar_index(-6, 6)),
             lambda u, i: _dus_ref(np.zeros((5, 3), np.float32), u, i, 1), linear=True),
]


# --- gather --------------------------------------------------------------------------------------
def _gather_record(name, fun, args, ref, dtype=np.float32, **kw):
  if _exact(dtype):
    kw.setdefault("grad_order", 0)
  kw.setdefault("linear", not _exact(dtype))
  return OpRecord(f"gather_{name}", "gather", fun, args, ref, **kw)


def _take_rows(x, idx):
  """x[idx] for an integer array idx (any shape): rows of x."""
  dn = GDN(offset_dims=tuple(range(idx.ndim, idx.ndim + x.ndim - 1)), collapsed_slice_dims=(0,),
           start_index_map=(0,))
  return lax.gather(x, lax.expand_dims(idx, (-1,)), dn, (1,) + x.shape[1:])


def _take_points(x, idx):
  """x[idx[:, 0], idx[:, 1]]: one element per index vector."""
  dn = GDN(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1))
  return lax.gather(x, idx, dn, (1, 1))


def _windows(mode, fill_value=None):
  """2x2 windows of a (5, 6) operand at (row, col) starts; out-of-bounds by `mode`."""
  def fun(x, idx):
    dn = GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
    return lax.gather(x, idx, dn, (2, 2), mode=mode, fill_value=fill_value)
  return fun


def _windows_ref(mode, fill_value=None):
  def ref(x, idx):
    out = []
    for r, c in idx:
      ok = 0 <= r <= x.shape[0] - 2 and 0 <= c <= x.shape[1] - 2
      r, c = min(max(r, 0), x.shape[0] - 2), min(max(c, 0), x.shape[1] - 2)
      w = x[r:r + 2, c:c + 2]
      if mode == "fill" and not ok:
        w = np.full_like(w, np.nan if fill_value is None else fill_value)
      out.append(w)
    return np.stack(out)
  return ref


def _batched_take(x, idx):
  """Per-row gather: out[b, k] = x[b, idx[b, k]] (operand and indices batching dims)."""
  dn = GDN(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
           operand_batching_dims=(0,), start_indices_batching_dims=(0,))
  return lax.gather(x, lax.expand_dims(idx, (-1,)), dn, (1, 1))


def _batched_take_middle(x, idx):
  """Batching dims in the middle: x (4, 3, 5), idx (2, 3) -> out[k, b, :] = x[idx[k, b], b, :]."""
  dn = GDN(offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,),
           operand_batching_dims=(1,), start_indices_batching_dims=(1,))
  return lax.gather(x, lax.expand_dims(idx, (-1,)), dn, (1, 1, 5))


def _batched_take_middle_ref(x, idx):
  out = np.empty(idx.shape + (x.shape[2],), x.dtype)
  for k in range(idx.shape[0]):
    for b in range(idx.shape[1]):
      out[k, b] = x[idx[k, b], b]
  return out


_GATHER = [
    _gather_record("take_rows_f32", _take_rows, args_of(rand((5, 3)), _indices((4,), 5)),
                   lambda x, i: x[i]),
    _gather_record("take_rows_2d_index_i32", _take_rows,
                   args_of(rand((6, 2), np.int32, -50, 50), _indices((2, 3), 6)),
                   lambda x, i: x[i], dtype=np.int32),
    _gather_record("take_repeated_bool", _take_rows,
                   args_of(rand((3,), np.bool_), lambda rng: np.array([2, 0, 2, 2], np.int32)),
                   lambda x, i: x[i], dtype=np.bool_),
    _gather_record("take_points_f32", _take_points, args_of(rand((4, 5)),
                                                            _indices((6, 2), 4)),
                   lambda x, i: x[i[:, 0], i[:, 1]]),
    _gather_record("take_points_bf16_u8_index", _take_points,
                   args_of(rand((4, 4), _bf16), _indices((3, 2), 4, dtype=np.uint8)),
                   lambda x, i: x[i[:, 0], i[:, 1]], dtype=_bf16),
    _gather_record("take_rows_empty_index_f32", _take_rows,
                   args_of(rand((3, 2)), lambda rng: np.zeros((0,), np.int32)),
                   lambda x, i: x[i]),
    _gather_record("windows_clip_f32", _windows("clip"),
                   args_of(rand((5, 6)), _indices((4, 2), 8, low=-3)), _windows_ref("clip")),
    _gather_record("windows_promise_f32", _windows(None),
                   args_of(rand((5, 6)), _indices((3, 2), 4)), _windows_ref("clip")),
    # FILL_OR_DROP: windows not entirely in bounds read the fill value (NaN by default)
    _gather_record("windows_fill_nan_f32", _windows("fill"),
                   args_of(rand((5, 6)), _indices((5, 2), 7, low=-2)), _windows_ref("fill"),
                   grad_order=0, linear=False),
    _gather_record("windows_fill_value_f32", _windows("fill", 0.0),
                   args_of(rand((5, 6)), _indices((5, 2), 7, low=-2)), _windows_ref("fill", 0.0)),
    _gather_record("windows_fill_i32", _windows("fill"),
                   args_of(rand((5, 6), np.int32, -9, 9), _indices((4, 2), 7, low=-2)),
                   lambda x, i: np.nan_to_num(_windows_ref("fill")(x.astype(np.float64), i),
                                              nan=np.iinfo(np.int32).min).astype(np.int32),
                   dtype=np.int32),
    _gather_record("batching_dims_f32", _batched_take,
                   args_of(rand((3, 5)), _indices((3, 4), 5)),
                   lambda x, i: np.take_along_axis(x, i, 1)),
    _gather_record("batching_dims_middle_f32", _batched_take_middle,
                   args_of(rand((4, 3, 5)), _indices((2, 3), 4)), _batched_take_middle_ref),
    _gather_record("0d_operand_f32",
                   lambda x, i: lax.gather(x, i, GDN((), (), ()), ()),
                   args_of(rand(()), lambda rng: np.zeros((3, 0), np.int32)),
                   lambda x, i: np.full((3,), x)),
]


# --- scatter family ------------------------------------------------------------------------------
_ROWS = SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
_POINTS = SDN(update_window_dims=(), inserted_window_dims=(0, 1),
              scatter_dims_to_operand_dims=(0, 1))


def _np_scatter_rows(combine):
  def ref(x, idx, u):
    out = np.array(x, copy=True)
    for k, (i,) in enumerate(idx):
      if 0 <= i < x.shape[0]:
        out[i] = combine(out[i], u[k])
    return out
  return ref


def _np_scatter_points(combine):
  def ref(x, idx, u):
    out = np.array(x, copy=True)
    for k, (i, j) in enumerate(idx):
      if 0 <= i < x.shape[0] and 0 <= j < x.shape[1]:
        out[i, j] = combine(out[i, j], u[k])
    return out
  return ref


def _set(old, new):
  return new


def _scatter_record(name, primitive, fun, args, ref, dtype=np.float32, **kw):
  if _exact(dtype):
    kw.setdefault("grad_order", 0)
  return OpRecord(f"{primitive.replace('-', '_')}_{name}", primitive, fun, args, ref, **kw)


def _rows(op, dn=_ROWS, **opts):
  return lambda x, i, u: op(x, i, u, dn, **opts)


_SCATTER = [
    _scatter_record("rows_f32", "scatter", _rows(lax.scatter),
                    args_of(rand((6, 3)), _unique_indices(4, 6), rand((4, 3))),
                    _np_scatter_rows(_set)),
    _scatter_record("rows_unique_f32", "scatter", _rows(lax.scatter, unique_indices=True),
                    args_of(rand((5, 2)), _unique_indices(3, 5), rand((3, 2))),
                    _np_scatter_rows(_set)),
    _scatter_record("points_i32", "scatter", _rows(lax.scatter, _POINTS),
                    args_of(rand((4, 4), np.int32), lambda rng: np.array([[0, 1], [3, 3], [2, 0]],
                                                                          np.int32),
                            rand((3,), np.int32)), _np_scatter_points(_set), dtype=np.int32),
    _scatter_record("drop_out_of_bounds_bool", "scatter", _rows(lax.scatter),
                    args_of(rand((4, 2), np.bool_),
                            lambda rng: np.array([[5], [1], [-1]], np.int32),
                            rand((3, 2), np.bool_)), _np_scatter_rows(_set), dtype=np.bool_),
]

_SCATTER_ADD = [
    # repeated indices accumulate
    _scatter_record("repeated_f32", "scatter-add", _rows(lax.scatter_add),
                    args_of(rand((5, 3)), _indices((6, 1), 5), rand((6, 3))),
                    _np_scatter_rows(np.add)),
    _scatter_record("repeated_i32", "scatter-add", _rows(lax.scatter_add),
                    args_of(rand((4, 2), np.int32), _indices((7, 1), 4), rand((7, 2), np.int32)),
                    _np_scatter_rows(np.add), dtype=np.int32),
    _scatter_record("points_bf16", "scatter-add", _rows(lax.scatter_add, _POINTS),
                    args_of(rand((3, 3), _bf16), _indices((4, 2), 3), rand((4,), _bf16)),
                    _np_scatter_points(np.add), dtype=_bf16),
    _scatter_record("drop_out_of_bounds_f32", "scatter-add", _rows(lax.scatter_add),
                    args_of(rand((4, 2)), _indices((5, 1), 6, low=-2), rand((5, 2))),
                    _np_scatter_rows(np.add)),
    _scatter_record("clip_f32", "scatter-add", _rows(lax.scatter_add, mode="clip"),
                    args_of(rand((4, 2)), _indices((5, 1), 6, low=-2), rand((5, 2))),
                    lambda x, i, u: _np_scatter_rows(np.add)(x, np.clip(i, 0, 3), u)),
    _scatter_record("into_zeros_f32", "scatter-add",
                    lambda u, i: lax.scatter_add(np.zeros((4, 3), np.float32), i, u, _ROWS),
                    args_of(rand((5, 3)), _indices((5, 1), 4)),
                    lambda u, i: _np_scatter_rows(np.add)(np.zeros((4, 3), np.float32), i, u),
                    linear=True),
    _scatter_record("empty_updates_f32", "scatter-add", _rows(lax.scatter_add),
                    args_of(rand((3, 2)), lambda rng: np.zeros((0, 1), np.int32),
                            rand((0, 2))), _np_scatter_rows(np.add)),
    _scatter_record("batching_dims_f32", "scatter-add",
                    _rows(lax.scatter_add, SDN((), (1,), (1,), (0,), (0,))),
                    args_of(rand((3, 4)), _indices((3, 2, 1), 4), rand((3, 2))),
                    lambda x, i, u: _batched_add_ref(x, i, u)),
]


_SCATTER_SUB = [
    # repeated indices accumulate
    _scatter_record("repeated_f32", "scatter-sub", _rows(lax.scatter_sub),
                    args_of(rand((5, 3)), _indices((6, 1), 5), rand((6, 3))),
                    _np_scatter_rows(np.subtract)),
    _scatter_record("repeated_u8_wraps", "scatter-sub", _rows(lax.scatter_sub),
                    args_of(rand((4, 2), np.uint8, 0, 255), _indices((7, 1), 4),
                            rand((7, 2), np.uint8, 0, 255)),
                    _np_scatter_rows(np.subtract), dtype=np.uint8),
    _scatter_record("points_i32", "scatter-sub", _rows(lax.scatter_sub, _POINTS),
                    args_of(rand((3, 3), np.int32), _indices((4, 2), 3),
                            rand((4,), np.int32)),
                    _np_scatter_points(np.subtract), dtype=np.int32),
    _scatter_record("drop_out_of_bounds_f32", "scatter-sub", _rows(lax.scatter_sub),
                    args_of(rand((4, 2)), _indices((5, 1), 6, low=-2), rand((5, 2))),
                    _np_scatter_rows(np.subtract)),
    _scatter_record("clip_f32", "scatter-sub", _rows(lax.scatter_sub, mode="clip"),
                    args_of(rand((4, 2)), _indices((5, 1), 6, low=-2), rand((5, 2))),
                    lambda x, i, u: _np_scatter_rows(np.subtract)(x, np.clip(i, 0, 3), u)),
    _scatter_record("into_zeros_f32", "scatter-sub",
                    lambda u, i: lax.scatter_sub(np.zeros((4, 3), np.float32), i, u, _ROWS),
                    args_of(rand((5, 3)), _indices((5, 1), 4)),
                    lambda u, i: _np_scatter_rows(np.subtract)(np.zeros((4, 3), np.float32), i,
                                                               u),
                    linear=True),
    _scatter_record("batching_dims_f32", "scatter-sub",
                    _rows(lax.scatter_sub, SDN((), (1,), (1,), (0,), (0,))),
                    args_of(rand((3, 4)), _indices((3, 2, 1), 4), rand((3, 2))),
                    lambda x, i, u: _batched_add_ref(x, i, -u)),
]


def _batched_add_ref(x, idx, u):
  out = np.array(x, copy=True)
  for b in range(x.shape[0]):
    np.add.at(out[b], idx[b, :, 0], u[b])
  return out


def _positive_rows(shape):
  return rand(shape, np.float32, 0.5, 2.0)


_SCATTER_MUL = [
    _scatter_record("unique_f32", "scatter-mul", _rows(lax.scatter_mul, unique_indices=True),
                    args_of(rand((5, 2)), _unique_indices(3, 5), _positive_rows((3, 2))),
                    _np_scatter_rows(np.multiply), linear=True),
    _scatter_record("repeated_i32", "scatter-mul", _rows(lax.scatter_mul),
                    args_of(rand((4, 2), np.int32), _indices((5, 1), 4), rand((5, 2), np.int32)),
                    _np_scatter_rows(np.multiply), dtype=np.int32),
]


def _separated(shape, offset):
  """Floats on a grid shifted by `offset`, so operand and update values never tie."""
  return lambda rng: (rng.permutation(40)[:int(np.prod(shape))].reshape(shape) * 0.25
                      + offset).astype(np.float32)


_SCATTER_MINMAX = [
    _scatter_record("repeated_f32", "scatter-min", _rows(lax.scatter_min),
                    args_of(_separated((5, 2), 0.0), _indices((4, 1), 5),
                            _separated((4, 2), 0.1)), _np_scatter_rows(np.minimum)),
    _scatter_record("repeated_f32", "scatter-max", _rows(lax.scatter_max),
                    args_of(_separated((5, 2), 0.0), _indices((4, 1), 5),
                            _separated((4, 2), 0.1)), _np_scatter_rows(np.maximum)),
    _scatter_record("i32", "scatter-max", _rows(lax.scatter_max, _POINTS),
                    args_of(rand((3, 3), np.int32), _indices((4, 2), 3), rand((4,), np.int32)),
                    _np_scatter_points(np.maximum), dtype=np.int32),
    _scatter_record("nan_wins_f32", "scatter-min", _rows(lax.scatter_min),
                    args_of(lambda rng: np.array([[1.0, np.nan], [2.0, 3.0]], np.float32),
                            lambda rng: np.array([[1], [0]], np.int32),
                            lambda rng: np.array([[np.nan, 0.5], [0.0, 9.0]], np.float32)),
                    _np_scatter_rows(np.minimum), grad_order=0),
]



def _has_integer_args(record):
  args = record.args(np.random.default_rng(0))
  return any(not np.issubdtype(np.asarray(a).dtype, np.inexact) for a in args)


def _first_order_with_index_args(records):
  """Records with integer index arguments run the generic check_grads at order 1: at order 2
  it would finite-difference the float0 cotangents of the indices. test_slicing.py checks their
  second order with the indices closed over (SECOND_ORDER_CLOSED_OVER)."""
  out = []
  for r in records:
    if r.grad_order == 2 and _has_integer_args(r):
      r = dataclasses.replace(r, grad_order=1)
      SECOND_ORDER_CLOSED_OVER.append(r)
    out.append(r)
  return out


SECOND_ORDER_CLOSED_OVER = []
RECORDS = _first_order_with_index_args(
    _SLICE + _DYNAMIC_SLICE + _DYNAMIC_UPDATE_SLICE + _GATHER + _SCATTER + _SCATTER_ADD
    + _SCATTER_SUB + _SCATTER_MUL + _SCATTER_MINMAX)
