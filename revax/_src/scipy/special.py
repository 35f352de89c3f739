"""revax.scipy.special: SciPy's special functions on revax arrays, with jax.scipy.special's
semantics (integer and bool inputs promote to the default float dtype, edge values as JAX gives
them, derivatives where JAX defines them).

The gamma family, error functions and Bessel functions sit on lax primitives (lgamma, digamma,
igamma, regularized_incomplete_beta, zeta, polygamma, erf_inv, bessel_i0e, ...); the rest are
compositions written here. Functions JAX gives a custom derivative (xlogy, xlog1py, logit,
entr's x log x) have one here too, so their gradients are finite where JAX's are.
"""
from __future__ import annotations

import fractions
import math
import operator

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.trace import ConcretizationTypeError, Tracer
from revax._src.custom_derivatives import custom_jvp
from revax._src.lax import special as lax_special
from revax._src.nn import functions as nn_functions
from revax._src.numpy import creation, reductions, ufuncs
from revax._src.scipy import special_betaln
from revax._src.numpy.util import aval_of, as_array, check_arraylike, promote_args_inexact

__all__ = [
  "bernoulli", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "digamma", "entr",
  "erf", "erfc", "erfcx", "erfinv", "expit", "factorial", "gamma", "gammainc", "gammaincc",
  "gammaln", "gammasgn", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr", "log_softmax",
  "loggamma", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "poch", "polygamma",
  "rel_entr", "softmax", "xlog1py", "xlogy", "zeta",
]

_where = ufuncs.where


def _inexact(fun_name, *args):
  # Arrays, never NumPy arrays: the functions use operators, which must be revax's (their
  # errors and dtype rules are JAX's; NumPy's raise ValueError for shapes that do not broadcast)
  out = [as_array(a) for a in promote_args_inexact(fun_name, *args)]
  return out[0] if len(out) == 1 else out


def _finfo(x):
  return dtypes.finfo(aval_of(x).dtype)


# --- gamma family --------------------------------------------------------------------------------
def gammaln(x):
  """log|Gamma(x)| (as jax.scipy.special.gammaln); inf at the poles 0, -1, -2, ...

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  return lax.lgamma(_inexact("gammaln", x))


def gammasgn(x):
  """The sign of Gamma(x): 1 for x >= 0 (+0 included), -1 at -0, alternating below 0, NaN at
  the negative integers, -inf and NaN.

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype holding 1, -1 or NaN.
  """
  x = lax.stop_gradient(_inexact("gammasgn", x))  # piecewise constant
  floor_x = ufuncs.floor(x)
  odd = ufuncs.fmod(floor_x, 2.0) != 0.0
  negative = _where(x == 0.0, ufuncs.signbit(x), odd & (x < 0.0))
  sign = _where(negative, -1.0, 1.0).astype(aval_of(x).dtype)
  undefined = ((x < 0.0) & (floor_x == x)) | ufuncs.isnan(x) | (x == -np.inf)
  return _where(undefined, np.nan, sign).astype(aval_of(x).dtype)


def gamma(x):
  """The gamma function Gamma(x) = gammasgn(x) * exp(gammaln(x)).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  x = _inexact("gamma", x)
  return gammasgn(x) * ufuncs.exp(lax.lgamma(x))


def loggamma(x):
  """log(Gamma(x)) for real x: gammaln where Gamma(x) > 0 is defined on x > 0, NaN at x <= 0.

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  x = _inexact("loggamma", x)
  return _where(x > 0.0, lax.lgamma(x), np.nan).astype(aval_of(x).dtype)


def digamma(x):
  """The digamma function psi(x) = d/dx log Gamma(x); NaN at the poles.

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  return lax.digamma(_inexact("digamma", x))


def polygamma(n, x):
  """The polygamma function psi^(n)(x), the n-th derivative of digamma.

  Args:
    n: non-negative integer orders (of an integer dtype, as JAX requires).
    x: real-valued array; n and x broadcast.

  Returns:
    An array of the promoted inexact dtype.
  """
  check_arraylike("polygamma", n, x)
  n_dtype = aval_of(n).dtype if not isinstance(n, int) else dtypes.int32
  if not dtypes.is_integer(n_dtype):
    raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype {n_dtype}.")
  n, x = _inexact("polygamma", n, x)
  return lax_special.polygamma(n, x)


