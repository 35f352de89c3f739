"""jnp.add, jnp.multiply, jnp.maximum, ... as JAX has them: `ufunc` objects, not plain functions.

Calling one calls the elementwise function of ufuncs.py (or float_parts.py) directly; the
object adds NumPy's ufunc methods (`reduce`, `accumulate`, `outer`, `at`, `reduceat`) and
attributes (`identity`, `nin`, `nout`, `nargs`), as in JAX 0.10.2, with the same fast paths
JAX gives each one (add.reduce is sum, add.accumulate cumsum, maximum.reduce max, add.at an
`.at[].add`, ...); the others fold with the generic methods of `functional.ufunc`.
"""
from __future__ import annotations

import numpy as np

from revax._src.numpy import float_parts, reductions, ufuncs, util
from revax._src.numpy.functional import ufunc

__all__ = ["add", "subtract", "multiply", "negative", "maximum", "minimum", "logaddexp",
           "logaddexp2", "logical_and", "logical_or", "logical_xor", "bitwise_and",
           "bitwise_or", "bitwise_xor"]


def _ufunc(func, nin, identity=None, **methods):
  u = ufunc(func, nin, 1, name=func.__name__, identity=identity, call=func, **methods)
  u.__doc__ = func.__doc__
  return u


def _at(method):
  """A ufunc's `at` method as the `.at[indices].<method>(b)` update."""
  def at(a, indices, b, *, indices_are_sorted=False, unique_indices=False):
    ref = util.as_array(a).at[indices]
    return getattr(ref, method)(b, indices_are_sorted=indices_are_sorted,
                                unique_indices=unique_indices)
  return at


add = _ufunc(ufuncs.add, 2, 0, reduce=reductions.sum, accumulate=reductions.cumsum,
             at=_at("add"))
subtract = _ufunc(ufuncs.subtract, 2, at=_at("subtract"))
multiply = _ufunc(ufuncs.multiply, 2, 1, reduce=reductions.prod,
                  accumulate=reductions.cumprod, at=_at("multiply"))
negative = _ufunc(ufuncs.negative, 1)
maximum = _ufunc(ufuncs.maximum, 2, reduce=reductions.max)
minimum = _ufunc(ufuncs.minimum, 2, reduce=reductions.min)
logaddexp = _ufunc(ufuncs.logaddexp, 2, -np.inf)
logaddexp2 = _ufunc(ufuncs.logaddexp2, 2, -np.inf)
logical_and = _ufunc(ufuncs.logical_and, 2, True, reduce=reductions.all)
logical_or = _ufunc(ufuncs.logical_or, 2, False, reduce=reductions.any)
logical_xor = _ufunc(ufuncs.logical_xor, 2, False, reduce=reductions.logical_xor_reduce)
bitwise_and = _ufunc(ufuncs.bitwise_and, 2, -1, reduce=reductions.bitwise_and_reduce)
bitwise_or = _ufunc(ufuncs.bitwise_or, 2, 0, reduce=reductions.bitwise_or_reduce)
bitwise_xor = _ufunc(ufuncs.bitwise_xor, 2, 0, reduce=reductions.bitwise_xor_reduce)
