"""Interpolation on a regular grid (as jax.scipy.interpolate.RegularGridInterpolator).

For each query point the cell holding it is found per axis by a binary search of that axis's
(strictly increasing) coordinates; "linear" blends the 2^N cell corners with weights that are
products of the per-axis fractional positions, "nearest" takes the closest corner. Points outside
the grid are extrapolated from the border cell and then replaced by `fill_value` (unless it is
None).
"""
from __future__ import annotations

import itertools

import numpy as np

from revax._src.core import dtypes
from revax._src.numpy import creation, searching, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact
from revax._src.tree_util import register_pytree_node

_METHODS = ("linear", "nearest")


def _points_array(xi, ndim):
  """Query points as an array (..., ndim): from one array, or a tuple of coordinate arrays."""
  if isinstance(xi, tuple) and len(xi) == 1:
    xi = xi[0]
  if isinstance(xi, tuple):
    coords = shape_ops.broadcast_arrays(*xi)
    return shape_ops.stack([c.astype(dtypes.default_float_dtype()) for c in coords], axis=-1)
  check_arraylike("_ndim_coords_from_arrays", xi)
  xi = creation.asarray(xi)
  return xi.reshape(-1, ndim) if xi.ndim == 1 else xi


class RegularGridInterpolator:
  """An interpolator of `values` given on the grid `points` (as
  jax.scipy.interpolate.RegularGridInterpolator; a pytree).

  Args:
    points: N 1-D arrays: each axis's strictly increasing grid coordinates.
    values: array whose first N axes are the grid's (trailing axes are carried along).
    method: "linear" (default) or "nearest".
    bounds_error: must be False (an error cannot be raised under jit; as in JAX).
    fill_value: the value for points outside the grid (default NaN); None extrapolates.

  Example:
    >>> from revax.scipy.interpolate import RegularGridInterpolator
    >>> interp = RegularGridInterpolator((jnp.array([0., 1., 2.]),), jnp.array([0., 10., 40.]))
    >>> interp(jnp.array([[0.25], [1.5]]))
    Array([ 2.5, 25. ], dtype=float32)
  """

  def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
    if method not in _METHODS:
      raise ValueError(f"method {method!r} is not defined")
    self.method = method
    self.bounds_error = bounds_error
    if bounds_error:
      raise NotImplementedError("`bounds_error` takes no effect under JIT")
    check_arraylike("RegularGridInterpolator", values)
    if len(points) > np.ndim(values):
      raise ValueError(f"there are {len(points)} point arrays, but values has "
                       f"{np.ndim(values)} dimensions")
    (values,) = promote_args_inexact("RegularGridInterpolator", creation.asarray(values))
    if fill_value is not None:
      check_arraylike("RegularGridInterpolator", fill_value)
      fill_value = creation.asarray(fill_value)
      if not np.can_cast(aval_of(fill_value).dtype, aval_of(values).dtype, casting="same_kind"):
        raise ValueError("fill_value must be either 'None' or of a type compatible with values")
    self.fill_value = fill_value
    check_arraylike("RegularGridInterpolator", *points)
    self.grid = tuple(creation.asarray(p) for p in points)
    self.values = values

  def __call__(self, xi, method=None):
    """Interpolated values at `xi` (..., N) (or a tuple of N coordinate arrays): shape
    xi.shape[:-1] + values.shape[N:]."""
    method = self.method if method is None else method
    if method not in _METHODS:
      raise ValueError(f"method {method!r} is not defined")
    ndim = len(self.grid)
    xi = _points_array(xi, ndim)
    if xi.shape[-1] != ndim:
      raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, but "
                       f"this RegularGridInterpolator has dimension {ndim}")
    batch_shape = xi.shape[:-1]
    xi = xi.reshape(-1, ndim)
    indices, fractions, outside = self._locate(xi)
    if method == "linear":
      result = self._linear(indices, fractions)
    else:
      result = self.values[tuple(ufuncs.where(t <= 0.5, i, i + 1)
                                 for i, t in zip(indices, fractions, strict=True))]
    if self.fill_value is not None:
      mask = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
      result = ufuncs.where(mask, self.fill_value, result)
    return result.reshape(batch_shape + self.values.shape[ndim:])

  def _locate(self, xi):
    """Per axis: the lower corner index of each point's cell (clamped to the border cells), its
    fractional position in the cell, and whether any coordinate lies outside the grid."""
    indices, fractions = [], []
    outside = creation.zeros((xi.shape[0],), dtype=bool)
    for axis, g in enumerate(self.grid):
      x = xi[:, axis]
      i = ufuncs.clip(searching.searchsorted(g, x) - 1, 0, g.size - 2)
      indices.append(i)
      fractions.append((x - g[i]) / (g[i + 1] - g[i]))
      outside = outside | (x < g[0]) | (x > g[-1])
    return indices, fractions, outside

  def _linear(self, indices, fractions):
    trailing = (slice(None),) + (None,) * (self.values.ndim - len(indices))
    result = creation.asarray(0.0)
    for corner in itertools.product(*[(i, i + 1) for i in indices]):
      weight = creation.asarray(1.0)
      for c, i, t in zip(corner, indices, fractions, strict=True):
        weight = weight * ((1 - t) if c is i else t)  # lower or upper corner
      result = result + self.values[corner] * weight[trailing]
    return result


register_pytree_node(
    RegularGridInterpolator,
    lambda interp: ((interp.grid, interp.values, interp.fill_value),
                    (interp.method, interp.bounds_error)),
    lambda aux, children: RegularGridInterpolator(children[0], children[1], aux[0], aux[1],
                                                  children[2]))