def betaln(a, b):
  """log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b), as jax computes it (a series
  for the ratio where max(a, b) >= 8: see special_betaln).

  Args:
    a, b: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  a, b = _inexact("betaln", a, b)
  return special_betaln.betaln(a, b)


def beta(a, b):
  """The beta function B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b).

  Args:
    a, b: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  a, b = _inexact("beta", a, b)
  sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
  return sign * ufuncs.exp(betaln(a, b))


def betainc(a, b, x):
  """The regularized incomplete beta function I_x(a, b).

  Args:
    a, b: positive shape parameters.
    x: points in [0, 1]; all three broadcast.

  Returns:
    An array of the promoted inexact dtype (differentiable in x only, as in JAX).
  """
  a, b, x = _inexact("betainc", a, b, x)
  return lax_special.betainc(a, b, x)


def gammainc(a, x):
  """The regularized lower incomplete gamma function P(a, x).

  Args:
    a: positive shape parameters.
    x: non-negative points; a and x broadcast.

  Returns:
    An array of the promoted inexact dtype (differentiable in a and x).
  """
  a, x = _inexact("gammainc", a, x)
  return lax_special.igamma(a, x)


def gammaincc(a, x):
  """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).

  Args:
    a: positive shape parameters.
    x: non-negative points; a and x broadcast.

  Returns:
    An array of the promoted inexact dtype (differentiable in a and x).
  """
  a, x = _inexact("gammaincc", a, x)
  return lax_special.igammac(a, x)


def multigammaln(a, d):
  """The log of the multivariate gamma function of dimension d:
  d (d - 1) / 4 log(pi) + sum_{j<d} gammaln(a - j / 2).

  Args:
    a: real-valued array.
    d: the dimension, a concrete positive integer.

  Returns:
    An array of a's (inexact) dtype.
  """
  d = _concrete_int(d, "multigammaln", "d")
  a = _inexact("multigammaln", a)
  total = d * (d - 1) / 4 * math.log(math.pi)
  out = creation.zeros_like(a) + total
  for j in range(d):
    out = out + lax.lgamma(a - j / 2)
  return out


def _concrete_int(v, fun_name, arg_name):
  if isinstance(v, Tracer):
    raise ConcretizationTypeError(
        f"{fun_name} requires a concrete value for argument {arg_name!r}, got a traced value; "
        f"pass a Python int or mark it static in jit.")
  try:
    return operator.index(v) if not isinstance(v, (float, np.floating)) else int(v)
  except TypeError:
    raise TypeError(f"{fun_name} argument {arg_name!r} must be an integer, got {v!r}") from None


def factorial(n, exact: bool = False):
  """n! = Gamma(n + 1) for n >= 0 and 0 for n < 0 (real n allowed, as in JAX).

  Args:
    n: real-valued array.
    exact: must be False (JAX computes no exact factorials).

  Returns:
    An array of n's (inexact) dtype.
  """
  if exact:
    raise NotImplementedError("factorial with exact=True")
  n = _inexact("factorial", n)
  return _where(n < 0.0, 0.0, ufuncs.exp(lax.lgamma(n + 1.0))).astype(aval_of(n).dtype)


def comb(N, k, *, repetition: bool = False):
  """The number of combinations of N things taken k at a time, Gamma(N+1) / (Gamma(k+1)
  Gamma(N-k+1)) (0 outside 0 <= k <= N); with `repetition`, comb(N + k - 1, k).

  Args:
    N, k: real-valued arrays (broadcast).
    repetition: count combinations with repetition.

  Returns:
    An array of the promoted inexact dtype.
  """
  N, k = _inexact("comb", N, k)
  if repetition:
    result = comb(N + k - 1.0, k)
    return _where((k == 0.0) & (N >= 0.0), 1.0, result).astype(aval_of(result).dtype)
  # as jax's: the gamma functions run on (0, 0) outside the domain, so comb(inf, inf) is 0
  cond = (k <= N) & (N >= 0.0) & (k >= 0.0)
  safe_N = _where(cond, N, 0.0).astype(aval_of(N).dtype)
  safe_k = _where(cond, k, 0.0).astype(aval_of(k).dtype)
  result = ufuncs.exp(gammaln(safe_N + 1.0) - gammaln(safe_k + 1.0)
                      - gammaln(safe_N + 1.0 - safe_k))
  return _where(cond, result, 0.0).astype(aval_of(result).dtype)


