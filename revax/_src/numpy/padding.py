"""numpy.pad with every NumPy mode: constant, empty, edge, wrap, reflect, symmetric,
linear_ramp, maximum, minimum, mean, median, and a user function.

Each axis is padded in turn (NumPy's order), with static pad widths; the padded values are
slices, reversals and reductions of the input, so gradients flow to the elements they copy.
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.trace import Tracer
from revax._src.numpy import util
from revax._src.numpy.util import aval_of

_MODES = ("constant", "empty", "edge", "wrap", "reflect", "symmetric", "linear_ramp", "maximum",
          "minimum", "mean", "median")


def _shape(a):
  return aval_of(a).shape


def _pairs(value, nd, name):
  """`value` (scalar, (v,), (before, after) or one pair per axis) as nd (before, after) pairs."""
  if hasattr(value, "aval"):  # a revax array or tracer of values (constant_values, end_values)
    shape = value.aval.shape
    if shape == ():
      return [(value, value)] * nd
    if shape in ((1,), (1, 1)):
      v = lax.reshape(value, ())
      return [(v, v)] * nd
    if shape == (2,):
      return [(value[0], value[1])] * nd
    if shape == (1, 2):
      return [(value[0, 0], value[0, 1])] * nd
    if shape == (nd, 2):
      return [(value[i, 0], value[i, 1]) for i in range(nd)]
    raise ValueError(f"{name} has shape {shape}; expected (), (2,), (1, 2) or ({nd}, 2)")
  try:
    arr = np.broadcast_to(np.asarray(value).reshape(np.shape(value)), (nd, 2))
  except ValueError:
    raise ValueError(f"{name} given as {value!r} cannot be broadcast to ({nd}, 2)") from None
  return [tuple(row) for row in arr]


def _widths(pad_width, nd):
  if isinstance(pad_width, Tracer):
    raise TypeError("pad_width must be concrete (static) integers; got a traced value")
  pw = np.asarray(pad_width)
  if pw.dtype.kind not in "iu" and pw.size:
    raise TypeError(f"`pad_width` must be of integral type, got {pad_width!r}")
  try:
    pw = np.broadcast_to(pw, (nd, 2))
  except ValueError:
    raise ValueError(f"pad_width given as {pad_width!r} cannot be broadcast to ({nd}, 2)") from None
  if (pw < 0).any():
    raise ValueError(f"index can't contain negative values, got pad_width={pad_width!r}")
  return [(int(b), int(a)) for b, a in pw]


def _slice_axis(x, start, stop, axis):
  shape = _shape(x)
  starts, stops = [0] * len(shape), list(shape)
  starts[axis], stops[axis] = start, stop
  return lax.slice(x, starts, stops)


def _cat(parts, axis):
  parts = [p for p in parts if _shape(p)[axis] > 0] or parts[:1]
  return parts[0] if len(parts) == 1 else lax.concatenate(parts, axis)


def _full_block(x, axis, width, value):
  shape = list(_shape(x))
  shape[axis] = width
  v = lax.convert_element_type(util.as_array(value), aval_of(x).dtype)
  return util.broadcast_to(v, tuple(shape)) if _shape(v) == () else lax.broadcast_in_dim(
      lax.reshape(v, ()), tuple(shape), ())


def _pad_constant(x, axis, b, a, values):
  vb, va = values
  return _cat([_full_block(x, axis, b, vb), x, _full_block(x, axis, a, va)], axis)


def _repeat_edge(x, axis, width, at_end):
  n = _shape(x)[axis]
  edge = _slice_axis(x, n - 1, n, axis) if at_end else _slice_axis(x, 0, 1, axis)
  shape = list(_shape(x))
  shape[axis] = width
  return util.broadcast_to(edge, tuple(shape))


def _pad_wrap(x, axis, b, a):
  n = _shape(x)[axis]
  idx = np.arange(-b, n + a) % n
  from revax._src.numpy.indexing import take
  return take(x, util.as_array(idx.astype(dtypes.int32)), axis=axis)


def _pad_reflect(x, axis, b, a, symmetric, odd):
  """Reflect (or mirror, with `symmetric`) chunk by chunk, each relative to the current edge."""
  n0 = _shape(x)[axis]
  if n0 == 1 and not symmetric:
    return _cat([_repeat_edge(x, axis, b, False), x, _repeat_edge(x, axis, a, True)], axis)
  skip = 0 if symmetric else 1
  while b or a:
    n = _shape(x)[axis]
    period = n0 - skip
    parts = [x]
    if b:
      k = min(b, period)
      chunk = lax.rev(_slice_axis(x, skip, skip + k, axis), (axis,))
      if odd:
        edge = _slice_axis(x, 0, 1, axis)
        chunk = lax.sub(lax.mul(util.constant_like(x, 2), util.broadcast_to(edge, _shape(
            chunk))), chunk)
      parts.insert(0, chunk)
      b -= k
    if a:
      k = min(a, period)
      chunk = lax.rev(_slice_axis(x, n - skip - k, n - skip, axis), (axis,))
      if odd:
        edge = _slice_axis(x, n - 1, n, axis)
        chunk = lax.sub(lax.mul(util.constant_like(x, 2), util.broadcast_to(edge, _shape(
            chunk))), chunk)
      parts.append(chunk)
      a -= k
    x = _cat(parts, axis)
  return x


def _ramp(x, axis, width, end_value, at_end):
  """Values going linearly from `end_value` (outermost) towards the edge value."""
  if width == 0:
    return _full_block(x, axis, 0, 0)
  n = _shape(x)[axis]
  edge = _slice_axis(x, n - 1, n, axis) if at_end else _slice_axis(x, 0, 1, axis)
  shape = list(_shape(x))
  shape[axis] = width
  shape = tuple(shape)
  ftype = util.to_inexact_dtype(aval_of(x).dtype)
  edge = util.broadcast_to(lax.convert_element_type(edge, ftype), shape)
  end = util.broadcast_to(lax.convert_element_type(util.as_array(end_value), ftype), shape)
  frac = lax.div(lax.convert_element_type(lax.broadcasted_iota(dtypes.int32, shape, axis), ftype),
                 util.scalar_constant(width, ftype))
  if at_end:
    frac = lax.rev(frac, (axis,))
  ramp = lax.add(end, lax.mul(lax.sub(edge, end), frac))
  if dtypes.is_integer(aval_of(x).dtype):
    ramp = lax.floor(ramp)
  return lax.convert_element_type(ramp, aval_of(x).dtype)


def _stat(x, axis, width, length, at_end, mode):
  from revax._src.numpy import reductions
  from revax._src.numpy.ufuncs import round as _round
  n = _shape(x)[axis]
  length = n if length is None else max(1, min(int(length), n))
  part = _slice_axis(x, n - length, n, axis) if at_end else _slice_axis(x, 0, length, axis)
  if mode == "maximum":
    s = reductions.max(part, axis=axis, keepdims=True)
  elif mode == "minimum":
    s = reductions.min(part, axis=axis, keepdims=True)
  elif mode == "mean":
    s = reductions.mean(part, axis=axis, keepdims=True)
  else:
    from revax._src.numpy.statistics import median
    s = median(part, axis=axis, keepdims=True)
  if dtypes.is_integer(aval_of(x).dtype) and mode in ("mean", "median"):
    s = _round(s)
  s = lax.convert_element_type(s, aval_of(x).dtype)
  shape = list(_shape(x))
  shape[axis] = width
  return util.broadcast_to(s, tuple(shape))


def pad(array, pad_width, mode="constant", **kwargs):
  """`array` padded by `pad_width` elements before and after each axis.

  Args:
    array: the array.
    pad_width: an int, (before, after), or one (before, after) pair per axis (static).
    mode: 'constant' (constant_values=0), 'empty', 'edge', 'wrap', 'reflect' or 'symmetric'
      (reflect_type='even' or 'odd'), 'linear_ramp' (end_values=0), 'maximum', 'minimum',
      'mean', 'median' (stat_length=None), or a function `f(vector, iaxis_pad_width, iaxis,
      kwargs)` returning the padded vector.

  Returns:
    The padded array (same dtype).

  Example:
    >>> x = jnp.array([[1, 2, 3], [4, 5, 6]])
    >>> jnp.pad(x, ((1, 1), (0, 2)), mode="reflect")
    Array([[4, 5, 6, 5, 4],
           [1, 2, 3, 2, 1],
           [4, 5, 6, 5, 4],
           [1, 2, 3, 2, 1]], dtype=int32)
    >>> jnp.pad(jnp.array([1, 2]), 2, constant_values=9)
    Array([9, 9, 1, 2, 9, 9], dtype=int32)
  """
  util.check_arraylike("pad", array)
  x = util.as_array(array)
  nd = len(_shape(x))
  widths = _widths(pad_width, nd)
  allowed = {"constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
             "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
             "linear_ramp": {"end_values"}, "maximum": {"stat_length"},
             "minimum": {"stat_length"}, "mean": {"stat_length"}, "median": {"stat_length"}}
  if callable(mode):
    return _pad_with_function(x, widths, mode, kwargs)
  if mode not in allowed:
    raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
  extra = set(kwargs) - allowed[mode]
  if extra:
    raise ValueError(f"unsupported keyword arguments for mode '{mode}': {sorted(extra)}")
  if nd == 0:
    return x
  if mode in ("constant", "empty"):
    cv = kwargs.get("constant_values", 0)
    values = _pairs(cv, nd, "constant_values")
    for axis, ((b, a), vals) in enumerate(zip(widths, values, strict=True)):
      if b or a:
        x = _pad_constant(x, axis, b, a, vals)
    return x
  for axis, (b, a) in enumerate(widths):
    if not (b or a):
      continue
    n = _shape(x)[axis]
    if n == 0:
      raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or "
                       f"'empty'")
    if mode == "edge":
      x = _cat([_repeat_edge(x, axis, b, False), x, _repeat_edge(x, axis, a, True)], axis)
    elif mode == "wrap":
      x = _pad_wrap(x, axis, b, a)
    elif mode in ("reflect", "symmetric"):
      rt = kwargs.get("reflect_type", "even")
      if rt not in ("even", "odd"):
        raise ValueError(f"reflect_type must be 'even' or 'odd', got {rt!r}")
      x = _pad_reflect(x, axis, b, a, mode == "symmetric", rt == "odd")
    elif mode == "linear_ramp":
      ev = _pairs(kwargs.get("end_values", 0), nd, "end_values")[axis]
      x = _cat([_ramp(x, axis, b, ev[0], False), x, _ramp(x, axis, a, ev[1], True)], axis)
    else:
      sl = kwargs.get("stat_length")
      lengths = (None, None) if sl is None else _pairs(sl, nd, "stat_length")[axis]
      for ln in lengths:
        if ln is not None and operator.index(int(ln)) < 0:
          raise ValueError("stat_length must be non-negative")
      x = _cat([_stat(x, axis, b, lengths[0], False, mode), x,
                _stat(x, axis, a, lengths[1], True, mode)], axis)
  return x


def _pad_with_function(x, widths, fun, kwargs):
  from revax._src.numpy.functional import apply_along_axis
  x = pad(x, widths, mode="constant")
  for axis, w in enumerate(widths):
    x = apply_along_axis(lambda v, w=w, axis=axis: fun(v, w, axis, kwargs), axis, x)
  return x
