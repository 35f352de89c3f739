"""Reductions that ignore NaNs: nansum, nanprod, nanmax, nanmin, nanargmax, nanargmin, nanmean,
nanvar, nanstd, nancumsum, nancumprod.

Each replaces NaNs by the reduction's identity (0 for sums, 1 for products, -inf/+inf for
max/min) and reduces as usual; counts for the means exclude NaNs. Integer and bool inputs have
no NaNs and reduce as the plain functions do. All-NaN slices give NaN for max/min/mean/var, -1
for nanargmax/nanargmin, as in JAX.
"""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.numpy import reductions, util
from revax._src.numpy.util import aval_of
from revax._src.numpy.util import convert_pytree_operands


def _isnan(a):
  return lax.ne(a, a)


def _replace_nan(a, value):
  a = util.as_array(a)
  if not dtypes.is_inexact(aval_of(a).dtype):
    return a
  return lax.select_n(_isnan(a), a, lax.full_like(a, value))


def _no_out(fun_name, out):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{fun_name} is not supported.")


def nansum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
  """Sum over `axis` treating NaNs as zero (arguments as for sum)."""
  _no_out("nansum", out)
  util.check_arraylike("nansum", a)
  return reductions.sum(_replace_nan(a, 0), axis=axis, dtype=dtype, keepdims=keepdims,
                        initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
            where=None):
  """Product over `axis` treating NaNs as one (arguments as for prod)."""
  _no_out("nanprod", out)
  util.check_arraylike("nanprod", a)
  return reductions.prod(_replace_nan(a, 1), axis=axis, dtype=dtype, keepdims=keepdims,
                         initial=initial, where=where)


def _nan_extreme(fun_name, red, a, axis, keepdims, initial, where, fill):
  util.check_arraylike(fun_name, a)
  a = util.as_array(a)
  if not dtypes.is_inexact(aval_of(a).dtype):
    return red(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
  out = red(_replace_nan(a, fill), axis=axis, keepdims=keepdims, initial=initial, where=where)
  valid = lax.bitwise_not(_isnan(a))
  if where is not None:
    valid = lax.bitwise_and(valid, util.broadcast_to(util.as_array(where), aval_of(a).shape))
  any_valid = reductions.any(valid, axis=axis, keepdims=keepdims)
  if initial is not None:
    return out
  return lax.select_n(util.broadcast_to(any_valid, aval_of(out).shape),
                      lax.full_like(out, np.nan), out)


def nanmax(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
  """Maximum over `axis` ignoring NaNs (NaN for all-NaN slices)."""
  _no_out("nanmax", out)
  return _nan_extreme("nanmax", reductions.max, a, axis, keepdims, initial, where, -np.inf)


def nanmin(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
  """Minimum over `axis` ignoring NaNs (NaN for all-NaN slices)."""
  _no_out("nanmin", out)
  return _nan_extreme("nanmin", reductions.min, a, axis, keepdims, initial, where, np.inf)


def _nan_arg(fun_name, arg, a, axis, keepdims, fill):
  util.check_arraylike(fun_name, a)
  a = util.as_array(a)
  if not dtypes.is_inexact(aval_of(a).dtype):
    return arg(a, axis=axis, keepdims=keepdims)
  nan = _isnan(a)
  res = arg(_replace_nan(a, fill), axis=axis, keepdims=keepdims)
  all_nan = reductions.all(nan, axis=axis, keepdims=bool(keepdims))
  return lax.select_n(all_nan, res, lax.full_like(res, -1))


def nanargmax(a, axis=None, out=None, keepdims=None):
  """Index of the maximum ignoring NaNs; -1 for all-NaN slices."""
  _no_out("nanargmax", out)
  return _nan_arg("nanargmax", reductions.argmax, a, axis, keepdims, -np.inf)


def nanargmin(a, axis=None, out=None, keepdims=None):
  """Index of the minimum ignoring NaNs; -1 for all-NaN slices."""
  _no_out("nanargmin", out)
  return _nan_arg("nanargmin", reductions.argmin, a, axis, keepdims, np.inf)


def _valid_where(a, where):
  valid = lax.bitwise_not(_isnan(a))
  if where is not None:
    valid = lax.bitwise_and(valid, util.broadcast_to(
        lax.ne(util.as_array(where), util.constant_like(where, 0)), aval_of(a).shape))
  return valid


def nanmean(a, axis=None, dtype=None, out=None, keepdims: bool = False, where=None):
  """Mean over `axis` of the non-NaN elements (NaN for all-NaN slices)."""
  _no_out("nanmean", out)
  util.check_arraylike("nanmean", a)
  a = util.as_array(a)
  if not dtypes.is_inexact(aval_of(a).dtype):
    return reductions.mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
  if dtypes.is_bool(aval_of(a).dtype):
    a = lax.convert_element_type(a, dtypes.default_int_dtype())
  return reductions.mean(a, axis=axis, dtype=dtype, keepdims=keepdims,
                         where=_valid_where(a, where))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, where=None,
           mean=None):
  """Variance over `axis` of the non-NaN elements (NaN where fewer than ddof + 1 remain)."""
  _no_out("nanvar", out)
  util.check_arraylike("nanvar", a)
  if mean is not None:
    raise NotImplementedError("The 'mean' argument to jnp.nanvar is not supported.")
  a = util.as_array(a)
  if not dtypes.is_inexact(aval_of(a).dtype):
    return reductions.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where)
  return reductions.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                        where=_valid_where(a, where))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, where=None,
           mean=None):
  """Standard deviation over `axis` of the non-NaN elements."""
  _no_out("nanstd", out)
  if mean is not None:
    raise NotImplementedError("The 'mean' argument to jnp.nanstd is not supported.")
  v = nanvar(a, axis=axis, dtype=None, ddof=ddof, keepdims=keepdims, where=where)
  out = lax.sqrt(v)
  dt = util.canonical_dtype_arg(dtype)
  return out if dt is None else lax.convert_element_type(out, dt)


def nancumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum along `axis` treating NaNs as zero."""
  _no_out("nancumsum", out)
  util.check_arraylike("nancumsum", a)
  return reductions.cumsum(_replace_nan(a, 0), axis=axis, dtype=dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product along `axis` treating NaNs as one."""
  _no_out("nancumprod", out)
  util.check_arraylike("nancumprod", a)
  return reductions.cumprod(_replace_nan(a, 1), axis=axis, dtype=dtype)

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax",
                        "nanmean", "nanmin", "nanprod", "nanstd", "nansum", "nanvar",))
