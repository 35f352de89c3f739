"""`ShapeDtypeStruct`, a shape and dtype standing in for an array, and `abstractify`, the aval
of a value or of such a struct. Used by make_jaxpr/eval_shape (api.py), the stages' `out_info`
(stage_info.py), export and linear_transpose."""
from __future__ import annotations

import numpy as np

from revax._src.core import extended_dtypes
from revax._src.core.avals import ShapedArray, get_aval, pytype_aval_mappings
from revax._src.core.memory_space import mem_kind_to_space
from revax._src.runtime.array import Array

__all__ = ["ShapeDtypeStruct", "abstractify"]


class ShapeDtypeStruct:
  """A shape and dtype standing in for an array (what `eval_shape` returns), as JAX's.

  Args:
    shape, dtype: the array's.
    sharding: how it is (to be) laid out, or None.
    weak_type: whether its dtype is weak (a Python scalar's).
    manual_axis_type, is_ref: JAX's; revax keeps them as given (None / False).
  """
  __slots__ = ("shape", "dtype", "weak_type", "sharding", "manual_axis_type", "is_ref")

  def __init__(self, shape, dtype, weak_type=False, *, sharding=None, manual_axis_type=None,
               is_ref=False):
    self.shape = tuple(shape)
    self.dtype = dtype if extended_dtypes.is_extended(dtype) else np.dtype(dtype)  # key<fry>
    self.weak_type = bool(weak_type)
    self.sharding = sharding
    self.manual_axis_type = manual_axis_type
    self.is_ref = is_ref

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  @classmethod
  def like(cls, x) -> "ShapeDtypeStruct":
    """The struct of `x` (an array, a Python or NumPy scalar, another struct): its shape, dtype
    and weak type, and its sharding when it has one and is committed (as JAX's).

    Example:
      >>> revax.ShapeDtypeStruct.like(jnp.ones((2, 3)))
      ShapeDtypeStruct(shape=(2, 3), dtype=float32)
      >>> revax.ShapeDtypeStruct.like(1.0)
      ShapeDtypeStruct(shape=(), dtype=float32, weak_type=True)
    """
    aval = abstractify(x)
    committed = x.committed if isinstance(x, Array) else True
    sharding = getattr(x, "sharding", None) if committed else None
    return cls(aval.shape, aval.dtype, aval.weak_type, sharding=sharding)

  def update(self, **kwargs) -> "ShapeDtypeStruct":
    """A copy with the given fields replaced (shape, dtype, sharding, weak_type, ...)."""
    fields = {name: getattr(self, name) for name in self.__slots__}
    unknown = set(kwargs) - set(fields)
    if unknown:
      raise TypeError(f"ShapeDtypeStruct.update() got unexpected fields {sorted(unknown)}")
    fields.update(kwargs)
    shape, dtype, weak_type = fields.pop("shape"), fields.pop("dtype"), fields.pop("weak_type")
    return ShapeDtypeStruct(shape, dtype, weak_type, **fields)

  def __repr__(self):
    sharding = f", sharding={self.sharding}" if self.sharding is not None else ""
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak})"

  def __eq__(self, other):
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type
            and self.sharding == other.sharding and self.is_ref == other.is_ref)

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type))


def abstractify(x) -> ShapedArray:
  """The aval of an argument of eval_shape/make_jaxpr/linear_transpose: an array, a
  ShapeDtypeStruct, or an aval itself (as JAX's shaped_abstractify takes; equinox's noinline
  transposes at ShapedArrays)."""
  if isinstance(x, ShapedArray):
    return x
  if isinstance(x, ShapeDtypeStruct):
    kind = getattr(x.sharding, "memory_kind", None)
    if kind is not None and hasattr(x.sharding, "mesh"):  # (a NamedSharding's memory is typed,
      # as JAX's update_aval_with_sharding types it)
      return ShapedArray(x.shape, x.dtype, x.weak_type, memory_space=mem_kind_to_space(kind))
    return ShapedArray(x.shape, x.dtype, x.weak_type)
  return get_aval(x)


pytype_aval_mappings[ShapeDtypeStruct] = abstractify
