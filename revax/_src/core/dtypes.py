"""dtypes and type promotion, following JAX.

revax canonicalizes 64-bit types to 32-bit ones unless `enable_x64` is set, treats Python scalars
as *weakly typed* (they adopt the dtype of the array they meet), and promotes with JAX's type
lattice rather than NumPy's value-based rules, so `int8 + 1` stays int8 and `f16 + 1.0` stays f16.
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from revax._src.core.config import config

bfloat16 = np.dtype(ml_dtypes.bfloat16)
# the scalar type itself, which jax.dtypes.bfloat16 is (callable, usable with isinstance;
# equinox's serialisation and tests use it so)
bfloat16_scalar_type = ml_dtypes.bfloat16
float0 = np.dtype([("float0", np.void, 0)])  # the tangent type of integer and bool values

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

# ml_dtypes' narrow types, as JAX has them: floats of 4, 6 and 8 bits (each its own dtype, a
# subtype of floating that promotes with nothing but weak Python scalars) and 1, 2 and 4-bit ints.
NARROW_FLOATS = tuple(np.dtype(getattr(ml_dtypes, n)) for n in (
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
    "float8_e8m0fnu", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz"))
NARROW_SIGNED = tuple(np.dtype(getattr(ml_dtypes, n)) for n in ("int1", "int2", "int4"))
NARROW_UNSIGNED = tuple(np.dtype(getattr(ml_dtypes, n)) for n in ("uint1", "uint2", "uint4"))

_SIGNED = NARROW_SIGNED + (int8, int16, int32, int64)
_UNSIGNED = NARROW_UNSIGNED + (uint8, uint16, uint32, uint64)
_FLOATS = NARROW_FLOATS + (bfloat16, float16, float32, float64)
_COMPLEX = (complex64, complex128)
SUPPORTED = (bool_,) + _SIGNED + _UNSIGNED + _FLOATS + _COMPLEX

_X64_TO_X32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

_SHORT_NAMES = {bool_: "bool", bfloat16: "bf16", float16: "f16", float32: "f32", float64: "f64",
                int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8", uint16: "u16",
                uint32: "u32", uint64: "u64", complex64: "c64", complex128: "c128", float0: "float0"}
# (JAX's short names: 'float' -> 'f', 'uint' -> 'u', 'int' -> 'i': f8_e4m3fn, i4, u2)
_SHORT_NAMES.update({d: d.name.replace("float", "f").replace("uint", "u").replace("int", "i")
                     for d in NARROW_FLOATS + NARROW_SIGNED + NARROW_UNSIGNED})


def short_name(dtype) -> str:
  """'f32' for float32, as in printed jaxprs."""
  return _SHORT_NAMES[np.dtype(dtype)]


def is_float(dtype) -> bool:
  return np.dtype(dtype) in _FLOATS


_CUSTOM_FLOAT_TYPES = frozenset(d.type for d in NARROW_FLOATS + (bfloat16,))
_CUSTOM_SIGNED_TYPES = frozenset(d.type for d in NARROW_SIGNED)
_CUSTOM_UNSIGNED_TYPES = frozenset(d.type for d in NARROW_UNSIGNED)


def issubdtype(dtype, category) -> bool:
  """np.issubdtype that also knows ml_dtypes' types (bfloat16 and the float8/float6/float4
  types are floating, int4 a signed integer, uint4 an unsigned one), as JAX's does."""
  a = dtype if isinstance(dtype, type) and issubclass(dtype, np.generic) else np.dtype(dtype).type
  b = (category if isinstance(category, type) and issubclass(category, np.generic)
       else np.dtype(category).type)
  if a in _CUSTOM_FLOAT_TYPES:
    return b in (a, np.floating, np.inexact, np.number, np.generic)
  if a in _CUSTOM_SIGNED_TYPES:
    return b in (a, np.signedinteger, np.integer, np.number, np.generic)
  if a in _CUSTOM_UNSIGNED_TYPES:
    return b in (a, np.unsignedinteger, np.integer, np.number, np.generic)
  return bool(np.issubdtype(a, b))


def is_inexact(dtype) -> bool:
  return np.dtype(dtype) in _FLOATS or np.dtype(dtype) in _COMPLEX


def is_complex(dtype) -> bool:
  return np.dtype(dtype) in _COMPLEX


def is_integer(dtype) -> bool:
  return np.dtype(dtype) in _SIGNED or np.dtype(dtype) in _UNSIGNED


