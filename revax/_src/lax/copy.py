"""The copy primitive: a value with storage of its own (JAX's `copy_p`).

`jnp.array(x, copy=True)`, `jnp.copy(x)` and `x.copy()` of a traced `x` bind it, so a copy
stays a copy in the jaxpr (JAX keeps it there for the same reason: staging must not change
whether the result shares the argument's buffer). Its value is its operand's; XLA writes the
result of a program into a buffer of its own, so the lowering is the identity.

The primitive is one block: its wrapper, then its rules, then their registration.
"""
from __future__ import annotations

import numpy as np

from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv

__all__ = ["copy_p"]


# --- copy ----------------------------------------------------------------------------------------
def array_copy(x):
  """A copy of `x` with storage of its own (JAX's `lax._array_copy`): binds copy_p.

  Args:
    x: an array, NumPy value or Python scalar.

  Returns:
    An array of x's type holding x's value.

  Example:
    >>> revax.make_jaxpr(lambda x: jnp.array(x, copy=True))(1.0)
    { lambda ; a:f32[]. let b:f32[] = copy a in (b,) }
  """
  return copy_p.bind(x)


def _copy_abstract_eval(x):
  return x


def _copy_numpy(x):
  return np.array(x)


def _copy_lower(ctx, x):
  return x


def _copy_transpose(ct, x):
  return [copy_p.bind(ad.instantiate_zeros(ct))]


copy_p = Primitive("copy")
copy_p.def_abstract_eval(_copy_abstract_eval)
dispatch.def_numpy_impl(copy_p, _copy_numpy)
ad.deflinear(copy_p, _copy_transpose)
batching.defvectorized(copy_p)
mlir.register_lowering(copy_p, _copy_lower)
inv.definverse_unary(copy_p, lambda y: copy_p.bind(y))
