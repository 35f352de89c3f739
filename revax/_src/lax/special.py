"""Special-function primitives: incomplete gamma and beta functions, polygamma, Hurwitz zeta and
the exponentially scaled modified Bessel functions of order 0 and 1 (as jax.lax has them).

Each primitive is one block. Where XLA expands a CHLO op (chlo.polygamma, chlo.zeta,
chlo.bessel_i1e) the lowering emits it; otherwise (igamma, igammac, igamma_grad_a,
regularized_incomplete_beta, bessel_i0e) the lowering is an algorithm written in revax ops below.
Eager evaluation runs an algorithm of this file op by op on the host (each op has a NumPy
implementation, loops are `while_loop`s evaluated in Python), so eager calls never compile.

The algorithms:
- P(a, x) (igamma) sums its power series where x < a + 1 and takes 1 - Q(a, x) otherwise;
  Q(a, x) (igammac) is evaluated by Lentz's method on its continued fraction where x >= a + 1.
  Both loops run per element until the relative change falls below the dtype's epsilon.
- dP/da (igamma_grad_a) is the forward-mode derivative of those loops in `a`.
- I_x(a, b) (regularized_incomplete_beta) is jax's: the continued fraction of the incomplete
  beta function (Lentz-Thompson-Barnett, every element iterating while any is unconverged, at
  most 200 steps in float32), on I_x(a, b) or 1 - I_{1-x}(b, a), whichever converges fast.
- zeta(s, q) is the Euler-Maclaurin sum: nine terms, the integral and twelve Bernoulli
  corrections; polygamma(m, x) = (-1)^(m+1) m! zeta(m + 1, x) for m >= 1, digamma for m = 0.
- i0e and i1e sum the power series of I_0, I_1 for |x| <= 20 and Hankel's asymptotic series
  above, scaled by exp(-|x|).
16-bit floats are computed in float32 and rounded back, as XLA does.
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import reductions, shapes, unary
from revax._src.lax.binary import add, div, mul, pow, rem, sub
from revax._src.lax.comparison import eq, ge, gt, le, lt, ne, select_n
from revax._src.lax.control_flow.loops import while_loop
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.standard import (broadcast_shapes, broadcast_tangent, defbroadcasting,
                                     hlo_lowering, naryop_abstract_eval, unop_abstract_eval)
from revax._src.lax.binary import bitwise_and, bitwise_or
from revax._src.lax.unary import (abs, exp, floor, lgamma, log, log1p, neg, sign, sqrt)

__all__ = [
  "igamma", "igammac", "igamma_grad_a", "betainc", "polygamma", "zeta", "bessel_i0e",
  "bessel_i1e",
  "igamma_p", "igammac_p", "igamma_grad_a_p", "regularized_incomplete_beta_p", "polygamma_p",
  "zeta_p", "bessel_i0e_p", "bessel_i1e_p",
]

_LOW_PRECISION = (dtypes.float16, dtypes.bfloat16)
_MAX_ITERATIONS = 2000


# --- shared helpers ------------------------------------------------------------------------------
def _full(value, like):
  """`value` broadcast to the shape and dtype of `like`."""
  aval = get_aval(like)
  return shapes.broadcast_in_dim(np.asarray(value, aval.dtype), aval.shape, ())


def _any(pred):
  return reductions.reduce_or(pred, tuple(range(get_aval(pred).ndim)))


def _not(pred):
  return unary.bitwise_not(pred)


def _isnan(x):
  return ne(x, x)


def _upcast_and_broadcast(fn):
  """`fn` on operands broadcast to one shape and, for 16-bit floats, computed in float32."""
  def wrapped(*args):
    dtype = get_aval(args[0]).dtype
    shape = broadcast_shapes(*(get_aval(a).shape for a in args))
    args = [a if get_aval(a).shape == shape else shapes.broadcast_in_dim(
        a, shape, tuple(range(len(shape) - get_aval(a).ndim, len(shape)))) for a in args]
    if dtype in _LOW_PRECISION:
      out = fn(*[convert_element_type(a, dtypes.float32) for a in args])
      return convert_element_type(out, dtype)
    return fn(*args)
  wrapped.__name__ = fn.__name__
  return wrapped


def _eager(fn, prim):
  """An eager implementation running the revax algorithm `fn` op by op on the host."""
  def impl(*args, **params):
    avals = [get_aval(x) for x in args]
    out_aval = prim.abstract_eval(*avals, **params)
    out = fn(*[dispatch.to_array(x) for x in args], **params)
    return dispatch.wrap_host(dispatch.host_value(out), out_aval)
  return impl


def _eps(x):
  return float(dtypes.finfo(get_aval(x).dtype).eps)


def _tiny(x):
  return float(dtypes.finfo(get_aval(x).dtype).tiny)


def _eager_and_lowering(prim, fn, hlo_op, compiled_eagerly=False):
  """Where XLA expands its own CHLO op, eager calls compile that one op too (the revax algorithm
  would disagree with it on poles and special values: eager and jit must agree); otherwise both
  run `fn`, eagerly op by op on the host and lowered inline under jit (or, `compiled_eagerly`,
  eager calls compile the lowered `fn` as jax's do: where the loop's values depend on XLA's
  fused arithmetic, op-by-op NumPy would disagree with jit)."""
  if hlo_op:
    mlir.register_lowering(prim, hlo_lowering(hlo_op))
  elif compiled_eagerly:
    mlir.register_lowering(prim, mlir.lower_fun(fn, multiple_results=False))
  else:
    dispatch.custom_impls[prim] = _eager(fn, prim)
    mlir.register_lowering(prim, mlir.lower_fun(fn, multiple_results=False))


def _binary_primitive(name, algorithm, hlo_op=None, compiled_eagerly=False):
  """A float elementwise primitive of broadcast operands evaluated by `algorithm`."""
  prim = Primitive(name)
  nargs = algorithm.__code__.co_argcount
  prim.def_abstract_eval(naryop_abstract_eval(name, ("float",) * nargs))
  fn = _upcast_and_broadcast(algorithm)
  _eager_and_lowering(prim, fn, hlo_op, compiled_eagerly)
  defbroadcasting(prim)
  return prim


def _jvp_broadcast(fn):
  """A `defjvp` contribution broadcast to the output's shape (its operand may be smaller)."""
  def rule(t, *primals, **params):
    shape = broadcast_shapes(*(get_aval(p).shape for p in primals))
    return broadcast_tangent(fn(t, *primals, **params), shape)
  return rule


