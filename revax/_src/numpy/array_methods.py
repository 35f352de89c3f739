"""Operators and methods of revax.Array and of tracers, installed from revax.numpy.

Arrays and tracers share one set of methods, so `x + y`, `x[idx]`, `x.sum()` and `x.at[i].set(v)`
mean the same eagerly, under jit and under every transformation.
"""
from __future__ import annotations

from revax._src.core.trace import Tracer
from revax._src.runtime.array import Array


def _defer_to_unrecognized_arg(binary_op, swap=False):
  """`x op y`; NotImplemented for operand types revax does not know (so Python can try theirs)."""
  from revax._src.numpy.util import is_operand

  def method(self, other):
    if not is_operand(other):
      return NotImplemented
    return binary_op(other, self) if swap else binary_op(self, other)
  return method


# name -> revax.numpy function name; filled in by install()
_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
           "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
           "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
           "lshift": "left_shift", "rshift": "right_shift", "divmod": "divmod"}
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
            "gt": "greater", "ge": "greater_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "invert"}


def install(namespace) -> None:
  """Install operators and methods that `namespace` (revax.numpy) provides on Array and Tracer."""
  for cls in (Array, Tracer):
    for op, fname in _BINARY.items():
      fn = getattr(namespace, fname, None)
      if fn is None:
        continue
      setattr(cls, f"__{op}__", _defer_to_unrecognized_arg(fn))
      setattr(cls, f"__r{op}__", _defer_to_unrecognized_arg(fn, swap=True))
    for op, fname in _COMPARE.items():
      fn = getattr(namespace, fname, None)
      if fn is not None:
        setattr(cls, f"__{op}__", _defer_to_unrecognized_arg(fn))
    for op, fname in _UNARY.items():
      fn = getattr(namespace, fname, None)
      if fn is not None:
        setattr(cls, f"__{op}__", fn)
