"""Argument handling shared by revax.numpy: type promotion, axes, shapes and constants.

revax.numpy promotes with JAX's lattice (`dtypes.promote_types_weak`): Python scalars are weakly
typed, so `x_f16 + 1.0` stays float16 and `x_i8 + 1` stays int8. Functions take arrays (revax
Arrays, tracers, NumPy arrays and scalars) and Python scalars; lists and tuples are refused, as
in JAX, because converting them silently hides costly host-to-device copies.
"""
from __future__ import annotations

import functools
import operator
import warnings

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.config import config
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.shape_poly import DimExpr, canonical_dim
from revax._src.core.trace import ConcretizationTypeError, Tracer
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.dim_value import dim_as_value
from revax._src.lax.shapes import broadcast_in_dim, reshape
from revax._src.runtime.array import Array

_PY_SCALARS = (bool, int, float, complex)
_PLAIN_TYPES = frozenset((*_PY_SCALARS, Array, np.ndarray))  # (no __jax_array__ to look up)


def check_arraylike(fun_name: str, *args) -> None:
  """TypeError unless every argument is an array, a Python scalar or an object with a
  `__jax_array__` method (lists are refused), as JAX's."""
  for i, a in enumerate(args):
    if not (isinstance(a, (Array, Tracer, np.ndarray, np.generic)) or type(a) in _PY_SCALARS
            or getattr(a, "__jax_array__", None) is not None):
      msg = (f"{fun_name} requires ndarray or scalar arguments, but got {type(a).__name__} at "
             f"position {i}.")
      if isinstance(a, (list, tuple)):
        msg += " Use revax.numpy.array(x) to convert a list or tuple first."
      raise TypeError(msg)


def ensure_arraylike(fun_name: str, *args) -> list:
  """`check_arraylike`, then objects with a `__jax_array__` method converted through it (what
  JAX's functions built on its `ensure_arraylike` accept, e.g. flax's nnx Variables)."""
  check_arraylike(fun_name, *args)
  return [from_jax_array(a) for a in args]


def from_jax_array(x):
  """`x.__jax_array__()` where `x` has that method, else `x`."""
  method = getattr(x, "__jax_array__", None) if type(x) not in _PLAIN_TYPES else None
  return x if method is None else method()


def converted_pytrees(args) -> list:
  """`args` with the pytrees that have a `__jax_array__` method (flax's nnx Variables) converted
  through it: what reaches the body of JAX's jitted jax.numpy functions, whose jit passes a
  pytree's leaves (another object with `__jax_array__` raises ValueError there, when its aval is
  taken)."""
  return [from_jax_array(a) if type(a) not in _PLAIN_TYPES and tree_util.is_tree_node(type(a))
          else a for a in args]


def _converting_pytrees(fn):
  """`fn` with its arguments that are pytrees with a `__jax_array__` method converted first."""
  @functools.wraps(fn)
  def wrapped(*args, **kwargs):
    if (any(type(a) not in _PLAIN_TYPES and hasattr(a, "__jax_array__") for a in args)
        or any(type(v) not in _PLAIN_TYPES and hasattr(v, "__jax_array__")
               for v in kwargs.values())):
      args = converted_pytrees(args)
      kwargs = dict(zip(kwargs, converted_pytrees(list(kwargs.values())), strict=True))
    return fn(*args, **kwargs)
  return wrapped


def convert_pytree_operands(namespace: dict, names) -> None:
  """Make the functions `names` of a module (`namespace`: its globals) take pytrees with a
  `__jax_array__` method (flax's nnx Variables) as arrays, converted through it, as JAX's
  jax.numpy functions do (other objects with the method stay refused where avals are taken)."""
  for name in names:
    namespace[name] = _converting_pytrees(namespace[name])


def is_operand(x) -> bool:
  """Whether `x` can be an operand of revax's arithmetic operators."""
  return isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in _PY_SCALARS


def aval_of(x) -> ShapedArray:
  return x.aval if type(x) is Array else get_aval(x)


def as_array(x):
  """`x` as a revax Array (tracers and Arrays unchanged; NumPy values and scalars wrapped)."""
  if isinstance(x, (Array, Tracer)):
    return x
  aval = get_aval(x)
  v = np.array(x, dtype=aval.dtype)
  v.flags.writeable = False
  return Array(aval, npy=v)


# --- type promotion ------------------------------------------------------------------------------
def result_type_of(*args):
  """(dtype, weak_type) that JAX's promotion gives for these operands."""
  return dtypes.promote_types_weak(*((a.dtype, a.weak_type) for a in map(aval_of, args)))


