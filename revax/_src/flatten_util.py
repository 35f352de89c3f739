"""ravel_pytree: a pytree of arrays as one flat vector, and the function that rebuilds it, as
jax.flatten_util.

The vector's dtype promotes the leaves' dtypes (float32 for an empty tree). With a single dtype
the unravel function keeps whatever dtype it is given (JAX's dtype-polymorphic unravel); with
mixed dtypes it converts each chunk back and refuses a vector of another dtype (TypeError).
The unravel function is hashable by value (so it may be a static argument of jit)."""
from __future__ import annotations

import functools

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.lax import conversion, creation, shapes, slicing

__all__ = ["ravel_pytree"]


class _HashablePartial:
  """functools.partial whose equality and hash are those of (func, args)."""

  def __init__(self, func, *args):
    self.func, self.args = func, args

  def __eq__(self, other):
    return (type(other) is _HashablePartial and self.func is other.func
            and self.args == other.args)

  def __hash__(self):
    return hash((self.func, self.args))

  def __call__(self, *args):
    return self.func(*self.args, *args)


def ravel_pytree(pytree):
  """Ravel (flatten) a pytree of arrays down to a 1-D array.

  Returns:
    (flat, unravel): the leaves' values raveled and concatenated (their dtypes promoted), and a
    function rebuilding a pytree of the same structure from such a vector.

  Example:
    >>> from revax.flatten_util import ravel_pytree
    >>> flat, unravel = ravel_pytree({"a": jnp.ones(2), "b": jnp.zeros((1, 2))})
    >>> flat
    Array([1., 1., 0., 0.], dtype=float32)
    >>> unravel(flat)["b"]
    Array([[0., 0.]], dtype=float32)
  """
  leaves, treedef = tree_util.tree_flatten(pytree)
  flat, unravel_list = _ravel_list(leaves)
  return flat, _HashablePartial(_unravel_pytree, treedef, unravel_list)


def _unravel_pytree(treedef, unravel_list, flat):
  return tree_util.tree_unflatten(treedef, unravel_list(flat))


def _ravel_list(lst):
  if not lst:
    return creation.full((0,), 0, np.float32), _HashablePartial(_no_leaves)
  from_dtypes = tuple(get_aval(x).dtype for x in lst)
  to_dtype = functools.reduce(dtypes.promote_types, from_dtypes)
  sizes = tuple(int(np.prod(get_aval(x).shape, dtype=np.int64)) for x in lst)
  shape_list = tuple(get_aval(x).shape for x in lst)
  if all(dt == to_dtype for dt in from_dtypes):
    raveled = shapes.concatenate([shapes.reshape(x, (s,)) for x, s in zip(lst, sizes)], 0)
    return raveled, _HashablePartial(_unravel_single_dtype, sizes, shape_list)
  raveled = shapes.concatenate(
      [shapes.reshape(conversion.convert_element_type(x, to_dtype), (s,))
       for x, s in zip(lst, sizes)], 0)
  return raveled, _HashablePartial(_unravel_list, sizes, shape_list, from_dtypes, to_dtype)


def _no_leaves(_):
  return []


def _chunks(arr, sizes):
  out, start = [], 0
  for s in sizes:
    out.append(slicing.slice(arr, (start,), (start + s,)))
    start += s
  return out


def _unravel_single_dtype(sizes, shape_list, arr):
  return [shapes.reshape(c, shape) for c, shape in zip(_chunks(arr, sizes), shape_list)]


def _unravel_list(sizes, shape_list, from_dtypes, to_dtype, arr):
  arr_dtype = get_aval(arr).dtype
  if arr_dtype != to_dtype:
    raise TypeError(f"unravel function given array of dtype {arr_dtype}, but expected dtype "
                    f"{to_dtype}")
  return [conversion.convert_element_type(shapes.reshape(c, shape), dt)
          for c, shape, dt in zip(_chunks(arr, sizes), shape_list, from_dtypes)]
