"""The exponential integrals E_n (expn, exp1) and Ei (expi) for revax.scipy.special, computed
as jax's (Cephes' algorithms, as jax ports them), so special values and the cases jax's branch
choice decides are jax's:

- expn(n, x) takes, the last matching case winning: NaN for n < 0 or x < 0; inf at x = 0 for
  n < 2; 1 / n1 at x = 0 for n >= 2 (n1 = n, or 2 where n = 1: jax's value, not 1 / (n - 1));
  e^-x / x for n = 0 (so -inf at x = -0); the asymptotic expansion for n >= 5000; the continued
  fraction for x > 1 (NaN at x = inf); the power series otherwise. The loops run per element
  until the relative change falls below the dtype's epsilon, as a batched jax while_loop does.
- exp1(x) = expn(1, x).
- expi(x) = -exp1(-x) for x < 0; on (0, 64] one of seven rational approximations on the
  intervals (0, 2], (2, 4], ... (32, 64]; elsewhere (x > 64, 0, NaN) the last one (NaN at 0 and
  inf, as jax's).
The derivatives are jax's: d expn(n, x)/dx = -expn(n - 1, x), d expi/dx = e^x / x.
"""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.custom_derivatives import custom_jvp
from revax._src.numpy import creation, polynomial, reductions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = ["exp1", "expi", "expn"]

_EXPINT1_A = (-5.350447357812543, 218.50491688166133, -4176.572384826693, 55411.76756393557,
    -331338.13311781443, 1592627.1633849454)
_EXPINT1_B = (1.0, -52.505479591128626, 1259.6161867867906, -17565.495819735348,
    149306.2117002726, -729494.9239640528, 1592627.1633849454)
_EXPINT2_A = (0.019818085032596897, -1.2716456259849176, -2.0881603356812284, 2.7555445091879367,
    -0.44095070487016, 0.046656238059358916, -0.0015450426796734852, 7.059980605299618e-05)
_EXPINT2_B = (1.0, 1.4764986709149215, 0.5629177174822436, 0.16990178978793072,
    0.02291647179034212, 0.0044501504397287525, 0.00017274396122065214, 3.953167195549672e-05)
_EXPINT3_A = (-1.3732153758712087, -0.7084559133740839, 1.580806855547941, -0.2601500427425623,
    0.029946746941137137, -0.001038086040188744, 4.371064420753005e-05, 2.141783679522603e-06)
_EXPINT3_B = (1.0, 0.8585231423622028, 0.4483285822873995, 0.07687932158124476,
    0.024498682410218877, 0.0008832165941927797, 0.00045909522995113536, -4.729848351866523e-06,
    2.66519553739071e-06)
_EXPINT4_A = (-2.1069346016919166, 1.7327338696646881, -0.2423619178935842, 0.02322724180937566,
    0.00023728804404931798, -8.343219561192553e-05, 1.3634087956052505e-05,
    -3.655412321999254e-07, 1.4649417339759612e-08, 6.17640786371036e-10)
_EXPINT4_B = (1.0, -0.2298062239901678, 0.11050770414740378, -0.015665429666307924,
    0.002761106850817353, -0.00020891480122840484, 1.7085289388076754e-05,
    -4.4593117963566865e-07, 1.3946349303538475e-08, 6.150865933977338e-10)
_EXPINT5_A = (-0.24581193676740204, -0.14833822533220778, 0.07248291795735552,
    -0.013483156873809405, 0.001342775069788637, -7.942465637159712e-05, 2.644179518984236e-06,
    -4.239473659313765e-08)
_EXPINT5_B = (1.0, -0.10442259084438711, -0.26764531281014026, 0.09695000254621984,
    -0.01601745692712991, 0.001496414899205908, -8.462452563778485e-05, 2.7289384034767266e-06,
    -4.239462431819542e-08)
_EXPINT6_A = (0.12125611181054567, -0.5823133179043894, 0.2348887314557017, -0.030400343181132484,
    0.0015100821468651906, -2.5231370954995714e-05)
_EXPINT6_B = (1.0, -1.002252150365854, 0.2928709694872224, -0.03337004338674008,
    0.0015605448811273888, -2.5231370936032347e-05)
_EXPINT7_A = (-0.7657847078286127, 0.6886192415566705, -0.2132598113545206, 0.033461075523841935,
    -0.003076541477344756, 0.00017471193164549074, -6.1037116822741705e-06, 1.218032765428652e-07,
    -1.0860761027932903e-09)