# --- the incomplete gamma algorithms -------------------------------------------------------------
def _log_prefactor(a, x):
  """log(x^a e^-x / Gamma(a))."""
  return sub(sub(mul(a, log(x)), x), lgamma(a))


def _igamma_series(a, x, enabled):
  """P(a, x) by its power series e^-x x^a / Gamma(a + 1) * sum_n x^n / ((a + 1)...(a + n))."""
  eps = _eps(x)

  def cond(carry):
    return bitwise_and(_any(carry[0]), lt(carry[4], _MAX_ITERATIONS))

  def body(carry):
    running, r, term, total, it = carry
    r_new = add(r, 1.0)
    term_new = mul(term, div(x, r_new))
    total_new = add(total, term_new)
    sel = lambda new, old: select_n(running, old, new)
    still = bitwise_and(running, gt(term_new, mul(total_new, eps)))
    return still, sel(r_new, r), sel(term_new, term), sel(total_new, total), add(it, 1)

  one = _full(1.0, x)
  init = (enabled, a, one, one, np.asarray(0, np.int32))
  total = while_loop(cond, body, init)[3]
  return mul(exp(sub(_log_prefactor(a, x), log(a))), total)


def _igammac_continued_fraction(a, x, enabled):
  """Q(a, x) by Lentz's method on the continued fraction
  e^-x x^a / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...)))."""
  eps, tiny = _eps(x), _tiny(x)
  clip = lambda v: select_n(lt(abs(v), tiny), v, _full(tiny, v))

  def cond(carry):
    return bitwise_and(_any(carry[0]), lt(carry[5], _MAX_ITERATIONS))

  def body(carry):
    running, b, c, d, h, it = carry
    n = convert_element_type(add(it, 1), get_aval(x).dtype)
    an = mul(neg(n), sub(n, a))
    b_new = add(b, 2.0)
    d_new = div(1.0, clip(add(mul(an, d), b_new)))
    c_new = clip(add(b_new, div(an, c)))
    delta = mul(c_new, d_new)
    h_new = mul(h, delta)
    sel = lambda new, old: select_n(running, old, new)
    still = bitwise_and(running, gt(abs(sub(delta, 1.0)), eps))
    return still, sel(b_new, b), sel(c_new, c), sel(d_new, d), sel(h_new, h), add(it, 1)

  b = sub(add(x, 1.0), a)
  d = div(1.0, clip(b))
  init = (enabled, b, _full(1 / tiny, x), d, d, np.asarray(0, np.int32))
  h = while_loop(cond, body, init)[4]
  return mul(exp(_log_prefactor(a, x)), h)


