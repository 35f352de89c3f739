"""Elementwise functions of revax.numpy (NumPy's ufuncs), with JAX's promotion."""
from __future__ import annotations

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.numpy.util import promote_args, promote_args_inexact


def add(x, y, /):
  """Elementwise x + y (bools: logical or)."""
  x, y = promote_args("add", x, y)
  if x_is_bool(x):
    return lax.bitwise_or(x, y)
  return lax.add(x, y)


def multiply(x, y, /):
  """Elementwise x * y (bools: logical and)."""
  x, y = promote_args("multiply", x, y)
  if x_is_bool(x):
    return lax.bitwise_and(x, y)
  return lax.mul(x, y)


def negative(x, /):
  (x,) = promote_args("negative", x)
  return lax.neg(x)


def exp(x, /):
  (x,) = promote_args_inexact("exp", x)
  return lax.exp(x)


def x_is_bool(x) -> bool:
  return dtypes.is_bool(get_aval(x).dtype)
