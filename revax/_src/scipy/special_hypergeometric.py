"""Kummer's confluent hypergeometric function 1F1 (hyp1f1) for revax.scipy.special (2F1 is in
special_hyp2f1).

M(a, b, x) (hyp1f1) is jax's: the series sum_k (a)_k / (b)_k x^k / k! for |x| < 100 and the
asymptotic series Gamma(b) / Gamma(a) e^x x^(a-b) sum_k (b-a)_k (1-a)_k / k! x^-k above, each
summed per element while k < 250 and |term| / |sum| > eps (so a NaN parameter stops the loop at
its first term, and M is 1 there, as jax's); M = 1 at a = 0, e^x at a = b, inf at b = 0. Its
derivatives are jax's series: dM/da = sum_k term_k (psi(a + k) - psi(a)) (and b's with
psi(b) - psi(b + k)), dM/dx = a / b M(a + 1, b + 1, x). In float32 the plain series loses
digits for large negative x, as jax's does.
"""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.custom_derivatives import custom_jvp
from revax._src.numpy import creation, reductions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = ["hyp1f1"]

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
