"""jax.interpreters.xla's `apply_primitive` on revax's eager dispatch."""
from __future__ import annotations

from revax._src.interpreters import dispatch

__all__ = ["apply_primitive"]


def apply_primitive(prim, *args, **params):
  """`prim.bind(*args, **params)` on concrete values, compiled alone through the primitive's
  lowering rule (JAX's form; a library primitive's eager impl is often
  `functools.partial(apply_primitive, prim)`).

  Example:
    >>> from revax.interpreters.xla import apply_primitive
    >>> apply_primitive(revax.extend.core.primitives.sin_p, np.float32(0.0))
    Array(0., dtype=float32)
  """
  return dispatch.apply_lowered(prim, args, params)
