"""Op records for sort (one and several operands, several keys), sort_key_val, top_k and the
cumulative reductions. Edge cases: NaN and -0.0 keys, ties (stability), 0-d-free zero-size
shapes, integer wrap-around, k = 0, reverse scans, size-1 axes."""
import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

_bf16 = ml_dtypes.bfloat16


def _special_floats(shape, dtype=np.float32):
  """Uniform values with NaN, -0.0, 0.0, inf and -inf sprinkled in."""
  def make(rng):
    x = rng.uniform(-3, 3, shape).astype(dtype)
    flat = x.reshape(-1)
    specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 0.0, -0.0], dtype)
    pos = rng.choice(flat.size, min(flat.size, len(specials)), replace=False)
    flat[pos] = specials[:len(pos)]
    return x
  return make


def _separated(shape, dtype=np.float32):
  """Distinct values at least 0.3 apart: finite differences never reorder them (no near-ties)."""
  def make(rng):
    n = int(np.prod(shape))
    x = (rng.permutation(n) - n / 2) * 0.4 + rng.uniform(0, 0.1, n)
    return x.reshape(shape).astype(dtype)
  return make


def _distinct(shape, dtype=np.float32):
  """A random permutation of distinct values (no ties: any sort order is determined)."""
  def make(rng):
    return (rng.permutation(int(np.prod(shape))).reshape(shape) - 3).astype(dtype)
  return make


def _np_sort(x, axis=-1):
  return np.sort(x.astype(np.float32) if x.dtype in (_bf16, np.float16) else x, axis=axis,
                 kind="stable").astype(x.dtype)


def _np_sort_by(keys, axis=-1):
  """The stable permutation that sorts the keys lexicographically (first key primary)."""
  keys = [k.astype(np.float32) if k.dtype in (_bf16, np.float16) else k for k in keys]
  if len(keys) == 1:
    return np.argsort(keys[0], axis=axis, kind="stable")
  return np.lexsort(keys[::-1], axis=axis)


def _take(x, perm, axis=-1):
  return np.take_along_axis(x, perm, axis=axis)


# check_grads' second reverse-mode order differentiates a VJP whose integer inputs get float0
# cotangents, which its finite differences cannot take: records with integer arguments stop at 1.
_INT_ARGS = 1


def _sort_rec(tag, make, dimension=-1, dtype_grad=True, **kw):
  if not dtype_grad:
    kw.setdefault("grad_order", 0)
  return OpRecord(f"sort_{tag}", "sort", lambda x: lax.sort(x, dimension), args_of(make),
                  lambda x: _np_sort(x, dimension), **kw)


_SORT = [
    _sort_rec("f32_1d", _separated((9,))),
    _sort_rec("f32_rows", _separated((3, 6))),
    _sort_rec("f32_axis0", _separated((5, 3)), dimension=0),
    _sort_rec("f32_middle_axis", _separated((2, 4, 3)), dimension=1),
    _sort_rec("f32_nan_signed_zeros_inf", _special_floats((2, 9)), dtype_grad=False),
    _sort_rec("i32", rand((4, 7), np.int32, -5, 5), dtype_grad=False),
    _sort_rec("u8", rand((10,), np.uint8, 0, 255), dtype_grad=False),
    _sort_rec("bool", rand((3, 5), np.bool_), dtype_grad=False),
    _sort_rec("bf16", rand((2, 6), _bf16), dtype_grad=False),
    _sort_rec("f16_nan", _special_floats((8,), np.float16), dtype_grad=False),
    _sort_rec("zero_size", rand((0, 4)), dimension=1),
    _sort_rec("zero_size_sorted_axis", rand((3, 0)), dimension=1),
    _sort_rec("size_one_axis", rand((4, 1))),
    OpRecord("sort_c64", "sort", lambda x: lax.sort(x, 0),
             args_of(lambda rng: (rng.integers(-2, 3, 8) + 1j * rng.integers(-2, 3, 8))
                     .astype(np.complex64)), lambda x: np.sort(x, kind="stable"), grad_order=0),
    OpRecord("sort_two_operands_values", "sort",
             lambda k, v: lax.sort((k, v), num_keys=1)[1],
             args_of(rand((3, 8), np.int32, -2, 2), rand((3, 8))),
             lambda k, v: _take(v, _np_sort_by([k])), grad_order=_INT_ARGS),
    OpRecord("sort_two_operands_keys", "sort",
             lambda k, v: lax.sort((k, v), 0, num_keys=1)[0],
             args_of(_special_floats((6, 2)), rand((6, 2), np.int32)),
             lambda k, v: _take(k, _np_sort_by([k], 0), 0), grad_order=0),
    OpRecord("sort_two_keys", "sort",
             lambda k1, k2, v: lax.sort((k1, k2, v), num_keys=2)[2],
             args_of(rand((2, 10), np.int32, 0, 2), _special_floats((2, 10)), rand((2, 10))),
             lambda k1, k2, v: _take(v, _np_sort_by([k1, k2])), grad_order=0),
    OpRecord("sort_two_keys_second_key", "sort",
             lambda k1, k2: lax.sort((k1, k2), num_keys=2)[1],
             args_of(rand((12,), np.bool_), rand((12,), np.int32, -3, 3)),
             lambda k1, k2: _take(k2, _np_sort_by([k1, k2]))),
    OpRecord("sort_unstable_distinct_keys", "sort",
             lambda k, v: lax.sort((k, v), is_stable=False)[1],
             args_of(_distinct((3, 5)), rand((3, 5))), lambda k, v: _take(v, _np_sort_by([k]))),
    OpRecord("sort_key_val_values", "sort", lambda k, v: lax.sort_key_val(k, v)[1],
             args_of(rand((4, 6), np.int32, -3, 3), rand((4, 6))),
             lambda k, v: _take(v, _np_sort_by([k])), grad_order=_INT_ARGS),
    OpRecord("sort_key_val_keys", "sort", lambda k, v: lax.sort_key_val(k, v, 0)[0],
             args_of(_separated((5, 3)), rand((5, 3), np.int32)), lambda k, v: np.sort(k, axis=0),
             grad_order=_INT_ARGS),
]


