"""Elementwise functions of revax.numpy (NumPy's ufuncs), with JAX's promotion.

Operands broadcast NumPy-style (the lax elementwise primitives broadcast). Functions of floating
results (sin, exp, true_divide, ...) promote integer and bool operands to float32; bool operands
of arithmetic become int32 where NumPy's bool arithmetic has no meaning (floor_divide, power,
square, shifts), and are refused where it is ambiguous (negative, subtract, sign).
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.config import config
from revax._src.core.trace import ConcretizationTypeError
from revax._src.custom_derivatives import custom_jvp
from revax._src import tree_util
from revax._src.numpy import util
from revax._src.numpy.util import (aval_of, broadcasting, constant_like, lax_const,
                                   promote_args, promote_args_inexact, promote_args_numeric)
from revax._src.numpy.util import convert_pytree_operands

# elementwise functions broadcast their operands as jax.numpy's (jax's promote_shapes)
promote_args, promote_args_inexact, promote_args_numeric = map(
    broadcasting, (promote_args, promote_args_inexact, promote_args_numeric))


def _dtype(x):
  return aval_of(x).dtype


def _is_bool(x) -> bool:
  return dtypes.is_bool(_dtype(x))


def _is_int(x) -> bool:
  return dtypes.is_integer(_dtype(x))


def _is_unsigned(x) -> bool:
  return dtypes.is_unsigned_integer(_dtype(x))


def _is_complex(x) -> bool:
  return dtypes.is_complex(_dtype(x))


def _exact(x) -> bool:
  return not dtypes.is_inexact(_dtype(x))


def _refuse_complex(fun_name, *args):
  for a in args:
    if _is_complex(a):
      raise TypeError(f"{fun_name} does not support complex-valued inputs, got {_dtype(a).name}")


def _refuse_bool(fun_name, x, hint):
  if _is_bool(x):
    raise TypeError(f"{fun_name} does not support bool inputs; {hint}")


def _require_integer(fun_name, *args):
  for a in args:
    if not (_is_int(a) or _is_bool(a)):
      raise TypeError(f"{fun_name} requires integer or boolean arguments, got {_dtype(a).name}")


def _full_like(x, value):
  """`value` in the shape, dtype and weak type of `x`."""
  aval = aval_of(x)
  return util.full_of(aval.shape, value, aval.dtype, aval.weak_type)


def _where(c, x, y):
  """select(c, x, y) with c, x, y broadcast to one shape (x, y of one dtype)."""
  c, x, y = util.broadcast_arrays_of(c, x, y)
  return lax.select_n(c, y, x)


def _public(fun, name: str, doc: str):
  fun.__name__ = fun.__qualname__ = name
  fun.__doc__ = doc
  return fun


# --- arithmetic ----------------------------------------------------------------------------------
def add(x, y, /):
  """Elementwise x + y (logical or for bools)."""
  x, y = promote_args("add", x, y)
  return lax.bitwise_or(x, y) if _is_bool(x) else lax.add(x, y)


def subtract(x, y, /):
  """Elementwise x - y."""
  x, y = promote_args("subtract", x, y)
  _refuse_bool("subtract", x, "use logical_xor or bitwise_xor instead")
  return lax.sub(x, y)


def multiply(x, y, /):
  """Elementwise x * y (logical and for bools)."""
  x, y = promote_args("multiply", x, y)
  return lax.bitwise_and(x, y) if _is_bool(x) else lax.mul(x, y)


def true_divide(x, y, /):
  """Elementwise x / y in floating point (integers are promoted to float32 first)."""
  x, y = promote_args_inexact("true_divide", x, y)
  return lax.div(x, y)


divide = _public(lambda x, y, /: true_divide(x, y), "divide", "Elementwise x / y (true_divide).")


def floor_divide(x, y, /):
  """Elementwise x // y: the floor of the quotient, as Python's // (for integers too).

  Integer division by zero gives the value XLA's division gives, not an error.
  """
  x, y = promote_args_numeric("floor_divide", x, y)
  _refuse_complex("floor_divide", x)
  if _is_int(x):
    q = lax.div(x, y)
    if _is_unsigned(x):
      return q
    # q - 1 where the quotient was truncated upwards: signs differ and the division is inexact
    # (comparing signs, not "< 0", so that x // 0 is what JAX gives)
    fix = lax.bitwise_and(lax.ne(lax.sign(x), lax.sign(y)),
                          lax.ne(lax.rem(x, y), constant_like(x, 0)))
    return _where(fix, lax.sub(q, constant_like(q, 1)), q)
  return _float_divmod(x, y)[0]


def _float_divmod(x, y):
  """(floor(x / y), x mod y) for floats, the remainder taking the sign of y (Python's rules).

  x // 0 is x / 0 (an infinity or NaN), as in JAX and NumPy.
  """
  mod = lax.rem(x, y)
  x, y, mod = util.broadcast_arrays_of(x, y, mod)
  zero = constant_like(mod, 0)
  numer = lax.select_n(lax.eq(y, zero), lax.sub(x, mod), x)
  div = lax.div(numer, y)
  fix = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.sign(y), lax.sign(mod)))
  mod = lax.select_n(fix, mod, lax.add(mod, y))
  div = lax.select_n(fix, div, lax.sub(div, constant_like(div, 1)))
  return lax.round(div), mod


def remainder(x, y, /):
  """Elementwise x mod y with the sign of y, as Python's % (x % 0 is 0 for integers, NaN for
  floats)."""
  x, y = promote_args_numeric("remainder", x, y)
  _refuse_complex("remainder", x)
  zero = constant_like(x, 0)
  if _is_int(y):
    y = _where(lax.eq(y, constant_like(y, 0)), _full_like(y, 1), y)
  r = lax.rem(x, y)
  if _is_unsigned(x):
    return r
  fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y, zero)))
  return _where(fix, lax.add(r, y), r)


mod = _public(lambda x, y, /: remainder(x, y), "mod", "Elementwise x mod y (remainder).")


def fmod(x, y, /):
  """Elementwise remainder of truncated division: the sign of x, as C's fmod."""
  x, y = promote_args_numeric("fmod", x, y)
  _refuse_complex("fmod", x)
  if _is_int(y):
    y = _where(lax.eq(y, constant_like(y, 0)), _full_like(y, 1), y)
  return lax.rem(x, y)


