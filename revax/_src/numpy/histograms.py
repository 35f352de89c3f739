"""Counting into bins: bincount, digitize, histogram_bin_edges, histogram, histogram2d and
histogramdd.

Bin indices come from searchsorted and the counts from a scatter-add into a buffer of static
length, so everything works under jit once the number of bins is static (bincount needs
`length=` there, as in JAX).
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.trace import ConcretizationTypeError, Tracer
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.numpy.util import convert_pytree_operands


def bincount(x, weights=None, minlength: int = 0, *, length=None, out_sharding=None):
  """Counts (or summed weights) of each non-negative integer value in the 1-D `x`.

  Args:
    x: non-negative integers (negative ones count as 0, as in JAX).
    weights: optional weights of x's shape.
    minlength: the least length of the result.
    length: the static length of the result (values >= length are dropped); required under jit.

  Returns:
    An array of length `length` (default: max(max(x) + 1, minlength)).
  """
  util.check_arraylike("bincount", x)
  if not (dtypes.is_integer(aval_of(x).dtype) or dtypes.is_bool(aval_of(x).dtype)):
    raise TypeError(f"x argument to bincount must have an integer type; got {aval_of(x).dtype}")
  if aval_of(x).ndim != 1:
    raise ValueError("only 1-dimensional input supported.")
  minlength = operator.index(minlength)
  if minlength < 0:
    raise ValueError("minlength must be non-negative")
  x = util.as_array(x)
  if length is None:
    if isinstance(x, Tracer):
      raise ConcretizationTypeError(
          f"bincount needs a static length= under jit (the result's length depends on max(x)); "
          f"got {x.aval.str_short()}")
    value = np.asarray(x)
    length = max(minlength, int(value.max()) + 1 if value.size else 0)
  else:
    length = operator.index(length)
  if weights is None:
    w = util.full_of(aval_of(x).shape, 1, dtypes.default_int_dtype())
  else:
    util.check_arraylike("bincount", weights)
    w = util.broadcast_to(util.as_array(weights), aval_of(x).shape)
  x = lax.max(lax.convert_element_type(x, dtypes.int32), util.scalar_constant(0, dtypes.int32))
  out = util.full_of((length,), 0, aval_of(w).dtype)
  return out.at[x].add(w, mode="drop")


def digitize(x, bins, right: bool = False, *, method=None):
  """Index of the bin each element of `x` falls into (bins increasing or decreasing)."""
  from revax._src.numpy.searching import searchsorted
  util.check_arraylike("digitize", x, bins)
  bins = util.as_array(bins)
  if aval_of(bins).ndim != 1:
    raise ValueError(f"digitize: bins must be a 1-dimensional array; got shape "
                     f"{aval_of(bins).shape}")
  n = aval_of(bins).shape[0]
  if n == 0:
    return util.full_of(aval_of(x).shape, 0, dtypes.int32)
  from revax._src.numpy.ufuncs import greater_equal, subtract, where
  side = "left" if right else "right"
  kw = {} if method is None else {"method": method}
  # as jax's: jnp's >= (complex bins compare lexicographically), searchsorted either way
  return where(greater_equal(bins[n - 1], bins[0]), searchsorted(bins, x, side=side, **kw),
               subtract(n, searchsorted(bins[::-1], x, side=side, **kw)))


def _float_of(a):
  return util.to_inexact_dtype(aval_of(a).dtype)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002 (NumPy's name)
  """The edges of the bins `histogram` uses: `bins` + 1 evenly spaced edges over `range`
  (default: the data's min and max, widened by 0.5 each way when they are equal), or the given
  edges."""
  from revax._src.numpy.creation import linspace
  from revax._src.numpy.reductions import max as _max, min as _min
  util.check_arraylike("histogram_bin_edges", a)
  if not isinstance(bins, (int, np.integer)):
    util.check_arraylike("histogram_bin_edges", bins)
    return lax.convert_element_type(util.as_array(bins), _float_of(a))
  a = util.as_array(a)
  dtype = _float_of(a)
  if aval_of(a).size == 0 and range is None:
    # as JAX (whose min of the data fails): NumPy would use (0, 1)
    raise ValueError("histogram: zero-size array to reduction operation min which has no "
                     "identity; pass range=(lo, hi) to bin an empty array")
  if range is None:
    lo = lax.convert_element_type(_min(a), dtype)
    hi = lax.convert_element_type(_max(a), dtype)
  else:
    if len(range) != 2:
      raise ValueError(f"range must be a (min, max) pair, got {range!r}")
    lo = lax.convert_element_type(util.as_array(range[0]), dtype)
    hi = lax.convert_element_type(util.as_array(range[1]), dtype)
  same = lax.eq(lo, hi)
  half = util.scalar_constant(0.5, dtype)
  lo = lax.select_n(same, lo, lax.sub(lo, half))
  hi = lax.select_n(same, hi, lax.add(hi, half))
  return linspace(lo, hi, operator.index(bins) + 1)


def _bin_index(x, edges):
  """Bin of each x among `edges` (last edge inclusive); len(edges) - 1 means 'outside'."""
  from revax._src.numpy.searching import searchsorted
  nb = aval_of(edges).shape[0] - 1
  idx = lax.sub(searchsorted(edges, x, side="right"), util.scalar_constant(1, dtypes.int32))
  on_last = lax.eq(x, lax.broadcast_in_dim(edges[nb], aval_of(x).shape, ()))
  idx = lax.select_n(on_last, idx, util.full_of(aval_of(x).shape, nb - 1, dtypes.int32))
  outside = lax.bitwise_or(lax.lt(idx, util.constant_like(idx, 0)),
                           lax.ge(idx, util.constant_like(idx, nb)))
  return lax.select_n(outside, idx, util.full_of(aval_of(x).shape, nb, dtypes.int32))


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """Counts (or summed weights) of `a` (flattened) in each bin, and the bin edges.

  Args:
    a: the data.
    bins: the number of equal-width bins (static), or their edges.
    range: (min, max) of the bins (default: the data's).
    weights: optional weights of a's shape.
    density: normalize so the histogram integrates to 1.

  Returns:
    (hist, bin_edges), float arrays.
  """
  util.check_arraylike("histogram", a)
  edges = histogram_bin_edges(a, bins, range, weights)
  # the bins of `a` as it is shaped and the weights added at them as shaped, as jax's (whose
  # search of a split `a`, or update by split weights, then raises as it does)
  index = _bin_index(lax.convert_element_type(util.as_array(a), aval_of(edges).dtype), edges)
  nb = aval_of(edges).shape[0] - 1
  w = util.full_of(aval_of(index).shape, 1, aval_of(edges).dtype) if weights is None else \
      lax.convert_element_type(util.broadcast_to(util.as_array(weights), aval_of(a).shape),
                               aval_of(edges).dtype)
  counts = util.full_of((nb,), 0, aval_of(w).dtype).at[index].add(w, mode="drop")
  if density:
    widths = lax.sub(edges[1:], edges[:-1])
    counts = lax.div(counts, lax.mul(widths, lax.broadcast_in_dim(
        lax.reduce_sum(counts, (0,)), (nb,), ())))
  return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """A D-dimensional histogram of the (N, D) `sample`: (hist, [edges of each dimension])."""
  util.check_arraylike("histogramdd", sample)
  sample = util.as_array(sample)
  if aval_of(sample).ndim != 2:
    raise ValueError(f"histogramdd: sample must be an (N, D) array, got shape "
                     f"{aval_of(sample).shape}")
  n, d = aval_of(sample).shape
  bins_per_dim = [bins] * d if isinstance(bins, (int, np.integer)) else list(bins)
  if len(bins_per_dim) != d:
    raise ValueError("should be a bin for each dimension.")
  ranges = [None] * d if range is None else list(range)
  if len(ranges) != d:
    raise ValueError("should be a range for each dimension.")
  edges = [histogram_bin_edges(sample[:, i], bins_per_dim[i], ranges[i]) for i in builtins.range(d)]
  nbins = [aval_of(e).shape[0] - 1 for e in edges]
  flat = util.full_of((n,), 0, dtypes.int32)
  outside = util.full_of((n,), False, dtypes.bool_)
  for i in builtins.range(d):
    idx = _bin_index(lax.convert_element_type(sample[:, i], aval_of(edges[i]).dtype), edges[i])
    outside = lax.bitwise_or(outside, lax.eq(idx, util.constant_like(idx, nbins[i])))
    flat = lax.add(lax.mul(flat, util.constant_like(flat, nbins[i])), idx)
  total = math.prod(nbins)
  flat = lax.select_n(outside, flat, util.full_of((n,), total, dtypes.int32))
  dtype = aval_of(edges[0]).dtype
  if weights is None and not density:  # plain counts are integers here, as in JAX
    dtype = dtypes.default_int_dtype()
  w = util.full_of((n,), 1, dtype) if weights is None else lax.convert_element_type(
      util.as_array(weights), dtype)
  hist = util.full_of((total,), 0, dtype).at[flat].add(w, mode="drop")
  hist = lax.reshape(hist, tuple(nbins))
  if density:
    hist = lax.div(hist, lax.reduce_sum(hist, tuple(builtins.range(d))))
    for i in builtins.range(d):
      widths = lax.sub(edges[i][1:], edges[i][:-1])
      shape = [1] * d
      shape[i] = nbins[i]
      hist = lax.div(hist, lax.broadcast_in_dim(widths, tuple(nbins), (i,)))
  return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """A 2-D histogram of the points (x[i], y[i]): (hist, xedges, yedges)."""
  from revax._src.numpy.shape_ops import stack
  util.check_arraylike("histogram2d", x, y)
  try:
    nb = len(bins)
  except TypeError:
    nb = None
  if nb is not None and nb != 2:  # one array of edges shared by both dimensions
    bins = [bins, bins]
  x, y = util.promote_dtypes(util.as_array(x), util.as_array(y))
  hist, edges = histogramdd(stack([x, y], axis=1), bins, range, weights, density)
  return hist, edges[0], edges[1]

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("histogram", "histogram_bin_edges", "histogramdd",))