_EXPINT7_B = (1.0, -1.8888028686623086, 1.066691687211409, -0.27519159823063805,
    0.039308526882338234, -0.003414684558602365, 0.00018668443707035555, -6.345146083130515e-06,
    1.239754287483207e-07, -1.0860761027931265e-09)


def _where(cond, a, b, like):
  return ufuncs.where(cond, a, b).astype(aval_of(like).dtype)


def _eps(x):
  return float(dtypes.finfo(aval_of(x).dtype).eps)


def _masked_loop(active_fn, body, carry):
  """Runs `body` on the elements where `active_fn(carry)` holds until none does: a batched
  while_loop, each element stopping at its own condition."""
  def cond(c):
    return reductions.any(active_fn(c))

  def step(c):
    active = active_fn(c)
    new = body(c)
    return tuple(ufuncs.where(active, n, o).astype(aval_of(o).dtype)
                 for n, o in zip(new, c, strict=True))
  return lax.while_loop(cond, step, carry)


def _expn1(x, n, enabled):
  """The power series of E_n(x) (Cephes' expn for x <= 1)."""
  eps = _eps(x)
  psi0 = -np.euler_gamma - ufuncs.log(x)
  i0 = creation.ones_like(n)

  def psi_active(c):
    return enabled & (c[0] < n)
  _, psi = _masked_loop(psi_active, lambda c: (c[0] + 1.0, c[1] + 1.0 / c[0]), (i0, psi0))
  n1 = _where(n == 1.0, 2.0, n, n)
  z = -x
  xk = creation.zeros_like(x)
  yk = creation.ones_like(x)
  pk = 1.0 - n
  ans = _where(n == 1.0, 0.0, 1.0 / (1.0 - n1), x)
  t = creation.full_like(x, np.inf)

  def active(c):
    return enabled & (x > 0.0) & (c[4] > eps)

  def body(c):
    xk, yk, pk, ans, t = c
    xk = xk + 1.0
    yk = yk * (z / xk)
    pk = pk + 1.0
    ans = ans + _where(pk != 0.0, yk / pk, 0.0, ans)
    t = _where(ans != 0.0, ufuncs.abs(yk / ans), 1.0, t)
    return xk, yk, pk, ans, t
  _, _, _, ans, _ = _masked_loop(active, body, (xk, yk, pk, ans, t))
  return lax.pow(z, n - 1.0) * psi / ufuncs.exp(lax.lgamma(n)) - ans


_BIG = 1.4411518807585587e+17


def _expn2(x, n, enabled):
  """The continued fraction of E_n(x) (Cephes' expn for x > 1)."""
  eps = _eps(x)
  one = creation.ones_like(x)
  carry = (creation.ones_like(n), one, x, one, x + n, 1.0 / (x + n),
           creation.full_like(x, np.inf), creation.zeros_like(x))

  def active(c):
    return enabled & (x > 0.0) & (c[6] > eps)

  def body(c):
    k, pkm2, qkm2, pkm1, qkm1, ans, t, r = c
    k = k + 1.0
    odd = ufuncs.fmod(k, 2.0) == 1.0
    yk = _where(odd, 1.0, x, x)
    xk = _where(odd, n + (k - 1.0) / 2.0, k / 2.0, x)
    pk = pkm1 * yk + pkm2 * xk
    qk = qkm1 * yk + qkm2 * xk
    nz = qk != 0.0
    r = _where(nz, pk / qk, r, r)
    t = _where(nz, ufuncs.abs((ans - r) / r), 1.0, t)
    ans = _where(nz, r, ans, ans)
    pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
    is_big = ufuncs.abs(pk) > _BIG
    pkm2, pkm1, qkm2, qkm1 = (_where(is_big, v / _BIG, v, v) for v in (pkm2, pkm1, qkm2, qkm1))
    return k, pkm2, qkm2, pkm1, qkm1, ans, t, r
  ans = _masked_loop(active, body, carry)[5]
  return ans * ufuncs.exp(-x)


def _expn3(x, n):
  """The asymptotic expansion of E_n(x) for large n."""
  xk = x + n
  yk = 1.0 / (xk * xk)
  t = n
  ans = yk * t * (6.0 * x * x - 8.0 * t * x + t * t)
  ans = yk * (ans + t * (t - 2.0 * x))
  ans = yk * (ans + t)
  return (ans + 1.0) * ufuncs.exp(-x) / xk