def divmod(x, y, /):  # noqa: A001 (NumPy's name)
  """(floor_divide(x, y), remainder(x, y))."""
  return floor_divide(x, y), remainder(x, y)


def _static_int(y):
  """`y` as a Python int if it is a concrete integer scalar or a Python bool (jax's
  `operator.index`), else None."""
  if hasattr(y, "dtype") and not _is_int(y):
    return None
  try:
    return operator.index(y)
  except (TypeError, ConcretizationTypeError):
    return None


def power(x, y, /):
  """Elementwise x ** y.

  A concrete integer exponent uses exact repeated multiplication (`integer_pow`); integer bases
  with array or traced integer exponents use binary exponentiation (a strongly typed result, as
  jax's); a floating base with an integer exponent is `lax.pow` of the two unpromoted (so a weak
  float base with an int8 exponent gives a strong float, as in jax); otherwise `lax.pow` of the
  promoted operands.
  """
  util.check_arraylike("power", x, y)
  n = _static_int(y)
  if n is not None:
    if type(x) is int and not config.x64_enabled:
      # (JAX converts a Python int base on its own with NumPy's astype, which wraps one out of
      # int32's range instead of raising OverflowError: (2**31) ** jnp.int8(5) is 0)
      with np.errstate(over="ignore"):
        x = lax.convert_element_type(np.asarray(x).astype(dtypes.default_int_dtype()),
                                     dtypes.default_int_dtype(), True)
    (x,) = promote_args_numeric("power", x)
    return lax.integer_pow(x, n)
  xp, yp = promote_args_numeric("power", x, y)
  if _is_int(xp):
    return _integer_power(xp, yp)
  if dtypes.is_inexact(_dtype(x)) and _is_int(y):
    return lax.pow(x, y)
  return lax.pow(xp, yp)


def _integer_power(x, y):
  """x ** y for integer arrays by squaring (exponents above 63 overflow anyway). The
  accumulator starts from strong constants, as jax's: the result is strongly typed."""
  x, y = util.broadcast_arrays_of(x, y)
  zero, one = constant_like(y, 0), constant_like(y, 1)
  acc = _where(lax.bitwise_and(lax.eq(x, constant_like(x, 0)), lax.ne(y, zero)),
               util.strong_constant_like(x, 0), util.strong_constant_like(x, 1))
  for _ in range(6):
    odd = lax.ne(lax.bitwise_and(y, one), zero)
    acc = _where(odd, lax.mul(acc, x), acc)
    x = lax.mul(x, x)
    y = lax.shift_right_logical(y, one)
  return acc


def float_power(x, y, /):
  """Elementwise x ** y computed in floating point."""
  x, y = promote_args_inexact("float_power", x, y)
  return lax.pow(x, y)