def promote_dtypes(*args):
  """Convert operands to their common dtype (weakly typed if all of them were)."""
  if len(args) < 2:
    return list(args)
  avals = [aval_of(a) for a in args]
  first = avals[0]
  if all(a.dtype == first.dtype and a.weak_type == first.weak_type for a in avals[1:]):
    return list(args)
  dtype, weak = dtypes.promote_types_weak(*((a.dtype, a.weak_type) for a in avals))
  return [convert_element_type(x, dtype, weak) if (a.dtype != dtype or a.weak_type != weak)
          else x for x, a in zip(args, avals, strict=True)]


def _shapes(args) -> list:
  return [tuple(np.shape(a)) if not isinstance(a, (Array, Tracer)) else tuple(aval_of(a).shape)
          for a in args]


def check_rank_promotion(fun_name: str, *args) -> None:
  """What config jax_numpy_rank_promotion says to do when NumPy broadcasting would add leading
  dimensions to a non-scalar operand: nothing ('allow'), a UserWarning ('warn') or a
  ValueError ('raise'), with JAX's messages. Scalars broadcast freely."""
  mode = config.numpy_rank_promotion
  if mode == "allow" or len(args) < 2:
    return
  shapes = _shapes(args)
  if len({len(s) for s in shapes if s}) < 2:
    return
  shown = " ".join(map(str, shapes))
  if mode == "warn":
    warnings.warn(f"Following NumPy automatic rank promotion for {fun_name} on shapes {shown}. "
                  f"Set the jax_numpy_rank_promotion config option to 'allow' to disable this "
                  f"warning; for more information, see "
                  f"https://docs.jax.dev/en/latest/rank_promotion_warning.html.", stacklevel=3)
  elif mode == "raise":
    raise ValueError(f"Operands could not be broadcast together for {fun_name} on shapes "
                     f"{shown} and with the config option jax_numpy_rank_promotion='raise'. For "
                     f"more information, see "
                     f"https://docs.jax.dev/en/latest/rank_promotion_warning.html.")


def broadcasting(promote):
  """`promote` (promote_args or a sibling) for an elementwise function, which also broadcasts
  its operands as jax.numpy's do (jax's promote_shapes): operands of different non-scalar ranks
  whose shapes NumPy's rule cannot broadcast are jax's ValueError (lax.broadcast_shapes'). One
  rank, or scalars, is left to lax, whose error is a TypeError, as in jax.

  Example:
    >>> import numpy as np
    >>> from revax._src.numpy.util import broadcasting, promote_args
    >>> add_args = broadcasting(promote_args)
    >>> [a.shape for a in add_args("add", np.ones((2, 3)), np.ones(3))]
    [(2, 3), (3,)]
  """
  def promote_and_check(fun_name: str, *args):
    out = promote(fun_name, *args)
    shapes = _shapes(out)
    if len({len(s) for s in shapes if s}) > 1:
      ndim = max(len(s) for s in shapes)
      for sizes in zip(*[(1,) * (ndim - len(s)) + s for s in shapes]):
        if len({d for d in sizes if isinstance(d, int) and d != 1}) > 1:
          raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
    return out
  return promote_and_check


def promote_args(fun_name: str, *args):
  """Check the arguments are array-like, then promote them to their common dtype."""
  args = converted_pytrees(args)
  check_arraylike(fun_name, *args)
  check_rank_promotion(fun_name, *args)
  return promote_dtypes(*args)


def promote_args_inexact(fun_name: str, *args):
  """Convert the operands to the floating (or complex) type of their promoted dtype: integer
  and bool results compute in the default float type (as np.sin(int_array) does). Each operand
  is converted straight to that type, as JAX's promote_dtypes_inexact does: a Python int out of
  an integer operand's range keeps its value (`uint8_array / 300` divides by 300.0)."""
  args = converted_pytrees(args)
  check_arraylike(fun_name, *args)
  check_rank_promotion(fun_name, *args)
  return promote_dtypes_inexact(*args)


def promote_dtypes_inexact(*args):
  """The operands converted to the floating (or complex) type of their promoted dtype (no checks
  of their kinds or ranks: `promote_args_inexact` makes those)."""
  if not args:
    return []
  avals = [aval_of(a) for a in args]
  dtype, weak = dtypes.promote_types_weak(*((a.dtype, a.weak_type) for a in avals))
  if not dtypes.is_inexact(dtype):
    dtype = dtypes.default_float_dtype()
  return [convert_element_type(x, dtype, weak) if (a.dtype != dtype or a.weak_type != weak)
          else x for x, a in zip(args, avals, strict=True)]