def _igamma_domain(a, x):
  """Edge masks of P(a, x) and Q(a, x), and the operands made safe for the loops."""
  nan = bitwise_or(bitwise_or(_isnan(a), _isnan(x)),
                   bitwise_or(bitwise_or(lt(x, 0.0), lt(a, 0.0)),
                              bitwise_and(eq(a, 0.0), eq(x, 0.0))))
  # as JAX's algorithm: P(0, x) is NaN below x = 1, P(inf, x) = 0 there and NaN above
  nan = bitwise_or(nan, bitwise_and(eq(a, 0.0), lt(x, 1.0)))
  a_inf = eq(a, np.inf)
  nan = bitwise_or(nan, bitwise_and(a_inf, bitwise_and(ge(x, 1.0), ne(x, np.inf))))
  zero = bitwise_or(eq(x, 0.0), bitwise_and(a_inf, lt(x, 1.0)))
  inf, a_zero = eq(x, np.inf), eq(a, 0.0)
  done = bitwise_or(bitwise_or(nan, zero), bitwise_or(inf, a_zero))
  safe_a = select_n(done, a, _full(1.0, a))
  safe_x = select_n(done, x, _full(1.0, x))
  use_cf = bitwise_and(ge(safe_x, add(safe_a, 1.0)), _not(done))
  return use_cf, done, nan, zero, bitwise_or(inf, a_zero), safe_a, safe_x


def _igamma_lax(a, x):
  use_cf, done, nan, zero, one, sa, sx = _igamma_domain(a, x)
  series = _igamma_series(sa, sx, bitwise_and(_not(use_cf), _not(done)))
  cf = _igammac_continued_fraction(sa, sx, use_cf)
  out = select_n(use_cf, series, sub(1.0, cf))
  out = select_n(zero, out, _full(0.0, out))
  out = select_n(one, out, _full(1.0, out))
  return select_n(nan, out, _full(np.nan, out))


def _igammac_lax(a, x):
  use_cf, done, nan, zero, one, sa, sx = _igamma_domain(a, x)
  nan = bitwise_and(nan, _not(bitwise_and(eq(a, 0.0), gt(x, 0.0))))  # Q(0, x) = 0
  series = _igamma_series(sa, sx, bitwise_and(_not(use_cf), _not(done)))
  cf = _igammac_continued_fraction(sa, sx, use_cf)
  out = select_n(use_cf, sub(1.0, series), cf)
  out = select_n(zero, out, _full(1.0, out))
  out = select_n(one, out, _full(0.0, out))
  return select_n(nan, out, _full(np.nan, out))


