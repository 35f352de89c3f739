"""Searching and ordering beyond sort/argsort: searchsorted, lexsort, partition, argpartition
and sort_complex.

searchsorted is a vectorized binary search: a fixed number (ceil(log2(n + 1))) of halving steps
in a fori_loop, comparing in NumPy's total order where NaNs sort last, so it works under jit and
vmap with any number of queries.
"""
from __future__ import annotations

import math
import operator

from revax._src import lax
from revax._src.core import dtypes, mesh_context
from revax._src.core import sharding_types as st
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.numpy.util import convert_pytree_operands


def _isnan(x):
  return lax.ne(x, x)


def _total_lt(x, y):
  """x < y in jax's sorting order: NaNs after every number; complex numbers lexicographically
  on (real, imag), each part in that order (jax's _sort_lt_comparator: NaN+1j sorts last)."""
  if not dtypes.is_inexact(aval_of(x).dtype):
    return lax.lt(x, y)
  if dtypes.is_complex(aval_of(x).dtype):
    xr, xi, yr, yi = lax.real(x), lax.imag(x), lax.real(y), lax.imag(y)
    real_eq = lax.bitwise_or(lax.eq(xr, yr), lax.bitwise_and(_isnan(xr), _isnan(yr)))
    return lax.bitwise_or(_total_lt(xr, yr), lax.bitwise_and(real_eq, _total_lt(xi, yi)))
  return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(_isnan(y), lax.bitwise_not(_isnan(x))))


def _refuse_split_queries(a, v) -> None:
  """jax 0.10.2's scan search (methods 'scan' and 'scan_unrolled') vmaps a search of one query
  over each axis of `v`, innermost first, and batching its scan over an axis split on an
  Explicit mesh axis fails: the scan's body is typed on an empty mesh, so the split's axis is
  "not found in mesh: ()". revax's search is one vectorized loop; it raises jax's ValueError
  where jax's does. A split `a` is refused before that: jax's search reads `a[mid]` with a
  dynamic_slice of one element, which its sharding rule refuses.

  Raises:
    ShardingTypeError: `a` is split (jax's dynamic_slice message).
    ValueError: naming the innermost split axis of `v`, with the spec of `v`'s dimensions from
      there on (what jax's batching of that axis builds).
  """
  a_aval = aval_of(a)
  (a_part,) = st.spec_parts(a_aval)
  if a_part is not None:
    pieces = math.prod(a_aval.sharding.mesh.shape[n] for n in st.axes_of_part(a_part))
    if a_aval.shape[0] != 1 and 1 % pieces:
      raise st.ShardingTypeError(
          f"dynamic_slice on sharded dims where out dim (1) is not divisible by mesh axes "
          f"({pieces}) with spec ({a_part}) is not implemented. Got input "
          f"type={a_aval.str_short()} and output shape=(1,)")
    return
  parts = st.spec_parts(aval_of(v))
  split = [d for d, p in enumerate(parts) if p is not None]
  if not split:
    return
  spec = mesh_context.spec_type(*parts[split[-1]:])
  raise ValueError(f"Resource axis: {st.axes_of_part(parts[split[-1]])[0]} of {spec!r} is not "
                   f"found in mesh: ().")


def _searchsorted_by_sorting(a, v, side):
  """jax's method='sort': each query's rank among a and the queries, less its rank among the
  queries (the same answer as the scan on sorted `a`; on unsorted `a`, jax's answer)."""
  def rank(x):
    n = aval_of(x).shape[0]
    idx = lax.iota(dtypes.int32, n)
    return util.full_of((n,), 0, dtypes.int32).at[lax.sort_key_val(x, idx)[1]].set(idx)
  q = lax.reshape(v, (aval_of(v).size,))
  na, nq = aval_of(a).shape[0], aval_of(q).shape[0]
  if side == "left":
    index = rank(lax.concatenate([q, a], 0))[:nq]
  else:
    index = rank(lax.concatenate([a, q], 0))[na:]
  return lax.reshape(lax.sub(index, rank(q)), aval_of(v).shape)


