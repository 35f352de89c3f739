"""jax.lax's typing of operands at the public surface: lax is strict, jax.numpy promotes.

revax's internal lax wrappers let a Python scalar adopt the dtype of the operand it meets
(`add(float16_array, 2.0)` is a float16 addition), which the libraries built on lax rely on.
jax.lax does not: a Python scalar is a value of its own type -- a weakly typed int32, float32 or
complex64 (int64/float64/complex128 with x64), and a strong bool -- a NumPy scalar is a strong
value of its canonical dtype, and the primitive then requires its operands to have one dtype. So
`lax.add(float16_array, 2.0)` and `lax.add(float32_array, 2)` are TypeErrors, while
`lax.add(float32_array, 2.0)` is a float32 addition; an int outside the default integer type's
range is an OverflowError.

The functions here are revax.lax's public versions of the functions that take several
operands: they give each Python or NumPy scalar operand its jax type, then call the internal
wrapper, whose primitive checks the dtypes. Arrays (and NumPy arrays) pass unchanged.
"""
from __future__ import annotations

import functools

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.lax import (binary, comparison, convenience, conversion, creation, prng, shapes,
                            slicing, variadic_reduce, windowed)
from revax._src.runtime.array import Array

__all__ = [
  "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "complex",
  "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right_logical",
  "shift_right_arithmetic", "eq", "ne", "lt", "le", "gt", "ge", "select_n", "select", "clamp",
  "pad", "reduce", "reduce_window", "dynamic_update_slice", "dynamic_update_slice_in_dim",
  "dynamic_update_index_in_dim", "full_like", "random_gamma_grad", "lax_operand",
]

_PY_SCALARS = (bool, int, float, complex)


def lax_operand(x):
  """`x` as jax.lax takes it: a Python scalar becomes a 0-d value of its own default dtype
  (weakly typed except bool), a NumPy scalar a strong 0-d value of its canonical dtype;
  anything else is returned unchanged.

  Raises:
    OverflowError: for a Python int outside the default integer type's range.
  """
  if isinstance(x, _PY_SCALARS) and not isinstance(x, np.generic):
    dtype, weak = dtypes.scalar_dtype(x)
    if dtypes.is_integer(dtype):
      info = np.iinfo(dtype)
      if not info.min <= x <= info.max:
        raise OverflowError(f"Python int {x} too large to convert to {dtype.name}")
    value = np.asarray(x, dtype)
  elif isinstance(x, np.generic) and np.dtype(x.dtype).kind in "biufcV":
    dtype, weak = dtypes.canonicalize_dtype(x.dtype), False
    with np.errstate(all="ignore"):
      value = np.asarray(x).astype(dtype)
  else:
    return x
  value.flags.writeable = False
  return Array(ShapedArray((), dtype, weak_type=weak), npy=value)


def _strict(internal, positions=None):
  """The public version of `internal`: the operands at `positions` (all positional arguments
  when None) typed as jax.lax types them."""
  @functools.wraps(internal)
  def public(*args, **kwargs):
    args = tuple(lax_operand(a) if positions is None or i in positions else a
                 for i, a in enumerate(args))
    return internal(*args, **kwargs)
  return public


add = _strict(binary.add)
sub = _strict(binary.sub)
div = _strict(binary.div)
rem = _strict(binary.rem)
pow = _strict(binary.pow)  # noqa: A001 (jax.lax's name)
max = _strict(binary.max)  # noqa: A001
min = _strict(binary.min)  # noqa: A001
atan2 = _strict(binary.atan2)
nextafter = _strict(binary.nextafter)
complex = _strict(binary.complex)  # noqa: A001
bitwise_and = _strict(binary.bitwise_and)
bitwise_or = _strict(binary.bitwise_or)
bitwise_xor = _strict(binary.bitwise_xor)
shift_left = _strict(binary.shift_left)
shift_right_logical = _strict(binary.shift_right_logical)
shift_right_arithmetic = _strict(binary.shift_right_arithmetic)
eq = _strict(comparison.eq)
ne = _strict(comparison.ne)
lt = _strict(comparison.lt)
le = _strict(comparison.le)
gt = _strict(comparison.gt)
ge = _strict(comparison.ge)
select_n = _strict(comparison.select_n)
select = _strict(convenience.select)
clamp = _strict(comparison.clamp)
pad = _strict(shapes.pad, positions=(0, 1))
dynamic_update_slice = _strict(slicing.dynamic_update_slice, positions=(0, 1))
dynamic_update_slice_in_dim = _strict(convenience.dynamic_update_slice_in_dim, positions=(0, 1))
dynamic_update_index_in_dim = _strict(convenience.dynamic_update_index_in_dim,
                                      positions=(0, 1))


