"""Order statistics and moments: quantile/percentile/median (and their NaN-ignoring forms),
average, cov and corrcoef.

Quantiles sort the reduced axes (flattened into one) and read the two order statistics around
the position q * (n - 1) with take_along_axis, so they differentiate through sort and gather and
work under jit and vmap. The NaN-ignoring forms count the non-NaN values of each slice (NaNs sort
last) and interpolate within them. As jax's, the six functions are jitted (eager calls compile
once per shape): XLA's rewrites of the fused program decide their values at infinities.
"""
from __future__ import annotations

import math

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.numpy.util import convert_pytree_operands

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _to_last_axis(a, axis):
  """(a with the reduced axes flattened into its last axis, kept-dims shape for keepdims)."""
  from revax._src.numpy.shape_ops import ravel
  shape = aval_of(a).shape
  if axis is None:
    return ravel(a), (1,) * len(shape)
  axes = util.canonicalize_axes(axis, len(shape))
  keep = [d for d in range(len(shape)) if d not in axes]
  a = lax.transpose(a, tuple(keep) + tuple(axes))
  rest = tuple(shape[d] for d in keep)
  a = lax.reshape(a, rest + (math.prod(shape[d] for d in axes),))
  return a, tuple(1 if d in axes else s for d, s in enumerate(shape))


def _quantile(fun_name, a, q, axis, method, keepdims, ignore_nan, weights=None,
              percent=False):
  """The quantile family's one computation, always compiled (`util.jitted_as_in_jax`), as jax's
  functions are jitted: XLA's rewrites of the fused program (q / 100 * (n - 1) reassociated)
  decide values at infinities, so running it op by op would differ from jax."""
  return _quantile_body(a, q, weights, fun_name=fun_name, axis=_static_axis(axis),
                        method=method, keepdims=keepdims, ignore_nan=ignore_nan, percent=percent)


def _static_axis(axis):
  return tuple(axis) if isinstance(axis, list) else axis


@util.jitted_as_in_jax(static_argnames=("fun_name", "axis", "method", "keepdims", "ignore_nan",
                                        "percent"))
