"""The Gauss hypergeometric function 2F1 (hyp2f1) for revax.scipy.special, computed as jax's.

jax chooses, per element: 1 where x = 0 or (a or b = 0 and c != 0); inf where c is 0 or a
negative integer, for x > 1, and for d = c - a - b <= 0 at x = 1; Euler's transformation
(1 - x)^d 2F1(c - a, c - b; c; x) where d <= -1 (unless d is not an integer and x > 1);
(1 - x)^-a or (1 - x)^-b where x < 1 and b = c or a = c; Gauss's sum at x = 1; else 2F1 itself.
2F1 is summed as a terminating polynomial where a or b is a non-positive integer, with the
digamma (Abramowitz-Stegun 15.3.10-12) transformation for x > 0.9, else by its series, each
loop per element at most 250 terms until the term is below eps relative to the sum (so NaN
parameters stop a loop at once, as in jax). The derivatives are jax's series.
"""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.custom_derivatives import custom_jvp
from revax._src.numpy import creation, reductions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, jitted_as_in_jax, promote_args_inexact

__all__ = ["hyp2f1"]

_TERMS = 250


def _w(cond, a, b, like):
  return ufuncs.where(cond, a, b).astype(aval_of(like).dtype)


def _loop(active, body, carry):
  """A batched while_loop (as jax's vmap makes one): each element advances while its own
  `active(carry)` holds."""
  def step(c):
    on = active(c)
    return tuple(ufuncs.where(on, n, o).astype(aval_of(o).dtype)
                 for n, o in zip(body(c), c, strict=True))
  return lax.while_loop(lambda c: reductions.any(active(c)), step, carry)


def _eps(x):
  return float(dtypes.finfo(aval_of(x).dtype).eps)


def _gamma(x):
  from revax._src.scipy import special
  return special.gamma(x)


def _terminal(a, b, c, x, enabled):
  eps = _eps(x) * 50
  ib = ufuncs.round(b)
  c_nonpos_int = (ufuncs.remainder(c, 1.0) == 0.0) & (c <= 0.0) & (c > b)
  mask = (b < a) & (ufuncs.abs(b - ib) < eps) & ~c_nonpos_int
  a, b = _w(mask, b, a, a), _w(mask, a, b, b)
  a = ufuncs.abs(a)
  one = creation.ones_like(x)

  def active(s):
    return enabled & (s[0] < a + 1.0)

  def body(s):
    i, serie, term = s
    term = term * (-(a - i + 1.0) / (c + i - 1.0) * (b + i - 1.0) / i * x)
    return i + 1.0, serie + term, term
  return _loop(active, body, (one, one, one))[1]


def _serie(a, b, c, x, enabled):
  rtol = _eps(x)

  def active(s):
    serie, k, term = s
    return enabled & (k < _TERMS) & (ufuncs.abs(term) > rtol * ufuncs.abs(serie))

  def body(s):
    serie, k, term = s
    serie = serie + term
    term = term * ((a + k - 1.0) * (b + k - 1.0) / (c + k - 1.0) / k * x)
    return serie, k + 1.0, term
  return _loop(active, body, (creation.zeros_like(x), creation.ones_like(x),
                              creation.ones_like(x)))[0]


def _digamma_transform(a, b, c, x, enabled):
  rtol = _eps(x)
  digamma = lax.digamma
  d = c - a - b
  s = 1.0 - x
  rd = ufuncs.round(d)
  e = _w(rd >= 0.0, d, -d, d)
  d1 = _w(rd >= 0.0, d, 0.0, d)
  d2 = _w(rd >= 0.0, 0.0, d, d)
  ard = _w(rd >= 0.0, rd, -rd, rd).astype(np.int32)
  ax = ufuncs.log(s)
  y = (digamma(creation.ones_like(x)) + digamma(1.0 + e) - digamma(a + d1) - digamma(b + d1)
       - ax)
  y = y / _gamma(e + 1.0)
  p = (a + d1) * (b + d1) * s / _gamma(e + 2.0)

  def active(st):
    p, q, r, t, y = st
    return enabled & (t < _TERMS) & (ufuncs.abs(q) >= rtol * ufuncs.abs(y))

  def body(st):
    p, q, r, t, y = st
    r = (digamma(1.0 + t) + digamma(1.0 + t + e) - digamma(a + t + d1) - digamma(b + t + d1)
         - ax)
    q = p * r
    y = y + q
    p = p * (s * (a + t + d1) / (t + 1.0))
    p = p * ((b + t + d1) / (t + 1.0 + e))
    return p, q, r, t + 1.0, y
  _, _, _, _, y = _loop(active, body, (p, y, creation.zeros_like(x), creation.ones_like(x), y))

  def sum_active(st):
    return enabled & (st[0] < ard)

  def sum_body(st):
    i, p, t, y1 = st
    r = 1.0 - e + t
    p = p * (s * (a + t + d2) * (b + t + d2) / r)
    t = t + 1.0
    p = p / t
    return i + 1, p, t, y1 + p
  one = creation.ones_like(x)
  y1 = _loop(sum_active, sum_body, (creation.ones_like(ard), one, creation.zeros_like(x),
                                    one))[3]
  gc = _gamma(c)
  y1 = y1 * (_gamma(e) * gc / (_gamma(a + d1) * _gamma(b + d1)))
  ys = y * (gc / (_gamma(a + d2) * _gamma(b + d2)))
  ys = _w((ard & 1) != 0, -ys, ys, ys)
  q = lax.pow(s, rd)
  summed = _w(rd > 0.0, ys * q + y1, ys + y1 * q, x)
  return _w(rd == 0.0, y * gc / (_gamma(a) * _gamma(b)), summed, x)