def searchsorted(a, v, side: str = "left", sorter=None, *, method: str = "scan"):
  """Indices where the elements of `v` would be inserted into the sorted 1-D `a` to keep it
  sorted.

  Args:
    a: a sorted 1-D array (or any 1-D array with `sorter` the indices that sort it).
    v: the values to place (any shape).
    side: 'left' (the first suitable index) or 'right' (the last).
    sorter: optional int array of indices that sort `a`.
    method: 'scan', 'scan_unrolled', 'sort' or 'compare_all' (the same result; as jax's, the
      scan methods refuse queries split over an Explicit mesh axis, 'compare_all' keeps their
      split).

  Returns:
    int32 indices of v's shape.

  Example:
    >>> jnp.searchsorted(jnp.array([1., 2., 3.]), jnp.array([2.5, 0., 2.]))
    Array([2, 0, 1], dtype=int32)
    >>> jnp.searchsorted(jnp.array([1., 2., 3.]), 2., side='right')
    Array(2, dtype=int32)
  """
  util.check_arraylike("searchsorted", a, v)
  if side not in ("left", "right"):
    raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of "
                     f"['left', 'right'].")
  if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
    raise ValueError(f"method={method!r} not recognized; expected one of 'scan', "
                     f"'scan_unrolled', 'sort', 'compare_all'")
  if aval_of(a).ndim != 1:
    raise ValueError("a should be 1-dimensional")
  a = util.as_array(a)
  if sorter is not None:
    a = a[util.as_array(sorter)]
  a, v = util.promote_dtypes(a, util.as_array(v))
  n = aval_of(a).shape[0]
  index_dtype = dtypes.int32
  shape = aval_of(v).shape
  if n == 0:
    return util.full_of(shape, 0, index_dtype)
  if method in ("scan", "scan_unrolled"):
    _refuse_split_queries(a, v)
  if method == "sort":
    return _searchsorted_by_sorting(a, v, side)
  if method == "compare_all":
    av = lax.broadcast_in_dim(a, shape + (n,), (len(shape),))
    vv = lax.broadcast_in_dim(v, shape + (n,), tuple(range(len(shape))))
    before = _total_lt(av, vv) if side == "left" else lax.bitwise_not(_total_lt(vv, av))
    return lax.reduce_sum(lax.convert_element_type(before, index_dtype), (len(shape),))

  def step(_, bounds):
    lo, hi = bounds
    mid = lax.div(lax.add(lo, hi), util.constant_like(lo, 2))
    a_mid = a[lax.min(mid, util.constant_like(mid, n - 1))]
    # go right when a[mid] belongs before v
    right = _total_lt(a_mid, v) if side == "left" else lax.bitwise_not(_total_lt(v, a_mid))
    right = lax.bitwise_and(right, lax.lt(lo, hi))
    lo = lax.select_n(right, lo, lax.add(mid, util.constant_like(mid, 1)))
    hi = lax.select_n(right, lax.select_n(lax.lt(lo, hi), hi, mid), hi)
    return lo, hi

  lo = util.full_of(shape, 0, index_dtype)
  hi = util.full_of(shape, n, index_dtype)
  steps = math.ceil(math.log2(n + 1))
  lo, _ = lax.fori_loop(0, steps, step, (lo, hi))
  return lo


def lexsort(keys, axis: int = -1):
  """Indices that sort by several keys: the last key is the primary one.

  Args:
    keys: a sequence of arrays of one shape (or a 2-D array whose rows are keys).
    axis: the axis to sort along.
  """
  key_list = list(keys) if isinstance(keys, (tuple, list)) else [
      util.as_array(keys)[i] for i in range(aval_of(keys).shape[0])]
  util.check_arraylike(*key_list)
  if not key_list:
    raise TypeError("need sequence of keys with len > 0 in lexsort")
  key_list = [util.as_array(k) for k in key_list]
  shapes = {aval_of(k).shape for k in key_list}
  if len(shapes) > 1:
    raise ValueError(f"all keys need to be the same shape, got {sorted(shapes)}")
  shape = shapes.pop()
  if not shape:
    return util.scalar_constant(0, dtypes.default_int_dtype())
  axis = util.canonicalize_axis(axis, len(shape))
  iota = lax.broadcasted_iota(dtypes.default_int_dtype(), shape, axis)
  return lax.sort((*key_list[::-1], iota), dimension=axis, is_stable=True,
                  num_keys=len(key_list))[-1]


def _check_kth(fun_name, a, kth, axis):
  util.check_arraylike(fun_name, a)
  nd = aval_of(a).ndim
  if nd == 0:
    raise TypeError(f"{fun_name} requires an array of at least one dimension")
  axis = util.canonicalize_axis(axis, nd)
  n = aval_of(a).shape[axis]
  kth = operator.index(kth)
  if not -n <= kth < n:
    raise ValueError(f"kth(={kth}) out of bounds for axis of size {n}")
  return axis