def _quantile_body(a, q, weights, *, fun_name, axis, method, keepdims, ignore_nan, percent):
  from revax._src.numpy.indexing import take_along_axis
  from revax._src.numpy.reductions import any as _any, sum as _sum
  util.check_arraylike(fun_name, a, q)
  if percent:
    a, q = util.promote_args_inexact(fun_name, a, q)
    q = _percent(fun_name, q)
  if method not in _METHODS:
    raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' or "
                     "'inverted_cdf'")
  if weights is not None:
    util.check_arraylike(fun_name, weights)
    if method != "inverted_cdf":
      raise NotImplementedError(f"{method} doesn't support weights. Only method 'inverted_cdf' "
                                f"supports weights.")
    a, q, weights = util.promote_args_inexact(fun_name, a, q, weights)
    if aval_of(weights).shape != aval_of(a).shape:
      if axis is None:
        raise ValueError("Weights shape must match 'a' shape when axis is None.")
      axes = util.canonicalize_axes(axis, aval_of(a).ndim)
      weights = lax.broadcast_in_dim(weights, aval_of(a).shape, axes)
  else:
    a, q = util.promote_args_inexact(fun_name, a, q)
  if dtypes.is_complex(aval_of(a).dtype):
    raise ValueError("quantile does not support complex input, as the operation is poorly "
                     "defined.")
  q = util.as_array(q)
  if aval_of(q).ndim > 1:
    raise ValueError(f"q must be have rank <= 1, got shape {aval_of(q).shape}")
  dtype = aval_of(a).dtype
  flat, keep_shape = _to_last_axis(util.as_array(a), axis)
  rest = aval_of(flat).shape[:-1]
  n = aval_of(flat).shape[-1]
  nd = len(rest)
  if n == 0 and math.prod(rest) and aval_of(q).size and not ignore_nan and fun_name != "median":
    # NumPy raises here (JAX fails inside a gather); its median and nan-quantiles of nothing
    # are NaN.
    raise IndexError(f"{fun_name}: cannot take a quantile over an axis of length 0")
  qv = q if aval_of(q).ndim == 1 else lax.reshape(q, (1,))
  nq = aval_of(qv).shape[0]
  qb = lax.broadcast_in_dim(qv, rest + (nq,), (nd,))
  nan_mask = lax.ne(flat, flat)
  if weights is not None:
    wflat, _ = _to_last_axis(util.as_array(weights), axis)
    if ignore_nan:
      wflat = lax.select_n(nan_mask, wflat, lax.full_like(wflat, 0))
    flat, wflat = lax.sort((flat, wflat), dimension=nd, num_keys=1)
  else:
    flat = lax.sort(flat, dimension=nd)
  if ignore_nan:
    count = _sum(lax.bitwise_not(nan_mask), axis=-1, dtype=dtype, keepdims=True)
  else:
    count = util.full_of(rest + (1,), n, dtype)
  last = lax.max(lax.sub(count, util.constant_like(count, 1)), util.constant_like(count, 0))
  if method == "inverted_cdf":
    w = wflat if weights is not None else lax.convert_element_type(
        lax.bitwise_not(lax.ne(flat, flat)) if ignore_nan else
        util.full_of(aval_of(flat).shape, True, dtypes.bool_), dtype)
    cw = lax.cumsum(w, nd)
    total = lax.slice(cw, (0,) * nd + (n - 1,), rest + (n,)) if n else count
    target = lax.mul(qb, util.broadcast_to(total, rest + (nq,)))
    below = lax.lt(lax.broadcast_in_dim(cw, rest + (nq, n), tuple(range(nd)) + (nd + 1,)),
                   lax.broadcast_in_dim(target, rest + (nq, n), tuple(range(nd + 1))))
    idx = lax.reduce_sum(lax.convert_element_type(below, dtypes.int32), (nd + 1,))
    idx = lax.min(idx, lax.convert_element_type(util.broadcast_to(last, rest + (nq,)),
                                                dtypes.int32))
    result = take_along_axis(flat, idx, axis=-1)
  else:
    pos = lax.mul(qb, util.broadcast_to(last, rest + (nq,)))
    low = lax.floor(pos)
    high = lax.ceil(pos)
    lastb = util.broadcast_to(last, rest + (nq,))
    low = lax.clamp(util.constant_like(low, 0), low, lastb)
    high = lax.clamp(util.constant_like(high, 0), high, lastb)
    high_w = lax.sub(pos, low)
    if n == 0:
      result = util.full_of(rest + (nq,), np.nan, dtype)
    else:
      lo_v = take_along_axis(flat, lax.convert_element_type(low, dtypes.int32), axis=-1)
      hi_v = take_along_axis(flat, lax.convert_element_type(high, dtypes.int32), axis=-1)
      if method == "linear":
        result = lax.add(lax.mul(lo_v, lax.sub(util.constant_like(high_w, 1), high_w)),
                         lax.mul(hi_v, high_w))
      elif method == "lower":
        result = lo_v
      elif method == "higher":
        result = hi_v
      elif method == "nearest":
        result = lax.select_n(lax.le(high_w, util.constant_like(high_w, 0.5)), hi_v, lo_v)
      else:
        result = lax.mul(lax.add(lo_v, hi_v), util.constant_like(lo_v, 0.5))
  if ignore_nan:
    empty = util.broadcast_to(lax.eq(count, util.constant_like(count, 0)), rest + (nq,))
  else:
    empty = util.broadcast_to(_any(nan_mask, axis=-1, keepdims=True), rest + (nq,))
  result = lax.select_n(empty, result, lax.full_like(result, np.nan))
  result = lax.transpose(result, (nd,) + tuple(range(nd)))
  if keepdims:
    result = lax.reshape(result, (nq,) + keep_shape)
  if aval_of(q).ndim == 0:
    result = lax.reshape(result, aval_of(result).shape[1:])
  # (jax's quantiles are strongly typed whatever the weak types of a and q)
  return lax.convert_element_type(result, aval_of(result).dtype, False)


