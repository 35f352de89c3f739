"""scatter_apply: apply a scalar function at scattered positions, as jax.lax.scatter_apply.

XLA's scatter applies `func` once per index that hits an element, so an element hit k times
becomes `func` applied k times. Here that is composed from existing primitives: a `scatter_add`
of ones (with the same dimension numbers and out-of-bounds mode) counts the hits per element,
and a while loop applies `func` (traced on a scalar, applied elementwise) to the elements whose
count exceeds the iteration number, for as many iterations as the largest count. As in JAX it
is not meant for reverse-mode differentiation (the loop is a while loop); vmap batches it.
"""
from __future__ import annotations

import numpy as np

from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.eval import eval_jaxpr
from revax._src.interpreters import batching, staging
from revax._src.lax import batch_util, comparison, reductions, shapes, slicing
from revax._src.lax.control_flow import loops

__all__ = ["scatter_apply"]


def _elementwise(func, dtype):
  """`func` traced on a scalar of `dtype` and applied to every element of an array."""
  scalar = ShapedArray((), dtype)
  jaxpr, consts = staging.trace_to_jaxpr(lambda x: [func(x)], [scalar])
  out = jaxpr.outvars[0].aval if jaxpr.outvars else None
  if len(jaxpr.outvars) != 1 or out.shape != () or out.dtype != dtype:
    raise TypeError(f"scatter_apply func must map a {scalar.str_short()} scalar to one of the "
                    f"same type, got {[v.aval.str_short() for v in jaxpr.outvars]}")

  def apply(x):
    shape = get_aval(x).shape
    size = int(np.prod(shape, dtype=np.int64))
    flat = shapes.reshape(x, (size,))

    def scalar_fn(v):
      return eval_jaxpr(jaxpr, consts, v)

    (y,), (d,) = batching.batch_flat(scalar_fn, [flat], [0], size)
    return shapes.reshape(batch_util.bdim_at(y, d, 0, size), shape)
  return apply


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
  """`operand` with `func` applied at the scattered positions (k hits: k applications).

  Args:
    operand: the array.
    scatter_indices: integer array of index vectors, as in `scatter`.
    func: a function of one scalar of operand's dtype, returning one of the same type.
    dimension_numbers: a `ScatterDimensionNumbers`.
    update_shape: the shape of the (virtual) updates, as in `scatter`.
    indices_are_sorted, unique_indices: promises, as in `scatter`.
    mode: out-of-bounds handling, as in `scatter` ('clip', 'fill'/'drop', ...).

  Returns:
    An array like `operand`.

  Example:
    >>> idx = jnp.array([1, 3, 3])
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> lax.scatter_apply(jnp.zeros(5), idx[:, None], lambda v: v + 1, dn, update_shape=idx.shape)
    Array([0., 1., 0., 2., 0.], dtype=float32)
  """
  aval = get_aval(operand)
  apply = _elementwise(func, aval.dtype)
  ones = shapes.broadcast_in_dim(np.ones((), np.int32), tuple(update_shape), ())
  counts = slicing.scatter_add(shapes.broadcast_in_dim(np.zeros((), np.int32), aval.shape, ()),
                               scatter_indices, ones, dimension_numbers,
                               indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode)
  once = comparison.select_n(comparison.gt(counts, np.int32(0)), operand, apply(operand))
  if unique_indices:
    return once
  most = reductions.reduce_max(counts, tuple(range(aval.ndim))) if aval.ndim else counts

  def body(state):
    i, x = state
    return i + 1, comparison.select_n(comparison.gt(counts, i), x, apply(x))

  _, out = loops.while_loop(lambda s: comparison.lt(s[0], most), body, (np.int32(1), once))
  return out
