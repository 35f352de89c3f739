"""Special-function primitives: incomplete gamma and beta functions, polygamma, Hurwitz zeta and
the exponentially scaled modified Bessel functions of order 0 and 1 (as jax.lax has them).

Each primitive is one block. Where XLA expands a CHLO op (chlo.polygamma, chlo.zeta,
chlo.bessel_i1e) the lowering emits it; otherwise (igamma, igammac, igamma_grad_a,
regularized_incomplete_beta, bessel_i0e) the lowering is an algorithm written in revax ops below.
Eager evaluation runs an algorithm of this file op by op on the host (each op has a NumPy
implementation, loops are `while_loop`s evaluated in Python), so eager calls never compile.

The algorithms:
- P(a, x) (igamma) and Q(a, x) (igammac) are jax's (Cephes'): the power series where x < 1 or
  x <= a, 1 - the continued fraction (at most 2000 steps) otherwise, each element stopping at
  its own tolerance; the edge rules are jax's.
- dP/da (igamma_grad_a) runs the same loops in jax's DERIVATIVE mode.
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


# --- the incomplete gamma algorithms (jax's, VALUE and DERIVATIVE modes) ------------------------
# Their primitives are compiled eagerly too, as jax's: the loops' last digits are XLA's fused
# arithmetic, and a loop can run millions of steps (the series at a = x = 1e30 stops when its
# sum passes 1 / eps), which op by op would take minutes.
def _sel(pred, on_true, on_false):
  return select_n(pred, on_false, on_true)


def _igamma_series(ax, x, a, enabled, derivative):
  """P(a, x) (or dP/da) by its power series, each element stopping at its own tolerance."""
  eps = _eps(x)

  def cond(vals):
    return _any(vals[0])

  def body(vals):
    on, r, c, ans, xx, dc_da, dans_da = vals
    r = add(r, 1.0)
    dc_da = sub(mul(dc_da, div(xx, r)), div(mul(c, xx), mul(r, r)))
    dans_da = add(dans_da, dc_da)
    c = mul(c, div(xx, r))
    ans = add(ans, c)
    if derivative:
      conditional = bitwise_and(on, gt(abs(div(dc_da, dans_da)), eps))
    else:
      conditional = bitwise_and(on, gt(div(c, ans), eps))
    return (conditional,) + tuple(_sel(on, new, old) for new, old in zip(
        (r, c, ans, xx, dc_da, dans_da), vals[1:], strict=True))

  init = (enabled, a, _full(1.0, a), _full(1.0, a), x, _full(0.0, a), _full(0.0, a))
  vals = while_loop(cond, body, init)
  ans, dans_da = vals[3], vals[6]
  if not derivative:
    return div(mul(ans, ax), a)
  dlogax_da = sub(log(x), unary.digamma(add(a, 1.0)))
  return div(mul(ax, add(mul(ans, dlogax_da), dans_da)), a)


def _igammac_continued_fraction(ax, x, a, enabled, derivative):
  """Q(a, x) (or -dQ/da's fraction) by its continued fraction, at most 2000 steps."""
  eps = _eps(x)

  def cond(vals):
    return bitwise_and(_any(lt(vals[5], 2000.0)), _any(vals[0]))

  def body(vals):
    (on, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da,
     dans_da) = vals
    c = add(c, 1.0)
    y = add(y, 1.0)
    z = add(z, 2.0)
    yc = mul(y, c)
    pk = sub(mul(pkm1, z), mul(pkm2, yc))
    qk = sub(mul(qkm1, z), mul(qkm2, yc))
    nonzero = ne(qk, 0.0)
    r = div(pk, qk)
    t = _sel(nonzero, abs(div(sub(ans, r), r)), _full(1.0, r))
    ans = _sel(nonzero, r, ans)
    dpk_da = add(sub(sub(mul(dpkm1_da, z), pkm1), mul(dpkm2_da, yc)), mul(pkm2, c))
    dqk_da = add(sub(sub(mul(dqkm1_da, z), qkm1), mul(dqkm2_da, yc)), mul(qkm2, c))
    dans_da_new = _sel(nonzero, div(sub(dpk_da, mul(ans, dqk_da)), qk), dans_da)
    grad_conditional = _sel(nonzero, abs(sub(dans_da_new, dans_da)), _full(1.0, dans_da))
    pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
    dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = dpkm1_da, dqkm1_da, dpk_da, dqk_da
    rescale = gt(abs(pk), 1.0 / eps)
    pkm2, pkm1, qkm2, qkm1, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = (
        _sel(rescale, mul(v, eps), v)
        for v in (pkm2, pkm1, qkm2, qkm1, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da))
    if derivative:
      conditional = bitwise_and(on, gt(grad_conditional, eps))
    else:
      conditional = bitwise_and(on, gt(t, eps))
    new = (ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da,
           dans_da_new)
    # the step counter c advances for every element, as jax's
    return (conditional,) + tuple(v if k == 4 else _sel(on, v, old)
                                  for k, (v, old) in enumerate(zip(new, vals[1:], strict=True)))

  y = sub(1.0, a)
  z = add(add(x, y), 1.0)
  c = _full(0.0, x)
  pkm1 = add(x, 1.0)
  qkm1 = mul(z, x)
  ans = div(pkm1, qkm1)
  dqkm1_da = neg(x)
  dans_da = div(sub(_full(0.0, x), mul(ans, dqkm1_da)), qkm1)
  init = (enabled, ans, _full(1.0, x), y, z, c, pkm1, qkm1, _full(1.0, x), x, _full(0.0, x),
          _full(0.0, x), _full(0.0, x), dqkm1_da, dans_da)
  vals = while_loop(cond, body, init)
  if not derivative:
    return mul(vals[1], ax)
  dlogax_da = sub(log(x), unary.digamma(a))
  return mul(ax, add(mul(vals[1], dlogax_da), vals[14]))


def _igamma_prefactor(a, x):
  """(e^(a log x - x - lgamma(a)), whether it underflows), as jax's."""
  ax = sub(sub(mul(a, log(x)), x), lgamma(a))
  max_log = float(np.log(dtypes.finfo(get_aval(x).dtype).max))
  return exp(ax), lt(ax, -max_log)


def _igamma_lax(a, x):
  """P(a, x) as jax's igamma: the series, or 1 - the continued fraction where x >= 1 and
  x > a; 0 at x = 0, 1 at x = inf, NaN for x < 0, a < 0, a = x = 0 or NaN."""
  is_nan = bitwise_or(_isnan(a), _isnan(x))
  x_is_inf, a_is_zero, x_is_zero = eq(x, np.inf), eq(a, 0.0), eq(x, 0.0)
  domain_error = bitwise_or(bitwise_or(lt(x, 0.0), lt(a, 0.0)),
                            bitwise_or(bitwise_and(a_is_zero, x_is_zero), is_nan))
  use_igammac = bitwise_and(ge(x, 1.0), gt(x, a))
  ax, underflow = _igamma_prefactor(a, x)
  enabled = _not(bitwise_or(bitwise_or(x_is_zero, domain_error), bitwise_or(underflow, x_is_inf)))
  out = _sel(use_igammac,
             sub(1.0, _igammac_continued_fraction(ax, x, a, bitwise_and(enabled, use_igammac),
                                                  False)),
             _igamma_series(ax, x, a, bitwise_and(enabled, _not(use_igammac)), False))
  out = _sel(x_is_zero, _full(0.0, out), out)
  out = _sel(x_is_inf, _full(1.0, out), out)
  return _sel(domain_error, _full(np.nan, out), out)


def _igammac_lax(a, x):
  """Q(a, x) as jax's igammac: 1 - the series where x < 1 or x < a, else the continued
  fraction; 0 at x = inf and a = 0, NaN for x < 0, a < 0, a = x = 0 or NaN."""
  is_nan = bitwise_or(_isnan(a), _isnan(x))
  a_is_zero, x_is_zero, x_is_inf = eq(a, 0.0), eq(x, 0.0), eq(x, np.inf)
  domain_error = bitwise_or(bitwise_or(lt(x, 0.0), lt(a, 0.0)),
                            bitwise_or(bitwise_and(a_is_zero, x_is_zero), is_nan))
  use_igamma = bitwise_or(lt(x, 1.0), lt(x, a))
  ax, underflow = _igamma_prefactor(a, x)
  enabled = _not(bitwise_or(bitwise_or(domain_error, underflow), bitwise_or(x_is_inf, a_is_zero)))
  series = _igamma_series(ax, x, a, bitwise_and(enabled, use_igamma), False)
  cf = _igammac_continued_fraction(ax, x, a, bitwise_and(enabled, _not(use_igamma)), False)
  out = _sel(use_igamma, sub(1.0, series), cf)
  out = _sel(bitwise_or(x_is_inf, a_is_zero), _full(0.0, out), out)
  return _sel(domain_error, _full(np.nan, out), out)


def _igamma_grad_a_lax(a, x):
  """dP(a, x)/da as jax's igamma_grad_a: the DERIVATIVE modes of the same loops."""
  is_nan = bitwise_or(_isnan(a), _isnan(x))
  x_is_zero = eq(x, 0.0)
  domain_error = bitwise_or(lt(x, 0.0), le(a, 0.0))
  use_igammac = bitwise_and(gt(x, 1.0), gt(x, a))
  ax, underflow = _igamma_prefactor(a, x)
  enabled = _not(bitwise_or(bitwise_or(x_is_zero, domain_error), bitwise_or(underflow, is_nan)))
  out = _sel(use_igammac,
             neg(_igammac_continued_fraction(ax, x, a, bitwise_and(enabled, use_igammac), True)),
             _igamma_series(ax, x, a, bitwise_and(enabled, _not(use_igammac)), True))
  out = _sel(x_is_zero, _full(0.0, out), out)
  return _sel(bitwise_or(domain_error, is_nan), _full(np.nan, out), out)


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


igamma_p = _binary_primitive("igamma", _igamma_lax, compiled_eagerly=True)
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


igammac_p = _binary_primitive("igammac", _igammac_lax, compiled_eagerly=True)
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


igamma_grad_a_p = _binary_primitive("igamma_grad_a", _igamma_grad_a_lax, compiled_eagerly=True)
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