def _no_out(fun_name, out, overwrite_input):
  if overwrite_input or out is not None:
    raise ValueError(f"jax.numpy.{fun_name} does not support overwrite_input=True or out != None")


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False, *, weights=None):
  """The `q`-th quantiles (0 <= q <= 1) of `a` over `axis`; NaN if a slice has a NaN.

  Args:
    a: the data.
    q: a scalar or 1-D array of probabilities (its axis leads the result).
    axis: None (all), an int or a tuple of ints.
    method: 'linear', 'lower', 'higher', 'midpoint', 'nearest' or 'inverted_cdf'.
    keepdims: keep the reduced axes as size 1.
    weights: per-element weights (method='inverted_cdf' only).

  Example:
    >>> x = jnp.array([[1., 10.], [2., 20.], [3., 30.], [4., 40.], [5., 50.]])
    >>> jnp.quantile(x, jnp.array([0.25, 0.75]), axis=0)
    Array([[ 2., 20.],
           [ 4., 40.]], dtype=float32)
  """
  _no_out("quantile", out, overwrite_input)
  return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights=None):
  """quantile ignoring NaNs (NaN only for all-NaN slices)."""
  _no_out("nanquantile", out, overwrite_input)
  return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def _percent(fun_name, q):
  util.check_arraylike(fun_name, q)
  from revax._src.numpy.ufuncs import true_divide
  return true_divide(q, 100.0)


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights=None,
               out_sharding=None):
  """The `q`-th percentiles (0 <= q <= 100) of `a`; arguments as for quantile."""
  _no_out("percentile", out, overwrite_input)
  util.check_arraylike("percentile", a, q)
  return _quantile("percentile", a, q, axis, method, keepdims, False, weights, percent=True)


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights=None):
  """percentile ignoring NaNs."""
  _no_out("nanpercentile", out, overwrite_input)
  util.check_arraylike("nanpercentile", a, q)
  return _quantile("nanpercentile", a, q, axis, method, keepdims, True, weights, percent=True)


def median(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
  """The median of `a` over `axis` (the mean of the two middle values for even counts)."""
  _no_out("median", out, overwrite_input)
  util.check_arraylike("median", a)
  return _quantile("median", a, 0.5, axis, "midpoint", keepdims, False)


def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
  """median ignoring NaNs."""
  _no_out("nanmedian", out, overwrite_input)
  util.check_arraylike("nanmedian", a)
  return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, True)


