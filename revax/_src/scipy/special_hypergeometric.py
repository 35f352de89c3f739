"""The confluent hypergeometric function 1F1 (hyp1f1) for revax.scipy.special.

M(a, b, x) = sum_k (a)_k / (b)_k x^k / k! is summed in a `while_loop` until every element's
term is below the dtype's epsilon relative to its sum (at most 1000 terms). For x < 0 Kummer's
transformation M(a, b, x) = e^x M(b - a, b, -x) keeps the terms of one sign. The same loop sums
the a- and b-derivatives (term k times psi(a + k) - psi(a) = sum_{j<k} 1 / (a + j), and the
same for b with a minus sign), so the custom JVP needs no derivative of the loop:
dM/dx = a / b M(a + 1, b + 1, x).
"""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.custom_derivatives import custom_jvp
from revax._src.numpy import creation, reductions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = ["hyp1f1"]

_MAX_TERMS = 1000


def _series_with_derivatives(a, b, x):
  """(M, dM/da, dM/db) by the series at x >= 0."""
  eps = float(dtypes.finfo(aval_of(x).dtype).eps)
  dtype = aval_of(x).dtype

  def cond(c):
    k, running = c[0], c[1]
    return (k < _MAX_TERMS) & reductions.any(running)

  def body(c):
    k, running, term, total, d_a, d_b, h_a, h_b = c
    kf = k.astype(dtype)
    h_a_new = h_a + 1.0 / (a + kf)
    h_b_new = h_b + 1.0 / (b + kf)
    term_new = term * (a + kf) / (b + kf) * x / (kf + 1.0)
    keep = lambda new, old: ufuncs.where(running, new, old).astype(dtype)
    total_new = total + term_new
    d_a_new = d_a + term_new * h_a_new
    d_b_new = d_b - term_new * h_b_new
    still = running & (ufuncs.abs(term_new) > eps * ufuncs.abs(total_new)) & (term_new != 0.0)
    return (k + 1, still, keep(term_new, term), keep(total_new, total), keep(d_a_new, d_a),
            keep(d_b_new, d_b), keep(h_a_new, h_a), keep(h_b_new, h_b))

  one, zero = creation.ones_like(x), creation.zeros_like(x)
  init = (np.int32(0), ufuncs.isfinite(x) & (x != 0.0), one, one, zero, zero, zero, zero)
  out = lax.while_loop(cond, body, init)
  return out[3], out[4], out[5]


def _hyp1f1_parts(a, b, x):
  """M and its a-, b-derivatives for any real x (Kummer's transformation below 0)."""
  negative = x < 0.0
  a_s = ufuncs.where(negative, b - a, a).astype(aval_of(a).dtype)
  x_s = ufuncs.abs(x)
  m, d_a, d_b = _series_with_derivatives(a_s, b, x_s)
  scale = ufuncs.exp(ufuncs.where(negative, x, 0.0)).astype(aval_of(x).dtype)
  value = scale * m
  # M(a, b, x) = e^x M'(b - a, b, -x): dM/da = -e^x dM'/da', dM/db = e^x (dM'/da' + dM'/db)
  da = ufuncs.where(negative, -scale * d_a, d_a)
  db = ufuncs.where(negative, scale * (d_a + d_b), d_b)
  return value, da.astype(aval_of(x).dtype), db.astype(aval_of(x).dtype)


@custom_jvp
def _hyp1f1(a, b, x):
  return _hyp1f1_parts(a, b, x)[0]


@_hyp1f1.defjvp
def _hyp1f1_jvp(primals, tangents):
  a, b, x = primals
  ta, tb, tx = tangents
  value, da, db = _hyp1f1_parts(a, b, x)
  dx = a / b * _hyp1f1_parts(a + 1.0, b + 1.0, x)[0]
  return value, ta * da + tb * db + tx * dx


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
