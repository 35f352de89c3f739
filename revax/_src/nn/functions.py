"""Activation functions and friends of revax.nn, as in jax.nn: values, dtypes and derivatives
follow JAX's definitions.

relu is, as JAX's, a custom_jvp of a jitted max(x, 0) whose derivative is 0 at 0. Where JAX
gives another function a custom derivative (relu6: derivative 0 at the kinks), the same
derivative comes from writing the function with `where`: the selected branch carries the
tangent, and the branch that only reproduces NaN inputs multiplies them by zero, so it passes
NaN values with a zero tangent. softmax, log_softmax and logsumexp subtract the maximum for
stability; JAX stops its gradient, revax differentiates through it, which is exact because the
result does not depend on the shift (the shift's contributions cancel).
"""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.lax import convenience
from revax._src.core.shape_poly import canonical_dim
from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.trace import ConcretizationTypeError
from revax._src.custom_derivatives import custom_jvp
from revax._src.jit import jit
from revax._src.numpy import creation, reductions, shape_ops, ufuncs
from revax._src.numpy.util import (canonicalize_axes, canonicalize_axis, check_arraylike,
                                   promote_args_inexact)

__all__ = [
  "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
  "identity", "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp", "mish", "one_hot", "relu",
  "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "squareplus",
  "standardize", "swish",
]


def _operand(fun_name, x):
  check_arraylike(fun_name, x)
  return creation.asarray(x)


def _inexact_operand(fun_name, x):
  """x as a revax array of an inexact dtype (integers and bools become float32)."""
  (x,) = promote_args_inexact(fun_name, x)
  return creation.asarray(x)


def _nan_passthrough(x):
  """x * 0 where x is NaN: the NaN value with a zero tangent (used by the branch that no
  comparison selects)."""
  return x * 0


# --- piecewise-linear activations ---------------------------------------------------------------
@custom_jvp
@jit
def relu(x):
  """Rectified linear unit: max(x, 0), with derivative 0 at 0 (as jax.nn.relu: a custom_jvp of
  a jitted function, so its jaxpr and its derivative's are jax's).

  Args:
    x: input array.

  Returns:
    An array of x's shape and dtype.

  Example:
    >>> revax.nn.relu(jnp.array([-2., 0., 0.5]))
    Array([0. , 0. , 0.5], dtype=float32)
  """
  x = _operand("relu", x)
  return ufuncs.maximum(x, 0)


relu.defjvps(lambda g, ans, x: convenience.select(x > 0, g, creation.zeros_like(g)))


def relu6(x):
  """min(max(x, 0), 6), with derivative 0 at 0 and at 6 (as jax.nn.relu6).

  Args:
    x: input array.

  Returns:
    An array of x's shape and dtype.
  """
  x = _inexact_operand("relu6", x)  # as jax: min(max(x, 0), 6.) makes integers float
  inside = ufuncs.logical_and(x > 0, x < 6)
  clipped = ufuncs.where(x <= 0, creation.zeros_like(x),
                      ufuncs.where(x >= 6, creation.full_like(x, 6), _nan_passthrough(x)))
  return ufuncs.where(inside, x, clipped)


def leaky_relu(x, negative_slope=1e-2):
  """x where x >= 0, else negative_slope * x.

  Args:
    x: input array.
    negative_slope: the slope for negative inputs (scalar or array).

  Returns:
    An array.
  """
  x = _operand("leaky_relu", x)
  return ufuncs.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
  """x clipped to [-1, 1] (as jax.nn.hard_tanh)."""
  x = _operand("hard_tanh", x)
  return ufuncs.where(x > 1, 1, ufuncs.where(x < -1, -1, x))


def identity(x):
  """The argument, as an array."""
  return _operand("identity", x)


# --- smooth activations -------------------------------------------------------------------------
def sigmoid(x):
  """The logistic function 1 / (1 + exp(-x)).

  Args:
    x: input array.

  Returns:
    An array.
  """
  x = _operand("sigmoid", x)  # integers are refused by logistic, as in jax
  return lax.logistic(x)


def silu(x):
  """x * sigmoid(x) (also called swish).

  Args:
    x: input array.

  Returns:
    An array.
  """
  x = _operand("silu", x)  # integers are refused by logistic, as in jax
  return x * sigmoid(x)


swish = silu


def hard_sigmoid(x):
  """relu6(x + 3) / 6 (in x's dtype: a NumPy bfloat16 array stays bfloat16)."""
  x = _operand("hard_sigmoid", x)
  return relu6(x + 3.) / 6.


def hard_silu(x):
  """x * hard_sigmoid(x) (also called hard_swish)."""
  x = _operand("hard_silu", x)
  return x * hard_sigmoid(x)


hard_swish = hard_silu


