"""Array creation in lax: full, full_like, zeros_like_array (wrappers over broadcast_in_dim).

Also installs the maker of zero arrays that autodiff uses to instantiate symbolic zeros.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes, vma
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.shape_poly import canonical_dim
from revax._src.interpreters import ad
from revax._src.lax.shapes import broadcast_in_dim
from revax._src.runtime.array import Array

__all__ = [
  "full",
  "full_like",
  "zeros_like_array",
]


def _scalar(value, dtype, weak_type=False) -> Array:
  v = np.asarray(value).astype(dtype)
  v.flags.writeable = False
  return Array(ShapedArray((), dtype, weak_type), npy=v)


# Installed by sharded_api (above this layer): device_put(value, sharding) -> a placed Array.
device_put = None


def _placed_as(out, sharding):
  """`out` placed as `sharding` says, as JAX's `full(..., sharding=)`: an Array is put there (a
  committed Array); inside a transformation a type's sharding (over an AbstractMesh) types the
  result, and a concrete one is ignored (as JAX does under jit)."""
  if sharding is None:
    return out
  if isinstance(out, Array):  # (strongly typed, as JAX's make_array_from_callback makes it)
    if out.aval.weak_type:
      from revax._src.lax.conversion import convert_element_type
      out = convert_element_type(out, out.aval.dtype, False)
    return device_put(out, sharding) if device_put is not None else out
  mesh = getattr(sharding, "mesh", None)
  if mesh is not None and getattr(mesh, "devices", None) is None:  # an AbstractMesh
    from revax._src.lax.sharding_constraint import placed
    return placed(out, sharding)
  return out


def full(shape, fill_value, dtype=None, *, sharding=None):
  """An array of `shape` filled with `fill_value` (a scalar), as jax.lax.full; `sharding`
  places it (see `_placed_as`).

  Example:
    >>> lax.full((2, 3), 1.5)
    Array([[1.5, 1.5, 1.5],
           [1.5, 1.5, 1.5]], dtype=float32, weak_type=True)
  """
  shape = tuple(canonical_dim(d) for d in shape)  # ints, or symbolic sizes
  aval = get_aval(fill_value)
  if aval.shape:
    raise TypeError(f"full must be called with a scalar fill_value, got fill_value.shape "
                    f"{aval.shape}")
  if dtype is None:
    dtype, weak = aval.dtype, aval.weak_type
  else:
    dtype, weak = dtypes.canonicalize_dtype(dtype), False
  if isinstance(fill_value, (bool, int, float, complex, np.ndarray, np.generic)):
    fill_value = _scalar(fill_value, dtype, weak)
  elif aval.dtype != dtype:
    from revax._src.lax.conversion import convert_element_type
    fill_value = convert_element_type(fill_value, dtype)
  return _placed_as(broadcast_in_dim(fill_value, shape, ()), sharding)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
  """`full` with the shape and dtype of `x` unless given; weakly typed if `x` is and no dtype
  is given (as jax.lax.full_like), so constants built in rules keep Python scalars weak.
  `sharding` places the result as `full`'s does. Inside shard_map the result varies over the
  manual axes `x` varies over (JAX's implicit pvary)."""
  return vary_like(_full_like(x, fill_value, dtype, shape, sharding), x)


def vary_like(val, x):
  """`val` cast to vary over the manual axes `x` varies over, inside a shard_map body with
  check_vma (as JAX's full_like does); `val` elsewhere."""
  if not vma.active():
    return val
  return vma.cast_to(val, get_aval(val), vma.varying(get_aval(x)))


def _full_like(x, fill_value, dtype=None, shape=None, sharding=None):
  if sharding is not None:
    return _placed_as(_full_like(x, fill_value, dtype, shape), sharding)
  aval = get_aval(x)
  if shape is None and getattr(aval, "sharding", None) is not None and not isinstance(x, Array):
    # a traced `x` split over Explicit axes: the result is typed as it (JAX's rule)
    from revax._src.lax.sharding_constraint import placed
    return placed(_full_like(x, fill_value, dtype, aval.shape), aval.sharding)
  if (isinstance(x, Array) and device_put is not None and x.committed
      and not (dtype is None and aval.weak_type)
      and (shape is None or tuple(shape) == aval.shape or x.sharding.is_fully_replicated)):
    # a committed Array: the result is placed where `x` is (JAX's rule)
    return device_put(_full_like_unplaced(aval, fill_value, dtype, shape), x.sharding)
  return _full_like_unplaced(aval, fill_value, dtype, shape)


def _full_like_unplaced(aval, fill_value, dtype, shape):
  shape = aval.shape if shape is None else shape
  if dtype is not None or not aval.weak_type:
    return full(shape, fill_value, aval.dtype if dtype is None else dtype)
  if isinstance(fill_value, (bool, int, float, complex, np.ndarray, np.generic)):
    if not np.shape(fill_value):
      return broadcast_in_dim(_scalar(fill_value, aval.dtype, True), tuple(int(d) for d in shape),
                              ())
  from revax._src.lax.conversion import convert_element_type
  return convert_element_type(full(shape, fill_value, aval.dtype), aval.dtype, True)


def zeros_like_array(x):
  """An array of zeros with `x`'s shape and dtype, as `lax.full_like(x, 0)`.

  Args:
    x: an array.

  Returns:
    Zeros of `x`'s shape and dtype.

  Example:
    >>> lax.zeros_like_array(jnp.ones((2,), jnp.int32))
    Array([0, 0], dtype=int32)
  """
  return full_like(x, 0)


def _zeros(aval: ShapedArray):
  zeros = broadcast_in_dim(_scalar(0, aval.dtype, aval.weak_type), aval.shape, ())
  if getattr(aval, "sharding", None) is None:
    return zeros
  # (as JAX's zeros_like_aval: zeros split as the value they stand for, e.g. the cotangent a
  # gather's or a slice's transpose scatters into)
  from revax._src.lax.sharding_constraint import placed
  return placed(zeros, aval.sharding)


ad.set_zeros_maker(_zeros)