def _igamma_grad_a_lax(a, x):
  """dP(a, x)/da: the loops of `_igamma_lax` differentiated in forward mode along a."""
  (_,), (t,) = ad.jvp_flat(lambda a: [_igamma_lax(a, x)], [a], [_full(1.0, a)])
  out = ad.instantiate_zeros(t)
  nan = bitwise_or(bitwise_or(_isnan(a), _isnan(x)), bitwise_or(lt(x, 0.0), le(a, 0.0)))
  nan = bitwise_or(nan, bitwise_or(eq(x, np.inf), bitwise_and(eq(a, np.inf), ne(x, 0.0))))
  out = select_n(eq(x, 0.0), out, _full(0.0, out))
  return select_n(nan, out, _full(np.nan, out))


def _igamma_dx(a, x):
  """dP(a, x)/dx = x^(a-1) e^-x / Gamma(a)."""
  return exp(sub(sub(mul(sub(a, 1.0), log(x)), x), lgamma(a)))


# --- igamma --------------------------------------------------------------------------------------
def igamma(a, x):
  """Regularized lower incomplete gamma function P(a, x) (as jax.lax.igamma).

  Args:
    a: shape parameters (floating point, > 0).
    x: points (of a's dtype, >= 0); the shapes broadcast.

  Returns:
    P(a, x), NaN outside the domain.

  Example:
    >>> lax.igamma(np.float32(1.0), np.float32(1.0))  # 1 - e^-1
    Array(0.63212043, dtype=float32)
  """
  return igamma_p.bind(a, x)


igamma_p = _binary_primitive("igamma", _igamma_lax)
ad.defjvp(igamma_p, _jvp_broadcast(lambda t, a, x: mul(t, igamma_grad_a(a, x))),
          _jvp_broadcast(lambda t, a, x: mul(t, _igamma_dx(a, x))))
inv.not_invertible(igamma_p, "two operands map to one value")


# --- igammac -------------------------------------------------------------------------------------
def igammac(a, x):
  """Regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) (as jax.lax.igammac).

  Args:
    a: shape parameters (floating point, > 0).
    x: points (of a's dtype, >= 0); the shapes broadcast.

  Returns:
    Q(a, x), NaN outside the domain.

  Example:
    >>> lax.igammac(np.float32(1.0), np.float32(1.0))  # e^-1
    Array(0.36787957, dtype=float32)
  """
  return igammac_p.bind(a, x)


igammac_p = _binary_primitive("igammac", _igammac_lax)
ad.defjvp(igammac_p, _jvp_broadcast(lambda t, a, x: neg(mul(t, igamma_grad_a(a, x)))),
          _jvp_broadcast(lambda t, a, x: neg(mul(t, _igamma_dx(a, x)))))
inv.not_invertible(igammac_p, "two operands map to one value")


# --- igamma_grad_a -------------------------------------------------------------------------------
def igamma_grad_a(a, x):
  """The derivative of igamma(a, x) with respect to a (as jax.lax.igamma_grad_a).

  Args:
    a: shape parameters (floating point).
    x: points (of a's dtype); the shapes broadcast.

  Returns:
    dP(a, x)/da.

  Example:
    >>> lax.igamma_grad_a(np.float32(2.0), np.float32(1.0))
    Array(-0.27619603, dtype=float32)
  """
  return igamma_grad_a_p.bind(a, x)


igamma_grad_a_p = _binary_primitive("igamma_grad_a", _igamma_grad_a_lax)
ad.not_differentiable(igamma_grad_a_p, "JAX defines no derivative of igamma_grad_a")
inv.not_invertible(igamma_grad_a_p, "two operands map to one value")


