"""Numerical helpers over whole arrays: comparisons (allclose, array_equal, array_equiv),
convolve/correlate, interp, differences and integrals (diff, ediff1d, gradient, trapezoid,
unwrap), grids (meshgrid, indices, ix_, geomspace, logspace) and the array-API products matvec,
vecmat and vecdot.
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src import lax, tree_util
from revax._src.core import dtypes
from revax._src.core.trace import Tracer
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.numpy.util import convert_pytree_operands


def _shape(a):
  return aval_of(a).shape


def _slice_axis(x, start, stop, axis):
  shape = _shape(x)
  starts, stops = [0] * len(shape), list(shape)
  starts[axis], stops[axis] = start, stop
  return lax.slice(x, starts, stops)


# --- whole-array comparisons ---------------------------------------------------------------------
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
  """Whether every element of `a` is close to `b` (isclose); a 0-d bool array."""
  from revax._src.numpy.reductions import all as _all
  from revax._src.numpy.ufuncs import isclose
  if tree_util.is_array_leaf(a) or tree_util.is_array_leaf(b):  # typed keys: equality
    return a.array_equal(b) if tree_util.is_array_leaf(a) else b.array_equal(a)
  util.check_arraylike("allclose", a, b)
  return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
  """Whether `a1` and `a2` have the same shape and elements (NaNs equal if `equal_nan`)."""
  from revax._src.numpy.reductions import all as _all
  from revax._src.numpy.ufuncs import equal, isnan
  if tree_util.is_array_leaf(a1) or tree_util.is_array_leaf(a2):  # typed keys
    return a1.array_equal(a2) if tree_util.is_array_leaf(a1) else a2.array_equal(a1)
  a1, a2 = (np.asarray(a) if isinstance(a, (list, tuple)) else a for a in (a1, a2))  # as JAX
  util.check_arraylike("array_equal", a1, a2)
  if _shape(a1) != _shape(a2):
    return util.scalar_constant(False, dtypes.bool_)
  eq = equal(a1, a2)
  if equal_nan:
    eq = lax.bitwise_or(eq, lax.bitwise_and(isnan(a1), isnan(a2)))
  return _all(eq)


def array_equiv(a1, a2):
  """Whether `a1` and `a2` are equal after broadcasting to one shape."""
  from revax._src.numpy.reductions import all as _all
  from revax._src.numpy.ufuncs import equal
  a1, a2 = (np.asarray(a) if isinstance(a, (list, tuple)) else a for a in (a1, a2))  # as JAX
  util.check_arraylike("array_equiv", a1, a2)
  return _all(equal(a1, a2))


# --- convolution ---------------------------------------------------------------------------------
def _conv(fun_name, a, v, mode, precision, preferred_element_type):
  """jax's 1-D convolution (fun_name 'convolve') or cross-correlation ('correlate'): the longer
  operand is the convolution's lhs (a correlation swapped so is read backwards), the kernel
  flipped for a convolution and conjugated for a correlation, and the mode's padding given to
  the one conv_general_dilated (so its sharding rule sees what jax's sees)."""
  util.check_arraylike(fun_name, a, v)
  if aval_of(a).ndim != 1 or aval_of(v).ndim != 1:
    raise ValueError(f"{fun_name}() only support 1-dimensional inputs.")
  x, y = util.promote_args_inexact(fun_name, a, v)
  if _shape(x)[0] == 0 or _shape(y)[0] == 0:
    raise ValueError(f"{fun_name}: inputs cannot be empty, got shapes {_shape(x)} and "
                     f"{_shape(y)}.")
  backwards = False
  if fun_name == "correlate":
    if dtypes.is_complex(aval_of(y).dtype):
      y = lax.conj(y)
    if _shape(x)[0] < _shape(y)[0]:
      x, y, backwards = y, x, True
  else:
    if _shape(x)[0] < _shape(y)[0]:
      x, y = y, x
    y = lax.rev(y, (0,))
  n, m = _shape(x)[0], _shape(y)[0]
  if mode == "valid":
    padding = [(0, 0)]
  elif mode == "same":
    padding = [(m // 2, m - m // 2 - 1)]
  elif mode == "full":
    padding = [(m - 1, m - 1)]
  else:
    raise ValueError("mode must be one of ['full', 'same', 'valid']")
  out = lax.conv_general_dilated(lax.reshape(x, (1, 1, n)), lax.reshape(y, (1, 1, m)), (1,),
                                 padding, precision=precision,
                                 preferred_element_type=preferred_element_type)
  out = lax.reshape(out, _shape(out)[2:])
  return lax.rev(out, (0,)) if backwards else out


@util.jitted_as_in_jax(static_argnames=("mode", "precision", "preferred_element_type"))
def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
  """The discrete linear convolution of the 1-D arrays `a` and `v`.

  Args:
    mode: 'full' (length n + m - 1), 'same' (length max(n, m), centered) or 'valid' (only
      full overlaps).

  Example:
    >>> jnp.convolve(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
  """
  return _conv("convolve", a, v, mode, precision, preferred_element_type)


@util.jitted_as_in_jax(static_argnames=("mode", "precision", "preferred_element_type"))
def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
  """The cross-correlation of the 1-D arrays `a` and `v` (v conjugated), as NumPy defines it."""
  return _conv("correlate", a, v, mode, precision, preferred_element_type)


# --- interpolation -------------------------------------------------------------------------------
def interp(x, xp, fp, left=None, right=None, period=None):
  """Piecewise-linear interpolation of the points (xp, fp) at `x`, jax's algorithm (compiled,
  eagerly too, as jax's is; string/None bounds and a None period are static).

  Args:
    x: where to evaluate.
    xp: increasing 1-D x coordinates (or any order with `period`).
    fp: 1-D values at xp (real or complex), promoted on their own (not with x).
    left, right: values below xp[0] / above xp[-1] (default fp[0] / fp[-1]), or 'extrapolate'.
    period: make the coordinates periodic with this period.

  Returns:
    The interpolated values, of fp's inexact dtype promoted with the branch values.

  Example:
    >>> jnp.interp(jnp.array([0.5, 1.5, 9.0]), jnp.array([0., 1., 2.]), jnp.array([0., 10., 0.]))
    Array([5., 5., 0.], dtype=float32)
  """
  static = [n for n, v in (("left", left), ("right", right)) if isinstance(v, str) or v is None]
  if period is None:
    static.append("period")
  key = tuple(static)
  if key not in _INTERP_JITS:
    _INTERP_JITS[key] = util.jitted_as_in_jax(static_argnames=key)(_interp)
  return _INTERP_JITS[key](x, xp, fp, left=left, right=right, period=period)


_INTERP_JITS: dict = {}


def _interp(x, xp, fp, left=None, right=None, period=None):
  from revax._src.numpy.searching import searchsorted
  from revax._src.numpy.shape_ops import concatenate
  from revax._src.numpy.ufuncs import abs as _abs, add, divide, less_equal, multiply, remainder
  from revax._src.numpy.ufuncs import subtract, where
  util.check_arraylike("interp", x, xp, fp)
  if _shape(xp) != _shape(fp) or len(_shape(xp)) != 1:
    raise ValueError("xp and fp must be one-dimensional arrays of equal size")
  x_arr, xp_arr = util.promote_dtypes_inexact(util.as_array(x), util.as_array(xp))
  (fp_arr,) = util.promote_dtypes_inexact(util.as_array(fp))
  extrapolate = []
  for name, bound in (("left", left), ("right", right)):
    if isinstance(bound, str) and bound != "extrapolate":
      raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', but got: "
                       f"{bound!r}")
    extrapolate.append(isinstance(bound, str))
  if dtypes.is_complex(aval_of(x_arr).dtype):
    raise ValueError("jnp.interp: complex x values not supported.")
  if period is not None:
    if np.ndim(period) != 0:
      raise ValueError(f"period must be a scalar; got {period}")
    period = _abs(period)
    x_arr = remainder(x_arr, period)
    xp_arr = remainder(xp_arr, period)
    xp_arr, fp_arr = lax.sort_key_val(xp_arr, fp_arr)
    xp_arr = concatenate([subtract(xp_arr[-1:], period), xp_arr, add(xp_arr[:1], period)])
    fp_arr = concatenate([fp_arr[-1:], fp_arr, fp_arr[:1]])
  n = _shape(xp_arr)[0]
  ss = searchsorted(xp_arr, x_arr, side="right")
  i = lax.min(lax.max(ss, util.constant_like(ss, 1)), util.constant_like(ss, n - 1))  # jnp.clip
  im1 = lax.sub(i, util.constant_like(i, 1))
  df = subtract(fp_arr[i], fp_arr[im1])
  dx = subtract(xp_arr[i], xp_arr[im1])
  delta = subtract(x_arr, xp_arr[im1])
  epsilon = np.spacing(np.finfo(aval_of(xp_arr).dtype).eps)
  dx0 = less_equal(lax.abs(dx), epsilon)  # (jax: no NaN gradients where dx is small)
  f = where(dx0, fp_arr[im1], add(fp_arr[im1], multiply(divide(delta, where(dx0, 1, dx)), df)))
  if not extrapolate[0]:
    left_arr = fp_arr[0] if left is None else left
    if period is None:
      f = where(x_arr < xp_arr[0], left_arr, f)
  if not extrapolate[1]:
    right_arr = fp_arr[-1] if right is None else right
    if period is None:
      f = where(x_arr > xp_arr[-1], right_arr, f)
  return f


# --- differences and integrals -------------------------------------------------------------------
def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
  """The `n`-th discrete difference along `axis` (not_equal for bools), after joining
  `prepend`/`append` (broadcast to a's shape with length 1 along axis if scalar)."""
  from revax._src.numpy.shape_ops import concatenate
  util.check_arraylike("diff", a)
  a = util.as_array(a)
  n = operator.index(n)
  if n < 0:
    raise ValueError(f"order must be non-negative but got {n}")
  nd = aval_of(a).ndim
  if nd == 0:
    raise ValueError(f"diff requires input that is at least one dimensional; got {a!r}")
  axis = util.canonicalize_axis(axis, nd)
  parts = []
  for extra in (prepend, a, append):
    if extra is None:
      continue
    util.check_arraylike("diff", extra)
    extra = util.as_array(extra)
    if aval_of(extra).ndim == 0:
      shape = list(_shape(a))
      shape[axis] = 1
      extra = util.broadcast_to(extra, tuple(shape))
    parts.append(extra)
  if len(parts) > 1:
    a = concatenate(parts, axis)
  for _ in range(n):
    length = _shape(a)[axis]
    if length == 0:
      break
    hi, lo = _slice_axis(a, 1, length, axis), _slice_axis(a, 0, length - 1, axis)
    a = lax.ne(hi, lo) if dtypes.is_bool(aval_of(a).dtype) else lax.sub(hi, lo)
  return a


def ediff1d(ary, to_end=None, to_begin=None):
  """Differences of consecutive elements of the flattened `ary`, with optional values joined
  before and after."""
  from revax._src.numpy.shape_ops import concatenate, ravel
  util.check_arraylike("ediff1d", ary)
  a = ravel(ary)
  out = lax.sub(a[1:], a[:-1]) if _shape(a)[0] else a
  parts = []
  if to_begin is not None:
    util.check_arraylike("ediff1d", to_begin)
    parts.append(ravel(lax.convert_element_type(util.as_array(to_begin), aval_of(a).dtype)))
  parts.append(out)
  if to_end is not None:
    util.check_arraylike("ediff1d", to_end)
    parts.append(ravel(lax.convert_element_type(util.as_array(to_end), aval_of(a).dtype)))
  return concatenate(parts, 0) if len(parts) > 1 else out


def gradient(f, *varargs, axis=None, edge_order=None):
  """The gradient of sampled `f`: central differences inside, one-sided at the edges.

  Args:
    f: the samples.
    *varargs: the spacing: none (1), one scalar for all axes, or one scalar or coordinate array
      per axis.
    axis: None (every axis), an int or a sequence of ints.
    edge_order: must be None (only first-order edges, as in JAX).

  Returns:
    One array per axis (a list), or one array for a single axis.
  """
  if edge_order is not None:
    raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
  # promoted with the spacings, as jax's (a float32 spacing makes a float16 f float32)
  util.check_arraylike("gradient", f, *varargs)
  f, *promoted = util.promote_dtypes_inexact(f, *varargs)
  varargs = tuple(promoted)
  nd = aval_of(f).ndim
  axes = util.canonicalize_axes(axis, nd)
  single = axis is not None and not isinstance(axis, (tuple, list))
  if not varargs:
    spacing = [1.0] * len(axes)
  elif len(varargs) == 1 and _ndim_of(varargs[0]) == 0:
    spacing = [varargs[0]] * len(axes)
  elif len(varargs) == len(axes):
    spacing = list(varargs)
  else:
    raise TypeError("Invalid number of spacing arguments")
  out = []
  for ax, h in zip(axes, spacing, strict=True):
    n = _shape(f)[ax]
    if n < 2:
      raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                       "(edge_order + 1) elements are required.")
    out.append(_gradient_axis(f, ax, h, n))
  return out[0] if single or len(out) == 1 else out


def _ndim_of(v):
  return v.aval.ndim if hasattr(v, "aval") else np.ndim(v)


def _gradient_axis(f, ax, h, n):
  from revax._src.numpy.shape_ops import concatenate
  nd = aval_of(f).ndim

  def along(v):  # a 1-D array along axis `ax`, shaped to broadcast against f
    shape = [1] * nd
    shape[ax] = _shape(v)[0]
    return lax.reshape(v, tuple(shape))

  fd = aval_of(f).dtype
  if _ndim_of(h) == 1:
    x = lax.convert_element_type(util.as_array(h), fd)
    if _shape(x)[0] != n:
      raise ValueError("when 1d, distances must match the length of the corresponding dimension")
    dx = lax.sub(x[1:], x[:-1])
    first = lax.div(lax.sub(_slice_axis(f, 1, 2, ax), _slice_axis(f, 0, 1, ax)), along(dx[:1]))
    last = lax.div(lax.sub(_slice_axis(f, n - 1, n, ax), _slice_axis(f, n - 2, n - 1, ax)),
                   along(dx[n - 2:]))
    if n == 2:
      return concatenate([first, last], ax)
    h1, h2 = along(dx[:-1]), along(dx[1:])
    fm, f0, fp = (_slice_axis(f, 0, n - 2, ax), _slice_axis(f, 1, n - 1, ax),
                  _slice_axis(f, 2, n, ax))
    inner = lax.div(lax.add(lax.sub(lax.mul(lax.mul(h1, h1), fp), lax.mul(lax.mul(h2, h2), fm)),
                            lax.mul(lax.sub(lax.mul(h2, h2), lax.mul(h1, h1)), f0)),
                    lax.mul(lax.mul(h1, h2), lax.add(h1, h2)))
    return concatenate([first, inner, last], ax)
  h = util.as_array(h)
  h = lax.convert_element_type(h, fd, aval_of(h).weak_type)  # (the default 1.0 is weak)
  first = lax.div(lax.sub(_slice_axis(f, 1, 2, ax), _slice_axis(f, 0, 1, ax)), h)
  last = lax.div(lax.sub(_slice_axis(f, n - 1, n, ax), _slice_axis(f, n - 2, n - 1, ax)), h)
  if n == 2:
    return concatenate([first, last], ax)
  inner = lax.div(lax.sub(_slice_axis(f, 2, n, ax), _slice_axis(f, 0, n - 2, ax)),
                  lax.mul(util.constant_like(h, 2), h))
  return concatenate([first, inner, last], ax)


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
  """The integral of `y` along `axis` by the trapezoidal rule (sample points `x`, or spacing
  `dx`)."""
  from revax._src.numpy.reductions import sum as _sum
  from revax._src.numpy.shape_ops import moveaxis
  util.check_arraylike("trapezoid", y)
  if x is None:
    (y,) = util.promote_args_inexact("trapezoid", y)
    d = lax.convert_element_type(util.as_array(dx), aval_of(y).dtype)
  else:
    util.check_arraylike("trapezoid", x)
    y, x = util.promote_args_inexact("trapezoid", y, x)
    if aval_of(x).ndim == 1:
      d = diff(x)
    else:
      d = moveaxis(diff(x, axis=axis), axis, -1)
  y = moveaxis(y, axis, -1)
  n = _shape(y)[-1]
  avg = lax.mul(lax.add(_slice_axis(y, min(1, n), n, aval_of(y).ndim - 1),
                        _slice_axis(y, 0, max(n - 1, 0), aval_of(y).ndim - 1)),
                util.constant_like(y, 0.5))
  return _sum(lax.mul(avg, util.broadcast_to(d, _shape(avg)) if aval_of(d).ndim else d), axis=-1)


def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
  """`p` with jumps larger than `discont` (default period/2) along `axis` replaced by their
  complement modulo `period`."""
  from revax._src.numpy.shape_ops import concatenate
  from revax._src.numpy.ufuncs import remainder
  util.check_arraylike("unwrap", p)
  (p,) = util.promote_args_inexact("unwrap", p)
  if dtypes.is_complex(aval_of(p).dtype):
    raise ValueError("jnp.unwrap does not support complex inputs.")
  nd = aval_of(p).ndim
  n = _shape(p)[axis]  # (an axis out of range, or a 0-d p: IndexError, as jax's)
  axis = util.canonicalize_axis(axis, nd)
  if n < 2:
    return p
  period = lax.convert_element_type(util.as_array(period), aval_of(p).dtype)
  half = lax.div(period, util.constant_like(period, 2))
  discont = half if discont is None else lax.convert_element_type(util.as_array(discont),
                                                                    aval_of(p).dtype)
  dd = diff(p, axis=axis)
  ddmod = lax.sub(remainder(lax.add(dd, half), period), half)
  ddmod = lax.select_n(lax.bitwise_and(lax.eq(ddmod, lax.neg(half)), lax.gt(dd, util.constant_like(
      dd, 0))), ddmod, util.broadcast_to(half, _shape(ddmod)))
  correction = lax.sub(ddmod, dd)
  correction = lax.select_n(lax.lt(lax.abs(dd), util.broadcast_to(discont, _shape(dd))),
                            correction, lax.full_like(correction, 0))
  cum = lax.cumsum(correction, axis)
  return concatenate([_slice_axis(p, 0, 1, axis), lax.add(_slice_axis(p, 1, n, axis), cum)], axis)


# --- grids ---------------------------------------------------------------------------------------
def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy"):
  """Coordinate arrays from 1-D coordinate vectors ('xy': Cartesian, 'ij': matrix indexing).

  Returns:
    A list of arrays, broadcast to the full grid unless `sparse`.
  """
  util.check_arraylike("meshgrid", *xi)
  if indexing not in ("xy", "ij"):
    raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
  args = [util.as_array(x) for x in xi]
  for x in args:
    if aval_of(x).ndim != 1:
      raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shape {_shape(x)}")
  if not args:
    return []
  shape = [_shape(x)[0] for x in args]
  if indexing == "xy" and len(args) >= 2:
    shape[0], shape[1] = shape[1], shape[0]
  out = []
  for i, x in enumerate(args):
    dim = i
    if indexing == "xy" and len(args) >= 2 and i < 2:
      dim = 1 - i
    if sparse:
      s = [1] * len(args)
      s[dim] = shape[dim]
      out.append(lax.reshape(x, tuple(s)))
    else:
      out.append(lax.broadcast_in_dim(x, tuple(shape), (dim,)))
  return out


def indices(dimensions, dtype=None, sparse: bool = False):
  """An array (or tuple of sparse arrays) whose i-th entry holds the i-th index of a grid of
  shape `dimensions`."""
  dims = util.canonicalize_shape(dimensions, "dimensions")
  dtype = util.canonical_dtype_arg(dtype) or dtypes.default_int_dtype()
  out = []
  for i, d in enumerate(dims):
    if sparse:
      s = [1] * len(dims)
      s[i] = d
      out.append(lax.reshape(lax.iota(dtype, d), tuple(s)))
    else:
      out.append(lax.broadcasted_iota(dtype, dims, i))
  if sparse:
    return tuple(out)
  if not out:
    return util.full_of((0,), 0, dtype)
  return lax.concatenate([lax.expand_dims(o, (0,)) for o in out], 0)


def ix_(*args):
  """An open mesh from 1-D sequences: arg i reshaped to have its length on axis i (for
  indexing cross products)."""
  util.check_arraylike("ix_", *args)
  n = len(args)
  out = []
  for i, a in enumerate(args):
    a = util.as_array(a)
    if aval_of(a).ndim != 1:
      raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {_shape(a)}")
    if dtypes.is_bool(aval_of(a).dtype):
      raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
    s = [1] * n
    s[i] = _shape(a)[0]
    out.append(lax.reshape(a, tuple(s)))
  return tuple(out)


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None,
             axis: int = 0):
  """`num` numbers spaced evenly on a log scale: base ** linspace(start, stop, num).

  As jax's (compiled, eagerly too): linspace in the inexact computation dtype, `base` raised to
  it with jnp.power (an array base broadcasts against the samples as they are), converted to
  `dtype`.

  Args:
    start, stop: the exponents of the first and last samples.
    num: the number of samples (static). endpoint: whether base ** stop is the last one.
    base: the base of the log space. dtype: the result dtype. axis: where the samples run.

  Returns:
    The samples.

  Example:
    >>> jnp.logspace(0., 2., 3)
    Array([  1.,  10., 100.], dtype=float32)
  """
  num = operator.index(util.concrete_scalar(num, "logspace", "num"))
  axis = operator.index(util.concrete_scalar(axis, "logspace", "axis"))
  return _logspace(start, stop, num=num, endpoint=bool(endpoint), base=base,
                   dtype=util.canonical_dtype_arg(dtype), axis=axis)


