"""Unary elementwise primitives: arithmetic, rounding, transcendental and special functions.

Each primitive is one block: its public wrapper, then its rules, then their registration. Most
lower to one StableHLO op; the special functions (erf, lgamma, digamma, the inverse and
hyperbolic trigonometric functions) lower to CHLO ops, which XLA expands itself. The
transcendental wrappers take JAX's `accuracy=` request (see accuracy.py: XLA:CPU has one
implementation of each op, which serves every request). NumPy
implementations follow XLA's results at the edges (poles, out-of-domain inputs give inf/NaN
without warnings); where NumPy has no function (erf_inv, digamma) this file computes one in
float64 and rounds it to the operand's dtype.
"""
from __future__ import annotations

import enum
import functools
import math
import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.core.jaxpr import pp_param_rules
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import binary
from revax._src.lax.accuracy import AccuracyMode, accuracy_props, check_accuracy
from revax._src.lax.binary import add, div, mul, sub
from revax._src.lax.comparison import eq, ge, lt, select_n
from revax._src.lax.creation import full_like
from revax._src.lax.standard import check_dtype, hlo_lowering, unop


__all__ = [
  "RoundingMethod",
  "neg", "sign", "floor", "ceil", "round", "is_finite",
  "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic",
  "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
  "sqrt", "rsqrt", "cbrt", "abs", "bitwise_not",
  "erf", "erfc", "erf_inv", "lgamma", "digamma", "integer_pow", "square",
  "real", "imag", "conj",
  "neg_p", "sign_p", "floor_p", "ceil_p", "round_p", "is_finite_p",
  "exp_p", "exp2_p", "log_p", "log1p_p", "expm1_p", "tanh_p", "logistic_p",
  "sin_p", "cos_p", "tan_p", "asin_p", "acos_p", "atan_p", "sinh_p", "cosh_p", "asinh_p",
  "acosh_p", "atanh_p", "sqrt_p", "rsqrt_p", "cbrt_p", "abs_p", "not_p",
  "erf_p", "erfc_p", "erf_inv_p", "lgamma_p", "digamma_p", "integer_pow_p", "square_p",
  "real_p", "imag_p", "conj_p",
]


def _quiet(fn):
  """`fn` with NumPy's floating-point warnings silenced: like XLA, out-of-domain inputs give
  NaN or inf quietly."""
  @functools.wraps(fn)
  def wrapped(*args, **params):
    with np.errstate(all="ignore"):
      return fn(*args, **params)
  return wrapped


def _in_float64(fn):
  """A NumPy impl that computes `fn` in float64 and rounds to the operand's dtype."""
  @_quiet
  def impl(x, **params):
    return np.asarray(fn(np.asarray(x, np.float64)), x.dtype)
  impl.__name__ = fn.__name__
  return impl


def _scalar_fn(fn, at_error):
  """`fn` (a `math` function of one float) mapped over a float64 array; `at_error` where `fn`
  raises (poles, overflow)."""
  def scalar(v):
    try:
      return fn(v)
    except (ValueError, OverflowError):
      return at_error
  vectorized = np.frompyfunc(scalar, 1, 1)

  def apply(x):
    return np.asarray(vectorized(x), np.float64) if x.size else x
  apply.__name__ = fn.__name__
  return apply


# --- neg -----------------------------------------------------------------------------------------
def neg(x):
  """Elementwise negation: -x."""
  return neg_p.bind(x)


def _neg_transpose(ct, x):
  return [neg(ct)]


neg_p = unop("neg", "num", np.negative, "stablehlo.negate")
ad.deflinear(neg_p, _neg_transpose)
inv.definverse_unary(neg_p, neg)


# --- sign ----------------------------------------------------------------------------------------
def sign(x):
  """Elementwise sign: -1, 0 or 1 (x/|x| for complex, NaN for NaN)."""
  return sign_p.bind(x)


def _sign_numpy(x):
  if dtypes.is_inexact(x.dtype) and not dtypes.is_complex(x.dtype):
    # sign(-0.0) is -0.0, as XLA computes it (x * 0 also turns a flushed subnormal into a zero)
    return np.where(x == 0, x * np.zeros((), x.dtype), np.sign(x))
  return np.sign(x)


def _sign_lower(ctx, x):
  aval = ctx.avals_in[0]
  if not dtypes.is_unsigned_integer(aval.dtype):
    return ctx.op1("stablehlo.sign", [x])
  # StableHLO's sign takes no unsigned integers: 0 where x == 0, 1 elsewhere.
  zeros = ctx.constant(np.zeros(aval.shape, aval.dtype), aval)
  ones = ctx.constant(np.ones(aval.shape, aval.dtype), aval)
  is_zero = ctx.op1("stablehlo.compare", [x, zeros], aval.update(dtype=dtypes.bool_),
                    props={"comparison_direction": "#stablehlo<comparison_direction EQ>",
                           "compare_type": "#stablehlo<comparison_type UNSIGNED>"})
  return ctx.op1("stablehlo.select", [is_zero, zeros, ones])