def poch(z, m):
  """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z); 1 where m = 0.

  Args:
    z, m: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  z, m = _inexact("poch", z, m)
  value = gamma(z + m) / gamma(z)  # as jax's: a ratio of gammas (inf / inf is NaN)
  return _where(m == 0.0, 1.0, value).astype(aval_of(value).dtype)


def zeta(x, q=None):
  """The Hurwitz zeta function zeta(x, q) = sum_k (q + k)^-x.

  Args:
    x: exponents.
    q: offsets; required (JAX implements no Riemann zeta).

  Returns:
    An array of the promoted inexact dtype (differentiable in q).
  """
  check_arraylike("zeta", x)
  if q is None:
    raise NotImplementedError("Riemann zeta function not implemented; pass q != None to compute "
                              "the Hurwitz Zeta function.")
  x, q = _inexact("zeta", x, q)
  return lax_special.zeta(x, q)


def bernoulli(n: int):
  """The Bernoulli numbers B_0 ... B_n (B_1 = -1/2), as a float array of length n + 1.

  Args:
    n: a concrete non-negative integer.

  Returns:
    A float array of shape (n + 1,).
  """
  n = _concrete_int(n, "bernoulli", "n")
  if n < 0:
    raise ValueError(f"n must be a non-negative integer, got {n}")
  numbers = [fractions.Fraction(1)]
  for m in range(1, n + 1):  # sum_{k<=m} C(m+1, k) B_k = 0, in exact rationals
    numbers.append(-sum(math.comb(m + 1, k) * numbers[k] for k in range(m)) / (m + 1))
  return creation.asarray(np.asarray([float(b) for b in numbers], dtypes.default_float_dtype()))


# --- error functions and the normal distribution -------------------------------------------------
def erf(x):
  """The error function.

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  return lax.erf(_inexact("erf", x))


def erfc(x):
  """The complementary error function 1 - erf(x).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  return lax.erfc(_inexact("erfc", x))


def erfinv(x):
  """The inverse error function (+-inf at +-1, NaN outside [-1, 1]).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  return lax.erf_inv(_inexact("erfinv", x))


_ERFCX_SWITCH = 2.0
_ERFCX_CF_TERMS = 60


def erfcx(x):
  """The scaled complementary error function exp(x^2) erfc(x).

  Below x = 2 it is computed directly; above, by Laplace's continued fraction
  erfcx(x) = 1 / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))), so it stays finite
  where exp(x^2) overflows.

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  x = _inexact("erfcx", x)
  large = x > _ERFCX_SWITCH
  xl = _where(large, x, _ERFCX_SWITCH * 2)
  tail = creation.zeros_like(xl)
  for k in range(_ERFCX_CF_TERMS, 0, -1):
    tail = (k / 2) / (xl + tail)
  cf = (1 / math.sqrt(math.pi)) / (xl + tail)
  xs = _where(large, 0.0, x).astype(aval_of(x).dtype)
  direct = ufuncs.exp(xs * xs) * lax.erfc(xs)
  out = _where(large, cf, direct)
  return _where(x == np.inf, 0.0, out).astype(aval_of(x).dtype)


def ndtr(x):
  """The standard normal CDF, erfc(-x / sqrt(2)) / 2.

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  x = _inexact("ndtr", x)
  return 0.5 * lax.erfc(x * (-1 / math.sqrt(2)))


def _log_ndtr_bounds(dtype):
  return (-20.0, 8.0) if dtype == dtypes.float64 else (-10.0, 5.0)


def log_ndtr(x, series_order: int = 3):
  """log of the standard normal CDF, accurate in both tails: log(ndtr(x)) in the middle,
  log1p(-ndtr(-x)) in the upper tail, the asymptotic series
  -x^2/2 - log(-x) - log(2 pi)/2 + log(1 + sum_n (-1)^n (2n-1)!! / x^(2n)) in the lower one.

  Args:
    x: real-valued array.
    series_order: terms of the lower-tail series (0 to 30).

  Returns:
    An array of x's (inexact) dtype.
  """
  if not isinstance(series_order, int) or isinstance(series_order, bool):
    raise TypeError("series_order must be a Python int.")
  if series_order < 0:
    raise ValueError("series_order must be non-negative.")
  if series_order > 30:
    raise ValueError("series_order must be <= 30.")
  x = _inexact("log_ndtr", x)
  dtype = aval_of(x).dtype
  lower, upper = _log_ndtr_bounds(dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16)
                                  else dtype)
  mid = _where((x > lower) & (x <= upper), x, 0.0).astype(dtype)
  middle = ufuncs.log(ndtr(mid))
  hi = _where(x > upper, x, upper).astype(dtype)
  upper_tail = ufuncs.log1p(-ndtr(-hi))
  lo = _where(x <= lower, x, lower).astype(dtype)
  x2 = lo * lo
  series = creation.ones_like(lo)
  term, even = creation.ones_like(lo), 1.0
  for n in range(1, series_order + 1):
    even *= 2 * n - 1
    term = term / x2
    series = series + (-1) ** n * even * term
  lower_tail = -0.5 * x2 - ufuncs.log(-lo) - 0.5 * math.log(2 * math.pi) + ufuncs.log(series)
  out = _where(x > upper, upper_tail, _where(x > lower, middle, lower_tail))
  return _where(ufuncs.isnan(x), x, out).astype(dtype)


