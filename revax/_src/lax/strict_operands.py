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

Ranks are the same story. revax's elementwise primitives broadcast NumPy-style, leading
dimensions included (jax.numpy, the batching rules and the libraries rely on it); jax.lax's
broadcast only along size-1 dimensions of operands of one rank, a 0-d operand (or Python
scalar) going with any shape. So the public elementwise functions refuse operands of different
non-zero ranks with jax's TypeError, named for the primitive (`xor: arrays must have the same
number of dimensions, got {1, 2}`); shapes of one rank are the primitive's to check.
"""
from __future__ import annotations

import functools

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.lax import (binary, comparison, convenience, conversion, creation, prng, shapes,
                            slicing, special, variadic_reduce, windowed)
from revax._src.runtime.array import Array

__all__ = [
  "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "complex",
  "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right_logical",
  "shift_right_arithmetic", "eq", "ne", "lt", "le", "gt", "ge", "select_n", "select", "clamp",
  "pad", "reduce", "reduce_window", "dynamic_update_slice", "dynamic_update_slice_in_dim",
  "dynamic_update_index_in_dim", "full_like", "random_gamma_grad", "lax_operand", "igamma",
  "igammac", "igamma_grad_a", "betainc", "polygamma", "zeta", "check_same_rank",
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


def _shape_of(x):
  """`x`'s shape when it is an array (or a tracer); None for anything else."""
  if isinstance(x, (np.ndarray, np.generic)):
    return x.shape
  try:
    return get_aval(x).shape
  except TypeError:
    return None


def check_same_rank(name: str, *operands) -> None:
  """jax.lax's rank rule of elementwise primitive `name`: operands that are not 0-d must have
  one rank (a 0-d operand broadcasts to any shape).

  Raises:
    TypeError: `{name}: arrays must have the same number of dimensions, got {ranks}`, as jax's.

  Example:
    >>> import numpy as np
    >>> from revax._src.lax.strict_operands import check_same_rank
    >>> check_same_rank("add", np.ones((2, 3)), np.ones(()))  # 0-d goes with any rank
    >>> check_same_rank("add", np.ones((2, 3)), np.ones(3))
    Traceback (most recent call last):
    TypeError: add: arrays must have the same number of dimensions, got {1, 2}
  """
  ranks = {len(s) for s in map(_shape_of, operands) if s}
  if len(ranks) > 1:
    raise TypeError(f"{name}: arrays must have the same number of dimensions, got {ranks}")


def _strict(internal, positions=None, elementwise=None):
  """The public version of `internal`: the operands at `positions` (all positional arguments
  when None) typed as jax.lax types them; for an elementwise function, `elementwise` is its
  primitive, whose name the rank check raises with."""
  @functools.wraps(internal)
  def public(*args, **kwargs):
    args = tuple(lax_operand(a) if positions is None or i in positions else a
                 for i, a in enumerate(args))
    if elementwise is not None:
      check_same_rank(elementwise.name, *args)
    return internal(*args, **kwargs)
  return public


def _elementwise(internal, primitive):
  """The public version of elementwise `internal` (binding `primitive`): jax.lax's typing of
  scalar operands and its rank rule."""
  return _strict(internal, elementwise=primitive)


def _rank_checked(internal, primitive):
  """The public version of elementwise `internal` whose operands keep their own typing: only
  jax.lax's rank rule is added."""
  @functools.wraps(internal)
  def public(*args, **kwargs):
    check_same_rank(primitive.name, *args)
    return internal(*args, **kwargs)
  return public


add = _elementwise(binary.add, binary.add_p)
sub = _elementwise(binary.sub, binary.sub_p)
div = _elementwise(binary.div, binary.div_p)
rem = _elementwise(binary.rem, binary.rem_p)
pow = _elementwise(binary.pow, binary.pow_p)  # noqa: A001 (jax.lax's name)
max = _elementwise(binary.max, binary.max_p)  # noqa: A001
min = _elementwise(binary.min, binary.min_p)  # noqa: A001
atan2 = _elementwise(binary.atan2, binary.atan2_p)
nextafter = _elementwise(binary.nextafter, binary.nextafter_p)
complex = _elementwise(binary.complex, binary.complex_p)  # noqa: A001
bitwise_and = _elementwise(binary.bitwise_and, binary.and_p)
bitwise_or = _elementwise(binary.bitwise_or, binary.or_p)
bitwise_xor = _elementwise(binary.bitwise_xor, binary.xor_p)
shift_left = _elementwise(binary.shift_left, binary.shift_left_p)
shift_right_logical = _elementwise(binary.shift_right_logical, binary.shift_right_logical_p)
shift_right_arithmetic = _elementwise(binary.shift_right_arithmetic,
                                      binary.shift_right_arithmetic_p)
eq = _elementwise(comparison.eq, comparison.eq_p)
ne = _elementwise(comparison.ne, comparison.ne_p)
lt = _elementwise(comparison.lt, comparison.lt_p)
le = _elementwise(comparison.le, comparison.le_p)
gt = _elementwise(comparison.gt, comparison.gt_p)
ge = _elementwise(comparison.ge, comparison.ge_p)
igamma = _rank_checked(special.igamma, special.igamma_p)
igammac = _rank_checked(special.igammac, special.igammac_p)
igamma_grad_a = _rank_checked(special.igamma_grad_a, special.igamma_grad_a_p)
betainc = _rank_checked(special.betainc, special.regularized_incomplete_beta_p)
polygamma = _rank_checked(special.polygamma, special.polygamma_p)
zeta = _rank_checked(special.zeta, special.zeta_p)
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
  check_same_rank("mul", x, y)
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
  shape = convenience.broadcast_shapes(a_shape, x_shape)
  # jax lines each operand up with the leading dims of the broadcast shape
  a = shapes.broadcast_in_dim(a, shape, tuple(range(len(a_shape))))
  x = shapes.broadcast_in_dim(x, shape, tuple(range(len(x_shape))))
  a_dtype = get_aval(a).dtype
  if a_dtype in (dtypes.bfloat16, dtypes.float16):
    a = conversion.convert_element_type(a, dtypes.float32)
    x = conversion.convert_element_type(x, dtypes.float32)
  # strong, as jax's (its result is built with lax functions of strong constants)
  return conversion.convert_element_type(prng.random_gamma_grad(a, x), a_dtype)