sign_p = unop("sign", "num", _sign_numpy, None)
mlir.register_lowering(sign_p, _sign_lower)
ad.zero_output_jvp(sign_p, "piecewise constant")
inv.not_invertible(sign_p, "many-to-one: it keeps only the sign")


# --- floor ---------------------------------------------------------------------------------------
def floor(x):
  """Elementwise floor of a floating-point array."""
  return floor_p.bind(x)


floor_p = unop("floor", "float", np.floor, "stablehlo.floor")
ad.zero_output_jvp(floor_p, "piecewise constant")
inv.not_invertible(floor_p, "many-to-one: it rounds")


# --- ceil ----------------------------------------------------------------------------------------
def ceil(x):
  """Elementwise ceiling of a floating-point array."""
  return ceil_p.bind(x)


ceil_p = unop("ceil", "float", np.ceil, "stablehlo.ceil")
ad.zero_output_jvp(ceil_p, "piecewise constant")
inv.not_invertible(ceil_p, "many-to-one: it rounds")


# --- round ---------------------------------------------------------------------------------------
class RoundingMethod(enum.IntEnum):
  """How `round` breaks ties: away from zero (C's `round`) or to the nearest even value."""
  AWAY_FROM_ZERO = 0
  TO_NEAREST_EVEN = 1


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
  """Elementwise rounding to the nearest integer-valued float.

  Args:
    x: a floating-point array.
    rounding_method: `RoundingMethod.AWAY_FROM_ZERO` (0, default: 2.5 -> 3) or
      `RoundingMethod.TO_NEAREST_EVEN` (1: 2.5 -> 2).

  Returns:
    An array of the dtype of `x`.

  Example:
    >>> x = jnp.array([0.5, 1.5, 2.5, -0.5])
    >>> lax.round(x)  # half away from zero
    Array([ 1.,  2.,  3., -1.], dtype=float32)
    >>> lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    Array([ 0.,  2.,  2., -0.], dtype=float32)
  """
  return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


def _round_numpy(x, *, rounding_method):
  if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
    return np.rint(x)
  t = np.trunc(x)  # x - t is exact, so ties are detected exactly
  return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def _round_lower(ctx, x, *, rounding_method):
  op = ("stablehlo.round_nearest_even" if rounding_method == RoundingMethod.TO_NEAREST_EVEN
        else "stablehlo.round_nearest_afz")
  return ctx.op1(op, [x])


round_p = unop("round", "float", _quiet(_round_numpy), None)
mlir.register_lowering(round_p, _round_lower)
ad.zero_output_jvp(round_p, "piecewise constant")
inv.not_invertible(round_p, "many-to-one: it rounds")


# --- is_finite -----------------------------------------------------------------------------------
def is_finite(x):
  """Elementwise test for finiteness (neither inf nor NaN); returns a bool array."""
  return is_finite_p.bind(x)


is_finite_p = unop("is_finite", "float", np.isfinite, "stablehlo.is_finite",
                   result_dtype=lambda d: dtypes.bool_)
ad.zero_output_jvp(is_finite_p, "bool output")
inv.not_invertible(is_finite_p, "many-to-one: a bool of each value")


# --- accuracy requests ---------------------------------------------------------------------------
def _bind_with_accuracy(prim, x, accuracy):
  """`prim(x)` with jax's `accuracy` parameter, None where no request is made (as jax's
  equations hold it, and print none for None); the lowering passes a request to XLA as
  StableHLO `result_accuracy` (accuracy.py)."""
  return prim.bind(x, accuracy=accuracy)


def _without_no_accuracy(params: dict) -> dict:
  """The params jax prints for an equation of a primitive taking `accuracy`: without
  `accuracy=None` (jax's _unary_with_accuracy_pp_rule)."""
  return {k: v for k, v in params.items() if not (k == "accuracy" and v is None)}


def _ignoring_accuracy(fn):
  """`fn` taking (and ignoring) an `accuracy` parameter: NumPy has one implementation of each
  function, as XLA:CPU has."""
  @functools.wraps(fn)
  def wrapped(*args, accuracy=None, **params):
    return fn(*args, **params)
  return wrapped


def _lowering_with_accuracy(op_name):
  """The unary StableHLO op `op_name`, with `result_accuracy` for a request (as jax's)."""
  def rule(ctx, x, accuracy=None):
    return ctx.op1(op_name, [x], props=accuracy_props(accuracy))
  rule.__name__ = f"lower_{op_name.split('.')[-1]}"
  return rule


def _unop_with_accuracy(name, kind, numpy_fn, hlo_op):
  prim = unop(name, kind, _ignoring_accuracy(numpy_fn), None)
  if hlo_op is not None:
    mlir.register_lowering(prim, _lowering_with_accuracy(hlo_op))
  pp_param_rules[prim] = _without_no_accuracy
  return prim


def _definverse(prim, inverse):
  inv.definverse_unary(prim, _ignoring_accuracy(inverse))


