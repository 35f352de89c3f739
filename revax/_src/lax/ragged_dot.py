"""Ragged (grouped) matrix products: ragged_dot and ragged_dot_general, composed exactly.

The lhs has one ragged dimension split into consecutive groups by `group_sizes`. Each group is
masked out of the lhs into its own slice of a new leading group axis (zeros elsewhere), as
JAX's own expansion on CPU does, and one `dot_general` then contracts:
1. ragged non-contracting dim (m): the group axis contracts with the rhs group dimension
   (each row of group i meets rhs[i]);
2. ragged contracting dim (k): the rhs is masked along its matching contracting dim too and the
   group axis stays a batch dimension in front of the result ([g, ...]);
3. ragged batch dim: an ordinary dot_general.
`group_sizes` is `[g]` or `[prefix..., g]` (the lhs batch dims and the dims of the ragged dim's
kind that come before it). Being a composition of dot_general, select_n, iota and cumsum, it
differentiates in lhs and rhs (group sizes are integers) and batches like them.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.lax import comparison, shapes, sorting
from revax._src.lax.dot import dot_general
from revax._src.lax import binary

__all__ = ["ragged_dot", "ragged_dot_general", "RaggedDotDimensionNumbers"]


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
  """The dot, ragged and group dimensions of `ragged_dot_general`.

  Args:
    dot_dimension_numbers: `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`.
    lhs_ragged_dimensions: the one ragged dimension of the lhs (a sequence of length 1).
    rhs_group_dimensions: the rhs group dimension (one when the ragged dim is non-contracting,
      none otherwise).
  """
  dot_dimension_numbers: tuple
  lhs_ragged_dimensions: Sequence[int]
  rhs_group_dimensions: Sequence[int]

  def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
    object.__setattr__(self, "dot_dimension_numbers",
                       tuple(tuple(tuple(int(d) for d in s) for s in t)
                             for t in dot_dimension_numbers))
    object.__setattr__(self, "lhs_ragged_dimensions", tuple(int(d) for d in lhs_ragged_dimensions))
    object.__setattr__(self, "rhs_group_dimensions", tuple(int(d) for d in rhs_group_dimensions))


_BASIC = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
  """Grouped matrix product: rows of `lhs` in group i multiply `rhs[i]`; as jax.lax.ragged_dot.

  Args:
    lhs: an (m, k) array.
    rhs: a (g, k, n) array.
    group_sizes: a (g,) integer array: the rows of each consecutive group.
    precision, preferred_element_type: as in `dot_general`.
    group_offset: not supported (None), as in JAX.
    out_sharding: where to place the result (a sharding; None: as XLA chooses).

  Returns:
    An (m, n) array (rows past the last group are zero).

  Example:
    >>> x = jnp.arange(10.).reshape(5, 2)
    >>> w = jnp.stack([jnp.eye(2), 2 * jnp.eye(2)])  # two groups of (2, 2) weights
    >>> lax.ragged_dot(x, w, jnp.array([2, 3], jnp.int32))  # rows 0-1 @ w[0], rows 2-4 @ w[1]
    Array([[ 0.,  1.],
           [ 2.,  3.],
           [ 8., 10.],
           [12., 14.],
           [16., 18.]], dtype=float32)
  """
  return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision=precision,
                            preferred_element_type=preferred_element_type,
                            group_offset=group_offset, out_sharding=out_sharding)


def _remaining(n, *used):
  used = {d for u in used for d in u}
  return [d for d in range(n) if d not in used]


def _mode(rank, dn: RaggedDotDimensionNumbers):
  (l_contract, _), (l_batch, _) = dn.dot_dimension_numbers
  ragged = dn.lhs_ragged_dimensions[0]
  if ragged in _remaining(rank, l_contract, l_batch):
    return "noncontracting"
  if ragged in l_contract:
    return "contracting"
  return "batch"


def _prefix_dims(mode, rank, ragged, batch, contract):
  batch, contract = list(batch), list(contract)
  if mode == "noncontracting":
    free = _remaining(rank, contract, batch)
    return batch + free[:free.index(ragged)]
  if mode == "contracting":
    return batch + contract[:contract.index(ragged)]
  return batch[:batch.index(ragged)]


def _check(lhs, rhs, gs, dn):
  def in_range(d, rank, what, arg):
    if not 0 <= d < rank:
      raise TypeError(f"ragged_dot_general requires {what} numbers to be nonnegative and less "
                      f"than the number of axes of the {arg} value, got {d} for {arg} of rank "
                      f"{rank}.")
  if len(dn.lhs_ragged_dimensions) != 1:
    raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
  ragged = dn.lhs_ragged_dimensions[0]
  in_range(ragged, lhs.ndim, "lhs ragged dimension", "lhs")
  if not dtypes.is_integer(gs.dtype):
    raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of "
                    "np.integer.")
  mode = _mode(lhs.ndim, dn)
  (l_contract, r_contract), (l_batch, r_batch) = dn.dot_dimension_numbers
  if gs.ndim == 0:
    raise TypeError("expected rank of group_sizes to be >=1.")
  prefix = _prefix_dims(mode, lhs.ndim, ragged, l_batch, l_contract)
  if gs.ndim != 1:
    want = tuple(lhs.shape[i] for i in prefix) + (gs.shape[-1],)
    if gs.shape != want:
      raise TypeError(f"expected group_sizes to have shape {want}, got {gs.shape}.")
  groups = gs.shape[-1]
  if mode in ("contracting", "batch") and dn.rhs_group_dimensions:
    raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when lhs "
                    "ragged dimension is contracting or batch.")
  if mode == "noncontracting":
    if len(dn.rhs_group_dimensions) != 1:
      raise TypeError("ragged_dot_general requires exactly one rhs group dimension when lhs "
                      "ragged dimension is noncontracting.")
    g_dim = dn.rhs_group_dimensions[0]
    in_range(g_dim, rhs.ndim, "rhs group dimension", "rhs")
    if g_dim in r_batch or g_dim in r_contract:
      raise TypeError("ragged_dot_general requires rhs group dimension numbers to be distinct "
                      "from contracting and batch dimensions.")
    if rhs.shape[g_dim] != groups:
      raise TypeError(f"expected rhs group dimension size to be {groups}, got "
                      f"{rhs.shape[g_dim]}.")
  return mode, ragged, prefix


def _expand(x, dim, gs, prefix):
  """[g] + x.shape: group i of `x` along `dim` (its group's rows; zeros elsewhere). `gs` is
  [prefix sizes..., g], its leading dims matching the dims `prefix` of x."""
  aval = get_aval(x)
  groups = get_aval(gs).shape[-1]
  shape = (groups,) + aval.shape
  ends = sorting.cumsum(gs, axis=get_aval(gs).ndim - 1)
  starts = binary.sub(ends, gs)
  to_front = tuple([get_aval(gs).ndim - 1] + list(range(get_aval(gs).ndim - 1)))
  bdims = (0,) + tuple(p + 1 for p in prefix)
  ends = shapes.broadcast_in_dim(shapes.transpose(ends, to_front), shape, bdims)
  starts = shapes.broadcast_in_dim(shapes.transpose(starts, to_front), shape, bdims)
  pos = shapes.broadcasted_iota(get_aval(gs).dtype, shape, dim + 1)
  inside = binary.bitwise_and(comparison.le(starts, pos), comparison.lt(pos, ends))
  xb = shapes.broadcast_in_dim(x, shape, tuple(range(1, len(shape))))
  zeros = shapes.broadcast_in_dim(np.zeros((), aval.dtype), shape, ())
  return comparison.select_n(inside, zeros, xb)


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
  """Ragged dot with general dimension numbers; as jax.lax.ragged_dot_general.

  Args:
    lhs, rhs: arrays with batch and contracting dimensions as in `dot_general`.
    group_sizes: an integer array `[g]` or `[prefix..., g]` of consecutive group sizes along
      the lhs ragged dimension.
    ragged_dot_dimension_numbers: a `RaggedDotDimensionNumbers`.
    precision, preferred_element_type: as in `dot_general`.
    group_offset: not supported (None), as in JAX.
    out_sharding: where to place the result (a sharding; None: as XLA chooses).

  Returns:
    `dot_general`'s result, with a leading group dimension when the ragged dim contracts.

  Example:
    >>> x = jnp.arange(10.).reshape(5, 2)
    >>> w = jnp.stack([jnp.eye(2), 2 * jnp.eye(2)])
    >>> dn = lax.RaggedDotDimensionNumbers(dot_dimension_numbers=(([1], [1]), ([], [])),
    ...                                    lhs_ragged_dimensions=[0], rhs_group_dimensions=[0])
    >>> lax.ragged_dot_general(x, w, jnp.array([2, 3], jnp.int32), dn)  # as ragged_dot
    Array([[ 0.,  1.],
           [ 2.,  3.],
           [ 8., 10.],
           [12., 14.],
           [16., 18.]], dtype=float32)
  """
  if group_offset is not None:
    raise NotImplementedError("Unimplemented group_offset support.")
  dn = ragged_dot_dimension_numbers
  if not isinstance(dn, RaggedDotDimensionNumbers):
    raise TypeError(f"ragged_dot_general takes RaggedDotDimensionNumbers, got {dn!r}")
  la, ra, ga = get_aval(lhs), get_aval(rhs), get_aval(group_sizes)
  mode, ragged, prefix = _check(la, ra, ga, dn)
  (l_contract, r_contract), (l_batch, r_batch) = dn.dot_dimension_numbers
  if ga.ndim == 1:
    group_sizes = shapes.broadcast_in_dim(
        group_sizes, tuple(la.shape[i] for i in prefix) + ga.shape, (len(prefix),))
  inc = lambda ds: tuple(d + 1 for d in ds)
  from revax._src.lax.sharding_constraint import placed  # beside lax, imported on use
  dot_ = lambda x, y, dims: placed(dot_general(x, y, dims, precision=precision,
                                               preferred_element_type=preferred_element_type),
                                   out_sharding)
  if mode == "noncontracting":
    return dot_(_expand(lhs, ragged, group_sizes, prefix), rhs,
                ((inc(l_contract) + (0,), tuple(r_contract) + dn.rhs_group_dimensions),
                 (inc(l_batch), tuple(r_batch))))
  if mode == "contracting":
    r_ragged = r_contract[l_contract.index(ragged)]
    r_prefix = _prefix_dims(mode, ra.ndim, r_ragged, r_batch, r_contract)
    return dot_(_expand(lhs, ragged, group_sizes, prefix),
                _expand(rhs, r_ragged, group_sizes, r_prefix),
                ((inc(l_contract), inc(r_contract)), ((0,) + inc(l_batch), (0,) + inc(r_batch))))
  return dot_(lhs, rhs, dn.dot_dimension_numbers)
