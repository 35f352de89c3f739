"""The parts of jax.dtypes beyond NumPy's dtypes: the `extended` category (dtypes such as typed
PRNG keys' `key<fry>`, which are not NumPy dtypes), and the helpers that know about it."""
from __future__ import annotations

import math
import threading

import ml_dtypes
import numpy as np

from revax._src.core import dtypes


class extended(np.generic):
  """Category of the dtypes that are not NumPy dtypes (e.g. typed PRNG keys)."""


class prng_key(extended):
  """Category of the dtypes of typed PRNG keys."""


# The class of typed key arrays (random/keys.py's PRNGKeyArray), set by that module, which sits
# above this one: `KeyTy.abstract_leaf` makes them.
key_array_type = None

# The registered PRNG implementations by name (filled by random/prng_impls.register_prng): how
# a serialized program names the implementation of its key types and key primitives.
prng_impls_by_name: dict = {}


class KeyTy:
  """The dtype of typed keys of one PRNG implementation (`impl`: an object with `name`, `tag`
  and `key_shape`, e.g. threefry2x32's); prints as JAX's `key<tag>`. An aval of this dtype
  (`key<fry>[4]`) has the keys' shape; its physical aval (avals.physical_aval, what lowering
  and the runtime see) appends the key data's dims as uint32 (`u32[4,2]`)."""
  type = prng_key  # so issubdtype(key.dtype, revax.dtypes.prng_key) holds
  __slots__ = ("_impl",)

  def __init__(self, impl):
    self._impl = impl

  @property
  def name(self) -> str:
    return f"key<{self._impl.tag}>"

  @property
  def itemsize(self) -> int:
    """Bytes per key: its uint32 key data's (8 for threefry, 16 for rbg), as JAX's."""
    return math.prod(self._impl.key_shape) * 4

  @property
  def physical_suffix(self) -> tuple:
    """The trailing dims one key's data adds to the keys' shape in the physical aval."""
    return self._impl.key_shape

  physical_dtype = np.dtype(np.uint32)

  def __repr__(self):
    return self.name

  __str__ = __repr__

  def __eq__(self, other):
    return isinstance(other, KeyTy) and other._impl == self._impl

  def abstract_leaf(self, shape, make_struct):
    """Keys of this dtype and `shape` over `make_struct(data shape, uint32)` (a
    ShapeDtypeStruct), what eval_shape traces for a struct of this dtype."""
    return key_array_type(make_struct(tuple(shape) + self._impl.key_shape, np.dtype(np.uint32)),
                          self._impl)

  def __hash__(self):
    return hash((KeyTy, self._impl))


class _KeyStaging(threading.local):
  """Whether typed key arrays cross transformation boundaries as key-typed values (`typed`,
  set while make_jaxpr traces: its jaxprs then type keys as JAX's do through nested jit, vmap,
  scan and grad) or as their uint32 data (otherwise: jit's traced programs carry key data
  through their control flow and calls; `jit(f).trace(key).jaxpr` retypes only the boundary,
  typed_key_jaxprs.py). One exception: the samplers hand their inner jits typed keys wherever
  they are traced (random/samplers.py `_sampler_key`, as jax's draw through `random_bits`), so
  a compiled program may hold key-typed values there; they lower as their uint32 data
  (`avals.physical_aval`)."""
  typed = False


key_staging = _KeyStaging()


TypePromotionError = dtypes.TypePromotionError  # (one class: the strict lattice raises it)


def is_extended(dtype) -> bool:
  """Whether `dtype` is an extended dtype (not a NumPy one), e.g. typed PRNG keys' key<fry>."""
  return isinstance(getattr(dtype, "type", None), type) and issubclass(dtype.type, extended)


_is_extended = is_extended


def issubdtype(a, b) -> bool:
  """Like `np.issubdtype`, also for ml_dtypes' types (bfloat16 and the float8/float6/float4
  types are floating, int4 a signed and uint4 an unsigned integer) and the extended dtypes
  (`key<fry>` is a subdtype of `prng_key` and of `extended`), as jax.dtypes.issubdtype.

  Args:
    a: a dtype, scalar type or anything `np.dtype` takes (an array: its dtype).
    b: a dtype or a category such as `jnp.floating` or `revax.dtypes.prng_key`.

  Returns:
    Whether `a` belongs to `b`.

  Example:
    >>> revax.dtypes.issubdtype(jnp.float8_e4m3fn, jnp.floating)
    True
  """
  if not (isinstance(a, (type, np.dtype)) or _is_extended(a)):
    a = np.dtype(a)
  if not (isinstance(b, (type, np.dtype)) or _is_extended(b)):
    b = np.dtype(b)
  a_is_type = isinstance(a, type)
  if isinstance(b, type) and issubclass(b, extended):
    if _is_extended(a):
      return issubclass(a.type, b)
    if a_is_type and issubclass(a, np.generic):
      return issubclass(a, b)
    return issubclass(np.dtype(a).type, b)
  if _is_extended(b):
    return _is_extended(a) and a == b
  if _is_extended(a):
    a, a_is_type = a.type, True
  a_type = a if a_is_type and issubclass(a, np.generic) else np.dtype(a).type
  b_type = b if isinstance(b, type) and issubclass(b, np.generic) else np.dtype(b).type
  return dtypes.issubdtype(a_type, b_type)


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False):
  """The dtype revax computes in for `dtype` (64-bit types become 32-bit ones without x64).

  Args:
    dtype: a dtype, or something convertible to one.
    allow_extended_dtype: return extended dtypes (typed-key dtypes) unchanged instead of
      raising.
  """
  if (hasattr(dtype, "shape") and hasattr(dtype, "dtype")
      and not isinstance(dtype, (type, np.generic, np.dtype))):  # (JAX's fails on arrays)
    raise TypeError(f"canonicalize_dtype takes a dtype, not an array ({type(dtype).__name__})")
  if _is_extended(dtype):
    if allow_extended_dtype:
      return dtype
    raise ValueError(f"Internal: canonicalize_dtype called on extended dtype {dtype} with "
                     "allow_extended_dtype=False")
  return dtypes.canonicalize_dtype(dtype)


def scalar_type_of(x) -> type:
  """The Python scalar type (bool, int, float or complex) of the values of `x`."""
  dtype = np.asarray(x).dtype if not hasattr(x, "dtype") else np.dtype(x.dtype)
  if dtype == np.bool_:
    return bool
  if dtypes.issubdtype(dtype, np.integer):
    return int
  if dtypes.issubdtype(dtype, np.floating) or dtype in (dtypes.bfloat16,):
    return float
  if dtypes.issubdtype(dtype, np.complexfloating):
    return complex
  raise TypeError(f"Invalid scalar value {x!r}")


def itemsize_bits(dtype) -> int:
  """The number of bits of one element of `dtype` (4 for int4, 16 for bfloat16, 8 for bool);
  ValueError for dtypes that are not numbers (float0, typed keys), as JAX's."""
  if dtype is None:
    raise ValueError("dtype cannot be None.")
  if not _is_extended(dtype) and np.dtype(dtype) == np.dtype(bool):
    return 8  # (a bool takes a byte)
  if issubdtype(dtype, np.integer):
    return ml_dtypes.iinfo(np.dtype(dtype)).bits
  if issubdtype(dtype, np.floating):
    return ml_dtypes.finfo(np.dtype(dtype)).bits
  if issubdtype(dtype, np.complexfloating):
    return 2 * ml_dtypes.finfo(np.dtype(dtype)).bits
  raise ValueError(f"unexpected input: {dtype=}")