def softplus(x):
  """log(1 + exp(x)), computed without overflow.

  Args:
    x: input array.

  Returns:
    An array.
  """
  x = _inexact_operand("softplus", x)
  # log(1 + exp(x)) as jnp.logaddexp(x, 0) computes it (x + log1p(exp(-x)) for x > 0, else
  # log1p(exp(x))), one branch per sign so the derivative at 0 is sigmoid(0) = 1/2; each branch
  # sees a harmless input where it is not selected, so no inf * 0 reaches the gradient
  positive = x > 0
  x_pos = ufuncs.where(positive, x, 0)
  x_neg = ufuncs.where(positive, 0, x)
  return ufuncs.where(positive, x_pos + lax.log1p(ufuncs.exp(-x_pos)),
                      lax.log1p(ufuncs.exp(x_neg)))


def log_sigmoid(x):
  """log(sigmoid(x)) = -softplus(-x)."""
  x = _inexact_operand("log_sigmoid", x)
  return -softplus(-x)


def soft_sign(x):
  """x / (|x| + 1)."""
  x = _operand("soft_sign", x)
  return x / (ufuncs.abs(x) + 1)


def squareplus(x, b=4):
  """(x + sqrt(x^2 + b)) / 2."""
  check_arraylike("squareplus", x, b)
  x, b = promote_args_inexact("squareplus", x, b)
  return (x + ufuncs.sqrt(ufuncs.square(x) + b)) / 2


def mish(x):
  """x * tanh(softplus(x))."""
  x = _inexact_operand("mish", x)
  return x * ufuncs.tanh(softplus(x))


def elu(x, alpha=1.0):
  """Exponential linear unit: x where x > 0, else alpha * (exp(x) - 1).

  Args:
    x: input array.
    alpha: scalar or array.

  Returns:
    An array.
  """
  x = _operand("elu", x)
  positive = x > 0
  return ufuncs.where(positive, x, alpha * ufuncs.expm1(ufuncs.where(positive, 0., x)))


def celu(x, alpha=1.0):
  """Continuously-differentiable ELU: max(x, 0) + alpha * expm1(min(x, 0) / alpha)."""
  x = _operand("celu", x)
  return ufuncs.maximum(x, 0.0) + alpha * ufuncs.expm1(ufuncs.minimum(x, 0.0) / alpha)


def selu(x):
  """Scaled ELU with the self-normalizing constants."""
  alpha = 1.6732632423543772848170429916717
  scale = 1.0507009873554804934193349852946
  return scale * elu(x, alpha)