def _np_total_order_desc(x, axis=-1):
  """Stable descending permutation in IEEE totalOrder (XLA's TopK order)."""
  if x.dtype.kind == "f" or x.dtype == _bf16:
    signed = np.dtype(f"i{x.dtype.itemsize}")
    bits = x.view(signed)
    key = bits ^ ((bits >> (8 * x.dtype.itemsize - 1)) & np.iinfo(signed).max)
  else:
    key = x.astype(np.int64)
  return np.argsort(-key.astype(np.int64), axis=axis, kind="stable")


def _np_top_k(k, axis=-1, part=0):
  def ref(x):
    perm = np.take(_np_total_order_desc(x, axis), np.arange(k), axis=axis)
    return _take(x, perm, axis) if part == 0 else perm.astype(np.int32)
  return ref


def _top_k_rec(tag, make, k, axis=-1, part=0, **kw):
  return OpRecord(f"top_k_{tag}_{'values' if part == 0 else 'indices'}", "top_k",
                  lambda x: lax.top_k(x, k, axis=axis)[part], args_of(make),
                  _np_top_k(k, axis, part), **kw)


_TOP_K = [
    _top_k_rec("f32", _separated((3, 8)), 3),
    _top_k_rec("f32", rand((3, 8)), 3, part=1, grad_order=0),
    _top_k_rec("f32_specials", _special_floats((2, 9)), 9, grad_order=0),
    _top_k_rec("f32_specials", _special_floats((2, 9)), 4, part=1, grad_order=0),
    _top_k_rec("i32_ties", rand((4, 6), np.int32, -2, 2), 6, part=1),
    _top_k_rec("i32_ties", rand((4, 6), np.int32, -2, 2), 2),
    _top_k_rec("axis0_f32", _separated((5, 3)), 2, axis=0),
    _top_k_rec("k0", rand((4, 3)), 0),
    _top_k_rec("bf16", rand((7,), _bf16), 3, grad_order=0),
    _top_k_rec("u8", rand((7,), np.uint8, 0, 255), 7, part=1),
]


def _np_cum(fn, reverse):
  def ref(axis):
    def r(x):
      acc = np.float32 if x.dtype in (_bf16, np.float16) else x.dtype
      y = np.flip(x, axis) if reverse else x
      with np.errstate(all="ignore"):
        out = fn(y.astype(acc), axis=axis).astype(x.dtype)
      return np.flip(out, axis) if reverse else out
    return r
  return ref


def _cum_rec(name, np_fn, tag, make, axis=0, reverse=False, **kw):
  fn = getattr(lax, name)
  return OpRecord(f"{name}_{tag}", name, lambda x: fn(x, axis, reverse), args_of(make),
                  _np_cum(np_fn, reverse)(axis if axis >= 0 else axis + 2), **kw)


def _cumsum_np(x, axis):
  return np.cumsum(x, axis=axis, dtype=x.dtype)


def _logaddexp_np(x, axis):
  """np.logaddexp.accumulate in float64."""
  return np.logaddexp.accumulate(x.astype(np.float64), axis=axis).astype(x.dtype)


def _cumprod_np(x, axis):
  return np.cumprod(x, axis=axis, dtype=x.dtype)