def negative(x, /):
  """Elementwise -x."""
  (x,) = promote_args("negative", x)
  _refuse_bool("negative", x, "use logical_not or invert instead")
  return lax.neg(x)


def positive(x, /):
  """Elementwise +x (the value itself)."""
  (x,) = promote_args("positive", x)
  return util.as_array(x)


def absolute(x, /):
  """Elementwise |x| (the magnitude for complex values, as a real array)."""
  (x,) = promote_args("absolute", x)
  if _is_bool(x) or _is_unsigned(x):
    return util.as_array(x)
  return lax.abs(x)


abs = _public(lambda x, /: absolute(x), "abs", "Elementwise |x| (absolute).")  # noqa: A001


def fabs(x, /):
  """Elementwise |x| of real values, as floats."""
  (x,) = promote_args_inexact("fabs", x)
  _refuse_complex("fabs", x)
  return lax.abs(x)


def sign(x, /):
  """Elementwise sign: -1, 0 or 1 (x / |x| for complex values)."""
  (x,) = promote_args("sign", x)
  _refuse_bool("sign", x, "bool values have no sign")
  return lax.sign(x)


def square(x, /):
  """Elementwise x * x."""
  (x,) = promote_args_numeric("square", x)
  return lax.square(x)


def reciprocal(x, /):
  """Elementwise 1 / x, in floating point."""
  (x,) = promote_args_inexact("reciprocal", x)
  return lax.div(constant_like(x, 1), x)


def maximum(x, y, /):
  """Elementwise maximum; NaN if either operand is NaN."""
  x, y = promote_args("maximum", x, y)
  return lax.bitwise_or(x, y) if _is_bool(x) else lax.max(x, y)


def minimum(x, y, /):
  """Elementwise minimum; NaN if either operand is NaN."""
  x, y = promote_args("minimum", x, y)
  return lax.bitwise_and(x, y) if _is_bool(x) else lax.min(x, y)


def fmax(x, y, /):
  """Elementwise maximum ignoring NaNs (NaN only where both operands are NaN)."""
  x, y = promote_args("fmax", x, y)
  return _where(lax.bitwise_or(greater(x, y), isnan(y)), x, y)


def fmin(x, y, /):
  """Elementwise minimum ignoring NaNs (NaN only where both operands are NaN)."""
  x, y = promote_args("fmin", x, y)
  return _where(lax.bitwise_or(less(x, y), isnan(y)), x, y)


def arctan2(x1, x2, /):
  """Elementwise arctan(x1 / x2) in the quadrant of (x2, x1)."""
  x1, x2 = promote_args_inexact("arctan2", x1, x2)
  return lax.atan2(x1, x2)  # complex too, as jax's


def hypot(x1, x2, /):
  """Elementwise sqrt(x1**2 + x2**2), without overflow for large inputs."""
  x1, x2 = promote_args_inexact("hypot", x1, x2)
  if _is_complex(x1):  # a ValueError, as jax's
    raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please convert "
                     "to real values first, such as by using jnp.real or jnp.imag to take the "
                     "real or imaginary components respectively.")
  x1, x2 = lax.abs(x1), lax.abs(x2)
  hi, lo = lax.max(x1, x2), lax.min(x1, x2)
  hi_b, lo_b = util.broadcast_arrays_of(hi, lo)
  is_zero = lax.eq(hi_b, constant_like(hi_b, 0))
  safe = lax.select_n(is_zero, hi_b, _full_like(hi_b, 1))
  ratio = lax.div(lo_b, safe)
  out = lax.mul(hi_b, lax.sqrt(lax.add(constant_like(ratio, 1), lax.mul(ratio, ratio))))
  out = lax.select_n(is_zero, out, hi_b)
  is_inf = lax.bitwise_or(isinf(x1), isinf(x2))
  return _where(is_inf, lax_const(out, np.inf), out)  # (strong unless out is a weak scalar)


def nextafter(x1, x2, /):
  """The next representable value after x1 in the direction of x2."""
  x1, x2 = promote_args_inexact("nextafter", x1, x2)
  _refuse_complex("nextafter", x1)
  return lax.nextafter(x1, x2)


def copysign(x1, x2, /):
  """|x1| with the sign (bit) of x2."""
  x1, x2 = promote_args_inexact("copysign", x1, x2)
  _refuse_complex("copysign", x1)
  mag = lax.abs(x1)
  return _where(signbit(x2), lax.neg(mag), mag)


