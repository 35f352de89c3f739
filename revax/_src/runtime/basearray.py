"""`revax.Array`: the type a JAX user writes in `isinstance(x, jax.Array)` and in annotations.

As `jax.Array`, it is abstract: concrete arrays (revax's `Array` class, sharded ones included),
traced values under any transformation (jit, grad, vmap, ...) and typed PRNG key arrays are all
instances of it, so code that branches on `isinstance(x, revax.Array)` takes the same branch
inside and outside `jit`. revax itself tells concrete arrays from tracers with the concrete class
(`revax._src.runtime.array.Array`), never with this one.
"""
from __future__ import annotations

import abc

from revax._src.core.trace import Tracer
from revax._src.runtime.array import Array as _ConcreteArray

__all__ = ["Array"]


class Array(abc.ABC):
  """The type of revax arrays and of traced values (abstract; make arrays with
  `revax.numpy.array`).

  Example:
    >>> isinstance(jnp.ones(3), revax.Array), isinstance(np.ones(3), revax.Array)
    (True, False)
    >>> seen = []
    >>> _ = revax.jit(lambda x: seen.append(isinstance(x, revax.Array)) or x)(1.0)
    >>> seen  # a traced value is a revax.Array too
    [True]
  """
  __slots__ = ()

  def __new__(cls, *args, **kwargs):
    raise TypeError("revax.Array is abstract: make arrays with revax.numpy.array / asarray")


Array.__module__ = "revax"  # printed as <class 'revax.Array'>, the name users write
Array.register(_ConcreteArray)
Array.register(Tracer)