# --- exp -----------------------------------------------------------------------------------------
def exp(x, *, accuracy=None):
  """Elementwise exponential: e**x."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(exp_p, x, accuracy)


def _exp_jvp(t, out, x, accuracy=None):
  return mul(t, out)


exp_p = _unop_with_accuracy("exp", "inexact", _quiet(np.exp), "stablehlo.exponential")
ad.defjvp_from_output(exp_p, _exp_jvp)
_definverse(exp_p, lambda y: log(y))


# --- exp2 ----------------------------------------------------------------------------------------
def exp2(x, *, accuracy=None):
  """Elementwise base-2 exponential: 2**x."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(exp2_p, x, accuracy)


def _exp2_lower(ctx, x, accuracy=None):
  """exp(x * ln 2); 16-bit floats are computed in float32 so the product is not rounded."""
  aval = ctx.avals_in[0]
  half = aval.dtype in (dtypes.float16, dtypes.bfloat16)
  work = aval.update(dtype=dtypes.float32) if half else aval
  if half:
    x = ctx.op1("stablehlo.convert", [x], work)
  ln2 = ctx.constant(np.full(work.shape, np.log(2.0), work.dtype), work)
  y = ctx.op1("stablehlo.exponential", [ctx.op1("stablehlo.multiply", [x, ln2], work)], work,
              props=accuracy_props(accuracy))
  return ctx.op1("stablehlo.convert", [y]) if half else y


def _exp2_numpy(x):
  """2**x; the narrow floats (float8_*, float4_*) as the lowering computes them, exp(x * ln 2)
  with the product rounded to the type (float8_e4m3fn's exp2(3) is 7.5, as in JAX)."""
  if x.dtype in dtypes.NARROW_FLOATS:
    with np.errstate(all="ignore"):
      return np.exp(x * np.asarray(np.log(2.0), x.dtype)).astype(x.dtype)
  return _quiet(np.exp2)(x)


def _exp2_jvp(t, out, x, accuracy=None):
  return mul(t, mul(math.log(2.0), out))


exp2_p = _unop_with_accuracy("exp2", "inexact", _exp2_numpy, None)
mlir.register_lowering(exp2_p, _exp2_lower)
ad.defjvp_from_output(exp2_p, _exp2_jvp)
_definverse(exp2_p, lambda y: div(log(y), full_like(y, math.log(2.0))))


# --- log -----------------------------------------------------------------------------------------
def log(x, *, accuracy=None):
  """Elementwise natural logarithm (NaN for negative reals, -inf at 0)."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(log_p, x, accuracy)


def _log_jvp(t, x, accuracy=None):
  return div(t, x)


log_p = _unop_with_accuracy("log", "inexact", _quiet(np.log), "stablehlo.log")
ad.defjvp(log_p, _log_jvp)
_definverse(log_p, lambda y: exp(y))


# --- log1p ---------------------------------------------------------------------------------------
def log1p(x, *, accuracy=None):
  """Elementwise log(1 + x), accurate for small x."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(log1p_p, x, accuracy)


def _log1p_jvp(t, x, accuracy=None):
  return div(t, add(x, 1))


log1p_p = _unop_with_accuracy("log1p", "inexact", _quiet(np.log1p), "stablehlo.log_plus_one")
ad.defjvp(log1p_p, _log1p_jvp)
_definverse(log1p_p, lambda y: expm1(y))


# --- expm1 ---------------------------------------------------------------------------------------
def expm1(x, *, accuracy=None):
  """Elementwise exp(x) - 1, accurate for small x."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(expm1_p, x, accuracy)


def _expm1_jvp(t, out, x, accuracy=None):
  return mul(t, add(out, 1))


expm1_p = _unop_with_accuracy("expm1", "inexact", _quiet(np.expm1),
                              "stablehlo.exponential_minus_one")
ad.defjvp_from_output(expm1_p, _expm1_jvp)
_definverse(expm1_p, lambda y: log1p(y))


# --- tanh ----------------------------------------------------------------------------------------
def tanh(x, *, accuracy=None):
  """Elementwise hyperbolic tangent."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(tanh_p, x, accuracy)


def _tanh_jvp(t, out, x, accuracy=None):
  return mul(t, sub(1, square(out)))


tanh_p = _unop_with_accuracy("tanh", "inexact", _quiet(np.tanh), "stablehlo.tanh")
ad.defjvp_from_output(tanh_p, _tanh_jvp)
_definverse(tanh_p, lambda y: atanh(y))