def heaviside(x1, x2, /):
  """0 where x1 < 0, 1 where x1 > 0, x2 where x1 == 0, and NaN where x1 is NaN."""
  x1, x2 = promote_args_inexact("heaviside", x1, x2)
  _refuse_complex("heaviside", x1)
  # jax's constants (strong unless x1 is a weak scalar) decide the weak type
  zero = lax_const(x1, 0)
  x2_or_nan = _where(lax.ne(x1, x1), x1, x2)  # NaN stays NaN (x2 is only for x1 == 0)
  return _where(lax.lt(x1, zero), zero, _where(lax.gt(x1, zero), lax_const(x1, 1), x2_or_nan))


# --- rounding ------------------------------------------------------------------------------------
def floor(x, /):
  """Elementwise floor (integers and bools are returned as they are)."""
  (x,) = promote_args("floor", x)
  _refuse_complex("floor", x)
  return util.as_array(x) if _exact(x) else lax.floor(x)


def ceil(x, /):
  """Elementwise ceiling (integers and bools are returned as they are)."""
  (x,) = promote_args("ceil", x)
  _refuse_complex("ceil", x)
  return util.as_array(x) if _exact(x) else lax.ceil(x)


def trunc(x, /):
  """Elementwise rounding toward zero."""
  (x,) = promote_args("trunc", x)
  _refuse_complex("trunc", x)
  if _exact(x):
    return util.as_array(x)
  return _where(lax.lt(x, constant_like(x, 0)), lax.ceil(x), lax.floor(x))