@util.jitted_as_in_jax(static_argnames=("num", "endpoint", "dtype", "axis"))
def _logspace(start, stop, num, endpoint, base, dtype, axis):
  from revax._src.numpy.creation import asarray, linspace
  from revax._src.numpy.ufuncs import power
  if dtype is None:
    dtype = util.to_inexact_dtype(util.result_type_of(start, stop)[0])
  computation_dtype = util.to_inexact_dtype(dtype)
  util.check_arraylike("logspace", start, stop)
  start = lax.convert_element_type(asarray(start), computation_dtype)
  stop = lax.convert_element_type(asarray(stop), computation_dtype)
  lin = linspace(start, stop, num, endpoint=endpoint, retstep=False, dtype=None, axis=axis)
  return lax.convert_element_type(power(base, lin), dtype)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
  """`num` numbers spaced evenly on a log scale between `start` and `stop`.

  As jax's (compiled, eagerly too): sign(start) * logspace(log10(start / sign),
  log10(stop / sign), base=10) along axis 0, then moved to `axis`; no check for zero bounds
  (they give inf/NaN samples, as in jax).

  Args:
    start, stop: the first and last samples.
    num: the number of samples (static). endpoint: whether `stop` is the last one.
    dtype: the result dtype. axis: where the samples run.

  Returns:
    The samples.

  Example:
    >>> jnp.geomspace(1., 100., 3)
    Array([  1.,  10., 100.], dtype=float32)
  """
  num = operator.index(util.concrete_scalar(num, "geomspace", "num"))
  axis = operator.index(util.concrete_scalar(axis, "geomspace", "axis"))
  return _geomspace(start, stop, num=num, endpoint=bool(endpoint),
                    dtype=util.canonical_dtype_arg(dtype), axis=axis)