# --- logistic ------------------------------------------------------------------------------------
def logistic(x, *, accuracy=None):
  """Elementwise logistic sigmoid: 1 / (1 + exp(-x))."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(logistic_p, x, accuracy)


def _logistic_numpy(x):
  if dtypes.is_complex(x.dtype):
    return 1 / (1 + np.exp(-x))
  e = np.exp(-np.abs(x))  # never overflows: the two branches of the stable formula
  return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


def _logistic_jvp(t, out, x, accuracy=None):
  if accuracy is AccuracyMode.HIGHEST:  # (as jax: 1 - out loses digits where out is near 1)
    return mul(t, mul(out, logistic(neg(x))))
  return mul(t, mul(out, sub(1, out)))


def _logistic_lower(ctx, x, accuracy=None):
  """1 / (1 + exp(-x)), as jax lowers it on every platform (not `stablehlo.logistic`: XLA:TPU's
  LogisticOp returns values on a grid of 2**-15, e.g. 3.05e-5 for logistic(-10) = 4.54e-5)."""
  aval = ctx.avals_out[0]
  one = ctx.constant(np.ones(aval.shape, aval.dtype), aval)
  e = ctx.op1("stablehlo.exponential", [ctx.op1("stablehlo.negate", [x], aval)], aval)
  return ctx.op1("stablehlo.divide", [one, ctx.op1("stablehlo.add", [one, e], aval)], aval)


logistic_p = _unop_with_accuracy("logistic", "inexact", _quiet(_logistic_numpy), None)
mlir.register_lowering(logistic_p, _logistic_lower)
ad.defjvp_from_output(logistic_p, _logistic_jvp)
_definverse(logistic_p, lambda y: sub(log(y), log1p(neg(y))))  # logit


# --- sin -----------------------------------------------------------------------------------------
def sin(x, *, accuracy=None):
  """Elementwise sine."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(sin_p, x, accuracy)


def _sin_jvp(t, x, accuracy=None):
  return mul(t, cos(x, accuracy=accuracy))  # (the request carries over, as in jax)


sin_p = _unop_with_accuracy("sin", "inexact", _quiet(np.sin), "stablehlo.sine")
ad.defjvp(sin_p, _sin_jvp)
inv.not_invertible(sin_p, "many-to-one: periodic")


# --- cos -----------------------------------------------------------------------------------------
def cos(x, *, accuracy=None):
  """Elementwise cosine."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(cos_p, x, accuracy)


def _cos_jvp(t, x, accuracy=None):
  return neg(mul(t, sin(x, accuracy=accuracy)))


cos_p = _unop_with_accuracy("cos", "inexact", _quiet(np.cos), "stablehlo.cosine")
ad.defjvp(cos_p, _cos_jvp)
inv.not_invertible(cos_p, "many-to-one: periodic and even")


# --- tan -----------------------------------------------------------------------------------------
def tan(x, *, accuracy=None):
  """Elementwise tangent."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(tan_p, x, accuracy)


def _tan_jvp(t, out, x, accuracy=None):
  return mul(t, add(1, square(out)))


tan_p = _unop_with_accuracy("tan", "inexact", _quiet(np.tan), "stablehlo.tan")
ad.defjvp_from_output(tan_p, _tan_jvp)
inv.not_invertible(tan_p, "many-to-one: periodic")


# --- asin ----------------------------------------------------------------------------------------
def asin(x):
  """Elementwise arcsine (NaN outside [-1, 1] for reals)."""
  return asin_p.bind(x)


def _asin_jvp(t, x):
  return mul(t, rsqrt(sub(1, square(x))))


asin_p = unop("asin", "inexact", _quiet(np.arcsin), "chlo.asin")
ad.defjvp(asin_p, _asin_jvp)
inv.definverse_unary(asin_p, lambda y: sin(y))


# --- acos ----------------------------------------------------------------------------------------
def acos(x):
  """Elementwise arccosine (NaN outside [-1, 1] for reals)."""
  return acos_p.bind(x)


def _acos_jvp(t, x):
  return neg(mul(t, rsqrt(sub(1, square(x)))))


acos_p = unop("acos", "inexact", _quiet(np.arccos), "chlo.acos")
ad.defjvp(acos_p, _acos_jvp)
inv.definverse_unary(acos_p, lambda y: cos(y))


# --- atan ----------------------------------------------------------------------------------------
def atan(x):
  """Elementwise arctangent."""
  return atan_p.bind(x)


def _atan_jvp(t, x):
  return div(t, add(1, square(x)))


atan_p = unop("atan", "inexact", _quiet(np.arctan), "chlo.atan")
ad.defjvp(atan_p, _atan_jvp)
inv.definverse_unary(atan_p, lambda y: tan(y))


# --- sinh ----------------------------------------------------------------------------------------
def sinh(x):
  """Elementwise hyperbolic sine."""
  return sinh_p.bind(x)


def _sinh_jvp(t, x):
  return mul(t, cosh(x))


sinh_p = unop("sinh", "inexact", _quiet(np.sinh), "chlo.sinh")
ad.defjvp(sinh_p, _sinh_jvp)
inv.definverse_unary(sinh_p, lambda y: asinh(y))


# --- cosh ----------------------------------------------------------------------------------------
def cosh(x):
  """Elementwise hyperbolic cosine."""
  return cosh_p.bind(x)


def _cosh_jvp(t, x):
  return mul(t, sinh(x))


cosh_p = unop("cosh", "inexact", _quiet(np.cosh), "chlo.cosh")
ad.defjvp(cosh_p, _cosh_jvp)
inv.not_invertible(cosh_p, "many-to-one: even")


# --- asinh ---------------------------------------------------------------------------------------
def asinh(x):
  """Elementwise inverse hyperbolic sine."""
  return asinh_p.bind(x)


