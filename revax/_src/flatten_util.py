"""ravel_pytree: a pytree of arrays as one flat 1-D array, and the function that undoes it.

As in JAX, the leaves are promoted to one dtype (the result type of their dtypes; Python scalars
count as the default dtype of their kind) and concatenated. When every leaf already has that
dtype the unravel function converts nothing, so it accepts vectors of any dtype (JAX issue 7809);
otherwise it checks that its input has the promoted dtype and casts each piece back to its
leaf's dtype. Both functions are made of lax operations (reshape, concatenate, slice, convert), so
they trace, differentiate (unravel is linear) and batch like any other code. The unravel function
is a hashable partial, so it can be a static argument of jit.
"""
from __future__ import annotations

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.lax import conversion, creation, shapes, stacking

__all__ = ["ravel_pytree"]


class _HashablePartial:
  """`fun` with leading positional `args` bound; equal (and hashing equally) to another one with
  the same function and arguments, so a jit that takes it as a static argument reuses its cache."""
  __slots__ = ("fun", "args")

  def __init__(self, fun, *args):
    self.fun, self.args = fun, args

  def __eq__(self, other):
    return (type(other) is _HashablePartial and self.fun is other.fun
            and self.args == other.args)

  def __hash__(self):
    return hash((self.fun, self.args))

  def __call__(self, *args):
    return self.fun(*self.args, *args)

  def __repr__(self):
    return f"HashablePartial({self.fun.__name__}, ...)"


def ravel_pytree(pytree):
  """Ravel (flatten) a pytree of arrays down to a 1-D array, as jax.flatten_util.ravel_pytree.

  Args:
    pytree: a pytree of arrays and scalars.

  Returns:
    `(flat, unravel)`: `flat` is the 1-D concatenation of the raveled leaves, of the dtype their
    dtypes promote to; `unravel(v)` maps a vector of the same length back to a pytree of the
    structure of `pytree`, each leaf with its original shape and dtype. A pytree with no leaves
    gives an empty float32 vector.

  Example:
    >>> from revax.flatten_util import ravel_pytree
    >>> flat, unravel = ravel_pytree({"a": jnp.ones(2), "b": jnp.arange(2)})
    >>> flat
    Array([1., 1., 0., 1.], dtype=float32)
    >>> unravel(flat)["b"]
    Array([0, 1], dtype=int32)
  """
  leaves, treedef = tree_util.tree_flatten(pytree)
  flat, unravel_list = _ravel_list(leaves)
  return flat, _HashablePartial(_unravel_pytree, treedef, unravel_list)


def _unravel_pytree(treedef, unravel_list, flat):
  return tree_util.tree_unflatten(treedef, unravel_list(flat))


def _leaf_dtype(x) -> np.dtype:
  """The dtype a leaf is raveled as, not canonicalized (as jax.dtypes.dtype): a Python scalar
  has its kind's default dtype, a NumPy float64 array stays float64 (and is converted)."""
  if dtypes.is_python_scalar(x):
    return np.dtype(dtypes.scalar_dtype(x)[0])
  if hasattr(x, "dtype"):
    return np.dtype(x.dtype)
  return np.dtype(get_aval(x).dtype)


def _ravel_list(leaves):
  if not leaves:
    return creation.full((0,), 0, np.float32), _HashablePartial(_unravel_nothing)
  from_dtypes = tuple(_leaf_dtype(x) for x in leaves)
  to_dtype, _ = dtypes.promote_types_weak(*((d, False) for d in from_dtypes))
  avals = [get_aval(x) for x in leaves]
  sizes = tuple(int(np.prod(a.shape, dtype=np.int64)) for a in avals)
  shapes_ = tuple(tuple(a.shape) for a in avals)
  if all(d == to_dtype for d in from_dtypes):
    # Nothing to convert: the unravel function is dtype-polymorphic (JAX issue 7809).
    flat = shapes.concatenate([shapes.reshape(x, (n,)) for x, n in zip(leaves, sizes,
                                                                         strict=True)], 0)
    return flat, _HashablePartial(_unravel_list_single_dtype, sizes, shapes_)
  flat = shapes.concatenate(
      [shapes.reshape(conversion.convert_element_type(x, to_dtype), (n,))
       for x, n in zip(leaves, sizes, strict=True)], 0)
  return flat, _HashablePartial(_unravel_list, sizes, shapes_, from_dtypes, to_dtype)


def _unravel_nothing(flat):
  del flat
  return []


def _unravel_list_single_dtype(sizes, shapes_, flat):
  pieces = stacking.split(flat, sizes)
  return [shapes.reshape(p, s) for p, s in zip(pieces, shapes_, strict=True)]


def _unravel_list(sizes, shapes_, from_dtypes, to_dtype, flat):
  flat_dtype = _leaf_dtype(flat)
  if flat_dtype != to_dtype:
    raise TypeError(f"unravel function given array of dtype {flat_dtype}, "
                    f"but expected dtype {to_dtype}")
  pieces = stacking.split(flat, sizes)
  return [conversion.convert_element_type(shapes.reshape(p, s), d)
          for p, s, d in zip(pieces, shapes_, from_dtypes, strict=True)]
