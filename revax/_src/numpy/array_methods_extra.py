"""The remaining NumPy-style methods of jax.Array on revax arrays and tracers: argpartition,
choose, compress, diagonal, searchsorted, trace, view, tobytes, byteswap, `in`,
copy.copy/deepcopy, round(), the array-API namespace, NEP 37's `__array_module__`, DLPack export,
and `flat` (which raises, as in JAX)."""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.core.trace import Tracer
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.runtime.array import Array


def _view(self, dtype=None, type=None):  # noqa: A002 (NumPy's name)
  """The same bits read as `dtype`: the last axis shrinks or grows by the width ratio."""
  if type is not None:
    raise NotImplementedError("`type` argument of array.view() is not supported.")
  if dtype is None:
    return self
  dtype = util.canonical_dtype_arg(dtype)
  old = aval_of(self).dtype
  x = self
  if old == np.bool_:
    x = lax.convert_element_type(x, np.uint8)
    old = np.dtype(np.uint8)
  target = np.dtype(np.uint8) if dtype == np.bool_ else dtype
  if old.itemsize == target.itemsize:
    out = lax.bitcast_convert_type(x, target)
  elif old.itemsize > target.itemsize:
    out = lax.bitcast_convert_type(x, target)
    shape = aval_of(out).shape
    out = lax.reshape(out, shape[:-2] + (shape[-2] * shape[-1],))
  else:
    ratio = target.itemsize // old.itemsize
    shape = aval_of(x).shape
    if not shape or shape[-1] % ratio:
      raise ValueError(f"When changing to a larger dtype, its size must be a divisor of the total "
                       f"size in bytes of the last axis of the array; got shape {shape} from "
                       f"{old.name} to {target.name}")
    x = lax.reshape(x, shape[:-1] + (shape[-1] // ratio, ratio))
    out = lax.bitcast_convert_type(x, target)
  if dtype == np.bool_:
    out = lax.ne(out, util.constant_like(out, 0))
  return out


def _tobytes(self, order="C"):
  """The raw bytes of the (concrete) array."""
  return np.asarray(self).tobytes(order=order)


def _compress(self, condition, axis=None, *, out=None, size=None, fill_value=0):
  from revax._src.numpy.rearrange import compress
  return compress(condition, self, axis=axis, out=out, size=size, fill_value=fill_value)


def _contains(self, value):
  from revax._src.numpy.reductions import any as _any
  from revax._src.numpy.ufuncs import equal
  return _any(equal(self, value))


def _copy(self):
  from revax._src.numpy.creation import array
  return array(self, copy=True)


def _deepcopy(self, memo):
  return _copy(self)


def _round(self, ndigits=None):
  from revax._src.numpy.ufuncs import round as _rnd
  if ndigits is None:
    if aval_of(self).ndim:
      raise TypeError("round() on a non-scalar array is ambiguous; use revax.numpy.round")
    return _rnd(self)
  return _rnd(self, ndigits)


def _dlpack(self, *args, **kwargs):
  return np.asarray(self).__dlpack__(*args, **kwargs)


def _dlpack_device(self):
  return (1, 0)  # kDLCPU: exported through a host copy


def _byteswap(self):
  """The array with the bytes of each element reversed (same dtype): what a little-endian value
  reads as big-endian. Complex values swap their real and imaginary parts' bytes each."""
  aval = aval_of(self)
  if np.issubdtype(aval.dtype, np.complexfloating):
    return lax.complex(_byteswap(lax.real(self)), _byteswap(lax.imag(self)))
  if aval.dtype.itemsize == 1:
    return self.copy()
  as_bytes = lax.bitcast_convert_type(self, np.dtype(np.uint8))  # a trailing axis of bytes
  return lax.bitcast_convert_type(lax.rev(as_bytes, (aval.ndim,)), aval.dtype)


def _array_module(self, types, namespace=None):
  """NEP 37's `__array_module__`: revax.numpy when every type is a revax array, tracer or NumPy
  array, else NotImplemented."""
  if all(issubclass(t, (Array, Tracer, np.ndarray)) for t in types):
    return namespace
  return NotImplemented


def _flat(self):
  raise NotImplementedError("revax Arrays do not implement the arr.flat property: consider "
                            "arr.flatten() instead.")


def _method(namespace, name):
  fn = getattr(namespace, name)

  def method(self, *args, **kwargs):
    return fn(self, *args, **kwargs)
  method.__name__ = name
  method.__doc__ = fn.__doc__
  return method


def install(namespace) -> None:
  """Install the methods on Array and Tracer; `namespace` is revax.numpy (the array API
  namespace `x.__array_namespace__()` returns)."""
  for cls in (Array, Tracer):
    for name in ("argpartition", "choose", "diagonal", "searchsorted", "trace"):
      setattr(cls, name, _method(namespace, name))
    cls.compress = _compress
    cls.view = _view
    cls.tobytes = _tobytes
    cls.__contains__ = _contains
    cls.__copy__ = _copy
    cls.__deepcopy__ = _deepcopy
    cls.__round__ = _round
    cls.__array_namespace__ = lambda self, *, api_version=None: namespace
    cls.flat = property(_flat)
    cls.byteswap = _byteswap
    cls.__array_module__ = lambda self, types: _array_module(self, types, namespace)
  Array.__dlpack__ = _dlpack
  Array.__dlpack_device__ = _dlpack_device
