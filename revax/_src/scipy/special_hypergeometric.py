"""Hypergeometric functions 1F1 (hyp1f1) and 2F1 (hyp2f1) for revax.scipy.special.

M(a, b, x) (hyp1f1) is jax's: the series sum_k (a)_k / (b)_k x^k / k! for |x| < 100 and the
asymptotic series Gamma(b) / Gamma(a) e^x x^(a-b) sum_k (b-a)_k (1-a)_k / k! x^-k above, each
summed per element while k < 250 and |term| / |sum| > eps (so a NaN parameter stops the loop at
its first term, and M is 1 there, as jax's); M = 1 at a = 0, e^x at a = b, inf at b = 0. Its
derivatives are jax's series: dM/da = sum_k term_k (psi(a + k) - psi(a)) (and b's with
psi(b) - psi(b + k)), dM/dx = a / b M(a + 1, b + 1, x). In float32 the plain series loses
digits for large negative x, as jax's does.

2F1 (hyp2f1) is summed as its Gauss series with its derivatives (Pfaff's transformation below
0, Gauss's sum at 1).
"""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.custom_derivatives import custom_jvp
from revax._src.numpy import creation, reductions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = ["hyp1f1", "hyp2f1"]

_HYP1F1_TERMS = 250


def _masked_while(active, body, carry):
  """A batched while_loop, as jax's vmap makes one: each element's carry advances only while
  its own `active(carry)` holds."""
  def step(c):
    on = active(c)
    return tuple(ufuncs.where(on, n, o).astype(aval_of(o).dtype)
                 for n, o in zip(body(c), c, strict=True))
  return lax.while_loop(lambda c: reductions.any(active(c)), step, carry)


def _hyp1f1_loop(init_serie, init_term, update, weight=None):
  """jax's hyp1f1 loops: serie += term (times `weight(k)`), term *= update(k), for k = 1, 2,
  ... while k < 250 and |term| / |serie| > eps (per element: a NaN ratio stops at once)."""
  eps = float(dtypes.finfo(aval_of(init_term).dtype).eps)
  k0 = creation.ones_like(init_term)

  def active(c):
    serie, k, term = c
    return (k < _HYP1F1_TERMS) & (ufuncs.abs(term) / ufuncs.abs(serie) > eps)

  def body(c):
    serie, k, term = c
    serie = serie + (term if weight is None else term * weight(k))
    return serie, k + 1.0, term * update(k)
  return _masked_while(active, body, (init_serie, k0, init_term))[0]


def _hyp1f1_value(a, b, x):
  one = creation.ones_like(x)
  serie = _hyp1f1_loop(one, a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1.0))
  asym = _hyp1f1_loop(one, (b - a) * (1.0 - a) / x,
                      lambda k: (b - a + k) * (1.0 - a + k) / (k + 1.0) / x)
  from revax._src.scipy import special
  asym = special.gamma(b) / special.gamma(a) * ufuncs.exp(x) * lax.pow(x, a - b) * asym
  result = ufuncs.where(ufuncs.abs(x) < 100.0, serie, asym)
  result = ufuncs.where((b == 0.0) & (a != 0.0), np.inf, result)
  result = ufuncs.where((a == b) & (a != 0.0), ufuncs.exp(x), result)
  return ufuncs.where(a == 0.0, 1.0, result).astype(aval_of(x).dtype)


def _hyp1f1_param_derivative(a, b, x, weight):
  zero = creation.zeros_like(x)
  return _hyp1f1_loop(zero, a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1.0), weight)


@custom_jvp
def _hyp1f1(a, b, x):
  return _hyp1f1_value(a, b, x)


@_hyp1f1.defjvp
def _hyp1f1_jvp(primals, tangents):
  a, b, x = primals
  ta, tb, tx = tangents
  da = _hyp1f1_param_derivative(a, b, x, lambda k: lax.digamma(a + k) - lax.digamma(a))
  db = _hyp1f1_param_derivative(a, b, x, lambda k: lax.digamma(b) - lax.digamma(b + k))
  dx = a / b * _hyp1f1_value(a + 1.0, b + 1.0, x)
  return _hyp1f1_value(a, b, x), ta * da + tb * db + tx * dx


def hyp1f1(a, b, x):
  """Kummer's confluent hypergeometric function 1F1(a; b; x).

  Args:
    a, b, x: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype (differentiable in a, b and x).
  """
  check_arraylike("hyp1f1", a, b, x)
  a, b, x = promote_args_inexact("hyp1f1", a, b, x)
  if dtypes.is_complex(aval_of(x).dtype):
    raise ValueError("hyp1f1 does not support complex-valued inputs.")
  shape = np.broadcast_shapes(aval_of(a).shape, aval_of(b).shape, aval_of(x).shape)
  a, b, x = (shape_ops.broadcast_to(v, shape) for v in (a, b, x))
  return _hyp1f1(a, b, x)


# --- hyp2f1 --------------------------------------------------------------------------------------
_MAX_TERMS_2F1 = 3000