def _terminal_or_serie(a, b, c, x, enabled):
  eps = _eps(x) * 50
  d = c - a - b
  neg_int_a = (a <= 0.0) & (ufuncs.abs(a - ufuncs.round(a)) < eps)
  neg_int_b = (b <= 0.0) & (ufuncs.abs(b - ufuncs.round(b)) < eps)
  neg = neg_int_a | neg_int_b
  int_d = ~(ufuncs.abs(d - ufuncs.round(d)) >= eps)  # (NaN d: jax takes the digamma branch)
  use_digamma = (x > 0.9) & ~neg & int_d
  use_terminal = ~((x > 0.9) & ~neg) & neg
  use_serie = ~use_digamma & ~use_terminal
  out = _serie(a, b, c, x, enabled & use_serie)
  out = _w(use_digamma, _digamma_transform(a, b, c, x, enabled & use_digamma), out, x)
  return _w(use_terminal, _terminal(a, b, c, x, enabled & use_terminal), out, x)


@jitted_as_in_jax()
def _hyp2f1_value(a, b, c, x):
  """Compiled eagerly too, as jax's hyp2f1 is jitted: XLA's fused arithmetic decides, e.g.,
  whether a terminating sum that cancels to 0 meets an infinite factor (NaN) or not (inf)."""
  eps = _eps(x) * 50
  d = c - a - b
  s = 1.0 - x
  ca, cb = c - a, c - b
  id_ = ufuncs.round(d)
  rules = [
      (x == 0.0) | (((a == 0.0) | (b == 0.0)) & (c != 0.0)),
      (c == 0.0) | ((c < 0.0) & (ufuncs.remainder(c, 1.0) == 0.0)),
      (d <= -1.0) & ~((ufuncs.abs(d - id_) >= eps) & (s < 0.0)),
      (d <= 0.0) & (x == 1.0),
      (x < 1.0) & (b == c),
      (x < 1.0) & (a == c),
      x > 1.0,
      x == 1.0]
  index = creation.full_like(x, 6, dtype=np.int32)
  for k, value in reversed(list(enumerate([0, 1, 2, 1, 3, 4, 1, 5]))):
    index = ufuncs.where(rules[k], value, index).astype(np.int32)
  euler = lax.pow(s, d) * _terminal_or_serie(ca, cb, c, x, index == 2)
  gauss_sum = _gamma(c) * _gamma(d) / (_gamma(ca) * _gamma(cb))
  direct = _terminal_or_serie(a, b, c, x, index == 6)
  choices = [creation.ones_like(x), creation.full_like(x, np.inf), euler, lax.pow(s, -a),
             lax.pow(s, -b), gauss_sum, direct]
  out = choices[6]
  for k in range(6):
    out = _w(index == k, choices[k], out, x)
  return out


def _param_derivative(a, b, c, x, weight):
  eps = _eps(x)

  def active(st):
    serie, k, term = st
    return (k < _TERMS) & (ufuncs.abs(term) / ufuncs.abs(serie) > eps)

  def body(st):
    serie, k, term = st
    serie = serie + term * weight(k)
    term = term * ((a + k) * (b + k) / (c + k) / (k + 1.0) * x)
    return serie, k + 1.0, term
  return _loop(active, body, (creation.zeros_like(x), creation.ones_like(x), a * b / c * x))[0]


@custom_jvp
def _hyp2f1(a, b, c, x):
  return _hyp2f1_value(a, b, c, x)


@_hyp2f1.defjvp
def _hyp2f1_jvp(primals, tangents):
  a, b, c, x = primals
  ta, tb, tc, tx = tangents
  dg = lax.digamma
  da = _param_derivative(a, b, c, x, lambda k: dg(a + k) - dg(a))
  db = _param_derivative(a, b, c, x, lambda k: dg(b + k) - dg(b))
  dc = _param_derivative(a, b, c, x, lambda k: dg(c) - dg(c + k))
  dx = a * b / c * _hyp2f1_value(a + 1.0, b + 1.0, c + 1.0, x)
  return _hyp2f1_value(a, b, c, x), ta * da + tb * db + tc * dc + tx * dx


def hyp2f1(a, b, c, x):
  """The Gauss hypergeometric function 2F1(a, b; c; x), as jax computes it.

  Args:
    a, b, c, x: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype (differentiable in all four).

  Example:
    >>> revax.scipy.special.hyp2f1(1.0, 1.0, 2.0, jnp.array([0.0, 0.5]))  # -log(1 - x) / x
    Array([1.       , 1.3862944], dtype=float32)
  """
  check_arraylike("hyp2f1", a, b, c, x)
  a, b, c, x = promote_args_inexact("hyp2f1", a, b, c, x)
  if dtypes.is_complex(aval_of(x).dtype):
    raise ValueError("hyp2f1 does not support complex-valued inputs.")
  a, b, c, x = shape_ops.broadcast_arrays(a, b, c, x)
  return _hyp2f1(a, b, c, x)
