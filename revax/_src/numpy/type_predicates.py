"""Predicates on values and dtypes: iscomplex, isreal (elementwise), iscomplexobj, isrealobj,
isscalar, iterable and the array API's isdtype."""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.trace import Tracer
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.runtime.array import Array
from revax._src.numpy.util import convert_pytree_operands


def iscomplex(x):
  """Elementwise: whether the imaginary part is nonzero (False everywhere for real dtypes)."""
  util.check_arraylike("iscomplex", x)
  im = _imaginary_part(util.as_array(x))
  return lax.ne(im, util.lax_const(im, 0))  # (jax's constant: strong unless a weak scalar)


def isreal(x):
  """Elementwise: whether the imaginary part is zero (True everywhere for real dtypes)."""
  util.check_arraylike("isreal", x)
  im = _imaginary_part(util.as_array(x))
  return lax.eq(im, util.lax_const(im, 0))  # (jax's constant: strong unless a weak scalar)


def _imaginary_part(x):
  """jnp.imag: the imaginary part, zeros of `x`'s type and weak type for real `x`."""
  aval = aval_of(x)
  if dtypes.is_complex(aval.dtype):
    return lax.imag(x)
  return util.full_of(aval.shape, 0, aval.dtype, aval.weak_type)


def _dtype_of_object(x):
  if isinstance(x, (Array, Tracer)):
    return aval_of(x).dtype
  if hasattr(x, "dtype"):
    return np.dtype(x.dtype)
  return np.asarray(x).dtype


def iscomplexobj(x) -> bool:
  """Whether `x` has a complex dtype (a Python bool; the values are not inspected)."""
  if x is None:
    return False
  return dtypes.is_complex(_dtype_of_object(x))


def isrealobj(x) -> bool:
  """Whether `x` does not have a complex dtype."""
  return not iscomplexobj(x)


def isscalar(element) -> bool:
  """Whether `element` is a scalar: a Python or NumPy scalar, or a 0-d array."""
  if isinstance(element, (Array, Tracer, np.ndarray)):
    return aval_of(element).ndim == 0 if not isinstance(element, np.ndarray) else element.ndim == 0
  return np.isscalar(element)


def iterable(y) -> bool:
  """Whether `iter(y)` succeeds (False for 0-d arrays)."""
  try:
    iter(y)
  except TypeError:
    return False
  return True


_KINDS = {
    "bool": lambda d: d == np.dtype(bool),
    "signed integer": lambda d: np.issubdtype(d, np.signedinteger) or d.name == "int4",
    "unsigned integer": lambda d: np.issubdtype(d, np.unsignedinteger) or d.name == "uint4",
    "real floating": lambda d: dtypes.is_inexact(d) and not dtypes.is_complex(d),
    "complex floating": lambda d: dtypes.is_complex(d),
}
_KINDS["integral"] = lambda d: _KINDS["signed integer"](d) or _KINDS["unsigned integer"](d)
_KINDS["numeric"] = lambda d: (_KINDS["integral"](d) or _KINDS["real floating"](d) or
                               _KINDS["complex floating"](d))


def isdtype(dtype, kind) -> bool:
  """Whether `dtype` is of `kind`: a dtype, one of 'bool', 'signed integer', 'unsigned integer',
  'integral', 'real floating', 'complex floating', 'numeric', or a tuple of those."""
  the_dtype = np.dtype(dtype)
  for k in (kind if isinstance(kind, tuple) else (kind,)):
    if isinstance(k, str) and k in _KINDS:
      if _KINDS[k](the_dtype):
        return True
      continue
    try:
      other = np.dtype(k)
    except TypeError as e:
      if isinstance(k, str):
        raise ValueError(f"Unrecognized kind={k!r}; expected one of {list(_KINDS)}, or a "
                         f"compatible input for jnp.dtype()") from None
      raise TypeError(f"Expected kind to be a dtype, string, or tuple; got kind={k!r}") from e
    if other == the_dtype:
      return True
  return False

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("iscomplex", "isreal",))