def _series_2f1(a, b, c, z):
  """(F, dF/da, dF/db, dF/dc) of the Gauss series at 0 <= z < 1."""
  eps = float(dtypes.finfo(aval_of(z).dtype).eps)
  dtype = aval_of(z).dtype

  def cond(s):
    return (s[0] < _MAX_TERMS_2F1) & reductions.any(s[1])

  def body(s):
    k, running, term, total, d_a, d_b, d_c, h_a, h_b, h_c = s
    kf = k.astype(dtype)
    h_a_new, h_b_new, h_c_new = h_a + 1.0 / (a + kf), h_b + 1.0 / (b + kf), h_c + 1.0 / (c + kf)
    term_new = term * (a + kf) * (b + kf) / ((c + kf) * (kf + 1.0)) * z
    total_new = total + term_new
    keep = lambda new, old: ufuncs.where(running, new, old).astype(dtype)
    still = running & (ufuncs.abs(term_new) > eps * ufuncs.abs(total_new)) & (term_new != 0.0)
    return (k + 1, still, keep(term_new, term), keep(total_new, total),
            keep(d_a + term_new * h_a_new, d_a), keep(d_b + term_new * h_b_new, d_b),
            keep(d_c - term_new * h_c_new, d_c), keep(h_a_new, h_a), keep(h_b_new, h_b),
            keep(h_c_new, h_c))

  one, zero = creation.ones_like(z), creation.zeros_like(z)
  init = (np.int32(0), ufuncs.isfinite(z) & (z != 0.0), one, one, zero, zero, zero, zero, zero,
          zero)
  out = lax.while_loop(cond, body, init)
  return out[3], out[4], out[5], out[6]


def _hyp2f1_parts(a, b, c, x):
  """F and its a-, b-, c-derivatives: the series on [0, 1), Pfaff's transformation
  F(a, b; c; x) = (1 - x)^-a F(a, c - b; c; x / (x - 1)) below 0, Gauss's sum at x = 1."""
  dtype = aval_of(x).dtype
  negative = x < 0.0
  inside = (x < 1.0) & ufuncs.isfinite(x)
  xs = ufuncs.where(inside, x, 0.0).astype(dtype)
  z = ufuncs.where(negative, xs / (xs - 1.0), xs).astype(dtype)
  b_s = ufuncs.where(negative, c - b, b).astype(dtype)
  g, g_a, g_b, g_c = _series_2f1(a, b_s, c, z)
  scale = ufuncs.exp(-a * ufuncs.log1p(-ufuncs.where(negative, xs, 0.0))).astype(dtype)
  log1m = ufuncs.log1p(-ufuncs.where(negative, xs, 0.0))
  value = scale * g
  d_a = ufuncs.where(negative, scale * (g_a - log1m * g), g_a)
  d_b = ufuncs.where(negative, -scale * g_b, g_b)
  d_c = ufuncs.where(negative, scale * (g_b + g_c), g_c)
  # x = 1: Gauss's sum Gamma(c) Gamma(c - a - b) / (Gamma(c - a) Gamma(c - b)) when c > a + b
  from revax._src.scipy.special import gamma
  gauss = gamma(c) * gamma(c - a - b) / (gamma(c - a) * gamma(c - b))
  at_one = ufuncs.where(c - a - b > 0.0, gauss, np.inf)
  beyond = ufuncs.where(x > 1.0, np.inf, np.nan)  # on the branch cut, as SciPy and jax answer
  value = ufuncs.where(x == 1.0, at_one, ufuncs.where(inside, value, beyond))
  cast = lambda v: v.astype(dtype)
  return cast(value), cast(d_a), cast(d_b), cast(d_c)


@custom_jvp
def _hyp2f1(a, b, c, x):
  return _hyp2f1_parts(a, b, c, x)[0]


@_hyp2f1.defjvp
def _hyp2f1_jvp(primals, tangents):
  a, b, c, x = primals
  ta, tb, tc, tx = tangents
  value, d_a, d_b, d_c = _hyp2f1_parts(a, b, c, x)
  d_x = a * b / c * _hyp2f1_parts(a + 1.0, b + 1.0, c + 1.0, x)[0]
  return value, ta * d_a + tb * d_b + tc * d_c + tx * d_x


def hyp2f1(a, b, c, x):
  """The Gauss hypergeometric function 2F1(a, b; c; x) for real x <= 1 (inf above 1, where the
  real function is undefined, as SciPy returns).

  Args:
    a, b, c, x: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype (differentiable in all four arguments).
  """
  check_arraylike("hyp2f1", a, b, c, x)
  a, b, c, x = promote_args_inexact("hyp2f1", a, b, c, x)
  if dtypes.is_complex(aval_of(x).dtype):
    raise ValueError("hyp2f1 does not support complex-valued inputs.")
  shape = np.broadcast_shapes(*(aval_of(v).shape for v in (a, b, c, x)))
  a, b, c, x = (shape_ops.broadcast_to(v, shape) for v in (a, b, c, x))
  return _hyp2f1(a, b, c, x)