def is_signed_integer(dtype) -> bool:
  return np.dtype(dtype) in _SIGNED


def is_unsigned_integer(dtype) -> bool:
  return np.dtype(dtype) in _UNSIGNED


def is_bool(dtype) -> bool:
  return np.dtype(dtype) == bool_


def canonicalize_dtype(dtype) -> np.dtype:
  """The dtype revax computes in for `dtype`: 64-bit types become 32-bit ones without x64."""
  dtype = np.dtype(dtype)
  if dtype not in _SHORT_NAMES:
    raise TypeError(f"revax does not support dtype {dtype}; supported dtypes are "
                    f"{', '.join(d.name for d in SUPPORTED)}")
  if not config.x64_enabled:
    return _X64_TO_X32.get(dtype, dtype)
  return dtype


def default_int_dtype() -> np.dtype:
  return int64 if config.x64_enabled else int32


def default_uint_dtype() -> np.dtype:
  return uint64 if config.x64_enabled else uint32


def default_float_dtype() -> np.dtype:
  return float64 if config.x64_enabled else float32


def default_complex_dtype() -> np.dtype:
  return complex128 if config.x64_enabled else complex64


# --- JAX's type-promotion lattice ----------------------------------------------------------------
# Nodes are dtypes plus the weak categories 'i*', 'f*', 'c*' of Python int, float and complex.
_I, _F, _C = "i*", "f*", "c*"
_EDGES = {
    bool_: [_I],
    _I: [uint8, int8, *NARROW_UNSIGNED, *NARROW_SIGNED],
    uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64], uint64: [_F],
    int8: [int16], int16: [int32], int32: [int64], int64: [_F],
    _F: [*NARROW_FLOATS, bfloat16, float16, _C],
    bfloat16: [float32], float16: [float32], float32: [float64, complex64], float64: [complex128],
    _C: [complex64], complex64: [complex128], complex128: [],
    **{d: [] for d in NARROW_FLOATS + NARROW_SIGNED + NARROW_UNSIGNED},
}


def _upper_bounds():
  ub = {}

  def visit(n):
    if n not in ub:
      s = {n}
      for m in _EDGES[n]:
        s |= visit(m)
      ub[n] = frozenset(s)
    return ub[n]

  for n in _EDGES:
    visit(n)
  return ub


_UB = _upper_bounds()


def _strict_upper_bounds():
  """JAX's strict lattice (jax_numpy_dtype_promotion='strict'): a dtype promotes only to
  itself; Python scalars' weak categories still take any dtype of their kind or above (a weak
  int any int, float or complex dtype; a weak float any float or complex; a weak complex any
  complex)."""
  ints = {n for n in _EDGES if n not in (_I, _F, _C) and np.dtype(n).kind in "iu"}
  floats = {n for n in _EDGES if n not in (_I, _F, _C) and n in _FLOATS}
  complexes = {complex64, complex128}
  ub = {n: frozenset({n}) for n in _EDGES}
  ub[_C] = frozenset({_C} | complexes)
  ub[_F] = frozenset({_F} | floats) | ub[_C]
  ub[_I] = frozenset({_I} | ints) | ub[_F]
  return ub


_STRICT_UB = _strict_upper_bounds()


class TypePromotionError(ValueError):
  """An implicit promotion that the strict promotion mode refuses (JAX's TypePromotionError)."""


def _join(nodes: frozenset):
  if config.numpy_dtype_promotion == "strict":
    return _join_in(nodes, True)
  return _join_in(nodes, False)


@functools.lru_cache(maxsize=4096)
def _join_in(nodes: frozenset, strict: bool):
  if strict:
    common = frozenset.intersection(*(_STRICT_UB[n] for n in nodes))
    for c in common:
      if common <= _STRICT_UB[c]:
        return c
    names = tuple(sorted(str(n) for n in nodes))
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path when "
        "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output "
        "type, or set jax_numpy_dtype_promotion=standard.")
  common = frozenset.intersection(*(_UB[n] for n in nodes))
  for c in common:  # the least upper bound: the common bound below all other common bounds
    if common <= _UB[c]:
      return c
  names = tuple(str(n) for n in nodes)
  if any(n in NARROW_FLOATS for n in nodes):
    what, cast = "8-bit, 6-bit and 4-bit floats", "float32"
  elif any(n in NARROW_SIGNED or n in NARROW_UNSIGNED for n in nodes):
    what, cast = "1-bit, 2-bit and 4-bit integers", "int32"
  else:
    raise TypePromotionError(f"Input dtypes {names} have no available implicit dtype promotion "
                             "path. Try explicitly casting inputs to the desired output type.")
  raise TypePromotionError(
      f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
      f"unintended promotion, {what} do not support implicit promotion. If you'd like your "
      f"inputs to be promoted to another type, you can do so explicitly using e.g. "
      f"x.astype('{cast}')")


