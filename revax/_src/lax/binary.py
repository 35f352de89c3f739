"""Binary elementwise primitives: arithmetic, bitwise logic and shifts.

Operands have one dtype (a Python scalar adopts the other operand's dtype, weakly typed) and
broadcast NumPy-style. Each primitive is one block: wrapper, rules, registration.
"""
from __future__ import annotations

import numpy as np

from revax._src.lax.standard import binary_operands, naryop


__all__ = [
  "add",
  "mul",
  "add_p",
  "mul_p",
]

# --- add -----------------------------------------------------------------------------------------
def add(x, y):
  """Elementwise addition: x + y."""
  return add_p.bind(*binary_operands(x, y))


add_p = naryop("add", ("num", "num"), np.add, "stablehlo.add")


# --- mul -----------------------------------------------------------------------------------------
def mul(x, y):
  """Elementwise multiplication: x * y."""
  return mul_p.bind(*binary_operands(x, y))


mul_p = naryop("mul", ("num", "num"), np.multiply, "stablehlo.multiply")
