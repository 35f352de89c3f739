"""dtype objects and queries of revax.numpy: scalar types, result_type, promote_types, finfo.

`revax.numpy.float32` is a scalar *type* like `jax.numpy.float32`: it works wherever NumPy takes
a dtype (`np.dtype(rnp.float32)`, `zeros(3, rnp.float32)`), and calling it makes a revax array,
`rnp.float32(3)` being a 0-d float32 Array (not a NumPy scalar).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from revax._src.core import dtypes, extended_dtypes
from revax._src.core.trace import Tracer
from revax._src.numpy.util import aval_of
from revax._src.runtime.array import Array


class _ScalarMeta(type):
  """Metaclass of revax.numpy's scalar types: a dtype that makes arrays when called."""

  def __call__(cls, x=0):
    from revax._src.numpy.creation import asarray
    return asarray(x, dtype=cls.dtype)

  def __eq__(cls, other):
    return cls is other or cls.dtype.type == other

  def __ne__(cls, other):
    return not cls == other

  def __hash__(cls):
    return hash(cls.dtype.type)

  def __instancecheck__(cls, instance):
    return isinstance(instance, cls.dtype.type)

  def __repr__(cls):
    return f"<class 'revax.numpy.{cls.__name__}'>"


def _scalar_type(name: str, dtype) -> _ScalarMeta:
  doc = f"The {np.dtype(dtype).name} scalar type: `{name}(x)` makes a {np.dtype(dtype).name} array."
  return _ScalarMeta(name, (object,), {"dtype": np.dtype(dtype), "__doc__": doc,
                                       "__module__": "revax.numpy"})


bool_ = _scalar_type("bool_", np.bool_)
int8 = _scalar_type("int8", np.int8)
int16 = _scalar_type("int16", np.int16)
int32 = _scalar_type("int32", np.int32)
int64 = _scalar_type("int64", np.int64)
uint8 = _scalar_type("uint8", np.uint8)
uint16 = _scalar_type("uint16", np.uint16)
uint32 = _scalar_type("uint32", np.uint32)
uint64 = _scalar_type("uint64", np.uint64)
float16 = _scalar_type("float16", np.float16)
bfloat16 = _scalar_type("bfloat16", ml_dtypes.bfloat16)
float32 = _scalar_type("float32", np.float32)
float64 = _scalar_type("float64", np.float64)
complex64 = _scalar_type("complex64", np.complex64)
complex128 = _scalar_type("complex128", np.complex128)
int_ = _scalar_type("int_", np.int64)
uint = _scalar_type("uint", np.uint64)
float_ = _scalar_type("float_", np.float64)
complex_ = _scalar_type("complex_", np.complex128)
half, single, double = float16, float32, float64
csingle, cdouble = complex64, complex128

# NumPy's abstract categories, for issubdtype
generic, number, inexact, floating, complexfloating = (
    np.generic, np.number, np.inexact, np.floating, np.complexfloating)
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger

dtype = np.dtype

_WEAK_PY_TYPES = {int: "int", float: "float", complex: "complex"}


def _is_value(x) -> bool:
  return isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in (
      bool, int, float, complex)


def _dtype_and_weak(x):
  if _is_value(x):
    aval = aval_of(x)
    return aval.dtype, aval.weak_type
  if isinstance(x, type) and x in _WEAK_PY_TYPES:  # int, float, complex: weak, as their values
    return dtypes.scalar_dtype({int: 0, float: 0.0, complex: 0j}[x])
  if x is None:  # (jax: the default float dtype, strongly typed)
    return dtypes.default_float_dtype(), False
  if extended_dtypes.is_extended(x):  # a key dtype itself is not a type to promote (jax's error)
    raise TypeError(f"Cannot determine dtype of {x}")
  dt = getattr(x, "dtype", None)
  if extended_dtypes.is_extended(dt):  # e.g. a ShapeDtypeStruct of keys
    return dt, False
  return dtypes.canonicalize_dtype(np.dtype(x)), False


def result_type(*args, return_weak_type_flag: bool = False):
  """The dtype JAX's promotion gives for arrays, scalars and dtypes together.

  Python scalars (and the types int, float, complex) are weakly typed.

  Example:
    >>> revax.dtypes.result_type(jnp.int8, 1)  # a Python int is weak: int8 stays
    dtype('int8')
    >>> revax.dtypes.result_type(jnp.int8, 1.0)
    dtype('float32')
  """
  if not args:
    raise ValueError("at least one array or dtype is required")
  pairs = list(map(_dtype_and_weak, args))
  extended = [d for d, _ in pairs if extended_dtypes.is_extended(d)]
  if extended:  # typed keys: only with themselves (jax's trivial promotion), else jax's error
    if len(extended) == len(pairs) and len(set(extended)) == 1:
      return (extended[0], False) if return_weak_type_flag else extended[0]
    raise ValueError(f"dtype={extended[0]} is not a valid dtype for JAX type promotion.")
  dt, weak = dtypes.promote_types_weak(*pairs)
  return (dt, weak) if return_weak_type_flag else dt


def promote_types(a, b) -> np.dtype:
  """The strong-typed join of two dtypes in JAX's lattice (`promote_types(int8, uint8)` is
  int16; `promote_types(int32, float16)` is float16)."""
  return dtypes.promote_types(np.dtype(a), np.dtype(b))


def _as_dtype(x) -> np.dtype:
  if _is_value(x):
    return aval_of(x).dtype
  return np.dtype(x)


def iinfo(int_type):
  """Machine limits of an integer dtype (`iinfo(int8).max == 127`)."""
  if extended_dtypes.is_extended(getattr(int_type, "dtype", int_type)):
    raise ValueError("Invalid integer data type 'O'.")  # (as ml_dtypes.iinfo, JAX's, says)
  return dtypes.iinfo(_as_dtype(int_type))


def finfo(float_type):
  """Machine limits of a floating dtype, bfloat16 included (`finfo(bfloat16).eps`)."""
  return dtypes.finfo(_as_dtype(float_type))


def issubdtype(arg1, arg2) -> bool:
  """np.issubdtype that knows ml_dtypes' types (bfloat16 and float8_* are floating, int4 is a
  signed integer), revax's scalar types and typed keys' dtypes (jax.numpy.issubdtype).

  Example:
    >>> jnp.issubdtype(jnp.bfloat16, jnp.floating)
    True
  """
  return extended_dtypes.issubdtype(arg1, arg2)


def can_cast(from_, to, casting: str = "safe") -> bool:
  """np.can_cast on dtypes (bfloat16 included through ml_dtypes' casting tables)."""
  return bool(np.can_cast(_as_dtype(from_), np.dtype(to), casting))
