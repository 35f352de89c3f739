"""The von Mises distribution on the circle (as jax.scipy.stats.vonmises)."""
from __future__ import annotations

import math

import numpy as np

from revax._src import lax
from revax._src.numpy import ufuncs
from revax._src.scipy.stats._common import promote, select


def logpdf(x, kappa):
  """Log of the density exp(kappa cos x) / (2 pi I_0(kappa)) (periodic in x, as JAX's), written
  with i0e so that large kappa does not overflow.

  Args:
    x: angles; kappa: concentration (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, kappa = promote("vonmises.logpdf", x, kappa)
  value = kappa * (ufuncs.cos(x) - 1.0) - ufuncs.log(2 * math.pi * lax.bessel_i0e(kappa))
  return select(kappa > 0.0, value, np.nan, value)


def pdf(x, kappa):
  """The von Mises density."""
  return ufuncs.exp(logpdf(x, kappa))