def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
  """The (weighted) mean of `a` over `axis`.

  Args:
    a: the data.
    axis: None, an int or a tuple of ints.
    weights: weights of a's shape, or 1-D of the length of `axis`.
    returned: also return the sum of the weights.
    keepdims: keep reduced axes as size 1.

  Returns:
    The average, or (average, sum of weights) if `returned`.
  """
  from revax._src.numpy.reductions import mean, sum as _sum
  util.check_arraylike("average", a)
  if weights is None:
    avg = mean(a, axis=axis, keepdims=keepdims)
    if axis is None:
      count = aval_of(a).size
    else:
      count = math.prod(aval_of(a).shape[d] for d in util.canonicalize_axes(axis, aval_of(a).ndim))
    wsum = lax.full_like(avg, count)
  else:
    util.check_arraylike("average", weights)
    a, weights = util.promote_args_inexact("average", a, weights)
    a_shape, w_shape = aval_of(a).shape, aval_of(weights).shape
    if a_shape != w_shape:
      if axis is None:
        raise ValueError("Axis must be specified when shapes of a and weights differ.")
      axes = util.canonicalize_axes(axis, len(a_shape))
      if w_shape != tuple(a_shape[d] for d in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along specified "
                         "axis.")
      weights = lax.broadcast_in_dim(weights, a_shape, axes)
    wsum = _sum(weights, axis=axis, keepdims=keepdims)
    avg = lax.div(_sum(lax.mul(a, weights), axis=axis, keepdims=keepdims), wsum)
  if returned:
    if aval_of(avg).shape != aval_of(wsum).shape:
      wsum = util.broadcast_to(wsum, aval_of(avg).shape)
    return avg, lax.convert_element_type(wsum, aval_of(avg).dtype)
  return avg


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None,
        aweights=None, dtype=None):
  """The covariance matrix of the variables in `m` (rows are variables if `rowvar`).

  Args:
    m: a 1-D or 2-D array of observations.
    y: more variables, stacked after those of `m`.
    rowvar: whether each row (True) or column (False) is a variable.
    bias: normalize by N instead of N - 1.
    ddof: overrides `bias` when given.
    fweights, aweights: integer frequency and real importance weights per observation.
    dtype: the computation dtype.

  Returns:
    The (variables x variables) covariance (a scalar for a single variable).
  """
  from revax._src.numpy.contractions import dot
  from revax._src.numpy.shape_ops import atleast_2d, concatenate
  from revax._src.numpy.reductions import sum as _sum
  if y is not None:
    util.check_arraylike("cov", m, y)
    m, y = util.promote_args_inexact("cov", m, y)
    if aval_of(y).ndim > 2:
      raise ValueError("y has more than 2 dimensions")
  else:
    util.check_arraylike("cov", m)
    (m,) = util.promote_args_inexact("cov", m)
  if aval_of(m).ndim > 2:
    raise ValueError("m has more than 2 dimensions")
  x = atleast_2d(m)
  if not rowvar and aval_of(x).shape[0] != 1:
    x = lax.transpose(x, (1, 0))
  if y is not None:
    y = atleast_2d(y)
    if not rowvar and aval_of(y).shape[0] != 1:
      y = lax.transpose(y, (1, 0))
    x = concatenate([x, y], axis=0)
  if dtype is not None:
    x = lax.convert_element_type(x, util.canonical_dtype_arg(dtype))
  if ddof is None:
    ddof = 0 if bias else 1
  nobs = aval_of(x).shape[1]
  w = None
  if fweights is not None:
    util.check_arraylike("cov", fweights)
    if aval_of(fweights).ndim != 1 or aval_of(fweights).shape[0] != nobs:
      raise RuntimeError("incompatible numbers of samples and fweights")
    if not dtypes.is_integer(aval_of(fweights).dtype):
      raise TypeError("fweights must be integer.")
    w = util.as_array(fweights)
  if aweights is not None:
    util.check_arraylike("cov", aweights)
    if aval_of(aweights).ndim != 1 or aval_of(aweights).shape[0] != nobs:
      raise RuntimeError("incompatible numbers of samples and aweights")
    w = util.as_array(aweights) if w is None else w * aweights
  xd = aval_of(x).dtype
  if w is None:
    avg = _sum(x, axis=1) / util.scalar_constant(nobs, xd)
    wsum = util.scalar_constant(nobs, xd)
    fact = wsum - ddof
  else:
    w = lax.convert_element_type(w, xd)
    wsum = _sum(w)
    avg = _sum(x * w, axis=1) / wsum
    if aweights is None:
      fact = wsum - ddof
    else:
      fact = wsum - ddof * _sum(w * lax.convert_element_type(aweights, xd)) / wsum
  # no degrees of freedom left: NaN (0/0 and x/0 give NaN or inf) as in NumPy and JAX, not -0.
  fact = lax.max(util.as_array(fact), util.scalar_constant(0, xd))
  xc = x - lax.expand_dims(avg, (1,))
  xw = xc if w is None else xc * w
  from revax._src.numpy.ufuncs import conj
  c = dot(xw, lax.transpose(conj(xc), (1, 0))) / fact
  return lax.reshape(c, ()) if aval_of(c).shape == (1, 1) else c


def corrcoef(x, y=None, rowvar: bool = True, dtype=None):
  """Pearson correlation coefficients: cov normalized by the outer product of the standard
  deviations, clipped to [-1, 1] (real part and imaginary part separately for complex)."""
  from revax._src.numpy.ufuncs import clip, real, imag, sqrt
  util.check_arraylike("corrcoef", x)
  c = cov(x, y, rowvar, dtype=dtype)
  if aval_of(c).ndim == 0:
    return c / c
  d = sqrt(real(_diag(c)))
  c = c / lax.expand_dims(d, (1,))
  c = c / lax.expand_dims(d, (0,))
  if dtypes.is_complex(aval_of(c).dtype):
    return lax.complex(clip(real(c), -1, 1), clip(imag(c), -1, 1))
  return clip(c, -1, 1)


def _diag(c):
  from revax._src.numpy.matrices import diagonal
  return diagonal(c)

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("average",))