def _node(dtype, weak):
  dtype = np.dtype(dtype)
  if weak:
    if dtype in _SIGNED or dtype in _UNSIGNED:
      return _I
    if dtype in _FLOATS:
      return _F
    if dtype in _COMPLEX:
      return _C
  return dtype


def promote_types_weak(*dtypes_and_weak, canonicalize: bool = True):
  """Join of (dtype, weak_type) pairs in JAX's lattice. Returns (dtype, weak_type); the dtype is
  canonicalized (64-bit types become 32-bit ones without x64) unless `canonicalize` is False."""
  nodes = frozenset(_node(d, w) for d, w in dtypes_and_weak)
  if len(nodes) == 1:
    (n,) = nodes
  else:
    n = _join(nodes)
  if n == _I:
    return default_int_dtype(), True
  if n == _F:
    return default_float_dtype(), True
  if n == _C:
    return default_complex_dtype(), True
  return (canonicalize_dtype(n) if canonicalize else n), False


def promote_types(a, b) -> np.dtype:
  """Like jax.numpy.promote_types: the join of two (strong) dtypes. As in JAX, a join that is one
  of the inputs is kept as is (float64 with int32 is float64 even without x64), a new 64-bit
  integer join is canonicalized, and a join at the weak float/complex category is 64-bit."""
  a, b = np.dtype(a), np.dtype(b)
  n = _join(frozenset((_node(a, False), _node(b, False))))
  if n == _F:
    return float64
  if n == _C:
    return complex128
  return n if n in (a, b) or not is_integer(n) else canonicalize_dtype(n)


# --- dtypes of Python values ---------------------------------------------------------------------
_PY_SCALAR_KIND = {bool: (bool_, False), int: ("int", True), float: ("float", True),
                   complex: ("complex", True)}


def scalar_dtype(x) -> tuple[np.dtype, bool]:
  """(dtype, weak_type) of a Python scalar (or of an instance of a subclass, e.g. an IntEnum)."""
  t = type(x)
  if t not in _PY_SCALAR_KIND:
    t = next((k for k in (bool, int, float, complex) if isinstance(x, k)), None)
    if t is None:
      raise TypeError(f"{x!r} of type {type(x).__name__} is not a Python scalar")
  kind, weak = _PY_SCALAR_KIND[t]
  if kind == "int":
    return default_int_dtype(), True
  if kind == "float":
    return default_float_dtype(), True
  if kind == "complex":
    return default_complex_dtype(), True
  return bool_, False


def is_python_scalar(x) -> bool:
  return type(x) in _PY_SCALAR_KIND


_NO_INF = frozenset(np.dtype(getattr(ml_dtypes, n)) for n in (
    "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz"))


def supports_inf(dtype) -> bool:
  """Whether reductions may start from an infinity in the floating `dtype`: not for the float8
  types without infinities, as in JAX (JAX's list: float4_e2m1fn and float8_e8m0fnu are
  treated as having them, the infinity becoming NaN); False for non-floating dtypes."""
  return np.dtype(dtype) not in _NO_INF and is_inexact(dtype)


def iinfo(dtype):
  """Machine limits of an integer dtype, as `numpy.iinfo` (ml_dtypes' for int4 and friends).

  Args:
    dtype: an integer dtype, or a value or name NumPy turns into one.

  Returns:
    An object with `bits`, `min`, `max` and `dtype`.

  Example:
    >>> revax.dtypes.iinfo("int8").max
    127
  """
  return ml_dtypes.iinfo(np.dtype(dtype))


def finfo(dtype):
  """Machine limits of a floating dtype, as `numpy.finfo` (ml_dtypes' for bfloat16 and the
  float8 types).

  Args:
    dtype: a floating dtype, or a value or name NumPy turns into one.

  Returns:
    An object with `bits`, `eps`, `max`, `min`, `tiny`, `resolution` and `dtype`.

  Example:
    >>> int(revax.dtypes.finfo(jnp.bfloat16).bits)
    16
  """
  return ml_dtypes.finfo(np.dtype(dtype))