_NDTRI_NEWTON_STEPS = 3


def ndtri(p):
  """The inverse of the standard normal CDF (-inf at 0, inf at 1, NaN outside [0, 1]).

  Works on q = min(p, 1 - p) (1 - p is exact above 1/2) and restores the sign: a first guess
  sqrt(2) erf_inv(2q - 1), or in the far tail the asymptotic -sqrt(2 log(1/q) - log(4 pi
  log(1/q))), then Newton steps on log_ndtr(x) = log q, which keep full relative accuracy in the
  tail.

  Args:
    p: probabilities.

  Returns:
    An array of p's (inexact) dtype.
  """
  p = _inexact("ndtri", p)
  dtype = aval_of(p).dtype
  work = dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype
  pw = p.astype(work)
  upper = pw > 0.5
  q = _where(upper, 1.0 - pw, pw).astype(work)
  inside = (q > 0.0) & (q <= 0.5)
  q = _where(inside, q, 0.25).astype(work)
  log_q = ufuncs.log(q)
  central = math.sqrt(2) * lax.erf_inv(2.0 * q - 1.0)
  t = -2.0 * log_q
  tail = -ufuncs.sqrt(t - ufuncs.log(2 * math.pi * t))
  x = _where(q < 1e-4, tail, central).astype(work)
  for _ in range(_NDTRI_NEWTON_STEPS):
    log_cdf = log_ndtr(x)
    log_pdf = -0.5 * x * x - 0.5 * math.log(2 * math.pi)
    x = x - (log_cdf - log_q) * ufuncs.exp(log_cdf - log_pdf)
  x = _where(q == 0.5, 0.0, x).astype(work)
  x = _where(upper, -x, x)
  edge = _where(pw == 0.0, -np.inf, _where(pw == 1.0, np.inf, np.nan)).astype(work)
  return _where((pw > 0.0) & (pw < 1.0), x, edge).astype(dtype)


# --- logistic function ---------------------------------------------------------------------------
def expit(x):
  """The logistic sigmoid 1 / (1 + exp(-x)).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  return lax.logistic(_inexact("expit", x))


@custom_jvp
def _logit(x):
  return ufuncs.log(x / (1.0 - x))


@_logit.defjvp
def _logit_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return _logit(x), t / (x * (1.0 - x))


def logit(x):
  """The logit log(x / (1 - x)), the inverse of expit (NaN outside [0, 1]).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  return _logit(_inexact("logit", x))


# --- x log y and the entropies -------------------------------------------------------------------
@custom_jvp
def _xlogy(x, y):
  keep = (x != 0.0) | ufuncs.isnan(y)
  return _where(keep, x * ufuncs.log(y), 0.0).astype(aval_of(x).dtype)


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
  (x, y), (tx, ty) = primals, tangents
  out = _xlogy(x, y)
  return out, (tx * ufuncs.log(y) + ty * x / y).astype(aval_of(out).dtype)


def xlogy(x, y):
  """x * log(y), defined as 0 where x = 0 (unless y is NaN).

  Args:
    x, y: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, y = _inexact("xlogy", x, y)
  return _xlogy(x, y)


@custom_jvp
def _xlog1py(x, y):
  keep = (x != 0.0) | ufuncs.isnan(y)
  return _where(keep, x * ufuncs.log1p(y), 0.0).astype(aval_of(x).dtype)


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
  (x, y), (tx, ty) = primals, tangents
  out = _xlog1py(x, y)
  return out, (tx * ufuncs.log1p(y) + ty * x / (1.0 + y)).astype(aval_of(out).dtype)


def xlog1py(x, y):
  """x * log(1 + y), defined as 0 where x = 0 (unless y is NaN).

  Args:
    x, y: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, y = _inexact("xlog1py", x, y)
  return _xlog1py(x, y)