def _asinh_jvp(t, x):
  return mul(t, rsqrt(add(square(x), 1)))


asinh_p = unop("asinh", "inexact", _quiet(np.arcsinh), "chlo.asinh")
ad.defjvp(asinh_p, _asinh_jvp)
inv.definverse_unary(asinh_p, lambda y: sinh(y))


# --- acosh ---------------------------------------------------------------------------------------
def acosh(x):
  """Elementwise inverse hyperbolic cosine (NaN below 1 for reals)."""
  return acosh_p.bind(x)


def _acosh_jvp(t, x):
  # 1 / (sqrt(x - 1) sqrt(x + 1)): the principal branch also for complex x, where
  # 1 / sqrt(x**2 - 1) can have the wrong sign
  return mul(t, mul(rsqrt(sub(x, 1)), rsqrt(add(x, 1))))


acosh_p = unop("acosh", "inexact", _quiet(np.arccosh), "chlo.acosh")
ad.defjvp(acosh_p, _acosh_jvp)
inv.definverse_unary(acosh_p, lambda y: cosh(y))


# --- atanh ---------------------------------------------------------------------------------------
def atanh(x):
  """Elementwise inverse hyperbolic tangent (NaN outside [-1, 1] for reals)."""
  return atanh_p.bind(x)


def _atanh_jvp(t, x):
  return div(t, mul(sub(1, x), add(1, x)))


atanh_p = unop("atanh", "inexact", _quiet(np.arctanh), "chlo.atanh")
ad.defjvp(atanh_p, _atanh_jvp)
inv.definverse_unary(atanh_p, lambda y: tanh(y))


# --- sqrt ----------------------------------------------------------------------------------------
def sqrt(x, *, accuracy=None):
  """Elementwise square root (NaN for negative reals)."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(sqrt_p, x, accuracy)


def _sqrt_jvp(t, out, x, accuracy=None):
  return mul(t, div(0.5, out))


sqrt_p = _unop_with_accuracy("sqrt", "inexact", _quiet(np.sqrt), "stablehlo.sqrt")
ad.defjvp_from_output(sqrt_p, _sqrt_jvp)
_definverse(sqrt_p, lambda y: mul(y, y))


# --- rsqrt ---------------------------------------------------------------------------------------
def rsqrt(x, *, accuracy=None):
  """Elementwise reciprocal square root: 1 / sqrt(x)."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(rsqrt_p, x, accuracy)


def _rsqrt_numpy(x):
  return (1 / np.sqrt(x)).astype(x.dtype)


def _rsqrt_jvp(t, out, x, accuracy=None):
  return mul(t, mul(-0.5, div(out, x)))


rsqrt_p = _unop_with_accuracy("rsqrt", "inexact", _quiet(_rsqrt_numpy), "stablehlo.rsqrt")
ad.defjvp_from_output(rsqrt_p, _rsqrt_jvp)
_definverse(rsqrt_p, lambda y: div(full_like(y, 1), mul(y, y)))


# --- cbrt ----------------------------------------------------------------------------------------
def cbrt(x, *, accuracy=None):
  """Elementwise real cube root (negative for negative x)."""
  check_accuracy(accuracy)
  return _bind_with_accuracy(cbrt_p, x, accuracy)


def _cbrt_jvp(t, out, x, accuracy=None):
  return mul(t, mul(1 / 3, integer_pow(out, -2)))


cbrt_p = _unop_with_accuracy("cbrt", "float", np.cbrt, "stablehlo.cbrt")
ad.defjvp_from_output(cbrt_p, _cbrt_jvp)
_definverse(cbrt_p, lambda y: mul(mul(y, y), y))


# --- abs -----------------------------------------------------------------------------------------
def abs(x):
  """Elementwise absolute value; the magnitude, of the real dtype, for complex x."""
  return abs_p.bind(x)


def _abs_abstract_eval(x):
  check_dtype("abs", "signed_num", x.dtype)
  if x.dtype in dtypes.NARROW_SIGNED:
    raise TypeError(f"abs does not accept dtype {x.dtype.name}. Support for narrow-width "
                    "integers is platform-dependent and limited to a few specific operations, "
                    "e.g. basic arithmetic and type casting.")
  return ShapedArray(x.shape, _real_dtype(x.dtype), x.weak_type)


def _real_dtype(dtype):
  return np.finfo(dtype).dtype if dtypes.is_complex(dtype) else np.dtype(dtype)


def _abs_jvp(t, out, x):
  """sign(x) t for reals (t at 0, as JAX); Re(conj(x) t) / |x| for complex x (0 at 0)."""
  if dtypes.is_complex(get_aval(x).dtype):
    return div(real(mul(t, conj(x))), _replace_zero(out))
  return select_n(ge(x, full_like(x, 0)), neg(t), t)


def _replace_zero(x):
  """`x` with its zeros replaced by ones (a safe divisor)."""
  return select_n(eq(x, full_like(x, 0)), x, full_like(x, 1))


