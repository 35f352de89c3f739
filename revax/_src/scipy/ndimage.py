"""revax.scipy.ndimage: map_coordinates, interpolation of an array at arbitrary coordinates (as
jax.scipy.ndimage, with its conventions: 'constant' behaves like SciPy's 'grid-constant' and
'wrap' like 'grid-wrap')."""
from __future__ import annotations

import itertools

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.numpy import creation, ufuncs
from revax._src.numpy.util import aval_of, as_array, check_arraylike

__all__ = ["map_coordinates"]


def _mirror(index, size: int):
  """Reflection about the edge samples (period 2 (size - 1)): ... 2 1 | 0 1 2 ... n-1 | n-2 ..."""
  if size == 1:
    return index * 0
  period = 2 * (size - 1)
  i = index % period
  return ufuncs.where(i >= size, period - i, i)


def _reflect(index, size: int):
  """Reflection about the array's edges (period 2 size): ... 1 0 | 0 1 ... n-1 | n-1 n-2 ..."""
  period = 2 * size
  i = index % period
  return ufuncs.where(i >= size, period - 1 - i, i)


_BOUNDARIES = {
  "constant": lambda index, size: ufuncs.clip(index, 0, size - 1),  # invalid ones masked
  "nearest": lambda index, size: ufuncs.clip(index, 0, size - 1),
  "wrap": lambda index, size: index % size,
  "mirror": _mirror,
  "reflect": _reflect,
}


def _nodes(coordinate, order: int):
  """[(integer index, weight)] of 1-D interpolation at `coordinate`."""
  if order == 0:
    if dtypes.is_integer(aval_of(coordinate).dtype):
      return [(coordinate.astype(np.int32), 1.0)]
    return [(lax.round(coordinate).astype(np.int32), 1.0)]  # halves away from zero
  below = ufuncs.floor(coordinate)
  frac = coordinate - below
  index = below.astype(np.int32)
  return [(index, 1.0 - frac), (index + 1, frac)]


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):
  """Values of `input` interpolated at `coordinates`.

  Args:
    input: an N-dimensional array.
    coordinates: a sequence of N arrays of one shape: the coordinates along each axis.
    order: 0 (nearest sample, halves rounded away from zero) or 1 (linear).
    mode: 'constant' (cval outside), 'nearest', 'wrap', 'mirror' or 'reflect'.
    cval: the value outside the input in 'constant' mode.

  Returns:
    An array of the coordinates' shape and input's dtype (integer inputs rounded).

  Example:
    >>> import revax.scipy.ndimage
    >>> revax.scipy.ndimage.map_coordinates(jnp.arange(4.0), [jnp.array([0.5, 2.25])], order=1)
    Array([0.5 , 2.25], dtype=float32)
  """
  check_arraylike("map_coordinates", input)
  input = as_array(input)
  shape = aval_of(input).shape
  if len(coordinates) != len(shape):
    raise ValueError("coordinates must be a sequence of length input.ndim, but "
                     f"{len(coordinates)} != {len(shape)}")
  if mode not in _BOUNDARIES:
    raise NotImplementedError(
        f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. Currently "
        f"supported modes are {set(_BOUNDARIES)}.")
  if order not in (0, 1):
    raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires order<=1")
  coordinates = [as_array(c) for c in coordinates]
  float_dtype = (aval_of(input).dtype if dtypes.is_inexact(aval_of(input).dtype)
                 else dtypes.default_float_dtype())
  coordinates = [c if dtypes.is_integer(aval_of(c).dtype) else c.astype(
      dtypes.promote_types(aval_of(c).dtype, float_dtype) if dtypes.is_inexact(aval_of(c).dtype)
      else float_dtype) for c in coordinates]
  per_axis = []
  for c, size in zip(coordinates, shape, strict=True):
    fix = _BOUNDARIES[mode]
    per_axis.append([(fix(i, size), (i >= 0) & (i < size), w) for i, w in _nodes(c, order)])
  total = None
  for corner in itertools.product(*per_axis):
    indices = tuple(i for i, _, _ in corner)
    value = input[indices]
    if mode == "constant":
      inside = corner[0][1]
      for _, ok, _ in corner[1:]:
        inside = inside & ok
      value = ufuncs.where(inside, value, cval)
    weight = 1.0
    for _, _, w in corner:
      weight = w * weight
    term = value * weight
    total = term if total is None else total + term
  if total is None:  # a 0-d input
    total = input
  if dtypes.is_integer(aval_of(input).dtype):
    total = lax.round(total.astype(float_dtype))
  return creation.asarray(total).astype(aval_of(input).dtype)
