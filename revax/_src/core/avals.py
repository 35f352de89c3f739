"""Abstract values: what the tracer of a transformation knows about a value.

`ShapedArray(shape, dtype, weak_type)` is the only aval revax needs: shape and dtype fix a value's
type, and `weak_type` marks values born from Python scalars, which adopt the dtype of the arrays
they meet (JAX's weak typing).
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core import dtypes


class ShapedArray:
  """The type of an array: a shape (tuple of ints), a dtype, and whether it is weakly typed."""
  __slots__ = ("shape", "dtype", "weak_type", "_hash")

  def __init__(self, shape, dtype, weak_type: bool = False):
    self.shape = tuple(shape)
    self.dtype = np.dtype(dtype)
    self.weak_type = bool(weak_type)
    self._hash = hash((self.shape, self.dtype, self.weak_type))

  ndim = property(lambda self: len(self.shape))

  @property
  def size(self) -> int:
    return math.prod(self.shape)  # Python ints: no int64 wrap-around for huge shapes

  def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type)

  def strip_weak_type(self) -> "ShapedArray":
    return self.update(weak_type=False) if self.weak_type else self

  def __eq__(self, other):
    return other is self or (type(other) is ShapedArray and self.shape == other.shape
                             and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    return self._hash

  def str_short(self) -> str:
    """'f32[3,4]', the form used in printed jaxprs."""
    return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

  def __repr__(self):
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short()}{weak})"

  __str__ = str_short


def same_type(a: ShapedArray, b: ShapedArray) -> bool:
  """Type equality as the type checker sees it: shapes and dtypes, weak types aside."""
  return a.shape == b.shape and a.dtype == b.dtype


# --- avals of concrete values ----------------------------------------------------------------
# Types defined in higher layers (revax.Array, tracers) register how to read their aval here.
pytype_aval_mappings: dict[type, object] = {}


def _ndarray_aval(x):
  return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))


def _scalar_aval(x):
  dtype, weak = dtypes.scalar_dtype(x)
  return ShapedArray((), dtype, weak)


def _np_scalar_aval(x):
  return ShapedArray((), dtypes.canonicalize_dtype(x.dtype))


pytype_aval_mappings[np.ndarray] = _ndarray_aval
for _t in (bool, int, float, complex):
  pytype_aval_mappings[_t] = _scalar_aval
for _t in set(np.sctypeDict.values()) | {dtypes.bfloat16.type}:
  if issubclass(_t, np.generic):
    pytype_aval_mappings[_t] = _np_scalar_aval


def get_aval(x) -> ShapedArray:
  """The aval of a concrete value or tracer. Raises TypeError for values that are not arrays."""
  fn = pytype_aval_mappings.get(type(x))
  if fn is None:
    for t in type(x).__mro__[1:]:  # subclasses of registered types (e.g. tracer subclasses)
      fn = pytype_aval_mappings.get(t)
      if fn is not None:
        break
    else:
      raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid revax type: expected "
                      "an array, a NumPy array or scalar, or a Python bool/int/float/complex")
  return fn(x)


def is_array_like(x) -> bool:
  t = type(x)
  return t in pytype_aval_mappings or any(s in pytype_aval_mappings for s in t.__mro__[1:])