_CUM = [
    _cum_rec("cumsum", _cumsum_np, "f32", rand((5, 3)), linear=True),
    _cum_rec("cumsum", _cumsum_np, "f32_axis1_reverse", rand((3, 6)), 1, True, linear=True),
    _cum_rec("cumsum", _cumsum_np, "f32_negative_axis", rand((3, 4)), -1, linear=True),
    _cum_rec("cumsum", _cumsum_np, "i32_wraps", rand((6,), np.int32, 2**29, 2**30), grad_order=0),
    _cum_rec("cumsum", _cumsum_np, "zero_size", rand((0, 3)), linear=True),
    _cum_rec("cumsum", _cumsum_np, "size_one_axis", rand((1, 3)), linear=True),
    _cum_rec("cumsum", _cumsum_np, "f16", rand((6, 2), np.float16), rtol=1e-2, atol=1e-2),
    _cum_rec("cumsum", _cumsum_np, "c64", rand((5,), np.complex64), grad_order=0, linear=True),
    _cum_rec("cumprod", _cumprod_np, "f32", rand((5, 3), low=0.5, high=1.5)),
    _cum_rec("cumprod", _cumprod_np, "f32_with_zeros_reverse",
             lambda rng: np.where(rng.random((6,)) < 0.3, 0, rng.uniform(-2, 2, 6))
             .astype(np.float32), 0, True),
    _cum_rec("cumprod", _cumprod_np, "i32_reverse", rand((3, 5), np.int32, -4, 4), 1, True),
    _cum_rec("cummax", np.maximum.accumulate, "f32", _separated((6, 3))),
    _cum_rec("cummax", np.maximum.accumulate, "f32_nan", _special_floats((9,)), grad_order=0),
    _cum_rec("cummax", np.maximum.accumulate, "i32_reverse", rand((3, 7), np.int32, -9, 9), 1,
             True),
    _cum_rec("cummax", np.maximum.accumulate, "u8", rand((8,), np.uint8, 0, 255)),
    _cum_rec("cummin", np.minimum.accumulate, "f32_reverse", _separated((4, 5)), 1, True),
    _cum_rec("cummin", np.minimum.accumulate, "f32_nan", _special_floats((3, 4)), 1,
             grad_order=0),
    _cum_rec("cummin", np.minimum.accumulate, "i8", rand((7,), np.int8, -100, 100)),
    _cum_rec("cumlogsumexp", _logaddexp_np, "f32", rand((5, 3))),
    _cum_rec("cumlogsumexp", _logaddexp_np, "f32_axis1_reverse", rand((3, 6), low=-30, high=30),
             1, True),
    _cum_rec("cumlogsumexp", _logaddexp_np, "f32_negative_axis", rand((2, 4)), -1),
    _cum_rec("cumlogsumexp", _logaddexp_np, "f32_neg_inf",
             lambda rng: np.where(rng.random((3, 5)) < 0.3, -np.inf, rng.uniform(-3, 3, (3, 5)))
             .astype(np.float32), 1, grad_order=0),
    _cum_rec("cumlogsumexp", _logaddexp_np, "zero_size", rand((0, 3))),
    _cum_rec("cumlogsumexp", _logaddexp_np, "f16", rand((6, 2), np.float16), rtol=2e-2,
             atol=2e-2),
]

def _np_approx(k, axis, largest, part):
  """The exact k extreme values (descending for the largest, ascending for the smallest; ties to
  the lower index) or their indices, along `axis`."""
  def ref(x):
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return (np.take_along_axis(x, idx, axis) if part == 0 else idx.astype(np.int32))
  return ref


def _approx_rec(tag, largest, make, k, axis=-1, part=0, np_axis=None, **kw):
  fn = lax.approx_max_k if largest else lax.approx_min_k
  name = f"approx_{'max' if largest else 'min'}_k_{tag}_{'values' if part == 0 else 'indices'}"
  return OpRecord(name, "approx_top_k", lambda x: fn(x, k, reduction_dimension=axis)[part],
                  args_of(make), _np_approx(k, axis if np_axis is None else np_axis, largest,
                                            part), **({"grad_order": 0} if part else {}), **kw)


_APPROX = [
    _approx_rec("f32", True, _separated((3, 7)), 3),
    _approx_rec("f32", True, _separated((3, 7)), 3, part=1),
    _approx_rec("f32_axis0", False, _separated((6, 4)), 2, axis=0),
    _approx_rec("f32_axis0", False, _separated((6, 4)), 2, axis=0, part=1),
    _approx_rec("f32_1d_all", True, _separated((5,)), 5),
    _approx_rec("bf16", False, rand((2, 9), ml_dtypes.bfloat16), 4, part=1, np_axis=-1),
]

RECORDS = _SORT + _TOP_K + _CUM + _APPROX
