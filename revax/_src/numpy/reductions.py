"""Reductions: sum, prod, max, min, mean, var, std, any, all, argmax, argmin, cumulative sums.

Axes may be an int, a tuple, None (all axes) or negative; `keepdims` keeps reduced axes as size 1.
Dtypes follow JAX: sums and products of bools and narrow integers accumulate in the default
integer type (int32, or uint32 for unsigned ones), mean/var/std of integers are float32, and
float16/bfloat16 sums are computed in float32 and rounded back. Results are never weakly typed.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.numpy import util
from revax._src.numpy.util import aval_of, canonical_dtype_arg, canonicalize_axes
from revax._src.numpy.util import convert_pytree_operands


def _no_out(fun_name, out):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to {fun_name} is not supported.")


def _upcast_f16(dtype) -> np.dtype:
  return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


def _sum_dtype(dtype, promote_integers: bool) -> np.dtype:
  """The dtype of sum/prod of `dtype` operands when no dtype is given."""
  if dtypes.is_bool(dtype):
    return dtypes.default_int_dtype()
  if promote_integers and dtypes.is_signed_integer(dtype) and \
      dtype.itemsize < dtypes.default_int_dtype().itemsize:
    return dtypes.default_int_dtype()
  if promote_integers and dtypes.is_unsigned_integer(dtype) and \
      dtype.itemsize < dtypes.default_uint_dtype().itemsize:
    return dtypes.default_uint_dtype()
  return dtype


def _keep(out, axes, keepdims):
  return lax.expand_dims(out, axes) if keepdims and axes else out


def _apply_where(fun_name, a, where, identity):
  """`a` with the elements outside the `where` mask replaced by `identity`."""
  if where is None:
    return a
  util.check_arraylike(fun_name, where)
  mask = where if dtypes.is_bool(aval_of(where).dtype) else lax.ne(where, util.constant_like(
      where, 0))
  shape = util.broadcast_shapes(aval_of(a).shape, aval_of(mask).shape)
  a = util.broadcast_to(a, shape)
  mask = util.broadcast_to(mask, shape)
  return lax.select_n(mask, util.full_of(shape, identity, aval_of(a).dtype), a)


def _reduce(fun_name, lax_reduce, a, axis, out_dtype, compute_dtype, keepdims, where, identity):
  (a,) = util.converted_pytrees((a,))  # (flax's Variables)
  util.check_arraylike(fun_name, a)
  a = util.as_array(a)
  a = lax.convert_element_type(a, compute_dtype)
  a = _apply_where(fun_name, a, where, identity)
  axes = canonicalize_axes(axis, aval_of(a).ndim)
  out = lax_reduce(a, axes) if axes else a
  out = lax.convert_element_type(out, out_dtype)
  return _keep(out, axes, keepdims)


def sum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,  # noqa: A001
        where=None, promote_integers: bool = True):
  """Sum of elements over `axis`.

  Args:
    a: the array.
    axis: None (all axes), an int or a tuple of ints.
    dtype: the accumulation and result dtype (default: int32 for bools and narrow integers).
    keepdims: keep reduced axes as size 1.
    initial: a scalar added to the sum.
    where: a bool mask of the elements to include.
    promote_integers: widen narrow integers to the default integer type (default True).

  Example:
    >>> x = jnp.arange(12.).reshape(2, 3, 2)
    >>> jnp.sum(x, axis=(0, 2), keepdims=True)
    Array([[[14.],
            [22.],
            [30.]]], dtype=float32)
  """
  _no_out("sum", out)
  (a,) = util.converted_pytrees((a,))  # (flax's Variables)
  util.check_arraylike("sum", a)
  in_dtype = aval_of(a).dtype
  out_dtype = canonical_dtype_arg(dtype) or _sum_dtype(in_dtype, promote_integers)
  compute = dtypes.bool_ if dtypes.is_bool(out_dtype) else _upcast_f16(out_dtype)
  if dtypes.is_bool(out_dtype):
    res = _reduce("sum", lax.reduce_or, a, axis, out_dtype, compute, keepdims, where, False)
  else:
    res = _reduce("sum", lax.reduce_sum, a, axis, out_dtype, compute, keepdims, where, 0)
  if initial is not None:
    res = lax.add(res, lax.convert_element_type(initial, out_dtype))
  return res


def prod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
         where=None, promote_integers: bool = True):
  """Product of elements over `axis` (arguments as for `sum`)."""
  _no_out("prod", out)
  util.check_arraylike("prod", a)
  in_dtype = aval_of(a).dtype
  out_dtype = canonical_dtype_arg(dtype) or _sum_dtype(in_dtype, promote_integers)
  if dtypes.is_bool(out_dtype):
    res = _reduce("prod", lax.reduce_and, a, axis, out_dtype, out_dtype, keepdims, where, True)
  else:
    res = _reduce("prod", lax.reduce_prod, a, axis, out_dtype, _upcast_f16(out_dtype), keepdims,
                  where, 1)
  if initial is not None:
    res = lax.mul(res, lax.convert_element_type(initial, out_dtype))
  return res


def _extreme_identity(dtype, is_max: bool):
  if dtypes.is_bool(dtype):
    return not is_max
  if dtypes.is_integer(dtype):
    info = dtypes.iinfo(dtype)
    return info.min if is_max else info.max
  if not dtypes.supports_inf(dtype):  # (float8_e4m3fn and friends: finite extremes, as JAX)
    info = dtypes.finfo(dtype)
    return float(info.min) if is_max else float(info.max)
  return -np.inf if is_max else np.inf


def _minmax(fun_name, is_max, a, axis, out, keepdims, initial, where):
  _no_out(fun_name, out)
  (a,) = util.converted_pytrees((a,))  # (flax's Variables)
  util.check_arraylike(fun_name, a)
  aval = aval_of(a)
  axes = canonicalize_axes(axis, aval.ndim)
  if initial is None:
    if where is not None:
      raise ValueError(f"reduction operation {fun_name} with where requires initial")
    if builtins.any(aval.shape[i] == 0 for i in axes):
      raise ValueError(f"zero-size array to reduction operation {fun_name} which has no identity")
  if dtypes.is_bool(aval.dtype):
    reducer = lax.reduce_or if is_max else lax.reduce_and
  else:
    reducer = lax.reduce_max if is_max else lax.reduce_min
  res = _reduce(fun_name, reducer, a, axis, aval.dtype, aval.dtype, keepdims, where,
                _extreme_identity(aval.dtype, is_max))
  if initial is not None:
    init = lax.convert_element_type(initial, aval.dtype)
    res = (lax.max if is_max else lax.min)(res, init) if not dtypes.is_bool(aval.dtype) else \
        (lax.bitwise_or if is_max else lax.bitwise_and)(res, init)
  return res


def max(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):  # noqa: A001
  """Maximum over `axis` (NaN if any element is NaN). An empty reduction needs `initial`."""
  return _minmax("max", True, a, axis, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):  # noqa: A001
  """Minimum over `axis` (NaN if any element is NaN). An empty reduction needs `initial`."""
  return _minmax("min", False, a, axis, out, keepdims, initial, where)


amax, amin = max, min


def _bool_reduction(fun_name, reducer, identity, a, axis, out, keepdims, where):
  _no_out(fun_name, out)
  util.check_arraylike(fun_name, a)
  if not dtypes.is_bool(aval_of(a).dtype):
    a = lax.ne(a, util.constant_like(a, 0))
  return _reduce(fun_name, reducer, a, axis, dtypes.bool_, dtypes.bool_, keepdims, where, identity)


def any(a, axis=None, out=None, keepdims: bool = False, *, where=None):  # noqa: A001
  """Whether any element over `axis` is true (nonzero)."""
  return _bool_reduction("any", lax.reduce_or, False, a, axis, out, keepdims, where)


def all(a, axis=None, out=None, keepdims: bool = False, *, where=None):  # noqa: A001
  """Whether all elements over `axis` are true (nonzero)."""
  return _bool_reduction("all", lax.reduce_and, True, a, axis, out, keepdims, where)


def _bitwise_reduce(fun_name, reducer, op, identity, logical):
  """The `reduce` method of a bitwise or logical ufunc (bitwise_and/or/xor, logical_xor), as
  JAX's: integer or bool operands (logical ones cast to bool first) reduced by `reducer`
  (reduce_and/reduce_or/reduce_xor; `op` combines an initial value)."""
  def reduce(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
             where=None):
    _no_out(fun_name, out)
    util.check_arraylike(fun_name, a)
    a = util.as_array(a)
    in_dtype = aval_of(a).dtype
    if logical:
      if dtypes.is_complex(in_dtype):
        a = lax.real(a)
      a = lax.convert_element_type(a, dtypes.bool_)
    elif not (dtypes.is_integer(in_dtype) or dtypes.is_bool(in_dtype)):
      raise ValueError(f"integer argument required; got dtype={in_dtype}")
    result_dtype = canonical_dtype_arg(dtype) or aval_of(a).dtype
    a = lax.convert_element_type(a, result_dtype)
    init = np.asarray(identity).astype(result_dtype)
    a = _apply_where(fun_name, a, where, init)
    axes = canonicalize_axes(axis, aval_of(a).ndim)
    result = reducer(a, axes) if axes else a
    if initial is not None:
      initial = lax.convert_element_type(initial, result_dtype)
      if aval_of(initial).shape != ():
        raise ValueError(f"initial value must be a scalar. Got array of shape "
                         f"{aval_of(initial).shape}")
      result = op(initial, result)
    return _keep(result, axes, keepdims)
  reduce.takes_every_argument = True  # (ufunc.reduce hands it dtype, initial and where too)
  reduce.__name__ = f"{fun_name}_reduce"
  reduce.__doc__ = f"`jnp.{fun_name}.reduce`: {fun_name} over `axis`."
  return reduce


bitwise_and_reduce = _bitwise_reduce("bitwise_and", lax.reduce_and, lax.bitwise_and, -1, False)
bitwise_or_reduce = _bitwise_reduce("bitwise_or", lax.reduce_or, lax.bitwise_or, 0, False)
bitwise_xor_reduce = _bitwise_reduce("bitwise_xor", lax.reduce_xor, lax.bitwise_xor, 0, False)
logical_xor_reduce = _bitwise_reduce("logical_xor", lax.reduce_xor, lax.bitwise_xor, False,
                                     True)


def _count(a, axes, where, keepdims, dtype):
  """The number of elements reduced, as a `dtype` array (an array if `where` is given)."""
  shape = aval_of(a).shape
  if where is None:
    return util.scalar_constant(math.prod(shape[i] for i in axes), dtype)
  mask = util.broadcast_to(where, shape) if aval_of(where).shape != shape else where
  return sum(mask, axis=axes, dtype=dtype, keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None):
  """Arithmetic mean over `axis` (float32 for integer inputs; NaN for empty reductions)."""
  _no_out("mean", out)
  util.check_arraylike("mean", a)
  aval = aval_of(a)
  out_dtype = canonical_dtype_arg(dtype) or util.to_inexact_dtype(aval.dtype)
  compute = _upcast_f16(util.to_inexact_dtype(out_dtype))
  axes = canonicalize_axes(axis, aval.ndim)
  total = sum(a, axis=axes, dtype=compute, keepdims=keepdims, where=where)
  n = _count(a, axes, where, keepdims, compute)
  return lax.convert_element_type(lax.div(total, n), out_dtype)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, *, where=None,
        correction=None):
  """Variance over `axis`: mean squared deviation, divided by N - ddof instead of N.

  Complex inputs give real variances (of |x - mean|).

  Example:
    >>> x = jnp.array([[1., 2.], [3., 6.]])
    >>> jnp.var(x, axis=0)
    Array([1., 4.], dtype=float32)
    >>> jnp.var(x, axis=0, ddof=1)  # the unbiased estimate
    Array([2., 8.], dtype=float32)
  """
  _no_out("var", out)
  util.check_arraylike("var", a)
  if correction is not None:
    if ddof != 0:
      raise ValueError("ddof and correction can't be provided simultaneously.")
    ddof = correction
  aval = aval_of(a)
  inexact = util.to_inexact_dtype(aval.dtype)
  real = _real_dtype(inexact)
  out_dtype = canonical_dtype_arg(dtype) or real
  compute = _upcast_f16(util.to_inexact_dtype(canonical_dtype_arg(dtype) or inexact))
  axes = canonicalize_axes(axis, aval.ndim)
  x = lax.convert_element_type(a, compute)
  centered = lax.sub(x, mean(x, axis=axes, keepdims=True, where=where))
  if dtypes.is_complex(compute):
    sq = lax.add(lax.square(lax.real(centered)), lax.square(lax.imag(centered)))
  else:
    sq = lax.square(centered)
  real_compute = aval_of(sq).dtype
  total = sum(sq, axis=axes, dtype=real_compute, keepdims=keepdims, where=where)
  n = _count(a, axes, where, keepdims, real_compute)
  n = lax.sub(n, lax.convert_element_type(ddof, real_compute))
  result = lax.div(total, n)
  # No degrees of freedom left (ddof >= N, or nothing to reduce): NaN, as in JAX.
  result = lax.select_n(lax.gt(n, util.constant_like(n, 0)), lax.full_like(result, np.nan), result)
  return lax.convert_element_type(result, out_dtype)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, *, where=None,
        correction=None):
  """Standard deviation over `axis`: sqrt(var(a, axis, ddof=ddof))."""
  _no_out("std", out)
  v = var(a, axis, None, None, ddof, keepdims, where=where, correction=correction)
  out_dtype = canonical_dtype_arg(dtype)
  out = lax.sqrt(v)
  return out if out_dtype is None else lax.convert_element_type(out, out_dtype)


def _real_dtype(dtype):
  return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(dtype, dtype)


def _arg_extreme(fun_name, lax_fn, a, axis, out, keepdims):
  _no_out(fun_name, out)
  util.check_arraylike(fun_name, a)
  a = util.as_array(a)
  aval = aval_of(a)
  if axis is None:
    from revax._src.numpy.shape_ops import ravel
    a, ax, nd = ravel(a), 0, aval.ndim
    size = aval.size
  else:
    ax = util.canonicalize_axis(axis, aval.ndim)
    size = aval.shape[ax]
  if size == 0:
    raise ValueError(f"attempt to get {fun_name} of an empty sequence")
  res = lax_fn(a, ax, dtypes.default_int_dtype())
  if keepdims:
    res = lax.expand_dims(res, tuple(range(nd)) if axis is None else (ax,))
  return res


def argmax(a, axis=None, out=None, keepdims=None):
  """Index of the maximum along `axis` (of the flattened array if None); the first one on ties,
  and the first NaN if there are NaNs."""
  return _arg_extreme("argmax", lax.argmax, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, keepdims=None):
  """Index of the minimum along `axis` (of the flattened array if None); the first one on ties,
  and the first NaN if there are NaNs."""
  return _arg_extreme("argmin", lax.argmin, a, axis, out, keepdims)


def count_nonzero(a, axis=None, keepdims: bool = False):
  """Number of nonzero elements over `axis` (an int32 array)."""
  util.check_arraylike("count_nonzero", a)
  nonzero = a if dtypes.is_bool(aval_of(a).dtype) else lax.ne(a, util.constant_like(a, 0))
  return sum(nonzero, axis=axis, dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def ptp(a, axis=None, out=None, keepdims: bool = False):
  """Range of values (max - min) over `axis`."""
  _no_out("ptp", out)
  return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def _cumulative(fun_name, lax_fn, a, axis, dtype, out):
  _no_out(fun_name, out)
  util.check_arraylike(fun_name, a)
  a = util.as_array(a)
  if axis is None:
    from revax._src.numpy.shape_ops import ravel
    a, axis = ravel(a), 0
  aval = aval_of(a)
  axis = util.canonicalize_axis(axis, aval.ndim)
  out_dtype = canonical_dtype_arg(dtype) or (dtypes.default_int_dtype()
                                             if dtypes.is_bool(aval.dtype) else aval.dtype)
  return lax_fn(lax.convert_element_type(a, out_dtype), axis)


def cumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum along `axis` (of the flattened array if None); bools count as int32.

  Example:
    >>> jnp.cumsum(jnp.array([1, 2, 3]))
    Array([1, 3, 6], dtype=int32)
  """
  return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product along `axis` (of the flattened array if None); bools count as int32."""
  return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)


def _cumulative_array_api(fun_name, lax_fn, x, axis, dtype, include_initial, initial, promote):
  """The Array API cumulative functions: axis needed beyond 1-D, optional leading identity."""
  util.check_arraylike(fun_name, x)
  x = util.as_array(x)
  aval = aval_of(x)
  if aval.ndim == 0:
    raise ValueError(f"The input must be non-scalar to take a cumulative {fun_name[11:]}, "
                     "however a scalar value or scalar array was given.")
  if axis is None:
    if aval.ndim > 1:
      raise ValueError(f"The input array has rank {aval.ndim}, however axis was not set to an "
                       "explicit value. The axis argument is only optional for one-dimensional "
                       "arrays.")
    axis = 0
  axis = util.canonicalize_axis(axis, aval.ndim)
  out_dtype = canonical_dtype_arg(dtype) or promote(aval.dtype)
  out = lax_fn(lax.convert_element_type(x, out_dtype), axis)
  if include_initial:
    shape = tuple(1 if d == axis else n for d, n in enumerate(aval.shape))
    out = lax.concatenate([util.full_of(shape, initial, out_dtype), out], axis)
  return out


def _sum_accumulator_dtype(dtype):
  """The dtype a sum accumulates in by default: narrow integers widen to the default ones."""
  if dtypes.is_bool(dtype):
    return dtypes.default_int_dtype()
  if dtypes.is_unsigned_integer(dtype):
    return np.promote_types(dtype, dtypes.default_uint_dtype())
  if dtypes.is_signed_integer(dtype):
    return np.promote_types(dtype, dtypes.default_int_dtype())
  return dtype


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial: bool = False):
  """Cumulative sum along `axis` (the Array API function; narrow integers accumulate in the
  default integer dtype, as jax.numpy does, instead of wrapping).

  Args:
    x: array of at least one dimension.
    axis: the axis; may be omitted only for 1-D input.
    dtype: accumulation and result dtype.
    include_initial: prepend the sum of nothing (zero) along `axis`.

  Returns:
    The running sums, one longer along `axis` if `include_initial`.

  Example:
    >>> jnp.cumulative_sum(jnp.array([100, 100, 100], jnp.int8))  # small ints sum as int32
    Array([100, 200, 300], dtype=int32)
    >>> jnp.cumulative_sum(jnp.array([1, 2, 3]), include_initial=True)
    Array([0, 1, 3, 6], dtype=int32)
  """
  return _cumulative_array_api("cumulative_sum", lax.cumsum, x, axis, dtype, include_initial, 0,
                               _sum_accumulator_dtype)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial: bool = False):
  """Cumulative product along `axis` (the Array API function; bools multiply as int32).

  Args:
    x: array of at least one dimension.
    axis: the axis; may be omitted only for 1-D input.
    dtype: accumulation and result dtype.
    include_initial: prepend the product of nothing (one) along `axis`.

  Returns:
    The running products, one longer along `axis` if `include_initial`.
  """
  return _cumulative_array_api(
      "cumulative_prod", lax.cumprod, x, axis, dtype, include_initial, 1,
      lambda d: dtypes.default_int_dtype() if dtypes.is_bool(d) else d)

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("all", "any", "argmax", "argmin", "count_nonzero", "cumprod",
                        "cumsum", "mean", "prod", "std", "var",))