@custom_jvp
def _xlogx(x):
  return _where(x == 0.0, 0.0, x * ufuncs.log(x)).astype(aval_of(x).dtype)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return _xlogx(x), t * (ufuncs.log(x) + 1.0)


def entr(x):
  """The elementwise entropy -x log x (0 at 0, -inf for x < 0).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  x = _inexact("entr", x)
  return _where(x < 0.0, -np.inf, -_xlogx(x)).astype(aval_of(x).dtype)


def rel_entr(p, q):
  """The elementwise relative entropy p log(p / q): 0 where p = 0 <= q, inf where p or q is
  negative or q = 0 < p.

  Args:
    p, q: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  p, q = _inexact("rel_entr", p, q)
  both_positive = (p > 0.0) & (q > 0.0)
  safe_p = _where(both_positive, p, 1.0).astype(aval_of(p).dtype)
  safe_q = _where(both_positive, q, 1.0).astype(aval_of(q).dtype)
  # as JAX: p log p - p log q (so p = inf gives inf - inf = NaN, and its rounding)
  value = xlogy(safe_p, safe_p) - xlogy(safe_p, safe_q)
  other = _where((p == 0.0) & (q >= 0.0), 0.0, np.inf)
  return _where(both_positive, value, other).astype(aval_of(value).dtype)


def kl_div(p, q):
  """The elementwise Kullback-Leibler divergence p log(p / q) - p + q: q where p = 0 <= q, inf
  where p or q is negative or q = 0 < p.

  Args:
    p, q: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  p, q = _inexact("kl_div", p, q)
  # as JAX: rel_entr(p, q) - p + q, so NaN and infinite arguments give NaN (inf - inf), not inf
  return rel_entr(p, q) - p + q


# --- Box-Cox transforms --------------------------------------------------------------------------
def boxcox(x, lmbda):
  """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) where lmbda = 0.

  Args:
    x: positive real-valued array.
    lmbda: the transform parameter (broadcast with x).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, lmbda = _inexact("boxcox", x, lmbda)
  log_x = ufuncs.log(x)
  safe = _where(lmbda == 0.0, 1.0, lmbda).astype(aval_of(lmbda).dtype)
  return _where(lmbda == 0.0, log_x, ufuncs.expm1(safe * log_x) / safe)


def boxcox1p(x, lmbda):
  """The Box-Cox transform of 1 + x: ((1 + x)^lmbda - 1) / lmbda, log1p(x) where lmbda = 0.

  Args:
    x: real-valued array (> -1).
    lmbda: the transform parameter (broadcast with x).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, lmbda = _inexact("boxcox1p", x, lmbda)
  log_x = ufuncs.log1p(x)
  safe = _where(lmbda == 0.0, 1.0, lmbda).astype(aval_of(lmbda).dtype)
  return _where(lmbda == 0.0, log_x, ufuncs.expm1(safe * log_x) / safe)


# --- modified Bessel functions -------------------------------------------------------------------
def i0e(x):
  """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I_0(x).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  return lax_special.bessel_i0e(_inexact("i0e", x))


def i0(x):
  """The modified Bessel function of order 0, I_0(x).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  x = _inexact("i0", x)
  return ufuncs.exp(ufuncs.abs(x)) * lax_special.bessel_i0e(x)


def i1e(x):
  """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I_1(x).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  return lax_special.bessel_i1e(_inexact("i1e", x))


def i1(x):
  """The modified Bessel function of order 1, I_1(x).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  x = _inexact("i1", x)
  return ufuncs.exp(ufuncs.abs(x)) * lax_special.bessel_i1e(x)


# --- softmax family ------------------------------------------------------------------------------
logsumexp = nn_functions.logsumexp


def softmax(x, /, *, axis=None):
  """exp(x) / sum(exp(x)) over `axis` (default: all axes, as scipy.special.softmax).

  Args:
    x: real-valued array.
    axis: None, an int or a tuple of ints.

  Returns:
    An array of x's shape.
  """
  return nn_functions.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
  """log(softmax(x)) over `axis` (default: all axes), computed stably.

  Args:
    x: real-valued array.
    axis: None, an int or a tuple of ints.

  Returns:
    An array of x's shape.
  """
  return nn_functions.log_softmax(x, axis=axis)
