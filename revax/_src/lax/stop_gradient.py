"""stop_gradient: the identity whose derivative is zero.

`stop_gradient(x)` returns `x`; under differentiation its tangent is a symbolic zero, so no
gradient flows back through it (integer and bool leaves pass through untouched, as in JAX).
"""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv

__all__ = ["stop_gradient", "stop_gradient_p"]


def stop_gradient(x):
  """`x` (a pytree of arrays) unchanged, with zero derivative.

  Example:
    >>> revax.grad(lambda x: x * lax.stop_gradient(x))(3.0)  # 3.0, not 6.0
    Array(3., dtype=float32, weak_type=True)
  """
  def stop(leaf):
    aval = get_aval(leaf)
    return stop_gradient_p.bind(leaf) if dtypes.is_inexact(aval.dtype) else leaf
  return tree_util.tree_map(stop, x)


def _stop_gradient_impl(x):
  return x


stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_abstract_eval(lambda x: x)
dispatch.def_numpy_impl(stop_gradient_p, _stop_gradient_impl)
mlir.register_lowering(stop_gradient_p, lambda ctx, x: x)
ad.zero_output_jvp(stop_gradient_p, "its derivative is zero by definition")
batching.defvectorized(stop_gradient_p)
inv.definverse_unary(stop_gradient_p, lambda y: y)
