"""Host-side conversions, files and printing: copy, frombuffer, fromstring, from_dlpack, load,
save, savez, array_repr/array_str and NumPy's print options (revax arrays print through NumPy,
so NumPy's options apply to them).

fromfile and fromiter raise NotImplementedError, as in JAX: reading a file or consuming an
iterator is a side effect that jit would not repeat.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from revax._src.numpy import util
from revax._src import tree_util

array_repr = np.array_repr
array_str = np.array_str
save = np.save
savez = np.savez


def printoptions(*args, **kwargs):
  """NumPy's printoptions context manager (revax arrays print through NumPy)."""
  return np.printoptions(*args, **kwargs)


def get_printoptions():
  """NumPy's current print options."""
  return np.get_printoptions()


def set_printoptions(*args, **kwargs):
  """Set NumPy's print options (they apply to revax arrays)."""
  return np.set_printoptions(*args, **kwargs)


@tree_util.accepts_array_leaves()
def copy(a, order=None):
  """A copy of `a` as a revax array."""
  from revax._src.numpy.creation import array
  util.check_arraylike("copy", a)
  return array(a, copy=True, order=order)


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
  """A 1-D array from the bytes of `buffer` interpreted as `dtype`."""
  from revax._src.numpy.creation import asarray
  return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count: int = -1, *, sep: str):
  """A 1-D array from the numbers in the text `string` separated by `sep`."""
  from revax._src.numpy.creation import asarray
  return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def from_dlpack(x, /, *, device=None, copy=None):
  """A revax array from any object that implements the DLPack protocol, placed on `device` (a
  Device or one-device Sharding) if given: revax.dlpack.from_dlpack."""
  from revax._src import dlpack
  return dlpack.from_dlpack(x, device=device, copy=copy)


def _impure(name):
  def fun(*args, **kwargs):
    raise NotImplementedError(
        f"jnp.{name}() is not implemented because it may be non-pure and thus unsafe for use "
        f"with JIT and other transformations. Consider using jnp.asarray(np.{name}(...)) "
        f"instead.")
  fun.__name__ = fun.__qualname__ = name
  fun.__doc__ = f"Not implemented (np.{name} has side effects); raises NotImplementedError."
  return fun


fromfile = _impure("fromfile")
fromiter = _impure("fromiter")


def load(file, *args, **kwargs):
  """np.load, with bfloat16 arrays (saved by NumPy as 2-byte void) recovered, as a revax
  array when the dtype is supported."""
  from revax._src.numpy.creation import asarray
  out = np.load(file, *args, **kwargs)
  if isinstance(out, np.ndarray):
    if out.dtype == "V2":
      out = out.view(ml_dtypes.bfloat16)
    try:
      out = asarray(out)
    except (TypeError, ValueError):
      pass
  return out
