"""Owen's T function for revax.scipy.special.

T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx is even in h and odd in a.
For |a| <= 1 the integral is a 24-point Gauss-Legendre rule (its integrand is smooth and, for
large h, already below the float range where the rule would be inexact); for |a| > 1 Owen's
identity T(h, a) = (Phi(h) Q(a h) + Phi(a h) Q(h)) / 2 - T(a h, 1/a) (Q = 1 - Phi, h >= 0)
moves it there.
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.numpy import reductions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact
from revax._src.scipy import special

__all__ = ["owens_t"]

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(24)


def _t_small(h, a):
  """T(h, a) for h >= 0 and 0 <= a <= 1, by Gauss-Legendre on [0, a]."""
  dtype = aval_of(h).dtype
  nodes = np.asarray(_NODES, dtype)
  weights = np.asarray(_WEIGHTS, dtype)
  t = shape_ops.expand_dims(0.5 * a, -1) * (nodes + 1.0)
  one_t2 = 1.0 + t * t
  h2 = shape_ops.expand_dims(h * h, -1)
  integrand = ufuncs.exp(-0.5 * h2 * one_t2) / one_t2
  return (0.5 * a * reductions.sum(integrand * weights, axis=-1) / (2 * math.pi)).astype(dtype)


def owens_t(h, a):
  """Owen's T function T(h, a).

  Args:
    h, a: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  check_arraylike("owens_t", h, a)
  h, a = promote_args_inexact("owens_t", h, a)
  try:
    shape = np.broadcast_shapes(aval_of(h).shape, aval_of(a).shape)
  except ValueError:  # a TypeError, as JAX's (from its first lax operation)
    raise TypeError(f"owens_t got incompatible shapes for broadcasting: {aval_of(h).shape}, "
                    f"{aval_of(a).shape}") from None
  h, a = shape_ops.broadcast_to(h, shape), shape_ops.broadcast_to(a, shape)
  dtype = aval_of(h).dtype
  ah_abs, aa = ufuncs.abs(h), ufuncs.abs(a)
  small = aa <= 1.0
  a_in = ufuncs.where(small, aa, 1.0 / ufuncs.where(small, 1.0, aa)).astype(dtype)
  h_in = ufuncs.where(small, ah_abs, ah_abs * aa).astype(dtype)
  inner = _t_small(h_in, a_in)
  ahh = (aa * ah_abs).astype(dtype)
  cdf_h, sf_h = special.ndtr(ah_abs), special.ndtr(-ah_abs)
  cdf_ah, sf_ah = special.ndtr(ahh), special.ndtr(-ahh)
  large = 0.5 * (cdf_h * sf_ah + cdf_ah * sf_h) - inner
  out = ufuncs.where(small, inner, large)
  out = ufuncs.where(aa == np.inf, 0.5 * sf_h, out)  # T(h, inf) = Q(|h|) / 2
  return (ufuncs.sign(a) * out).astype(dtype)