def _last_axis_view(fun_name, a, kth, axis):
  """`a` (an array) with `axis` swapped to the end, the swap, and kth made non-negative."""
  from revax._src.numpy.shape_ops import swapaxes
  axis = _check_kth(fun_name, a, kth, axis)
  a = util.as_array(a)
  if dtypes.is_complex(aval_of(a).dtype):
    raise NotImplementedError(f"jnp.{fun_name} for complex dtype is not implemented.")
  n = aval_of(a).shape[axis]
  return swapaxes(a, axis, -1), axis, operator.index(kth) % n


def _negated_for_bottom(arr):
  """-arr, in which top_k finds arr's smallest; unsigned integers as -(arr + 1), as jax's, so
  that 0 is not its own negation."""
  if dtypes.is_unsigned_integer(aval_of(arr).dtype):
    arr = lax.add(arr, util.full_of((), 1, aval_of(arr).dtype))
  return lax.neg(arr)


def partition(a, kth: int, axis: int = -1):
  """`a` rearranged along `axis` so the element at `kth` is the one a sort would put there, the
  ones before it are no greater and the ones after it no smaller.

  The order within each side is jax's (two `lax.top_k` calls: the kth + 1 smallest ascending,
  then the rest descending), and as in jax, NaNs with the sign bit set sort first.

  Args:
    a: the array.
    kth: static index of the element put in its sorted place.
    axis: static axis to partition along.

  Returns:
    The partitioned copy of `a`.

  Example:
    >>> jnp.partition(jnp.array([6, 8, 4, 3, 1, 9, 7, 5, 2, 3]), 4)
    Array([1, 2, 3, 3, 4, 9, 8, 7, 6, 5], dtype=int32)
  """
  from revax._src.numpy.shape_ops import swapaxes
  arr, axis, kth = _last_axis_view("partition", a, kth, axis)
  shape = aval_of(arr).shape
  if dtypes.is_unsigned_integer(aval_of(arr).dtype):
    one = util.full_of((), 1, aval_of(arr).dtype)
    bottom = lax.sub(lax.neg(lax.top_k(_negated_for_bottom(arr), kth + 1)[0]), one)
  else:
    bottom = lax.neg(lax.top_k(lax.neg(arr), kth + 1)[0])
  top = lax.top_k(arr, shape[-1] - kth - 1)[0]
  return swapaxes(lax.concatenate([bottom, top], len(shape) - 1), -1, axis)


def argpartition(a, kth: int, axis: int = -1):
  """Indices that `partition` `a` along `axis`, in jax's order: the kth + 1 smallest ascending
  (lax.top_k of the negation), then the other indices in increasing order.

  Args:
    a: the array.
    kth: static index of the element put in its sorted place.
    axis: static axis to partition along.

  Returns:
    int32 indices along `axis`.

  Example:
    >>> jnp.argpartition(jnp.array([6, 8, 4, 3, 1, 9, 7, 5, 2, 3]), 4)
    Array([4, 8, 3, 9, 2, 0, 1, 5, 6, 7], dtype=int32)
  """
  from revax._src.numpy.shape_ops import swapaxes
  arr, axis, kth = _last_axis_view("argpartition", a, kth, axis)
  shape = aval_of(arr).shape
  nd = len(shape)
  bottom_ind = lax.top_k(_negated_for_bottom(arr), kth + 1)[1]
  # the other indices: top_k of a proxy that is 0 at the bottom ones and 1 elsewhere (jax's)
  iota = lax.broadcasted_iota(aval_of(bottom_ind).dtype, (*shape[:-1], 1, shape[-1]), nd)
  chosen = lax.eq(iota, lax.expand_dims(bottom_ind, (nd,)))
  taken = lax.reduce_or(chosen, (nd - 1,))
  proxy = lax.convert_element_type(lax.bitwise_not(taken), dtypes.default_float_dtype())
  top_ind = lax.top_k(proxy, shape[-1] - kth - 1)[1]
  return swapaxes(lax.concatenate([bottom_ind, top_ind], nd - 1), -1, axis)


def sort_complex(a):
  """`a` sorted along its last axis (real part first, then imaginary), as a complex array."""
  from revax._src.numpy.sorting import sort
  util.check_arraylike("sort_complex", a)
  out = sort(a)
  dt = aval_of(out).dtype
  if not dtypes.is_complex(dt):
    dt = dtypes.complex128 if dt == dtypes.float64 else dtypes.complex64
  return lax.convert_element_type(out, dt)

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("sort_complex",))