def _round_half_even(x):
  if _is_complex(x):
    return lax.complex(_round_half_even(lax.real(x)), _round_half_even(lax.imag(x)))
  return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def round(x, decimals: int = 0, out=None):  # noqa: A001 (NumPy's name)
  """Round to `decimals` decimal places, ties to even (as np.round).

  Example:
    >>> jnp.round(jnp.array([0.5, 1.5, 2.5]))  # halves to even, as NumPy
    Array([0., 2., 2.], dtype=float32)
    >>> jnp.round(jnp.array([1.234, 5.678]), 2)
    Array([1.23, 5.68], dtype=float32)
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to round is not supported.")
  (x,) = promote_args("round", x)
  decimals = operator.index(decimals)
  if _is_bool(x):
    raise ValueError("round does not support bool inputs")
  if _is_int(x):
    if decimals >= 0:
      return util.as_array(x)
    raise NotImplementedError("round of integers to negative decimals is not supported")
  dtype = _dtype(x)
  if decimals == 0:
    return _round_half_even(x)
  if dtype in (dtypes.float16, dtypes.bfloat16):
    x = lax.convert_element_type(x, dtypes.float32, aval_of(x).weak_type)
  factor = constant_like(x, 10.0 ** decimals)
  out = lax.div(_round_half_even(lax.mul(x, factor)), factor)
  return lax.convert_element_type(out, dtype, aval_of(out).weak_type)


around = _public(lambda x, decimals=0, out=None: round(x, decimals, out), "around",
                 "Round to `decimals` decimal places (round).")


def rint(x, /):
  """Round to the nearest integer value, ties to even, in floating point (integers and bools
  are converted to the default float type, strongly typed, as jax's)."""
  util.check_arraylike("rint", x)
  if _exact(x):
    return lax.convert_element_type(x, dtypes.default_float_dtype())
  return _round_half_even(x)


# --- exponentials, logarithms, trigonometry --------------------------------------------------------
def _inexact_unary(name: str, lax_fn, doc: str, real_only: bool = False):
  def fun(x, /):
    (x,) = promote_args_inexact(name, x)
    if real_only:
      _refuse_complex(name, x)
    return lax_fn(x)
  return _public(fun, name, doc)


exp = _inexact_unary("exp", lax.exp, "Elementwise e ** x.")
exp2 = _inexact_unary("exp2", lax.exp2, "Elementwise 2 ** x.")
expm1 = _inexact_unary("expm1", lax.expm1, "Elementwise e ** x - 1, accurate near 0.")
log = _inexact_unary("log", lax.log, "Elementwise natural logarithm.")
log1p = _inexact_unary("log1p", lax.log1p, "Elementwise log(1 + x), accurate near 0.")
sqrt = _inexact_unary("sqrt", lax.sqrt, "Elementwise square root.")
cbrt = _inexact_unary("cbrt", lax.cbrt, "Elementwise cube root.", real_only=True)
sin = _inexact_unary("sin", lax.sin, "Elementwise sine.")
cos = _inexact_unary("cos", lax.cos, "Elementwise cosine.")
tan = _inexact_unary("tan", lax.tan, "Elementwise tangent.")
arcsin = _inexact_unary("arcsin", lax.asin, "Elementwise inverse sine.")
arccos = _inexact_unary("arccos", lax.acos, "Elementwise inverse cosine.")
arctan = _inexact_unary("arctan", lax.atan, "Elementwise inverse tangent.")
sinh = _inexact_unary("sinh", lax.sinh, "Elementwise hyperbolic sine.")
cosh = _inexact_unary("cosh", lax.cosh, "Elementwise hyperbolic cosine.")
tanh = _inexact_unary("tanh", lax.tanh, "Elementwise hyperbolic tangent.")
arcsinh = _inexact_unary("arcsinh", lax.asinh, "Elementwise inverse hyperbolic sine.")
arccosh = _inexact_unary("arccosh", lax.acosh, "Elementwise inverse hyperbolic cosine.")
arctanh = _inexact_unary("arctanh", lax.atanh, "Elementwise inverse hyperbolic tangent.")
asin, acos, atan = arcsin, arccos, arctan
asinh, acosh, atanh = arcsinh, arccosh, arctanh


def atan2(x1, x2, /):
  """Alias of `arctan2`, as jax's: the operands are promoted together first, so a Python int
  out of an integer operand's range wraps there (`atan2(uint8_x, 300)` divides by 44).

  Example:
    >>> jnp.atan2(0.0, -1.0)
    Array(3.1415927, dtype=float32, weak_type=True)
  """
  return arctan2(*promote_args("atan2", x1, x2))


def log2(x, /):
  """Elementwise base-2 logarithm: log(x) / log(2), as jax's (a strong result: its log(2) is a
  strong constant; complex values part by part)."""
  (x,) = promote_args_inexact("log2", x)
  if _is_complex(x):
    r = lax.log(x)
    re, im = lax.real(r), lax.imag(r)
    ln2 = lax.log(util.strong_constant_like(re, 2))
    return lax.complex(lax.div(re, ln2), lax.div(im, ln2))
  return lax.div(lax.log(x), lax.log(util.strong_constant_like(x, 2)))


def log10(x, /):
  """Elementwise base-10 logarithm: log(x) * (1 / log(10)), as jax's (a strong result;
  complex values part by part)."""
  (x,) = promote_args_inexact("log10", x)
  real_dtype = np.array(0, _dtype(x)).real.dtype
  inv_ln10 = util.scalar_constant(0.4342944819032518, real_dtype)  # (exact 1 / log(10))
  if _is_complex(x):
    r = lax.log(x)
    return lax.complex(lax.mul(lax.real(r), inv_ln10), lax.mul(lax.imag(r), inv_ln10))
  return lax.mul(lax.log(x), inv_ln10)


def logaddexp(x1, x2, /):
  """log(exp(x1) + exp(x2)) without overflow (complex operands too, the imaginary part wrapped
  into [-pi, pi], as jax's); its derivative is exp(x_i - out), as JAX's custom rule gives.

  Example:
    >>> jnp.logaddexp(jnp.array([0., 1000.]), jnp.array([0., 1000.]))
    Array([   0.6931472, 1000.6931   ], dtype=float32)
  """
  x1, x2 = promote_args_inexact("logaddexp", x1, x2)
  return _logaddexp(x1, x2)


def _logaddexp_in_base(x1, x2, exp_fn, ln_base):
  """jax's lax logaddexp / logaddexp2 (`exp_fn` lax.exp or lax.exp2; `ln_base` log(base))."""
  amax = lax.max(x1, x2)
  inv = None if ln_base == 1 else lax_const(amax, 1 / ln_base)
  scaled = (lambda v: v) if inv is None else (lambda v: lax.mul(inv, v))
  if not _is_complex(x1):
    delta = lax.sub(x1, x2)
    finite = lax.add(amax, scaled(lax.log1p(exp_fn(lax.neg(lax.abs(delta))))))
    # NaNs, or infinities of one sign (a NaN delta): x1 + x2
    return _where(isnan(delta), lax.add(x1, x2), finite)
  delta = lax.sub(lax.add(x1, x2), lax.mul(amax, lax_const(amax, 2)))
  out = lax.add(amax, scaled(lax.log1p(exp_fn(delta))))
  return lax.complex(lax.real(out), _wrap_between(lax.imag(out), np.pi / ln_base))


def _wrap_between(x, a):
  """`x` wrapped into [-a, a] (jax's constants)."""
  a, two_a, zero = lax_const(x, a), lax_const(x, 2 * a), lax_const(x, 0)
  rem = lax.rem(lax.add(x, a), two_a)
  rem = _where(lax.lt(rem, zero), lax.add(rem, two_a), rem)
  return lax.sub(rem, a)


def _replace_inf(v):
  """`v` with 0 where its real part is +inf (inf - inf would give NaN in the derivative)."""
  re = lax.real(v) if _is_complex(v) else v
  return _where(lax.eq(re, lax_const(re, np.inf)), lax.full_like(v, 0), v)


def _logaddexp_jvp_in_base(fn, exp_fn, primals, tangents):
  (x1, x2), (t1, t2) = primals, tangents
  out = fn(x1, x2)
  w1 = exp_fn(lax.sub(_replace_inf(x1), _replace_inf(out)))
  w2 = exp_fn(lax.sub(_replace_inf(x2), _replace_inf(out)))
  return out, lax.add(lax.mul(t1, w1), lax.mul(t2, w2))


@custom_jvp
def _logaddexp(x1, x2):
  return _logaddexp_in_base(x1, x2, lax.exp, 1)


@custom_jvp
def _logaddexp2(x1, x2):
  return _logaddexp_in_base(x1, x2, lax.exp2, np.log(2))


_logaddexp.defjvp(lambda p, t: _logaddexp_jvp_in_base(_logaddexp, lax.exp, p, t))
_logaddexp2.defjvp(lambda p, t: _logaddexp_jvp_in_base(_logaddexp2, lax.exp2, p, t))


def logaddexp2(x1, x2, /):
  """log2(2**x1 + 2**x2) without overflow (complex operands too), as jax's.

  Example:
    >>> jnp.logaddexp2(jnp.array([1., 3.]), jnp.array([1., 3.]))
    Array([2., 4.], dtype=float32)
  """
  x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
  return _logaddexp2(x1, x2)


def deg2rad(x, /):
  """Degrees to radians."""
  (x,) = promote_args_inexact("deg2rad", x)
  return lax.mul(x, lax_const(x, np.pi / 180))


def rad2deg(x, /):
  """Radians to degrees."""
  (x,) = promote_args_inexact("rad2deg", x)
  return lax.mul(x, lax_const(x, 180 / np.pi))


radians, degrees = deg2rad, rad2deg


def sinc(x, /):
  """sin(pi x) / (pi x), with sinc(0) = 1."""
  (x,) = promote_args_inexact("sinc", x)
  # jax's constants decide the weak type (strong unless x is a weak scalar)
  is_zero = lax.eq(x, lax_const(x, 0))
  safe = lax.mul(lax_const(x, np.pi), _where(is_zero, lax_const(x, 1), x))
  return _where(is_zero, lax_const(x, 1), lax.div(lax.sin(safe), safe))


# --- complex parts -------------------------------------------------------------------------------
def real(x, /):
  """The real part (the value itself for real arrays)."""
  (x,) = promote_args("real", x)
  return lax.real(x) if _is_complex(x) else util.as_array(x)


def imag(x, /):
  """The imaginary part (zeros for real arrays)."""
  (x,) = promote_args("imag", x)
  return lax.imag(x) if _is_complex(x) else _full_like(x, 0)


def conjugate(x, /):
  """The complex conjugate (the value itself for real arrays)."""
  (x,) = promote_args("conjugate", x)
  return lax.conj(x) if _is_complex(x) else util.as_array(x)


conj = _public(lambda x, /: conjugate(x), "conj", "The complex conjugate (conjugate).")


def angle(z, deg: bool = False):
  """The argument of complex values (0 or pi for real ones), in radians unless `deg`."""
  util.check_arraylike("angle", z)
  re, im = real(z), imag(z)
  aval = aval_of(re)
  if not dtypes.is_inexact(aval.dtype) or (not _is_complex(z) and not aval.shape):
    # (as jax's: converted to the default float type, strongly typed -- 0-d floats too)
    re = lax.convert_element_type(re, dtypes.default_float_dtype())
    im = lax.convert_element_type(im, dtypes.default_float_dtype())
  out = lax.atan2(im, re)
  return rad2deg(out) if deg else out


# --- comparisons and logic -----------------------------------------------------------------------
def _comparison(name, lax_fn, doc, ordered=True):
  def fun(x, y, /):
    if not ordered and (tree_util.is_array_leaf(x) or tree_util.is_array_leaf(y)):
      # typed keys: elementwise key equality (TypeError for a key and anything else), as JAX
      keys, other = (x, y) if tree_util.is_array_leaf(x) else (y, x)
      return keys == other if name == "equal" else keys != other
    x, y = promote_args(name, x, y)
    if ordered and _is_complex(x):  # lexicographic: real parts, then imaginary parts
      re_x, re_y = lax.real(x), lax.real(y)
      return _where(lax.eq(re_x, re_y), lax_fn(lax.imag(x), lax.imag(y)), lax_fn(re_x, re_y))
    return lax_fn(x, y)
  return _public(fun, name, doc)


equal = _comparison("equal", lax.eq, "Elementwise x == y.", ordered=False)
not_equal = _comparison("not_equal", lax.ne, "Elementwise x != y.", ordered=False)
less = _comparison("less", lax.lt, "Elementwise x < y (complex values: lexicographically).")
less_equal = _comparison("less_equal", lax.le, "Elementwise x <= y (complex: lexicographically).")
greater = _comparison("greater", lax.gt, "Elementwise x > y (complex values: lexicographically).")
greater_equal = _comparison("greater_equal", lax.ge,
                            "Elementwise x >= y (complex values: lexicographically).")


def _to_bool(x):
  return x if _is_bool(x) else lax.ne(x, lax_const(x, 0))


def _logical(name, lax_fn, doc):
  def fun(x, y, /):
    # promoted first, then compared with jax's constants (strong unless a weak scalar), as jax
    return lax_fn(*map(_to_bool, promote_args(name, x, y)))
  return _public(fun, name, doc)


logical_and = _logical("logical_and", lax.bitwise_and, "Elementwise truth of x and y.")
logical_or = _logical("logical_or", lax.bitwise_or, "Elementwise truth of x or y.")
logical_xor = _logical("logical_xor", lax.bitwise_xor, "Elementwise truth of x xor y.")


def logical_not(x, /):
  """Elementwise truth of not x."""
  util.check_arraylike("logical_not", x)
  return lax.bitwise_not(_to_bool(x))


def _bitwise(name, lax_fn, doc):
  def fun(x, y, /):
    x, y = promote_args(name, x, y)
    _require_integer(name, x)
    return lax_fn(x, y)
  return _public(fun, name, doc)


bitwise_and = _bitwise("bitwise_and", lax.bitwise_and, "Elementwise bitwise x & y.")
bitwise_or = _bitwise("bitwise_or", lax.bitwise_or, "Elementwise bitwise x | y.")
bitwise_xor = _bitwise("bitwise_xor", lax.bitwise_xor, "Elementwise bitwise x ^ y.")


def bitwise_not(x, /):
  """Elementwise bitwise ~x (logical not for bools)."""
  (x,) = promote_args("bitwise_not", x)
  _require_integer("bitwise_not", x)
  return lax.bitwise_not(x)


invert = _public(lambda x, /: bitwise_not(x), "invert", "Elementwise bitwise ~x (bitwise_not).")
bitwise_invert = invert


def left_shift(x, y, /):
  """Elementwise x << y (shifts past the bit width give 0)."""
  x, y = promote_args_numeric("left_shift", x, y)
  _require_integer("left_shift", x)
  return lax.shift_left(x, y)


def right_shift(x, y, /):
  """Elementwise x >> y: arithmetic for signed integers, logical for unsigned ones."""
  x, y = promote_args_numeric("right_shift", x, y)
  _require_integer("right_shift", x)
  return lax.shift_right_logical(x, y) if _is_unsigned(x) else lax.shift_right_arithmetic(x, y)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


# --- floating-point classification ---------------------------------------------------------------
def isfinite(x, /):
  """Elementwise test for values that are neither infinite nor NaN."""
  util.check_arraylike("isfinite", x)
  if _exact(x):
    return util.full_of(aval_of(x).shape, True, dtypes.bool_)
  if _is_complex(x):
    return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
  return lax.is_finite(x)


def isinf(x, /):
  """Elementwise test for positive or negative infinity."""
  util.check_arraylike("isinf", x)
  if _exact(x):
    return util.full_of(aval_of(x).shape, False, dtypes.bool_)
  if _is_complex(x):
    return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
  # (jax compares with a strong constant: a strong result, weak operand or not)
  return lax.eq(lax.abs(x), util.strong_constant_like(x, np.inf))


def isnan(x, /):
  """Elementwise test for NaN."""
  util.check_arraylike("isnan", x)
  return lax.ne(x, x)  # (for every dtype, as jax's: the weak type of x is kept)


def isposinf(x, /):
  """Elementwise test for +inf."""
  return _isposneginf("isposinf", x, np.inf)


def _isposneginf(name, x, infinity):
  util.check_arraylike(name, x)
  if _is_complex(x):
    raise ValueError("isposinf/isneginf are not well defined for complex types")
  if _exact(x):
    return util.full_of(aval_of(x).shape, False, dtypes.bool_)
  return lax.eq(x, util.strong_constant_like(x, infinity))  # (strong, as jax's)


def isneginf(x, /):
  """Elementwise test for -inf."""
  return _isposneginf("isneginf", x, -np.inf)


_INT_OF_WIDTH = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}