# --- regularized_incomplete_beta -----------------------------------------------------------------
def _lentz(num_iterations, small, threshold, numerator, denominator, inputs):
  """The modified Lentz-Thompson-Barnett evaluation of a continued fraction, as jax's: every
  element iterates until none has |delta - 1| >= threshold (or num_iterations)."""
  def cond(carry):
    return bitwise_and(lt(carry[0], num_iterations), carry[1])

  def body(carry):
    it, _, c, d, h = carry
    num = numerator(it, *inputs)
    den = denominator(it, *inputs)
    c = add(den, div(num, c))
    c = select_n(lt(abs(c), small), c, _full(small, c))
    d = add(den, mul(num, d))
    d = select_n(lt(abs(d), small), d, _full(small, d))
    d = div(1.0, d)
    delta = mul(c, d)
    h = mul(h, delta)
    unconverged = _any(ge(abs(sub(delta, 1.0)), threshold))
    return add(it, 1), unconverged, c, d, h

  den0 = denominator(np.asarray(0, np.int32), *inputs)
  h = select_n(lt(abs(den0), small), den0, _full(small, den0))
  init = (np.asarray(1, np.int32), np.asarray(True), h, _full(0.0, h), h)
  return while_loop(cond, body, init)[4]


def _betainc_numerator(it, a, b, x):
  """The n-th partial numerator of I_x(a, b)'s continued fraction (n = it)."""
  aval = get_aval(x)
  bcast = lambda v: shapes.broadcast_in_dim(v, aval.shape, ())
  is_even = bcast(eq(rem(it, 2), 0))
  is_one = bcast(eq(it, 1))
  m_int = div(sub(it, 1), 2)
  m_is_zero = bcast(eq(m_int, 0))
  m = bcast(convert_element_type(m_int, aval.dtype))
  zero_numerator = div(mul(neg(add(a, b)), x), add(a, 1.0))
  even_numerator = select_n(m_is_zero, div(
      mul(mul(neg(add(a, m)), add(add(a, b), m)), x),
      mul(add(a, mul(2.0, m)), add(add(a, mul(2.0, m)), 1.0))), zero_numerator)
  odd_numerator = div(mul(mul(m, sub(b, m)), x),
                      mul(sub(add(a, mul(2.0, m)), 1.0), add(a, mul(2.0, m))))
  numerator = select_n(is_even, odd_numerator, even_numerator)
  return select_n(is_one, numerator, _full(1.0, x))


def _betainc_denominator(it, a, b, x):
  first = shapes.broadcast_in_dim(eq(it, 0), get_aval(x).shape, ())
  return select_n(first, _full(1.0, x), _full(0.0, x))


def _betainc_lax(a, b, x):
  """I_x(a, b) as jax's regularized_incomplete_beta: the continued fraction on I_x(a, b) or
  1 - I_{1-x}(b, a) (x < (a + 1) / (a + b + 2) converges rapidly), 200 iterations in float32
  (600 above), and jax's edge rules (a = 0 or b = inf: all mass at 0; b = 0 or a = inf: at 1)."""
  dtype = get_aval(x).dtype
  a_is_zero = bitwise_or(eq(a, 0.0), eq(b, np.inf))
  b_is_zero = bitwise_or(eq(b, 0.0), eq(a, np.inf))
  x_is_zero, x_is_one = eq(x, 0.0), eq(x, 1.0)
  is_nan = bitwise_or(bitwise_or(_isnan(a), _isnan(b)), _isnan(x))
  result_is_zero = bitwise_or(bitwise_and(b_is_zero, _not(x_is_one)),
                              bitwise_and(a_is_zero, x_is_zero))
  result_is_one = bitwise_or(bitwise_and(a_is_zero, _not(x_is_zero)),
                             bitwise_and(b_is_zero, x_is_one))
  result_is_nan = bitwise_or(bitwise_or(lt(a, 0.0), lt(b, 0.0)),
                             bitwise_or(lt(x, 0.0), gt(x, 1.0)))
  result_is_nan = bitwise_or(result_is_nan, bitwise_or(bitwise_and(a_is_zero, b_is_zero),
                                                       is_nan))
  rapid = lt(x, div(add(a, 1.0), add(add(a, b), 2.0)))
  a, b = select_n(rapid, b, a), select_n(rapid, a, b)
  x = select_n(rapid, sub(1.0, x), x)
  eps = float(dtypes.finfo(dtype).eps)
  cf = _lentz(200 if dtype == dtypes.float32 else 600, np.asarray(eps / 2, dtype),
              np.asarray(eps / 2, dtype), _betainc_numerator, _betainc_denominator, (a, b, x))
  very_small = float(dtypes.finfo(dtype).tiny) * 2
  lbeta_small_a = sub(lgamma(b), lgamma(add(a, b)))
  lbeta = add(lgamma(a), lbeta_small_a)
  factor = select_n(lt(a, very_small),
                    div(exp(sub(add(mul(log(x), a), mul(log1p(neg(x)), b)), lbeta)), a),
                    exp(sub(mul(log1p(neg(x)), b), lbeta_small_a)))
  result = mul(cf, factor)
  result = select_n(rapid, sub(1.0, result), result)
  result = select_n(result_is_zero, result, _full(0.0, result))
  result = select_n(result_is_one, result, _full(1.0, result))
  return select_n(result_is_nan, result, _full(np.nan, result))