def promote_args_numeric(fun_name: str, *args):
  """Promote, then make bool operands integers of the default integer dtype."""
  args = converted_pytrees(args)
  check_arraylike(fun_name, *args)
  check_rank_promotion(fun_name, *args)
  args = promote_dtypes(*args)
  avals = [aval_of(a) for a in args]
  if avals and dtypes.is_bool(avals[0].dtype):
    return [convert_element_type(a, dtypes.default_int_dtype(), False) for a in args]
  return args


def to_inexact_dtype(dtype) -> np.dtype:
  """The floating dtype a function like `mean` computes in for inputs of `dtype`."""
  return np.dtype(dtype) if dtypes.is_inexact(dtype) else dtypes.default_float_dtype()


def canonical_dtype_arg(dtype) -> np.dtype | None:
  """A user's `dtype=` argument (None, a dtype, a scalar type, a string) as a canonical dtype."""
  if dtype is None:
    return None
  try:
    dt = np.dtype(dtype)
  except TypeError:
    raise TypeError(f"data type {dtype!r} not understood") from None
  return dtypes.canonicalize_dtype(dt)


# --- axes and shapes -----------------------------------------------------------------------------
def canonicalize_axis(axis, ndim: int) -> int:
  """`axis` in [-ndim, ndim) as a non-negative int; AxisError (a ValueError and an IndexError)
  naming it otherwise."""
  try:
    axis = operator.index(axis)
  except TypeError:
    raise TypeError(f"axis must be an integer, got {axis!r}") from None
  if not -ndim <= axis < ndim:
    # NumPy's AxisError is both a ValueError and an IndexError (JAX raises IndexError here)
    raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


def canonicalize_axes(axis, ndim: int) -> tuple[int, ...]:
  """None (all axes), an int, or a sequence of ints as a sorted-as-given tuple of axes."""
  if axis is None:
    return tuple(range(ndim))
  if isinstance(axis, (tuple, list)):
    axes = tuple(canonicalize_axis(a, ndim) for a in axis)
    if len(set(axes)) != len(axes):
      raise ValueError(f"duplicate value in 'axis': {tuple(axis)}")
    return axes
  return (canonicalize_axis(axis, ndim),)


def canonicalize_shape(shape, what: str = "shape") -> tuple[int, ...]:
  """An int or a sequence of ints (concrete) as a tuple of Python ints."""
  if isinstance(shape, (int, np.integer, DimExpr)) or (
      isinstance(shape, (Array, Tracer, np.ndarray)) and not np.shape(shape)):
    shape = (shape,)
  try:
    return tuple(canonical_dim(d) for d in shape)
  except ConcretizationTypeError:
    raise
  except TypeError:
    raise TypeError(f"{what} must be an integer or a sequence of integers, got {shape!r}") from None


def broadcast_shapes(*shapes) -> tuple[int, ...]:
  """NumPy's broadcasting of shapes; ValueError listing them if they are incompatible."""
  shapes = [tuple(s) for s in shapes]
  if not shapes:
    return ()
  if len(set(shapes)) == 1:
    return shapes[0]
  ndim = max(len(s) for s in shapes)
  padded = [(1,) * (ndim - len(s)) + s for s in shapes]
  out = []
  for sizes in zip(*padded):
    non1 = {d for d in sizes if d != 1}
    if len(non1) > 1:
      raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
    out.append(non1.pop() if non1 else 1)
  return tuple(out)


def broadcast_to(x, shape):
  """`x` broadcast to `shape` (NumPy's rules: align trailing dims, size-1 dims stretch)."""
  aval = aval_of(x)
  shape = tuple(shape)
  if aval.shape == shape:
    return x
  if len(shape) < aval.ndim:
    raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape={aval.shape} "
                     f"shape={shape}")
  offset = len(shape) - aval.ndim
  for i, d in enumerate(aval.shape):
    if d != 1 and d != shape[offset + i]:
      raise ValueError(f"Incompatible shapes for broadcasting: input shape={aval.shape} and "
                       f"requested shape={shape}")
  keep = [i for i, d in enumerate(aval.shape) if d == shape[offset + i]]
  if len(keep) != aval.ndim:  # squeeze the size-1 dims that stretch
    x = reshape(x, tuple(aval.shape[i] for i in keep))
  return broadcast_in_dim(x, shape, tuple(offset + i for i in keep))