@util.jitted_as_in_jax(static_argnames=("num", "endpoint", "dtype", "axis"))
def _geomspace(start, stop, num, endpoint, dtype, axis):
  from revax._src.numpy.creation import asarray
  from revax._src.numpy.ufuncs import divide, log10, multiply, sign
  if dtype is None:
    dtype = util.to_inexact_dtype(util.result_type_of(start, stop)[0])
  computation_dtype = util.to_inexact_dtype(dtype)
  util.check_arraylike("geomspace", start, stop)
  start = lax.convert_element_type(asarray(start), computation_dtype)
  stop = lax.convert_element_type(asarray(stop), computation_dtype)
  s = sign(start)
  res = multiply(s, logspace(log10(divide(start, s)), log10(divide(stop, s)), num,
                             endpoint=endpoint, base=10.0, dtype=computation_dtype, axis=0))
  ndim = aval_of(res).ndim
  axis = util.canonicalize_axis(axis, ndim)
  if axis != 0:
    res = lax.transpose(res, (*range(1, axis + 1), 0, *range(axis + 1, ndim)))
  return lax.convert_element_type(res, dtype)


# --- array-API products --------------------------------------------------------------------------
def matvec(x1, x2, /):
  """Batched matrix-vector product: (..., m, n) x (..., n) -> (..., m), as jax's: matmul
  vectorized over the signature (n,m),(m)->(n) (a 1-d x1 is a ValueError)."""
  from revax._src.numpy.contractions import matmul
  from revax._src.numpy.functional import vectorize
  util.check_arraylike("matvec", x1, x2)
  return vectorize(matmul, signature="(n,m),(m)->(n)")(x1, x2)