def betainc(a, b, x):
  """Regularized incomplete beta function I_x(a, b) (as jax.lax.betainc).

  Args:
    a, b: positive shape parameters (floating point).
    x: points in [0, 1] (same dtype); the shapes broadcast.

  Returns:
    I_x(a, b), NaN outside the domain.

  Example:
    >>> lax.betainc(np.float32(1.0), np.float32(1.0), np.float32(0.3))  # I_x(1, 1) = x
    Array(0.29999998, dtype=float32)
  """
  return regularized_incomplete_beta_p.bind(a, b, x)


def _betainc_no_shape_grad(t, a, b, x):
  raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_dx(t, a, b, x):
  lbeta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
  return mul(t, exp(sub(add(mul(sub(b, 1.0), log1p(neg(x))), mul(sub(a, 1.0), log(x))), lbeta)))


# compiled eagerly too: its 200 batch-wide Lentz steps would cost a second op by op, and XLA's
# lgamma and fused arithmetic decide its last digits where the fraction cancels (1 - I)
regularized_incomplete_beta_p = _binary_primitive("regularized_incomplete_beta", _betainc_lax,
                                                  compiled_eagerly=True)
ad.defjvp(regularized_incomplete_beta_p, _betainc_no_shape_grad, _betainc_no_shape_grad,
          _jvp_broadcast(_betainc_dx))
inv.not_invertible(regularized_incomplete_beta_p, "three operands map to one value")


# --- zeta ----------------------------------------------------------------------------------------
# B_2k / (2k)! for k = 1..12: the Euler-Maclaurin corrections.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730)
_EM_COEFFS = tuple(b / math.factorial(2 * k) for k, b in enumerate(_BERNOULLI, start=1))
_EM_TERMS = 9