abs_p = Primitive("abs")
abs_p.def_abstract_eval(_abs_abstract_eval)
dispatch.def_numpy_impl(abs_p, np.abs)
mlir.register_lowering(abs_p, hlo_lowering("stablehlo.abs"))
ad.defjvp_from_output(abs_p, _abs_jvp)
batching.defvectorized(abs_p)
inv.not_invertible(abs_p, "many-to-one: x and -x have the same magnitude")


# --- not -----------------------------------------------------------------------------------------
def bitwise_not(x):
  """Elementwise bitwise NOT of an integer array; logical NOT of a bool array."""
  return not_p.bind(x)


not_p = unop("not", "intbool", np.invert, "stablehlo.not")
ad.not_differentiable(not_p, "integer or bool operand")
inv.definverse_unary(not_p, bitwise_not)


# --- erf -----------------------------------------------------------------------------------------
def erf(x):
  """Elementwise error function."""
  return erf_p.bind(x)


def _erf_jvp(t, x):
  return mul(t, mul(2 / math.sqrt(math.pi), exp(neg(square(x)))))


erf_p = unop("erf", "float", _in_float64(_scalar_fn(math.erf, math.nan)), "chlo.erf")
ad.defjvp(erf_p, _erf_jvp)
inv.definverse_unary(erf_p, lambda y: erf_inv(y))


# --- erfc ----------------------------------------------------------------------------------------
def erfc(x):
  """Elementwise complementary error function: 1 - erf(x), accurate where erf(x) is near 1."""
  return erfc_p.bind(x)


def _erfc_jvp(t, x):
  return mul(t, mul(-2 / math.sqrt(math.pi), exp(neg(square(x)))))


erfc_p = unop("erfc", "float", _in_float64(_scalar_fn(math.erfc, math.nan)), "chlo.erfc")
ad.defjvp(erfc_p, _erfc_jvp)
inv.definverse_unary(erfc_p, lambda y: erf_inv(sub(full_like(y, 1), y)))


# --- erf_inv -------------------------------------------------------------------------------------
def erf_inv(x):
  """Elementwise inverse error function: ±inf at ±1, NaN outside [-1, 1]."""
  return erf_inv_p.bind(x)


_erf64 = _scalar_fn(math.erf, math.nan)
_erfc64 = _scalar_fn(math.erfc, math.nan)


def _erf_inv_f64(y):
  """erf_inv in float64: Winitzki's closed-form estimate (relative error < 2e-3) refined by
  Newton steps, which converge quadratically. Where |y| > 1/2 the residual is taken as
  (1 - |y|) - erfc(x): 1 - |y| is exact there, so the tail keeps full relative accuracy."""
  a = np.abs(y)
  inside = a < 1
  a = np.where(inside, a, 0.0)
  q = 1 - a
  ln = np.log(q * (1 + a))
  t = 2 / (np.pi * 0.147) + ln / 2
  x = np.sqrt(np.sqrt(t * t - ln / 0.147) - t)
  tail = a > 0.5
  for _ in range(5):
    residual = np.where(tail, q - _erfc64(x), _erf64(x) - a)
    x = x - residual / (2 / np.sqrt(np.pi) * np.exp(-x * x))
  x = np.where(inside, x, np.where(np.abs(y) == 1, np.inf, np.nan))  # NaN for NaN and |y| > 1
  return np.copysign(x, y)


def _erf_inv_jvp(t, out, x):
  return mul(t, mul(math.sqrt(math.pi) / 2, exp(square(out))))


# (lowered by prng.py: in float32 as jaxlib's XLA evaluates it, the samplers' erf_inv)
erf_inv_p = unop("erf_inv", "float", _in_float64(_erf_inv_f64), None)
ad.defjvp_from_output(erf_inv_p, _erf_inv_jvp)
inv.definverse_unary(erf_inv_p, lambda y: erf(y))


# --- lgamma --------------------------------------------------------------------------------------
def lgamma(x):
  """Elementwise log of the absolute value of the gamma function (inf at the poles)."""
  return lgamma_p.bind(x)


def _lgamma_jvp(t, x):
  return mul(t, digamma(x))


lgamma_p = unop("lgamma", "float", _in_float64(_scalar_fn(math.lgamma, math.inf)), "chlo.lgamma")
ad.defjvp(lgamma_p, _lgamma_jvp)
inv.not_invertible(lgamma_p, "many-to-one: not monotonic")


# --- digamma -------------------------------------------------------------------------------------
def digamma(x):
  """Elementwise digamma function, the derivative of lgamma (NaN at the poles 0, -1, ...)."""
  return digamma_p.bind(x)