def mul(x, y, *, out_dtype=None):
  """Elementwise multiplication: x * y.

  Args:
    x, y: arrays of one numeric dtype (broadcast together); Python scalars are weakly typed
      values of their own default dtype, as in jax.lax.
    out_dtype: the result's dtype; when given, both operands are converted to it first (so
      they may have different dtypes), as jax.lax.mul does.

  Returns:
    The product, of the operands' dtype or `out_dtype`.

  Example:
    >>> lax.mul(jnp.int8(100), jnp.int8(3), out_dtype=jnp.int32)
    Array(300, dtype=int32)
  """
  x, y = lax_operand(x), lax_operand(y)
  if out_dtype is not None:
    out_dtype = dtypes.canonicalize_dtype(out_dtype)
    x = conversion.convert_element_type(x, out_dtype)
    y = conversion.convert_element_type(y, out_dtype)
  return binary.mul(x, y)


@functools.wraps(windowed.reduce_window)
def reduce_window(operand, init_value, computation, *args, **kwargs):
  init_value = tree_util.tree_map(lax_operand, init_value)
  return windowed.reduce_window(operand, init_value, computation, *args, **kwargs)


@functools.wraps(variadic_reduce.reduce)
def reduce(operands, init_values, computation, dimensions, out_sharding=None):
  init_values = tree_util.tree_map(lax_operand, init_values)
  return variadic_reduce.reduce(operands, init_values, computation, dimensions, out_sharding)


@functools.wraps(creation.full_like)
def full_like(x, fill_value, dtype=None, shape=None, **kwargs):
  target = dtypes.canonicalize_dtype(dtype if dtype is not None else _dtype_of(x))
  weak = dtype is None and getattr(get_aval(lax_operand(x)), "weak_type", False)
  if (isinstance(fill_value, _PY_SCALARS[3]) and not dtypes.is_complex(target)
      and not dtypes.is_bool(target) and not weak):
    # jax converts the fill value of a strong type with the type's constructor, which refuses
    # complex values
    kind = "float" if dtypes.is_inexact(target) else "int"
    raise TypeError(f"{kind}() argument must be a string or a real number, not 'complex'")
  return creation.full_like(x, fill_value, dtype, shape, **kwargs)


def _dtype_of(x):
  return get_aval(lax_operand(x)).dtype if not isinstance(x, np.ndarray) else x.dtype


def random_gamma_grad(a, x):
  """The derivative of a Gamma(a, 1) sample `x` with respect to `a` (elementwise).

  As jax.lax's: the operands must be arrays (an AttributeError names a Python scalar's missing
  `shape`), are broadcast together, and a float16/bfloat16 `a` makes the computation run in
  float32 with both operands converted (so `x` may then have any real dtype), the result
  converted back to `a`'s dtype.

  Args:
    a: the Gamma shape parameters (float array).
    x: the samples.

  Returns:
    d x / d a, of `a`'s dtype.

  Example:
    >>> lax.random_gamma_grad(np.float32(1.0), np.float32(0.5))  # Gamma(1) = Exp(1): dx/da
    Array(0.8069791, dtype=float32)
  """
  a_shape, x_shape = a.shape, x.shape  # AttributeError for Python scalars, as jax's
  shape = np.broadcast_shapes(tuple(a_shape), tuple(x_shape))
  # jax lines each operand up with the leading dims of the broadcast shape
  a = shapes.broadcast_in_dim(a, shape, tuple(range(len(a_shape))))
  x = shapes.broadcast_in_dim(x, shape, tuple(range(len(x_shape))))
  a_dtype = get_aval(a).dtype
  if a_dtype in (dtypes.bfloat16, dtypes.float16):
    a = conversion.convert_element_type(a, dtypes.float32)
    x = conversion.convert_element_type(x, dtypes.float32)
  # strong, as jax's (its result is built with lax functions of strong constants)
  return conversion.convert_element_type(prng.random_gamma_grad(a, x), a_dtype)
