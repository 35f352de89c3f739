"""Sorting: sort and argsort on lax.sort (NaNs last; stable by default)."""
from __future__ import annotations

from revax._src import lax
from revax._src.core import dtypes
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.numpy.util import convert_pytree_operands


def _prepare(fun_name, a, axis, kind, order):
  util.check_arraylike(fun_name, a)
  if order is not None:
    raise TypeError(f"{fun_name}: the 'order' argument (structured arrays) is not supported")
  a = util.as_array(a)
  if axis is None:
    from revax._src.numpy.shape_ops import ravel
    return ravel(a), 0
  return a, util.canonicalize_axis(axis, aval_of(a).ndim)


def sort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True,
         descending: bool = False):
  """`a` sorted along `axis` (flattened if None); NaNs sort last (first if `descending`).

  Example:
    >>> jnp.sort(jnp.array([3, 1, 2]))
    Array([1, 2, 3], dtype=int32)
  """
  a, axis = _prepare("sort", a, axis, kind, order)
  out = lax.sort(a, dimension=axis, is_stable=stable)
  return lax.rev(out, (axis,)) if descending else out


def argsort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True,
            descending: bool = False):
  """Indices that sort `a` along `axis` (flattened if None); equal elements keep their order.

  Example:
    >>> jnp.argsort(jnp.array([3, 1, 2]))
    Array([1, 2, 0], dtype=int32)
  """
  a, axis = _prepare("argsort", a, axis, kind, order)
  shape = aval_of(a).shape
  index_dtype = dtypes.default_int_dtype()
  iota = lax.broadcasted_iota(index_dtype, shape, axis)
  # as jax's: a stable descending sort reverses the array and the indices before sorting and
  # the indices after (equal elements keep their order); an unstable one only reverses after
  if descending and stable:
    a, iota = lax.rev(a, (axis,)), lax.rev(iota, (axis,))
  idx = lax.sort((a, iota), dimension=axis, is_stable=stable, num_keys=1)[1]
  return lax.rev(idx, (axis,)) if descending else idx

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("argsort", "sort",))