def _zeta_lax(s, q):
  """Hurwitz zeta: sum_{k<9} (q + k)^-s + w^(1-s)/(s-1) + w^-s/2
  + sum_j B_2j/(2j)! s(s+1)...(s+2j-2) w^(-s-2j+1), with w = q + 9."""
  pole = eq(s, 1.0)
  q_pole = bitwise_and(le(q, 0.0), eq(q, floor(q)))
  nan = bitwise_or(bitwise_and(lt(s, 1.0), _not(bitwise_and(eq(s, 0.0), q_pole))),
                   bitwise_and(lt(q, 0.0), _not(q_pole)))
  sq = select_n(q_pole, q, _full(1.0, q))
  ss = select_n(bitwise_or(pole, nan), s, _full(2.0, s))
  total = _full(0.0, q)
  for k in range(_EM_TERMS):
    total = add(total, pow(add(sq, float(k)), neg(ss)))
  w = add(sq, float(_EM_TERMS))
  w_pow = pow(w, neg(ss))
  total = add(total, add(div(mul(w_pow, w), sub(ss, 1.0)), mul(w_pow, 0.5)))
  factor = div(ss, w)  # s(s+1)...(s+2j-2) / w^(2j-1)
  inv_w2 = div(1.0, mul(w, w))
  for j, coeff in enumerate(_EM_COEFFS):
    total = add(total, mul(mul(w_pow, factor), coeff))
    factor = mul(mul(mul(factor, add(ss, float(2 * j + 1))), add(ss, float(2 * j + 2))), inv_w2)
  out = select_n(pole, total, _full(np.inf, total))
  out = select_n(nan, out, _full(np.nan, out))
  out = select_n(bitwise_and(q_pole, _not(nan)), out, _full(np.inf, out))
  undefined = bitwise_or(bitwise_or(_isnan(s), _isnan(q)), bitwise_and(q_pole, eq(s, np.inf)))
  out = select_n(undefined, out, _full(np.nan, out))
  return select_n(pole, out, _full(np.inf, out))


def zeta(x, q):
  """Hurwitz zeta function zeta(x, q) = sum_k (q + k)^-x (as jax.lax.zeta).

  Args:
    x: exponents (floating point, > 1).
    q: offsets (same dtype); the shapes broadcast.

  Returns:
    zeta(x, q); inf at x = 1 and at the poles q = 0, -1, ...; NaN for x < 1.

  Example:
    >>> lax.zeta(np.float32(2.0), np.float32(1.0))  # pi^2 / 6
    Array(1.644934, dtype=float32)
  """
  return zeta_p.bind(x, q)


zeta_p = _binary_primitive("zeta", _zeta_lax, "chlo.zeta")
ad.defjvp(zeta_p, None, _jvp_broadcast(lambda t, x, q: mul(t, neg(mul(x, zeta(add(x, 1.0), q))))))
inv.not_invertible(zeta_p, "two operands map to one value")


# --- polygamma -----------------------------------------------------------------------------------
def _polygamma_lax(m, x):
  integral = bitwise_and(eq(m, floor(m)), ge(m, 0.0))
  safe_m = select_n(integral, _full(1.0, m), m)
  order0 = eq(safe_m, 0.0)
  m1 = select_n(order0, safe_m, _full(1.0, m))
  sign_ = sub(1.0, mul(2.0, sub(m1, mul(2.0, floor(mul(m1, 0.5))))))  # (-1)^m
  out = mul(neg(sign_), mul(exp(lgamma(add(m1, 1.0))), zeta(add(m1, 1.0), x)))
  out = select_n(order0, out, unary.digamma(x))
  even_at_pole = bitwise_and(bitwise_and(le(x, 0.0), eq(x, floor(x))), eq(sign_, 1.0))
  out = select_n(bitwise_and(even_at_pole, _not(order0)), out, _full(np.nan, out))
  return select_n(integral, _full(np.nan, out), out)


def polygamma(m, x):
  """The polygamma function psi^(m)(x), the m-th derivative of digamma (as jax.lax.polygamma).

  Args:
    m: orders (floating point holding non-negative integers; NaN otherwise).
    x: points (same dtype); the shapes broadcast.

  Returns:
    psi^(m)(x).

  Example:
    >>> lax.polygamma(np.float32(1.0), np.float32(1.0))  # pi^2 / 6
    Array(1.644934, dtype=float32)
  """
  return polygamma_p.bind(m, x)


def _polygamma_grad_m(t, m, x):
  raise ValueError("polygamma gradient with respect to m is not supported")


polygamma_p = _binary_primitive("polygamma", _polygamma_lax, "chlo.polygamma")
ad.defjvp(polygamma_p, _polygamma_grad_m,
          _jvp_broadcast(lambda t, m, x: mul(t, polygamma(add(m, 1.0), x))))
inv.not_invertible(polygamma_p, "two operands map to one value")