def signbit(x, /):
  """Elementwise test of the sign bit (true for -0.0 and negative NaNs too)."""
  (x,) = promote_args("signbit", x)
  if _is_complex(x):
    raise ValueError(f"jax.numpy.signbit is not well defined for {_dtype(x)}")
  if _is_bool(x) or _is_unsigned(x):
    return util.full_of(aval_of(x).shape, False, dtypes.bool_)
  if _is_int(x):
    return lax.lt(x, util.strong_constant_like(x, 0))  # (strong, as jax's)
  dt = _dtype(x)
  if dtypes.finfo(dt).bits not in (16, 32, 64):
    raise NotImplementedError("jax.numpy.signbit only supports 16, 32, and 64-bit types.")
  bits = lax.bitcast_convert_type(x, _INT_OF_WIDTH[dt.itemsize])
  return lax.lt(bits, constant_like(bits, 0))


# --- where, clip ---------------------------------------------------------------------------------
@tree_util.accepts_array_leaves((1, 2))
def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
  """`x` where `condition` is true, else `y` (operands broadcast, x and y promoted together).

  With only `condition`, the indices of its nonzero elements (`nonzero`), which needs a concrete
  condition or a static `size` (missing indices are `fill_value`).

  Example:
    >>> x = jnp.array([-1., 2., -3.])
    >>> jnp.where(x > 0, x, 0.)
    Array([0., 2., 0.], dtype=float32)
  """
  if x is None and y is None:
    from revax._src.numpy.indexing import nonzero
    return nonzero(condition, size=size, fill_value=fill_value)
  if size is not None or fill_value is not None:
    raise ValueError("size and fill_value arguments cannot be used in three-term where function.")
  if x is None or y is None:
    raise TypeError("Either both or neither of the x and y arguments should be provided to "
                     "where.")
  condition, x, y = util.converted_pytrees((condition, x, y))
  util.check_arraylike("where", condition, x, y)
  x, y = util.promote_dtypes(x, y)
  return _where(_to_bool(condition), x, y)