def _expn_value(n, x):
  conds = [(n < 0.0) | (x < 0.0), (x == 0.0) & (n < 2.0), (x == 0.0) & (n >= 2.0),
           (n == 0.0) & (x >= 0.0), n >= 5000.0, x > 1.0]
  chosen = [conds[-1]]
  for c in reversed(conds[:-1]):
    chosen.insert(0, c & ~_any_of(chosen))
  default = ~_any_of(conds)
  n1 = _where(n == 1.0, n + n, n, n)
  out = _where(default, _expn1(x, n, default), np.nan, x)
  out = _where(chosen[0], np.nan, out, x)
  out = _where(chosen[1], np.inf, out, x)
  out = _where(chosen[2], 1.0 / n1, out, x)
  out = _where(chosen[3], ufuncs.exp(-x) / x, out, x)
  out = _where(chosen[4], _expn3(x, n), out, x)
  return _where(chosen[5], _expn2(x, n, chosen[5]), out, x)


def _any_of(conds):
  out = conds[0]
  for c in conds[1:]:
    out = out | c
  return out


@custom_jvp
def _expn(n, x):
  return _expn_value(n, x)


@_expn.defjvp
def _expn_jvp(primals, tangents):
  n, x = primals
  _, x_dot = tangents
  return _expn(n, x), -x_dot * _expn(n - 1.0, x)


def expn(n, x):
  """The generalized exponential integral E_n(x) = int_1^inf e^(-x t) / t^n dt.

  Args:
    n: non-negative integer orders (an integer dtype, as JAX requires).
    x: non-negative points; n and x broadcast.

  Returns:
    A float array (NaN for x < 0 or n < 0).

  Example:
    >>> revax.scipy.special.expn(jnp.array([1, 2]), jnp.array([0.5, 2.0]))
    Array([0.5597736 , 0.03753426], dtype=float32)
  """
  check_arraylike("expn", n, x)
  n_dtype = aval_of(n).dtype if not isinstance(n, int) else dtypes.int32
  if not dtypes.is_integer(n_dtype):
    raise ValueError(f"Argument `n` to expn must be of integer type. Got dtype {n_dtype}.")
  n, x = promote_args_inexact("expn", n, x)
  n, x = shape_ops.broadcast_arrays(n, x)
  return _expn(n, x)


def exp1(x):
  """The exponential integral E_1(x) = int_x^inf e^-t / t dt (NaN for x < 0).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  check_arraylike("exp1", x)
  (x,) = promote_args_inexact("exp1", x)
  return _expn(creation.ones_like(x), x)


def _eval_expint_k(a, b, x):
  w = 1.0 / x
  f = polynomial.polyval(np.asarray(a, aval_of(x).dtype), w) / polynomial.polyval(
      np.asarray(b, aval_of(x).dtype), w)
  f = w * f + 1.0
  return ufuncs.exp(x) * w * f


def _expint1(x):
  dtype = aval_of(x).dtype
  f = polynomial.polyval(np.asarray(_EXPINT1_A, dtype), x) / polynomial.polyval(
      np.asarray(_EXPINT1_B, dtype), x)
  return x * f + np.euler_gamma + ufuncs.log(x)


_EXPINT_K = ((_EXPINT2_A, _EXPINT2_B), (_EXPINT3_A, _EXPINT3_B), (_EXPINT4_A, _EXPINT4_B),
             (_EXPINT5_A, _EXPINT5_B), (_EXPINT6_A, _EXPINT6_B), (_EXPINT7_A, _EXPINT7_B))


def _expi_pos(x):
  out = _eval_expint_k(*_EXPINT_K[-1], x)  # the default: x > 64, x <= 0, NaN
  out = _where((0.0 < x) & (x <= 2.0), _expint1(x), out, x)
  for i, (a, b) in zip(range(1, 6), _EXPINT_K[:5], strict=True):
    out = _where((2.0 ** i < x) & (x <= 2.0 ** (i + 1)), _eval_expint_k(a, b, x), out, x)
  return out


@custom_jvp
def _expi(x):
  neg = -_expn(creation.ones_like(x), -x)
  return _where(x < 0.0, neg, _expi_pos(x), x)


@_expi.defjvp
def _expi_jvp(primals, tangents):
  (x,), (x_dot,) = primals, tangents
  return _expi(x), ufuncs.exp(x) / x * x_dot


def expi(x):
  """The exponential integral Ei(x) = -PV int_-x^inf e^-t / t dt.

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype (NaN at 0 and inf, as jax's).
  """
  check_arraylike("expi", x)
  (x,) = promote_args_inexact("expi", x)
  return _expi(x)
