"""Parallel prefix scans: associative_scan, and the two shape helpers it is built from,
slice_in_dim (a static slice along one dimension) and collapse (dimensions merged into one).
They compose existing primitives; cumlogsumexp (sorting.py) lowers to associative_scan.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.core.shape_poly import is_symbolic_dim, symbolic_slice
from revax._src.lax import shapes, slicing

__all__ = ["associative_scan", "collapse", "slice_in_dim"]


def _shape(x):
  return tuple(get_aval(x).shape)


def _ndim(x):
  return len(_shape(x))


def _dim(axis, ndim, name="axis"):
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name} {axis} is out of bounds for an array of rank {ndim}")
  return axis % ndim


@tree_util.accepts_array_leaves()
def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
  """`operand[..., start_index:limit_index:stride, ...]` along `axis` (static bounds; None and
  negative values as in Python slicing)."""
  shape = _shape(operand)
  axis = _dim(axis, len(shape))
  starts = [0] * len(shape)
  limits = list(shape)
  strides = [1] * len(shape)
  s = builtins.slice(start_index, limit_index, stride)
  if any(is_symbolic_dim(v) for v in (shape[axis], start_index, limit_index, stride)):
    starts[axis], limits[axis], strides[axis], backwards = symbolic_slice(s, shape[axis])
    if backwards:
      operand = shapes.rev(operand, (axis,))
    return slicing.slice(operand, starts, limits, strides)
  start, stop, step = s.indices(shape[axis])
  starts[axis], limits[axis], strides[axis] = start, builtins.max(start, stop), step
  return slicing.slice(operand, starts, limits, strides)


def collapse(operand, start_dimension, stop_dimension=None):
  """`operand` with dimensions [start_dimension, stop_dimension) merged into one."""
  shape = _shape(operand)
  lo = _dim(start_dimension, len(shape), "start_dimension") if shape else 0
  hi = len(shape) if stop_dimension is None else (
      stop_dimension % len(shape) if stop_dimension < 0 else stop_dimension)
  if hi < lo or hi > len(shape):
    raise ValueError(f"Invalid dimension range passed to collapse: {shape}"
                     f"[{start_dimension}:{stop_dimension}]")
  return shapes.reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])



def associative_scan(fn, elems, reverse=False, axis=0):
  """All prefix combinations `fn(... fn(fn(e0, e1), e2) ..., ei)` along `axis`, computed as a
  parallel scan in O(log n) rounds; `fn` must be associative and act elementwise on (pytrees
  of) arrays.

  Args:
    fn: associative binary function of two pytrees shaped like slices of `elems`.
    elems: a pytree of arrays sharing the size of `axis`.
    reverse: scan from the end.
    axis: the scanned axis.

  Returns:
    A pytree like `elems` of the prefix combinations.

  Example:
    >>> lax.associative_scan(lax.add, jnp.arange(5))
    Array([ 0,  1,  3,  6, 10], dtype=int32)
  """
  leaves, treedef = tree_util.tree_flatten(elems)
  if not leaves:
    return elems
  ndim = _ndim(leaves[0])
  axis = _dim(axis, ndim)
  n = _shape(leaves[0])[axis]
  if any(_shape(x)[axis] != n for x in leaves):
    raise ValueError(f"Array inputs to associative_scan must have the same first dimension. "
                     f"(saw: {[_shape(x) for x in leaves]})")
  if reverse:
    leaves = [shapes.rev(x, (axis,)) for x in leaves]

  def combine(a, b):
    out = fn(tree_util.tree_unflatten(treedef, a), tree_util.tree_unflatten(treedef, b))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    if out_tree != treedef:
      raise ValueError(f"the combine function of associative_scan must return a pytree of the "
                       f"elements' structure {treedef}, got {out_tree}")
    return out_leaves

  def sl(xs, start, stop, stride=1):
    return [slice_in_dim(x, start, stop, stride, axis) for x in xs]

  def interleave(evens, odds, length):
    # positions 0, 2, 4, ... from evens and 1, 3, ... from odds
    out = []
    for e, o in zip(evens, odds, strict=True):
      n_e = _shape(e)[axis]
      n_o = _shape(o)[axis]
      if n_o < n_e:
        pad_cfg = [(0, 0, 0)] * ndim
        pad_cfg[axis] = (0, 1, 0)
        o = shapes.pad(o, np.asarray(0, get_aval(o).dtype), pad_cfg)
      both = shapes.concatenate([shapes.expand_dims(e, (axis + 1,)),
                                 shapes.expand_dims(o, (axis + 1,))], axis + 1)
      merged = collapse(both, axis, axis + 2)
      out.append(slice_in_dim(merged, 0, length, 1, axis))
    return out

  def scan(xs):
    length = _shape(xs[0])[axis]
    if length < 2:
      return xs
    reduced = combine(sl(xs, 0, length - 1, 2), sl(xs, 1, length, 2))
    odd = scan(reduced)  # prefix results at positions 1, 3, 5, ...
    if length % 2 == 0:
      even_rest = combine(sl(odd, 0, _shape(odd[0])[axis] - 1), sl(xs, 2, length, 2))
    else:
      even_rest = combine(odd, sl(xs, 2, length, 2))
    evens = [shapes.concatenate([sl([x], 0, 1)[0], r], axis) for x, r in
             zip(xs, even_rest, strict=True)]
    return interleave(evens, odd, length)

  out = scan(leaves)
  if reverse:
    out = [shapes.rev(x, (axis,)) for x in out]
  return tree_util.tree_unflatten(treedef, out)