def clip(arr, /, min=None, max=None):  # noqa: A002 (NumPy's names)
  """`arr` limited to [min, max] elementwise (either bound may be None).

  Example:
    >>> jnp.clip(jnp.array([-1., 0.5, 2.]), 0., 1.)
    Array([0. , 0.5, 1. ], dtype=float32)
  """
  util.check_arraylike("clip", arr)
  if any(v is not None and _is_complex(v) for v in (arr, min, max)):
    raise ValueError("Clip received a complex value either through the input or the min/max "
                     "keywords. Complex values have no ordering and cannot be clipped. Please "
                     "convert to a real value or array by taking the real or imaginary "
                     "components via jax.numpy.real/imag respectively.")
  if min is not None:
    arr = maximum(min, arr)
  if max is not None:
    arr = minimum(max, arr)
  return util.as_array(arr)


# --- comparisons of whole arrays -----------------------------------------------------------------
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
  """Elementwise |a - b| <= atol + rtol * |b|, with infinities equal only to themselves.

  Computed as jax's: integers and bools in the default float type, the tolerances converted to
  strongly typed values of the operands' real type (so the result is a strong bool array).
  """
  a, b = promote_args("isclose", a, b)
  a, b = promote_args_inexact("isclose", a, b)
  real_dtype = np.array(0, _dtype(a)).real.dtype
  rtol = lax.convert_element_type(rtol, real_dtype)
  atol = lax.convert_element_type(atol, real_dtype)
  # an infinity is close only to itself (|inf - b| is inf or NaN); NaN is close to nothing
  in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
  out = logical_or(lax.eq(a, b), logical_and(isfinite(b), in_range))
  return logical_or(out, logical_and(isnan(a), isnan(b))) if equal_nan else out

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("angle", "clip", "isfinite", "isinf", "isnan", "isneginf",
                        "isposinf", "logical_not", "rint", "where",))