def vecmat(x1, x2, /):
  """Batched vector-matrix product with the vector conjugated: (..., n) x (..., n, m) ->
  (..., m)."""
  from revax._src.numpy.contractions import matmul
  from revax._src.numpy.functional import vectorize
  from revax._src.numpy.ufuncs import conj
  util.check_arraylike("vecmat", x1, x2)
  # (as jax's: matmul vectorized over (n),(n,m)->(m); a 1-d x2 is a ValueError)
  return vectorize(matmul, signature="(n),(n,m)->(m)")(conj(x1), x2)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
  """Batched vector dot product over `axis`, the first vector conjugated (array API)."""
  from revax._src.numpy.contractions import matmul
  from revax._src.numpy.shape_ops import moveaxis
  from revax._src.numpy.ufuncs import conj
  util.check_arraylike("vecdot", x1, x2)
  x1, x2 = util.as_array(x1), util.as_array(x2)
  if _shape(x1)[axis] != _shape(x2)[axis]:  # (an axis out of range: IndexError, as jax's)
    raise ValueError(f"axes must match; got shapes {_shape(x1)} and {_shape(x2)} with "
                     f"axis={axis}")
  a = moveaxis(conj(x1), axis, -1)
  b = moveaxis(x2, axis, -1)
  out = matmul(lax.expand_dims(a, (aval_of(a).ndim - 1,)), lax.expand_dims(b, (aval_of(b).ndim,)),
               precision=precision, preferred_element_type=preferred_element_type)
  return out[..., 0, 0]

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("diff", "ediff1d",))
