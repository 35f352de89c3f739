"""Helpers the distribution modules share: argument promotion and standardization."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.numpy.util import aval_of, promote_args_inexact

where = ufuncs.where


def promote(fun_name, *args):
  """The arguments promoted to one inexact dtype (ints and bools become the default float)."""
  return promote_args_inexact(fun_name, *args)


def dtype_of(x):
  return aval_of(x).dtype


def cast(x, like):
  """`x` converted to the dtype of `like` (a `where` with Python-float branches can widen)."""
  return x.astype(dtype_of(like))


def select(cond, x, y, like):
  return cast(where(cond, x, y), like)


def standardize(x, loc, scale):
  return (x - loc) / scale


NEG_INF = -np.inf