# Asymptotic series of digamma: log z - 1/(2z) - sum_k B_2k / (2k z^2k), k = 1..7.
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _digamma_f64(x):
  """digamma in float64: reflection psi(x) = psi(1 - x) - pi / tan(pi x) for x < 1/2, the
  recurrence psi(z) = psi(z + 1) - 1/z up to z >= 10, then the asymptotic series (its first
  omitted term is below 1e-16 there)."""
  pole = (x <= 0) & (x == np.floor(x))
  reflect = (x < 0.5) & ~pole
  z = np.where(pole, 1.0, np.where(reflect, 1 - x, x))
  acc = np.zeros_like(z)
  for _ in range(10):
    small = z < 10
    acc = acc - np.where(small, 1 / z, 0.0)
    z = z + small
  inv2 = 1 / (z * z)
  series = np.zeros_like(z)
  for c in reversed(_DIGAMMA_SERIES):
    series = (series + c) * inv2
  psi = acc + np.log(z) - 0.5 / z - series
  frac = x - np.round(x)  # tan(pi x) has period 1; reducing first keeps pi * x accurate
  psi = np.where(reflect, psi - np.pi / np.tan(np.pi * frac), psi)
  return np.where(pole, np.nan, psi)


# Asymptotic series of trigamma: 1/z + 1/(2z^2) + sum_k B_2k / z^(2k+1), k = 1..5.
_TRIGAMMA_SERIES = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66)


def _trigamma(x):
  """psi'(x) = d digamma / dx in revax ops (so that it is differentiable in turn): reflection
  psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x) for x < 1/2, the recurrence
  psi'(z) = psi'(z + 6) + sum_k 1 / (z + k)^2, k = 0..5, then the asymptotic series at
  w = z + 6 >= 6.5 (its first omitted term, 691 / (2730 w^13), is below 1e-11)."""
  reflect = lt(x, 0.5)
  z = select_n(reflect, x, sub(1, x))
  acc = integer_pow(z, -2)
  for k in range(1, 6):
    acc = add(acc, integer_pow(add(z, k), -2))
  w = add(z, 6)
  inv_w2 = integer_pow(w, -2)
  series = mul(_TRIGAMMA_SERIES[-1], inv_w2)
  for c in reversed(_TRIGAMMA_SERIES[:-1]):
    series = mul(add(series, c), inv_w2)
  series = div(add(add(series, 1), div(0.5, w)), w)  # (1 + 1/(2w) + sum_k B_2k / w^2k) / w
  direct = add(acc, series)
  x_refl = select_n(reflect, full_like(x, 0.5), x)  # no pole in the branch not taken
  return select_n(reflect, direct,
                  sub(integer_pow(div(math.pi, sin(mul(math.pi, x_refl))), 2), direct))


def _digamma_jvp(t, x):
  return mul(t, _trigamma(x))


digamma_p = unop("digamma", "float", _in_float64(_digamma_f64), "chlo.digamma")
ad.defjvp(digamma_p, _digamma_jvp)
inv.not_invertible(digamma_p, "many-to-one: not monotonic")


# --- integer_pow ---------------------------------------------------------------------------------
def integer_pow(x, y: int):
  """Elementwise x**y for a static integer exponent `y`, by repeated squaring.

  Args:
    x: a numeric array.
    y: a Python int; negative only for floating or complex x (computed as 1 / x**-y).

  Returns:
    An array like `x`.

  Example:
    >>> lax.integer_pow(jnp.array([1., 2., -3.]), 3)  # x * x * x
    Array([  1.,   8., -27.], dtype=float32)
  """
  try:
    y = operator.index(y)
  except TypeError:
    raise TypeError(f"integer_pow requires an integer exponent, got {y!r}") from None
  return integer_pow_p.bind(x, y=y)


def _integer_pow_abstract_eval(x, *, y):
  check_dtype("integer_pow", "num", x.dtype)
  if y < 0 and dtypes.is_integer(x.dtype):
    raise TypeError(f"Integers cannot be raised to negative powers, got "
                    f"integer_pow({x.str_short()}, {y})")
  return ShapedArray(x.shape, x.dtype, x.weak_type)


def _power_by_squaring(x, n, mul):
  """x**n for n >= 1 with `mul`, in the order the lowering emits its multiplies."""
  acc = None
  while n:
    if n & 1:
      acc = x if acc is None else mul(acc, x)
    n >>= 1
    if n:
      x = mul(x, x)
  return acc


@_quiet
def _integer_pow_numpy(x, *, y):
  if y == 0:
    return np.ones_like(x)
  acc = _power_by_squaring(x, -y if y < 0 else y, lambda a, b: (a * b).astype(x.dtype))
  return (np.ones_like(x) / acc).astype(x.dtype) if y < 0 else acc


def _integer_pow_lower(ctx, x, *, y):
  aval = ctx.avals_out[0]
  if y == 0:
    return ctx.constant(np.ones(aval.shape, aval.dtype), aval)
  acc = _power_by_squaring(x, -y if y < 0 else y,
                           lambda a, b: ctx.op1("stablehlo.multiply", [a, b]))
  if y < 0:
    ones = ctx.constant(np.ones(aval.shape, aval.dtype), aval)
    acc = ctx.op1("stablehlo.divide", [ones, acc])
  return acc


def _integer_pow_jvp(t, x, *, y):
  if y == 0:
    return ad.Zero(get_aval(t))
  return mul(t, mul(y, integer_pow(x, y - 1)))


def _integer_pow_inverse(out, *, y):
  """x from x**y for odd y: sign(out) * |out|**(1/y)."""
  root = binary.pow(abs(out), full_like(out, 1.0 / y))
  return select_n(lt(out, full_like(out, 0)), root, neg(root))


