"""Accuracy requests of the transcendental ops: `Tolerance` and `AccuracyMode`, as in JAX.

jax.lax's exp, exp2, expm1, log, log1p, tanh, logistic, sin, cos, tan, sqrt, rsqrt and cbrt
take `accuracy=`, which asks the compiler to choose among implementations of the op by the
error it allows (StableHLO's `result_accuracy`). XLA:CPU -- the compiler revax targets -- has
one implementation of each op, which serves every request: jax 0.10.2's results on CPU are
bitwise the same with and without one. XLA:TPU chooses by it. revax checks the request (JAX's
errors for a malformed one), carries it as the primitive's `accuracy` parameter (as jax's
jaxprs print it) and lowers it as jax does (`accuracy_props`); NumPy's eager implementations
have one implementation each, as XLA:CPU.
"""
from __future__ import annotations

import enum

__all__ = ["Tolerance", "AccuracyMode", "check_accuracy", "accuracy_props"]


class Tolerance:
  """The error allowed in a unary function's result: at most two of absolute (atol), relative
  (rtol) tolerance and units in the last place (ulps)."""

  def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
    if atol < 0.0 or rtol < 0.0 or ulps < 0:
      raise ValueError("Tolerances must be non-negative.")
    if atol == 0.0 and rtol == 0.0 and ulps == 0:
      raise ValueError("At least one of atol, rtol, or ulps must be set.")
    self.atol, self.rtol, self.ulps = atol, rtol, ulps

  def __repr__(self):
    return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


class AccuracyMode(enum.Enum):
  """Named accuracy requests: the most accurate implementation, or the default one."""
  HIGHEST = 1
  DEFAULT = 2


def check_accuracy(accuracy) -> None:
  """NotImplementedError (JAX's) unless `accuracy` is None, a Tolerance or an AccuracyMode."""
  if accuracy is not None and not isinstance(accuracy, (Tolerance, AccuracyMode)):
    raise NotImplementedError(f"Accuracy {accuracy} not supported")


def accuracy_props(accuracy):
  """The `result_accuracy` property jax's lowering gives an op for a request (None for none and
  for DEFAULT, which StableHLO prints as no attribute), as op properties for `ctx.op1`."""
  if accuracy is None or accuracy is AccuracyMode.DEFAULT:
    return None
  if isinstance(accuracy, AccuracyMode):
    mode = f"mode = #stablehlo.result_accuracy_mode<{accuracy.name}>"
    return {"result_accuracy": f"#stablehlo.result_accuracy<{mode}>"}
  fields = [f"atol = {accuracy.atol:e}", f"rtol = {accuracy.rtol:e}", f"ulps = {accuracy.ulps}",
            "mode = #stablehlo.result_accuracy_mode<TOLERANCE>"]
  return {"result_accuracy": f"#stablehlo.result_accuracy<{', '.join(fields)}>"}