# --- bessel_i0e / bessel_i1e ---------------------------------------------------------------------
_BESSEL_SERIES_TERMS = 48
_BESSEL_ASYMPTOTIC_TERMS = 30
_BESSEL_SWITCH = 20.0


def _bessel_ie_lax(x, order: int):
  """exp(-|x|) I_order(|x|) for order 0 or 1: the power series below |x| = 20, Hankel's
  asymptotic series above."""
  ax = abs(x)
  small = le(ax, _BESSEL_SWITCH)
  xs = select_n(small, _full(1.0, ax), ax)
  quarter_x2 = mul(mul(xs, xs), 0.25)
  term = _full(1.0, xs) if order == 0 else mul(xs, 0.5)
  series = term
  for k in range(1, _BESSEL_SERIES_TERMS):
    term = mul(term, div(quarter_x2, float(k * (k + order))))
    series = add(series, term)
  series = mul(series, exp(neg(xs)))
  xl = select_n(small, ax, _full(2 * _BESSEL_SWITCH, ax))
  nu4 = 4.0 * order * order
  term = _full(1.0, xl)
  asym = term
  for k in range(1, _BESSEL_ASYMPTOTIC_TERMS):
    term = mul(term, div(-(nu4 - (2 * k - 1) ** 2) / (8.0 * k), xl))
    asym = add(asym, term)
  asym = mul(asym, unary.rsqrt(mul(xl, 2 * math.pi)))
  out = select_n(small, asym, series)
  return out if order == 0 else mul(sign(x), out)


def _bessel_i0e_lax(x):
  return _bessel_ie_lax(x, 0)


def _bessel_i1e_lax(x):
  return _bessel_ie_lax(x, 1)


def _unary_primitive(name, algorithm, hlo_op=None):
  prim = Primitive(name)
  prim.def_abstract_eval(unop_abstract_eval(name, "float"))
  fn = _upcast_and_broadcast(algorithm)
  _eager_and_lowering(prim, fn, hlo_op)
  batching.defvectorized(prim)
  return prim


def bessel_i0e(x):
  """Exponentially scaled modified Bessel function of order 0: exp(-|x|) I_0(x).

  Args:
    x: a floating-point array.

  Returns:
    i0e(x), like x.

  Example:
    >>> lax.bessel_i0e(np.float32(1.0))
    Array(0.4657596, dtype=float32)
  """
  return bessel_i0e_p.bind(x)


bessel_i0e_p = _unary_primitive("bessel_i0e", _bessel_i0e_lax)
ad.defjvp_from_output(bessel_i0e_p,
                      lambda t, out, x: mul(t, sub(bessel_i1e(x), mul(sign(x), out))))
inv.not_invertible(bessel_i0e_p, "many-to-one: even in x")


def bessel_i1e(x):
  """Exponentially scaled modified Bessel function of order 1: exp(-|x|) I_1(x).

  Args:
    x: a floating-point array.

  Returns:
    i1e(x), like x.

  Example:
    >>> lax.bessel_i1e(np.float32(1.0))
    Array(0.20791042, dtype=float32)
  """
  return bessel_i1e_p.bind(x)


def _bessel_i1e_jvp(t, out, x):
  """d i1e / dx = i0e(x) - i1e(x) (sign(x) + 1/x), which tends to 1/2 at 0."""
  eps = _eps(x)
  not_tiny = gt(abs(x), eps)
  safe_x = select_n(not_tiny, _full(eps, x), x)
  slope = sub(bessel_i0e(safe_x), mul(out, add(sign(safe_x), div(1.0, safe_x))))
  return mul(t, select_n(not_tiny, _full(0.5, x), slope))


bessel_i1e_p = _unary_primitive("bessel_i1e", _bessel_i1e_lax, "chlo.bessel_i1e")
ad.defjvp_from_output(bessel_i1e_p, _bessel_i1e_jvp)
inv.not_invertible(bessel_i1e_p, "not monotonic: i1e rises then decays")
