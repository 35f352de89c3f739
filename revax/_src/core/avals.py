"""Abstract values: what the tracer of a transformation knows about a value.

`ShapedArray(shape, dtype, weak_type, sharding)` is the only aval revax needs: shape and dtype fix
a value's type, `weak_type` marks values born from Python scalars, which adopt the dtype of the
arrays they meet (JAX's weak typing), and `sharding` says how a value is split over the
Explicit axes of a mesh (JAX's sharding in types; core/sharding_types.py).
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core import dtypes, extended_dtypes
from revax._src.core import memory_space as _ms
from revax._src.core.memory_space import MemorySpace
from revax._src.core.vma import EMPTY as _EMPTY_MAT

_DEVICE = MemorySpace.Device  # (an enum member's lookup on its class is slow)


_KEEP = object()  # update(): keep the sharding where the shape stays


class ShapedArray:
  """The type of an array: a shape (tuple of ints), a dtype, whether it is weakly typed, and,
  over a mesh with Explicit axes, how it is split over them (`sharding`: a NamedSharding whose
  spec names Explicit axes only, one entry per dimension; None when it is not split so), and
  inside shard_map over which manual axes it varies (`manual_axis_type`, JAX's `mat`), and which
  memory of its device it lives in (`memory_space`: MemorySpace.Device, or Host for pinned host
  memory, printed 'f32<host>[4]'; core/memory_space.py)."""
  __slots__ = ("shape", "dtype", "weak_type", "sharding", "_mat", "_hash", "memory_space")

  def __init__(self, shape, dtype, weak_type: bool = False, sharding=None, *,
               manual_axis_type=None, memory_space=_DEVICE):
    self.shape = tuple(shape)
    try:
      self.dtype = np.dtype(dtype)
    except TypeError:
      if not extended_dtypes.is_extended(dtype):
        raise
      self.dtype = dtype  # an extended dtype (typed PRNG keys' key<fry>): not a NumPy one
    self.weak_type = bool(weak_type)
    self.sharding = sharding
    mat = manual_axis_type if manual_axis_type is not None and not manual_axis_type.empty \
        else None
    self._mat = mat
    if memory_space is None:  # (a Ref's memory space, unset: the device's own)
      memory_space = _DEVICE
    self.memory_space = memory_space
    if memory_space is not _DEVICE:
      if not isinstance(memory_space, MemorySpace):
        raise TypeError(f"memory_space must be a MemorySpace, got {memory_space!r}")
      _ms.active = True
      self._hash = hash((self.shape, self.dtype, self.weak_type, sharding, mat, memory_space))
      return
    self._hash = hash((self.shape, self.dtype, self.weak_type) if sharding is None and mat is None
                      else (self.shape, self.dtype, self.weak_type, sharding, mat))

  ndim = property(lambda self: len(self.shape))

  @property
  def manual_axis_type(self):
    """Over which manual mesh axes the value varies (inside shard_map with check_vma=True)."""
    return _EMPTY_MAT if self._mat is None else self._mat

  mat = manual_axis_type

  @property
  def size(self) -> int:
    return math.prod(self.shape)  # Python ints: no int64 wrap-around for huge shapes

  def update(self, shape=None, dtype=None, weak_type=None, sharding=_KEEP,
             manual_axis_type=_KEEP, memory_space=None) -> "ShapedArray":
    """A copy with the given fields replaced. The sharding is kept unless the shape changes
    (a new shape needs a new sharding: pass it); the varying manual axes and the memory space
    are kept."""
    if sharding is _KEEP:
      sharding = self.sharding if shape is None or tuple(shape) == self.shape else None
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type, sharding,
                       manual_axis_type=self._mat if manual_axis_type is _KEEP
                       else manual_axis_type,
                       memory_space=self.memory_space if memory_space is None else memory_space)

  def to_tangent_aval(self) -> "ShapedArray":
    """The type of this type's tangents (JAX's name): itself for inexact dtypes, float0 of the
    same shape (keeping the weak type, as JAX's) for integer and bool ones (and keys)."""
    if isinstance(self.dtype, np.dtype) and dtypes.is_inexact(self.dtype):
      return ShapedArray(self.shape, self.dtype, self.weak_type, self.sharding,
                         manual_axis_type=self._mat, memory_space=self.memory_space)
    return ShapedArray(self.shape, dtypes.float0, self.weak_type, manual_axis_type=self._mat,
                       memory_space=self.memory_space)

  def at_least_vspace(self) -> "ShapedArray":
    """`to_tangent_aval()` under its older JAX name (equinox's filter_primitive uses it)."""
    return self.to_tangent_aval()

  def strip_weak_type(self) -> "ShapedArray":
    return self.update(weak_type=False) if self.weak_type else self

  def __eq__(self, other):
    return other is self or (type(other) is ShapedArray and self.shape == other.shape
                             and self.dtype == other.dtype and self.weak_type == other.weak_type
                             and self.sharding == other.sharding and self._mat == other._mat
                             and self.memory_space is other.memory_space)

  def __hash__(self):
    return self._hash

  def str_short(self, short_dtypes: bool = True) -> str:
    """'f32[3,4]' (JAX's 'f32[8@x,4]' for a dimension split over the Explicit mesh axis x), the
    form used in printed jaxprs; 'float32[3,4]' with short_dtypes=False."""
    dims = map(str, self.shape)
    tail = ""
    if self.sharding is not None:
      spec = self.sharding.spec
      parts = spec.partitions
      dims = [d + _split_suffix(part) for d, part in zip(dims, parts, strict=False)] \
          + [str(n) for n in self.shape[len(parts):]]
      tail = _unreduced_suffix(spec, self.sharding.mesh)
    if not isinstance(self.dtype, np.dtype):  # an extended dtype prints its own name
      name = self.dtype.name
    else:
      name = dtypes.short_name(self.dtype) if short_dtypes else self.dtype.name
    # JAX's one brace for all three: '{V:i}', '{U:c}', '{V:i, U:c, R:d}'
    marks = [m[1:-1] for m in ("" if self._mat is None else self._mat.suffix(), tail) if m]
    if self.memory_space is not _DEVICE:  # JAX's 'f32<host>[4]'
      name = f"{name}<{self.memory_space.name.lower()}>"
    return f"{name}[{','.join(dims)}]" + ("{" + ", ".join(marks) + "}" if marks else "")

  def __repr__(self):
    """As JAX's: 'ShapedArray(float32[3,4])', 'ShapedArray(int32[], weak_type=True)'."""
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"

  def __str__(self):
    """JAX's form: 'float32[3]', '~float32[]' for a weakly typed value."""
    return ("~" if self.weak_type else "") + self.str_short(short_dtypes=False)


def _unreduced_suffix(spec, mesh) -> str:
  """JAX's '{U:c}', '{U:(a,b), R:c}': the unreduced and reduced mesh axes of a type, in mesh
  order ('' for none)."""
  marks = []
  for mark, axes in (("U", spec.unreduced), ("R", spec.reduced)):
    if axes:
      names = [a for a in mesh.axis_names if a in axes]
      marks.append(f"{mark}:{names[0]}" if len(names) == 1 else f"{mark}:({','.join(names)})")
  return "{" + ", ".join(marks) + "}" if marks else ""


def _split_suffix(part) -> str:
  if part is None:
    return ""
  if isinstance(part, tuple):
    return "@(" + ",".join(part) + ")" if len(part) > 1 else f"@{part[0]}"
  return f"@{part}"


def physical_aval(aval):
  """The type a value of `aval` has in compiled programs and device buffers (JAX's name): itself
  for NumPy dtypes; for an extended dtype (typed keys' `key<fry>[4]`), its data's type, the
  dtype's physical suffix appended to the shape (`u32[4,2]`), not split over its trailing dims."""
  dtype = getattr(aval, "dtype", None)
  if dtype is None or isinstance(dtype, np.dtype) or not extended_dtypes.is_extended(dtype):
    return aval
  suffix = tuple(dtype.physical_suffix)
  sharding = aval.sharding
  if sharding is not None:
    from revax._src.core import sharding_types
    parts = tuple(sharding.spec.partitions)
    parts = (parts + (None,) * (len(aval.shape) - len(parts)) + (None,) * len(suffix))
    sharding = sharding_types.make_sharding(sharding.mesh, parts, sharding.spec.unreduced,
                                            sharding.spec.reduced)
  return ShapedArray(aval.shape + suffix, dtype.physical_dtype, False, sharding,
                     manual_axis_type=aval._mat, memory_space=aval.memory_space)


def same_type(a: ShapedArray, b: ShapedArray) -> bool:
  """Type equality as the type checker sees it: shapes, dtypes and varying manual axes, weak
  types aside (a Ref is never the same type as an array)."""
  if type(a) is AbstractToken or type(b) is AbstractToken:
    return a is b
  return (a.shape == b.shape and a.dtype == b.dtype
          and (type(a) is AbstractRef) == (type(b) is AbstractRef)
          and getattr(a, "_mat", None) == getattr(b, "_mat", None))


class AbstractRef:
  """The type of a mutable array reference (JAX's `AbstractRef`): the type of the array it holds
  (`inner_aval`), printed `Ref{f32[3]}`. Shape, dtype and weak type are the inner array's."""
  __slots__ = ("inner_aval", "kind", "memory_space")
  # whether any ref type was ever made in this process (until then no value can be a ref, and
  # checks for refs among a function's arguments cost nothing)
  any_made = False

  def __init__(self, inner_aval: ShapedArray, memory_space=None, kind=None):
    AbstractRef.any_made = True
    self.inner_aval = inner_aval
    self.kind = kind
    self.memory_space = memory_space

  shape = property(lambda self: self.inner_aval.shape)
  dtype = property(lambda self: self.inner_aval.dtype)
  weak_type = property(lambda self: self.inner_aval.weak_type)
  ndim = property(lambda self: self.inner_aval.ndim)
  size = property(lambda self: self.inner_aval.size)
  sharding = property(lambda self: self.inner_aval.sharding)

  def update(self, inner_aval=None, kind=_KEEP, **inner_fields) -> "AbstractRef":
    """A copy with `inner_aval` or `kind` replaced, or with the inner aval's `shape`, `dtype`,
    ... replaced (`inner_fields`, as ShapedArray.update takes them)."""
    inner = self.inner_aval if inner_aval is None else inner_aval
    if inner_fields:
      inner = inner.update(**inner_fields)
    return AbstractRef(inner, self.memory_space, self.kind if kind is _KEEP else kind)

  def strip_weak_type(self) -> "AbstractRef":
    return self

  def __eq__(self, other):
    return (type(other) is AbstractRef and self.inner_aval == other.inner_aval
            and self.kind == other.kind and self.memory_space == other.memory_space)

  def __hash__(self):
    return hash((AbstractRef, self.inner_aval, self.kind, self.memory_space))

  def str_short(self, short_dtypes: bool = True) -> str:
    """'Ref{f32[3]}', as JAX prints it in jaxprs."""
    return f"Ref{{{self.inner_aval.str_short(short_dtypes)}}}"

  def __repr__(self):
    return f"Ref{{{self.inner_aval.str_short(short_dtypes=False)}}}"

  __str__ = __repr__


class AbstractToken:
  """The type of an XLA token (JAX's `AbstractToken`): a value with no shape or dtype that
  orders side effects. One instance, `abstract_token`; printed `Tok` in jaxprs."""
  __slots__ = ()
  weak_type = False
  sharding = None

  def str_short(self, short_dtypes: bool = True) -> str:
    return "Tok"

  def to_tangent_aval(self) -> "AbstractToken":
    return self

  def strip_weak_type(self) -> "AbstractToken":
    return self

  def __repr__(self):
    return "AbstractToken()"


abstract_token = AbstractToken()


class Token:
  """A concrete XLA token (JAX's `Token`): the result of `lax.create_token` / `lax.after_all`
  outside jit, holding the device buffer of the token (`_buf`). It is a pytree leaf and can be
  passed to, and returned from, jitted functions."""
  __slots__ = ("_buf",)

  def __init__(self, buf):
    self._buf = buf

  def block_until_ready(self) -> None:
    """Wait until the computation that produced the token has run."""
    self._buf.block_until_ready()


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
pytype_aval_mappings[Token] = lambda _: abstract_token
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
      if getattr(x, "__jax_array__", None) is not None:  # as JAX 0.10.2
        raise ValueError("Triggering __jax_array__() during abstractification is no longer "
                         "supported. To avoid this error, either explicitly convert your "
                         "object using revax.numpy.array(), or register your object as a "
                         "pytree.")
      raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid revax type: expected "
                      "an array, a NumPy array or scalar, or a Python bool/int/float/complex")
  return fn(x)


def is_array_like(x) -> bool:
  t = type(x)
  return t in pytype_aval_mappings or any(s in pytype_aval_mappings for s in t.__mro__[1:])
