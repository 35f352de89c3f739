"""Op records for the window reductions: reduce_window_sum/max/min (through `reduce_window`),
the generic (and variadic) reduce_window, select_and_gather_add and select_and_scatter_add.

The references loop over windows and window positions one element at a time, with XLA's
semantics: each window folds its operand elements into the init value; padding and
base-dilation holes are skipped. Edge cases: (lo, hi) pairs (negative ones too), 'SAME',
strides, base and window dilation, 4-d operands, integer/bool/bf16 dtypes, NaNs, windows of
padding only, empty operands. Inputs of max/min records with gradients are distinct values far
apart (no ties), and their padding never makes a window of padding only (an infinite output).
"""
import ml_dtypes
import numpy as np

import revax.lax as lax
from revax._src.lax import windowed
from tests.lax.op_db import OpRecord, args_of, rand

_bf16 = ml_dtypes.bfloat16


# --- references ----------------------------------------------------------------------------------
def _pads(shape, window, strides, padding, window_dilation):
  if not isinstance(padding, str):
    return [tuple(p) for p in padding]
  if padding == "VALID":
    return [(0, 0)] * len(shape)
  pads = []
  for n, w, s, r in zip(shape, window, strides, window_dilation):
    w = (w - 1) * r + 1
    total = max((-(-n // s) - 1) * s + w - n, 0)
    pads.append((total // 2, total - total // 2))
  return pads


def window_positions(shape, window, strides, padding, base_dilation=None, window_dilation=None):
  """(output shape, fn(out_index) -> list of operand indices or None for padding/holes, in the
  window's row-major order): the geometry of a window reduction, element by element."""
  nd = len(shape)
  base_dilation = base_dilation or (1,) * nd
  window_dilation = window_dilation or (1,) * nd
  pads = _pads(shape, window, strides, padding, window_dilation)
  dilated = [0 if n == 0 else (n - 1) * b + 1 for n, b in zip(shape, base_dilation)]
  out_shape = []
  for d, (lo, hi), w, s, r in zip(dilated, pads, window, strides, window_dilation):
    padded, span = d + lo + hi, (w - 1) * r + 1
    out_shape.append(0 if padded < span or padded == 0 else (padded - span) // s + 1)

  def positions(j):
    res = []
    for k in np.ndindex(*window):
      idx = []
      for ji, ki, s, r, (lo, _), d, b in zip(j, k, strides, window_dilation, pads, dilated,
                                             base_dilation):
        p = ji * s + ki * r - lo
        idx.append(p // b if 0 <= p < d and p % b == 0 else None)
      res.append(None if None in idx else tuple(idx))
    return res

  return tuple(out_shape), positions


def np_reduce_window(x, init, op, window, strides, padding, base_dilation=None,
                     window_dilation=None):
  """Fold `op` over each window's elements, from `init` (accumulating 16-bit floats in f32)."""
  x = np.asarray(x)
  acc_dtype = np.float32 if x.dtype in (np.float16, _bf16) else x.dtype
  out_shape, positions = window_positions(x.shape, window, strides, padding, base_dilation,
                                          window_dilation)
  out = np.empty(out_shape, acc_dtype)
  with np.errstate(all="ignore"):
    for j in np.ndindex(*out_shape):
      acc = np.asarray(init, acc_dtype)
      for p in positions(j):
        if p is not None:
          acc = op(acc, x[p].astype(acc_dtype))
      out[j] = acc
  return out.astype(x.dtype)


def np_select_and_gather_add(t, x, select, window, strides, padding, base_dilation=None,
                             window_dilation=None):
  """The tangent of the first element of each window that `select` (>= or <=) prefers to all
  others, starting from (identity, 0)."""
  identity = -np.inf if select is np.greater_equal else np.inf
  out_shape, positions = window_positions(x.shape, window, strides, padding, base_dilation,
                                          window_dilation)
  out = np.zeros(out_shape, t.dtype)
  for j in np.ndindex(*out_shape):
    best_x, best_t = identity, 0.0
    for p in positions(j):
      if p is not None and not select(best_x, x[p]):
        best_x, best_t = x[p], t[p]
    out[j] = best_t
  return out


def np_select_and_scatter_add(source, x, select, window, strides, padding, window_dilation=None):
  """Add each source value at the first element of its window that `select` prefers to all
  others (padding holds the identity and may be selected, dropping the value)."""
  identity = -np.inf if select is np.greater_equal else np.inf
  out_shape, positions = window_positions(x.shape, window, strides, padding, None,
                                          window_dilation)
  assert out_shape == source.shape, (out_shape, source.shape)
  out = np.zeros(x.shape, source.dtype)
  for j in np.ndindex(*out_shape):
    best_x, best_p = None, None
    for p in positions(j):
      v = identity if p is None else x[p]
      if best_x is None or not select(best_x, v):
        best_x, best_p = v, p
    if best_p is not None:
      out[best_p] += source[j]
  return out


# --- input generators ----------------------------------------------------------------------------
def separated(shape, dtype=np.float32):
  """Distinct values at least 0.3 apart: finite differences never reorder them (no ties)."""
  def make(rng):
    n = int(np.prod(shape))
    x = (rng.permutation(n) - n / 2) * 0.4 + rng.uniform(0, 0.1, n)
    return x.reshape(shape).astype(dtype)
  return make


def _with_nans(shape):
  def make(rng):
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    x.reshape(-1)[::5] = np.nan
    return x
  return make


# --- records -------------------------------------------------------------------------------------
_MONOIDS = {"sum": (lax.add, 0.0, np.add), "max": (lax.max, -np.inf, np.maximum),
            "min": (lax.min, np.inf, np.minimum)}
_PRIMS = {"sum": "reduce_window_sum", "max": "reduce_window_max", "min": "reduce_window_min"}


def _rec(kind, tag, make, window, strides, padding, base=None, wdil=None, **kw):
  op, init, np_op = _MONOIDS[kind]
  kw.setdefault("linear", kind == "sum")
  return OpRecord(
      f"reduce_window_{kind}_{tag}", _PRIMS[kind],
      lambda x: lax.reduce_window(x, init, op, window, strides, padding, base, wdil),
      args_of(make),
      lambda x: np_reduce_window(x, _np_identity(kind, x.dtype), np_op, window, strides, padding,
                                 base, wdil), **kw)


def _np_identity(kind, dtype):
  if kind == "sum":
    return np.zeros((), dtype)
  if dtype == np.bool_:
    return np.bool_(kind == "min")
  if np.issubdtype(dtype, np.integer):
    info = np.iinfo(dtype)
    return np.asarray(info.min if kind == "max" else info.max, dtype)
  return np.asarray(-np.inf if kind == "max" else np.inf, np.float32)


_PAIRS_2D = [(0, 3), (1, 2)]
_PAIRS_4D = [(0, 1), (1, 0), (2, 3), (0, 2)]
_PAIRS_4D_NO_EMPTY = [(0, 0), (1, 0), (1, 1), (0, 0)]  # no window of padding only (max/min grads)

_SUM = [
    _rec("sum", "pairs", rand((4, 6)), (2, 2), (1, 1), _PAIRS_2D),
    _rec("sum", "same_strided", rand((4, 6)), (3, 2), (2, 1), "SAME"),
    _rec("sum", "dilated", rand((4, 6)), (2, 2), (1, 2), [(1, 0), (0, 1)], (2, 1), (1, 2)),
    _rec("sum", "negative_padding", rand((5, 6)), (2, 3), (2, 1), [(-1, 1), (0, -2)]),
    _rec("sum", "4d", rand((3, 2, 4, 6)), (1, 2, 2, 1), (1, 1, 2, 1), _PAIRS_4D),
    _rec("sum", "window_larger_than_padded", rand((2, 3)), (3, 1), (1, 1), [(0, 0), (0, 0)]),
    _rec("sum", "cumulative", rand((7,)), (7,), (1,), [(6, 0)]),
    _rec("sum", "i32", rand((4, 6), np.int32, -5, 5), (2, 3), (1, 2), [(1, 1), (2, 0)],
         grad_order=0, linear=False),
    _rec("sum", "bf16", rand((4, 6), _bf16), (2, 2), (2, 2), "SAME", grad_order=0,
         linear=False),
    _rec("sum", "empty_operand", rand((0, 3)), (2, 1), (1, 1), [(1, 2), (0, 0)], grad_order=0),
]

_MAX = [
    _rec("max", "pairs", separated((4, 6)), (2, 2), (1, 1), [(1, 0), (0, 1)]),
    _rec("max", "same_strided", separated((4, 6)), (3, 2), (2, 1), "SAME"),
    _rec("max", "base_dilation", separated((4, 6)), (2, 2), (1, 1), [(0, 1), (1, 0)], (2, 2)),
    _rec("max", "window_dilation", separated((4, 6)), (2, 2), (1, 2), [(1, 0), (0, 1)],
         None, (2, 2)),
    _rec("max", "negative_padding", separated((5, 6)), (2, 3), (2, 1), [(-1, 1), (0, -2)]),
    _rec("max", "4d", separated((3, 2, 4, 6)), (1, 2, 2, 1), (1, 1, 2, 1), _PAIRS_4D_NO_EMPTY),
    _rec("max", "4d_padding_only_windows", rand((3, 2, 4, 6)), (1, 2, 2, 1), (1, 1, 2, 1),
         _PAIRS_4D, grad_order=0),
    _rec("max", "padding_only_windows", rand((4, 6)), (2, 2), (1, 1), _PAIRS_2D, grad_order=0),
    _rec("max", "nan", _with_nans((4, 6)), (2, 2), (1, 2), "SAME", grad_order=0),
    _rec("max", "i32", rand((4, 6), np.int32, -5, 5), (2, 3), (1, 2), [(1, 1), (2, 0)],
         grad_order=0),
    _rec("max", "bool", rand((4, 6), np.bool_), (2, 2), (1, 1), [(1, 0), (0, 1)], grad_order=0),
    _rec("max", "bf16", rand((4, 6), _bf16), (3, 2), (1, 2), "SAME", grad_order=0),
]

_MIN = [
    _rec("min", "pairs", separated((4, 6)), (2, 2), (1, 1), [(1, 0), (0, 1)]),
    _rec("min", "strided_dilated", separated((4, 6)), (3, 2), (2, 1), [(1, 1), (0, 1)], (1, 2),
         (2, 1)),
    _rec("min", "4d", separated((3, 2, 4, 6)), (1, 2, 2, 1), (1, 1, 2, 1), _PAIRS_4D_NO_EMPTY),
    _rec("min", "u8", rand((4, 6), np.uint8, 0, 255), (2, 2), (1, 1), [(1, 0), (0, 1)],
         grad_order=0),
]


# generic computations (reverse mode is not supported: grad_order 0; forward mode is checked in
# test_windowed.py)
def _generic(tag, make, init, op, np_op, window, strides, padding, base=None, wdil=None, **kw):
  return OpRecord(
      f"reduce_window_generic_{tag}", "reduce_window",
      lambda x: lax.reduce_window(x, init, op, window, strides, padding, base, wdil),
      args_of(make),
      lambda x: np_reduce_window(x, init, np_op, window, strides, padding, base, wdil),
      grad_order=0, **kw)


def _argmax_pair(a, b):
  (va, ia), (vb, ib) = a, b
  pick_a = lax.bitwise_or(lax.gt(va, vb), lax.bitwise_and(lax.eq(va, vb), lax.lt(ia, ib)))
  return lax.select_n(pick_a, vb, va), lax.select_n(pick_a, ib, ia)


def _np_window_argmax(x, window, strides, padding):
  out_shape, positions = window_positions(x.shape, window, strides, padding)
  flat = np.arange(x.size).reshape(x.shape)
  out = np.full(out_shape, -1, np.int32)
  for j in np.ndindex(*out_shape):
    best = None
    for p in positions(j):
      if p is not None and (best is None or x[p] > x[best]):
        best = p
    out[j] = -1 if best is None else flat[best]
  return out


def _windowed_argmax(x):
  idx = lax.broadcasted_iota(np.int32, x.shape, 0) * x.shape[1] + \
      lax.broadcasted_iota(np.int32, x.shape, 1)
  _, i = lax.reduce_window((x, idx), (-np.inf, np.int32(-1)), _argmax_pair, (2, 3), (1, 2),
                           [(1, 0), (0, 1)])
  return i


_GENERIC = [
    _generic("mul", rand((4, 6), low=0.5, high=1.5), 1.0, lax.mul, np.multiply, (2, 2), (1, 1),
             _PAIRS_2D),
    _generic("mul_non_identity_init", rand((4, 6)), 2.0, lax.mul, np.multiply, (2, 3), (2, 1),
             [(1, 0), (0, 1)], (2, 1), (1, 2)),
    _generic("add_non_identity_init", rand((3, 2, 4, 6)), 1.0, lax.add, np.add, (1, 2, 2, 1),
             (1, 1, 2, 1), _PAIRS_4D),
    _generic("sub_lambda", rand((4, 6)), 0.5, lambda a, b: lax.sub(a, lax.mul(b, b)),
             lambda a, b: a - b * b, (3, 2), (1, 1), "SAME"),
    _generic("i32_bitwise_xor", rand((4, 6), np.int32, 0, 100), np.int32(0), lax.bitwise_xor,
             np.bitwise_xor, (2, 2), (1, 1), [(1, 0), (0, 1)]),
    OpRecord("reduce_window_generic_variadic_argmax", "reduce_window", _windowed_argmax,
             args_of(separated((4, 6))), lambda x: _np_window_argmax(x, (2, 3), (1, 2),
                                                                      [(1, 0), (0, 1)]),
             grad_order=0),
]


def _select_rec(prim_name, tag, select, make_t, make_x, window, strides, padding, base=None,
                wdil=None, **kw):
  select_prim = lax.ge_p if select is np.greater_equal else lax.le_p
  if prim_name == "select_and_gather_add":
    fun = lambda t, x: windowed.select_and_gather_add(t, x, select_prim, window, strides,
                                                      padding, base, wdil)
    ref = lambda t, x: np_select_and_gather_add(t, x, select, window, strides, padding, base,
                                                wdil)
  else:
    fun = lambda s, x: windowed.select_and_scatter_add(s, x, select_prim, window, strides,
                                                       padding, wdil)
    ref = lambda s, x: np_select_and_scatter_add(s, x, select, window, strides, padding, wdil)
  return OpRecord(f"{prim_name}_{tag}", prim_name, fun, args_of(make_t, make_x), ref,
                  linear=True, **kw)


_SELECT = [
    _select_rec("select_and_gather_add", "ge_pairs", np.greater_equal, rand((4, 6)),
                separated((4, 6)), (2, 2), (1, 1), [(1, 0), (0, 1)]),
    _select_rec("select_and_gather_add", "le_strided_dilated", np.less_equal, rand((4, 6)),
                separated((4, 6)), (3, 2), (2, 1), [(1, 1), (0, 1)], (2, 1), (1, 1)),
    _select_rec("select_and_gather_add", "ge_window_dilation", np.greater_equal, rand((4, 6)),
                separated((4, 6)), (2, 2), (1, 1), [(0, 0), (1, 1)], None, (2, 2)),
    _select_rec("select_and_scatter_add", "ge_pairs", np.greater_equal, rand((4, 6)),
                separated((4, 6)), (2, 2), (1, 1), [(1, 0), (0, 1)]),
    _select_rec("select_and_scatter_add", "le_strided", np.less_equal, rand((2, 6)),
                separated((4, 6)), (3, 2), (2, 1), [(1, 1), (0, 1)]),
    _select_rec("select_and_scatter_add", "ge_negative_padding", np.greater_equal, rand((2, 2)),
                separated((5, 6)), (2, 3), (2, 2), [(-1, 1), (0, -1)]),
    _select_rec("select_and_scatter_add", "le_window_dilation", np.less_equal, rand((2, 6)),
                separated((4, 6)), (2, 2), (1, 1), [(0, 0), (1, 1)], None, (2, 2)),
]

def _np_select_and_scatter(window, first_better, combine, init):
  """Each non-overlapping window's preferred element (the first max or min, padding none)
  receives the window's source value, combined into an output filled with `init`."""
  def ref(x, source):
    out = np.full(x.shape, init, x.dtype)
    for idx in np.ndindex(*source.shape):
      lo = [i * w for i, w in zip(idx, window)]
      block = x[tuple(slice(a, a + w) for a, w in zip(lo, window))]
      flat = np.argmax(block) if first_better is np.greater_equal else np.argmin(block)
      at = tuple(a + b for a, b in zip(lo, np.unravel_index(flat, block.shape)))
      out[at] = combine(out[at], source[idx])
    return out
  return ref


def _sas_rec(tag, select, first_better, scatter, combine, init, shape, window):
  from revax._src.lax.windowed import select_and_scatter
  out_shape = tuple(n // w for n, w in zip(shape, window))
  fun = lambda x, s: select_and_scatter(x, select, window, window, [(0, 0)] * len(shape), s,
                                        np.float32(init), scatter)
  return OpRecord(f"select_and_scatter_{tag}", "select_and_scatter", fun,
                  args_of(separated(shape), rand(out_shape)),
                  _np_select_and_scatter(window, first_better, combine, init), grad_order=0)


_SELECT_AND_SCATTER = [
    _sas_rec("ge_add", lax.ge, np.greater_equal, lax.add, np.add, 0.0, (4, 6), (2, 3)),
    _sas_rec("le_max", lax.le, np.less_equal, lax.max, np.maximum, -5.0, (6, 4), (3, 2)),
    _sas_rec("ge_mul_1d", lax.ge, np.greater_equal, lax.mul, np.multiply, 1.0, (8,), (2,)),
]

RECORDS = _SUM + _MAX + _MIN + _GENERIC + _SELECT + _SELECT_AND_SCATTER
