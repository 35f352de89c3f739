"""Unary elementwise primitives: arithmetic, rounding, transcendental and special functions.

Each primitive is one block: its public wrapper, then its rules, then their registration.
"""
from __future__ import annotations

import numpy as np

from revax._src.lax.standard import unop


__all__ = [
  "neg",
  "exp",
  "neg_p",
  "exp_p",
]

# --- neg -----------------------------------------------------------------------------------------
def neg(x):
  """Elementwise negation: -x."""
  return neg_p.bind(x)


neg_p = unop("neg", "num", np.negative, "stablehlo.negate")


# --- exp -----------------------------------------------------------------------------------------
def exp(x):
  """Elementwise exponential: e**x."""
  return exp_p.bind(x)


exp_p = unop("exp", "inexact", np.exp, "stablehlo.exponential")