integer_pow_p = Primitive("integer_pow")
integer_pow_p.def_abstract_eval(_integer_pow_abstract_eval)
dispatch.def_numpy_impl(integer_pow_p, _integer_pow_numpy)
mlir.register_lowering(integer_pow_p, _integer_pow_lower)
ad.defjvp(integer_pow_p, _integer_pow_jvp)
batching.defvectorized(integer_pow_p)
inv.definverse_unary(integer_pow_p, _integer_pow_inverse,
                     solves=lambda known, eqn, facts: eqn.params["y"] % 2 == 1
                     and dtypes.is_float(eqn.outvars[0].aval.dtype))  # real: sign * |y|**(1/n)


# --- square --------------------------------------------------------------------------------------
def square(x):
  """Elementwise x * x."""
  return square_p.bind(x)


def _square_lower(ctx, x):
  if dtypes.is_inexact(ctx.avals_in[0].dtype):
    return ctx.op1("chlo.square", [x])
  return ctx.op1("stablehlo.multiply", [x, x])  # chlo.square takes no integers


def _square_jvp(t, x):
  return mul(t, mul(2, x))


square_p = unop("square", "num", _quiet(np.square), None)
mlir.register_lowering(square_p, _square_lower)
ad.defjvp(square_p, _square_jvp)
inv.definverse_unary(square_p, lambda y: sqrt(y),  # only where x >= 0 is known
                     solves=lambda known, eqn, facts: facts.nonnegative(eqn.invars[0]))


# --- real ----------------------------------------------------------------------------------------
def real(x):
  """Elementwise real part of a complex array."""
  return real_p.bind(x)


def _complex_part_abstract_eval(name):
  def rule(x):
    check_dtype(name, "complex", x.dtype)
    return ShapedArray(x.shape, _real_dtype(x.dtype), x.weak_type)
  return rule


def _real_transpose(ct, x):
  return [binary.complex(ct, 0)]


real_p = Primitive("real")
real_p.def_abstract_eval(_complex_part_abstract_eval("real"))
dispatch.def_numpy_impl(real_p, np.real)
mlir.register_lowering(real_p, hlo_lowering("stablehlo.real"))
ad.deflinear(real_p, _real_transpose)
batching.defvectorized(real_p)
inv.not_invertible(real_p, "many-to-one: the imaginary part is lost")


# --- imag ----------------------------------------------------------------------------------------
def imag(x):
  """Elementwise imaginary part of a complex array."""
  return imag_p.bind(x)


def _imag_transpose(ct, x):
  return [binary.complex(0, neg(ct))]


imag_p = Primitive("imag")
imag_p.def_abstract_eval(_complex_part_abstract_eval("imag"))
dispatch.def_numpy_impl(imag_p, np.imag)
mlir.register_lowering(imag_p, hlo_lowering("stablehlo.imag"))
ad.deflinear(imag_p, _imag_transpose)
batching.defvectorized(imag_p)
inv.not_invertible(imag_p, "many-to-one: the real part is lost")


# --- conj ----------------------------------------------------------------------------------------
def conj(x):
  """Elementwise complex conjugate. A float32/float64 operand gives a complex result."""
  return conj_p.bind(x, input_dtype=get_aval(x).dtype)


_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128,
               dtypes.complex64: dtypes.complex64, dtypes.complex128: dtypes.complex128}


def _conj_abstract_eval(x, *, input_dtype):
  if x.dtype not in _COMPLEX_OF:
    raise TypeError(f"conj does not accept dtype {x.dtype.name}; it takes float32, float64, "
                    "complex64 or complex128 arguments")
  return ShapedArray(x.shape, _COMPLEX_OF[x.dtype], x.weak_type)


def _conj_numpy(x, *, input_dtype):
  return np.conj(x).astype(_COMPLEX_OF[x.dtype])


def _conj_lower(ctx, x, *, input_dtype):
  aval = ctx.avals_in[0]
  real_aval = aval.update(dtype=_real_dtype(aval.dtype))
  if dtypes.is_complex(aval.dtype):
    re = ctx.op1("stablehlo.real", [x], real_aval)
    im = ctx.op1("stablehlo.negate", [ctx.op1("stablehlo.imag", [x], real_aval)], real_aval)
  else:
    re, im = x, ctx.constant(np.zeros(aval.shape, aval.dtype), aval)
  return ctx.op1("stablehlo.complex", [re, im])


def _conj_transpose(ct, x, *, input_dtype):
  if dtypes.is_complex(input_dtype):
    return [conj(ct)]
  return [real(ct)]


conj_p = Primitive("conj")
conj_p.def_abstract_eval(_conj_abstract_eval)
dispatch.def_numpy_impl(conj_p, _conj_numpy)
mlir.register_lowering(conj_p, _conj_lower)
ad.deflinear(conj_p, _conj_transpose)
batching.defvectorized(conj_p)
inv.definverse_unary(conj_p, lambda y, input_dtype: conj(y) if dtypes.is_complex(input_dtype)
                     else real(y))

