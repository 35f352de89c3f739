"""Owen's T function for revax.scipy.special, computed as jax's.

T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx is even in h and odd in a.
As in jax: for |a| <= 1 a 13-point quadrature in r = a^2 t; for |a| > 1 Owen's identity
T(h, a) = (Phi(h) Q(a h) + Phi(a h) Q(h)) / 2 - T(a h, 1/a) (through erf below a h = 0.67,
erfc above) moves it there; T(0, a) = atan(a) / (2 pi), T(h, 1) = erfc(-h/sqrt2) erfc(h/sqrt2) / 8;
NaN where h or a is NaN (so T(0, inf) is NaN: inf * 0 in the quadrature, as jax's). The
derivatives are jax's closed forms.
"""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.custom_derivatives import custom_jvp
from revax._src.numpy import contractions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = ["owens_t"]

_QUAD_PTS = np.array([0.0035082039676451716, 0.031279042338030756, 0.08526682628321945,
    0.16245071730812277, 0.25851196049125436, 0.3680755384069753, 0.485010929056047,
    0.6027751415261857, 0.7147788421775323, 0.814755109887601, 0.8971102975594897,
    0.9572380808594426, 0.991788329746297])
_QUAD_WTS = np.array([0.018831438115323503, 0.01856708624397765, 0.018042093461223385,
    0.017263829606398752, 0.016243219975989858, 0.014994592034116705, 0.013535474469662087,
    0.011886351605820165, 0.010070377242777432, 0.008113054574229958, 0.006041900952847024,
    0.0038862217010742057, 0.001679303108454609])
_ROOT_2 = float(np.sqrt(2))


def _quadrature(h, a):
  dtype = aval_of(a).dtype
  r = shape_ops.expand_dims(ufuncs.square(a), -1) * _QUAD_PTS.astype(dtype)
  integrand = ufuncs.exp(-0.5 * shape_ops.expand_dims(ufuncs.square(h), -1) * (1.0 + r)) / (
      1.0 + r)
  return a * contractions.matmul(integrand, _QUAD_WTS.astype(dtype))


@custom_jvp
def _owens_t(h, a):
  dtype = aval_of(h).dtype
  h = ufuncs.abs(h)
  abs_a = ufuncs.abs(a)
  h_normed = h / _ROOT_2
  modified_a = ufuncs.where(abs_a <= 1.0, abs_a, ufuncs.reciprocal(abs_a))
  modified_h = ufuncs.where(abs_a <= 1.0, h, abs_a * h)
  result = _quadrature(modified_h, modified_a)
  result = ufuncs.where(modified_h == 0.0, ufuncs.arctan(modified_a) / (2 * np.pi), result)
  result = ufuncs.where(modified_a == 1.0, 0.125 * lax.erfc(-modified_h / _ROOT_2)
                        * lax.erfc(modified_h / _ROOT_2), result)
  normh = lax.erfc(h_normed)
  normah = lax.erfc(abs_a * h_normed)
  result = ufuncs.where(abs_a > 1.0, ufuncs.where(
      abs_a * h <= 0.67, 0.25 - 0.25 * lax.erf(h_normed) * lax.erf(abs_a * h_normed) - result,
      0.25 * (normh + normah - normh * normah) - result), result)
  result = lax.sign(a) * result.astype(dtype)
  return ufuncs.where(ufuncs.isnan(a) | ufuncs.isnan(h), np.nan, result).astype(dtype)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
  h, a = primals
  dh, da = tangents
  result = _owens_t(h, a)
  dout_dh = (-ufuncs.exp(-0.5 * ufuncs.square(h)) * lax.erf(a * h / _ROOT_2)
             / (2.0 * float(np.sqrt(2.0 * np.pi))))
  dout_da = ufuncs.exp(-0.5 * (ufuncs.square(a) + 1.0) * ufuncs.square(h)) / (
      2.0 * np.pi * (ufuncs.square(a) + 1.0))
  return result, (dout_dh * dh + dout_da * da).astype(aval_of(result).dtype)


def owens_t(h, a):
  """Owen's T function T(h, a).

  Args:
    h, a: real-valued arrays (broadcast).

  Returns:
    An array of the promoted inexact dtype.

  Example:
    >>> revax.scipy.special.owens_t(jnp.array([0.0, 1.0]), jnp.array([1.0, 0.5]))
    Array([0.125     , 0.04306469], dtype=float32)
  """
  check_arraylike("owens_t", h, a)
  h, a = promote_args_inexact("owens_t", h, a)
  try:
    shape = np.broadcast_shapes(aval_of(h).shape, aval_of(a).shape)
  except ValueError:  # a TypeError, as JAX's (from its first lax operation)
    raise TypeError(f"owens_t got incompatible shapes for broadcasting: {aval_of(h).shape}, "
                    f"{aval_of(a).shape}") from None
  return _owens_t(shape_ops.broadcast_to(h, shape), shape_ops.broadcast_to(a, shape))