def gelu(x, approximate: bool = True):
  """Gaussian error linear unit.

  Args:
    x: input array.
    approximate: True (default, as JAX) for the tanh form
      `x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`; False for the exact
      `x/2 * erfc(-x / sqrt(2))`.

  Returns:
    An array of x's (inexact) dtype.
  """
  x = _inexact_operand("gelu", x)
  dtype = get_aval(x).dtype
  if approximate:
    sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(dtype)
    cdf = 0.5 * (1.0 + ufuncs.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
    return x * cdf
  sqrt_half = np.sqrt(0.5).astype(dtype)
  return creation.asarray(0.5 * x * lax.erfc(-x * sqrt_half), dtype=dtype)


def glu(x, axis: int = -1):
  """Gated linear unit: the first half of `axis` times sigmoid of the second half."""
  x = _operand("glu", x)
  size = x.shape[axis]
  if size % 2:
    raise ValueError(f"axis size must be divisible by 2, got {size}")
  x1, x2 = shape_ops.split(x, 2, axis)
  return x1 * sigmoid(x2)


# --- normalizations over axes -------------------------------------------------------------------
def _reduction_axes(x, axis):
  return tuple(sorted(canonicalize_axes(axis, get_aval(x).ndim)))


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
  """log(sum(b * exp(a))) over `axis`, computed stably (as jax.nn.logsumexp /
  jax.scipy.special.logsumexp).

  Args:
    a: input array.
    axis: None (all axes), an int, or a tuple of ints.
    b: optional scaling factors, broadcastable to a's shape.
    keepdims: keep the reduced axes as size-1 dimensions.
    return_sign: also return the sign of the sum (the result is then log|sum|).
    where: optional mask of the elements to include.

  Returns:
    The result, or `(result, sign)` with `return_sign`.

  Example:
    >>> revax.nn.logsumexp(jnp.array([0., 0.]))  # log 2
    Array(0.6931472, dtype=float32)
  """
  if where is not None:
    a = ufuncs.where(where, a, 0)
  if b is not None:
    a, b = promote_args_inexact("logsumexp", a, b)
    a = ufuncs.where(b != 0, a, -np.inf)
  else:
    (a,) = promote_args_inexact("logsumexp", a)
  dims = _reduction_axes(a, axis)
  amax = reductions.max(ufuncs.real(a), axis=dims, keepdims=keepdims, where=where, initial=-np.inf)
  amax = ufuncs.where(ufuncs.isfinite(amax), amax, creation.zeros_like(amax))
  amax_with_dims = amax if keepdims else lax.expand_dims(amax, dims)
  exp_a = ufuncs.exp(a - amax_with_dims.astype(get_aval(a).dtype))
  if b is not None:
    exp_a = exp_a * b
  sumexp = reductions.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
  sign = ufuncs.sign(sumexp)
  if return_sign or not dtypes.is_complex(get_aval(a).dtype):
    sumexp = ufuncs.abs(sumexp)
  out = ufuncs.log(sumexp) + amax.astype(get_aval(sumexp).dtype)
  if return_sign:
    return out, sign
  if b is not None and not dtypes.is_complex(get_aval(out).dtype):
    out = ufuncs.where(sign < 0, creation.asarray(np.nan, dtype=get_aval(out).dtype), out)
  return out


def log_softmax(x, axis=-1, where=None):
  """log(softmax(x)) over `axis`, computed stably.

  Args:
    x: input array.
    axis: an int, a tuple of ints, or None (all axes).
    where: optional mask of the elements to include; masked-out outputs are -inf.

  Returns:
    An array of x's shape.
  """
  x = _operand("log_softmax", x)
  axis = _reduction_axes(x, axis)
  x_max = reductions.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else ufuncs.where(where, x, -np.inf)
  shifted = x_safe - x_max
  shifted_logsumexp = ufuncs.log(reductions.sum(ufuncs.exp(shifted), axis, where=where, keepdims=True))
  result = shifted - shifted_logsumexp
  if where is not None:
    return ufuncs.where(where, result, -np.inf)
  return result


def softmax(x, axis=-1, where=None):
  """exp(x) / sum(exp(x)) over `axis`, computed stably.

  Args:
    x: input array.
    axis: an int, a tuple of ints, or None (all axes).
    where: optional mask of the elements to include; masked-out outputs are 0.

  Returns:
    An array of x's shape whose entries along `axis` sum to 1.
  """
  x = _operand("softmax", x)
  axis = _reduction_axes(x, axis)
  x_max = reductions.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else ufuncs.where(where, x, -np.inf)
  unnormalized = ufuncs.exp(x_safe - x_max)
  result = unnormalized / reductions.sum(unnormalized, axis, where=where, keepdims=True)
  if where is not None:
    result = ufuncs.where(where, result, 0)
  return result


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
  """(x - mean) / sqrt(variance + epsilon), with the mean and variance over `axis` unless given.

  Args:
    x: input array.
    axis: an int, a tuple of ints, or None (all axes).
    mean, variance: optional precomputed statistics (broadcastable to x).
    epsilon: added to the variance.
    where: optional mask of the elements the statistics use.
    algorithm: 'fast' (mean(x^2) - mean(x)^2, clipped at 0, JAX's default) or 'stable'
      (mean((x - mean)^2)).

  Returns:
    An array of x's shape.
  """
  check_arraylike("standardize", x)
  for v in (mean, variance, where):
    if v is not None:
      check_arraylike("standardize", v)
  axis = _reduction_axes(x, axis)
  if mean is None:
    mean = reductions.mean(x, axis, keepdims=True, where=where)
  if variance is None:
    if algorithm == "stable":
      variance = reductions.mean(ufuncs.square(ufuncs.subtract(x, mean)), axis, keepdims=True, where=where)
    elif algorithm == "fast":
      variance = reductions.mean(ufuncs.square(x), axis, keepdims=True, where=where) - ufuncs.square(mean)
      variance = ufuncs.clip(variance, 0)
    else:
      raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
  return ufuncs.subtract(x, mean) * lax.rsqrt(variance + epsilon)


# --- encodings ----------------------------------------------------------------------------------
def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
  """One-hot encode integer indices: a new axis of size `num_classes` holding 1 at the index
  (all zeros for indices outside [0, num_classes)).

  Args:
    x: integer indices.
    num_classes: the size of the new axis (a concrete int).
    dtype: the result dtype (default float32, JAX's default float).
    axis: where the new axis goes in the result.

  Returns:
    An array of shape x.shape with `num_classes` inserted at `axis`.

  Example:
    >>> revax.nn.one_hot(jnp.array([0, 2]), 3)
    Array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
  """
  try:
    num_classes = canonical_dim(num_classes)  # an int, or a symbolic size
  except TypeError:
    raise ConcretizationTypeError(
        f"one_hot's num_classes must be a concrete integer, got {num_classes!r}. The error arose "
        f"in revax.nn.one_hot argument `num_classes`.") from None
  x = _operand("one_hot", x)
  dtype = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
  ndim = get_aval(x).ndim
  out_axis = canonicalize_axis(axis, ndim + 1)
  lhs = lax.expand_dims(x, (out_axis,))
  rhs_shape = [1] * ndim
  rhs_shape.insert(out_axis, num_classes)
  rhs = lax.broadcasted_iota(get_aval(x).dtype, rhs_shape, out_axis)
  return (lhs == rhs).astype(dtype)