def broadcast_arrays_of(*args):
  """Operands broadcast to their common shape."""
  shape = broadcast_shapes(*(aval_of(a).shape for a in args))
  return [broadcast_to(a, shape) for a in args]


# --- constants -----------------------------------------------------------------------------------
def scalar_constant(value, dtype, weak_type: bool = False) -> Array:
  """A 0-d Array holding `value` converted to `dtype` (a traced value for a symbolic size)."""
  if type(value) is DimExpr:
    return convert_element_type(dim_as_value(value, dtype), dtype, weak_type)
  v = np.asarray(value).astype(dtype) if not isinstance(value, np.ndarray) or \
      value.dtype != dtype else value.copy()
  v.flags.writeable = False
  return Array(ShapedArray((), dtype, weak_type), npy=v)


def full_of(shape, value, dtype, weak_type: bool = False):
  """An array of `shape` and `dtype` filled with the Python scalar `value`."""
  return broadcast_in_dim(scalar_constant(value, dtype, weak_type), tuple(shape), ())


def constant_like(x, value):
  """`value` as a 0-d array of the dtype (and weak type) of `x`."""
  aval = aval_of(x)
  return scalar_constant(value, aval.dtype, aval.weak_type)


def strong_constant_like(x, value):
  """`value` as a strongly typed 0-d array of the dtype of `x` (what jax.numpy's own constants
  are: an operation of a weakly typed `x` with one gives a strong result)."""
  return scalar_constant(value, aval_of(x).dtype, False)


def _default_dtype_of_kind(dtype) -> np.dtype | None:
  if dtypes.is_bool(dtype):
    return np.dtype(bool)
  if dtypes.is_complex(dtype):
    return dtypes.default_complex_dtype()
  if dtypes.is_inexact(dtype):
    return dtypes.default_float_dtype()
  if dtypes.is_integer(dtype):
    return dtypes.default_int_dtype()
  return None


def lax_const(x, value):
  """`value` in the dtype of `x` the way jax's `lax._const` makes the constants of its
  implementations: a weakly typed scalar where `x` is a 0-d weakly typed value of its kind's
  default dtype (what a Python scalar becomes), a strongly typed one otherwise. A function of an
  array that mixes its operand with such a constant is strongly typed unless the operand was a
  weak 0-d value.

  Example:
    >>> from revax._src.numpy.util import lax_const
    >>> lax_const(jnp.float32(1), 0).weak_type
    False
    >>> lax_const(lax.broadcast(1.0, ()), 0).weak_type
    True
  """
  aval = aval_of(x)
  weak = (aval.weak_type and not aval.shape
          and _default_dtype_of_kind(aval.dtype) == aval.dtype)
  return scalar_constant(value, aval.dtype, weak)


def concrete_scalar(x, fun_name: str, arg_name: str):
  """The Python value of a concrete scalar argument; a clear error for traced ones."""
  if isinstance(x, Tracer) and x.to_concrete_value() is not None:
    x = x.to_concrete_value()
  if isinstance(x, Tracer):
    raise ConcretizationTypeError(
        f"{fun_name} requires a concrete (not traced) value for argument {arg_name!r}, got "
        f"{x.aval.str_short()}. Pass it as a Python number or mark it static in jit.")
  if isinstance(x, (Array, np.ndarray, np.generic)):
    if np.shape(x):
      raise TypeError(f"{fun_name} argument {arg_name!r} must be a scalar, got shape "
                      f"{np.shape(x)}")
    return np.asarray(x).item()
  return x


def jitted_as_in_jax(static_argnames=()):
  """Decorates a function that jax 0.10.2 defines under `@jit`: it runs compiled, eagerly too,
  so its values are what XLA's fused program computes, as jax's are (op-by-op NumPy evaluation
  can differ at infinities and NaN: XLA reassociates arithmetic, skips a convolution's padding
  where NumPy would multiply 0 by inf). revax.jit sits above this layer: imported on first call.

  Args:
    static_argnames: the arguments jax marks static.

  Returns:
    The decorator.
  """
  def wrap(fun):
    compiled = []

    @functools.wraps(fun)
    def call(*args, **kwargs):
      if not compiled:
        from revax._src.jit import jit
        compiled.append(jit(fun, static_argnames=static_argnames))
      return compiled[0](*args, **kwargs)
    return call
  return wrap

