"""Sharding rules of the structural primitives: how a split over Explicit mesh axes flows from
operands to results (core/sharding_types.py explains shardings in types).

Elementwise primitives get theirs where they are made (standard.unop / naryop); the rules of the
shape, reduction, contraction, slicing and sorting families sit here together, since each is a
few lines that read only the primitive's params. A primitive with no rule types its result
unsplit (XLA's partitioner then chooses the layout; the values are the same).
"""
from __future__ import annotations

import math

from revax._src.core import sharding_types as st
from revax._src.core.sharding_types import merge, spec_parts
from revax._src.lax import (binary, bits, comparison, conversion, reductions, shapes, slicing,
                            sorting, unary)
from revax._src.lax.dot import dot_general_p
from revax._src.lax.stop_gradient import stop_gradient_p

__all__ = []

rules = st.rules


def _broadcast_in_dim(avals, params, outs):
  parts = [None] * len(params["shape"])
  src = spec_parts(avals[0])
  for i, d in enumerate(params["broadcast_dimensions"]):
    if avals[0].shape[i] == params["shape"][d]:  # a size-1 dimension that grows is not split
      parts[d] = src[i]
  return [tuple(parts)]


def _transpose(avals, params, outs):
  src = spec_parts(avals[0])
  return [tuple(src[p] for p in params["permutation"])]


def _squeeze(avals, params, outs):
  gone = {d % max(len(avals[0].shape), 1) for d in params["dimensions"]}
  return [tuple(p for d, p in enumerate(spec_parts(avals[0])) if d not in gone)]


def _reshape(avals, params, outs):
  """Dimensions kept whole keep their split; a split dimension that is divided into several
  keeps it on the major one when its size allows; merged or regrouped split dimensions become
  unsplit (XLA regathers them)."""
  src, old, new = spec_parts(avals[0]), avals[0].shape, tuple(params["new_sizes"])
  parts = [None] * len(new)
  i = j = 0
  while i < len(old) and j < len(new):
    gi, gj = [i], [j]
    a, b = old[i], new[j]
    while a != b:
      if a < b:
        i += 1
        if i >= len(old):
          break
        gi.append(i)
        a *= old[i]
      else:
        j += 1
        if j >= len(new):
          break
        gj.append(j)
        b *= new[j]
    split = [d for d in gi if src[d] is not None]
    if len(gi) == 1 and split:
      part, size = src[gi[0]], _size(avals[0], src[gi[0]])
      if new[gj[0]] % size == 0:  # on the major dimension of the ones it is divided into
        parts[gj[0]] = part
    elif len(gj) == 1 and split == [gi[0]] and old[gi[0]] % _size(avals[0], src[gi[0]]) == 0:
      parts[gj[0]] = src[gi[0]]  # merged with unsplit minor dimensions
    i, j = i + 1, j + 1
  return [tuple(parts)]


def _size(aval, part) -> int:
  mesh = aval.sharding.mesh
  axes = part if isinstance(part, tuple) else (part,)
  return math.prod(mesh.shape[a] for a in axes)


def _dot_general(avals, params, outs):
  """Batch dimensions (agreeing between the operands), then lhs and rhs free dimensions keep
  their splits; contracted dimensions leave the result (XLA sums their pieces)."""
  (lc, rc), (lb, rb) = params["dimension_numbers"]
  lhs, rhs = spec_parts(avals[0]), spec_parts(avals[1])
  batch = tuple(merge("dot_general batch dimensions", (lhs[a], rhs[b]))
                for a, b in zip(lb, rb, strict=True))
  lfree = tuple(p for d, p in enumerate(lhs) if d not in lc and d not in lb)
  rfree = tuple(p for d, p in enumerate(rhs) if d not in rc and d not in rb)
  return [batch + lfree + rfree]  # (one axis on two dimensions: sharding_types.typed raises)


def _concatenate(avals, params, outs):
  dim = params["dimension"]
  rank = len(outs[0].shape)
  spec = []
  for d in range(rank):
    parts = [spec_parts(a)[d] for a in avals]
    spec.append(None if d == dim else merge("concatenate", parts))
  return [tuple(spec)]


def _sliced(avals, params, outs):
  """Dimensions the slice keeps whole keep their split; cut ones become unsplit."""
  src = spec_parts(avals[0])
  return [tuple(p if avals[0].shape[d] == outs[0].shape[d] else None
                for d, p in enumerate(src))] * len(outs)


def _top_k(avals, params, outs):
  src = list(spec_parts(avals[0]))
  src[params.get("axis", -1) % len(src)] = None
  return [tuple(src)] * len(outs)


def _bitcast(avals, params, outs):
  src = spec_parts(avals[0])
  rank = len(outs[0].shape)
  return [tuple(src[:rank]) + (None,) * max(0, rank - len(src))]


def _sort(avals, params, outs):
  return [spec_parts(avals[0])] * len(outs)


rules[shapes.broadcast_in_dim_p] = _broadcast_in_dim
rules[shapes.transpose_p] = _transpose
rules[shapes.squeeze_p] = _squeeze
rules[shapes.reshape_p] = _reshape
rules[shapes.rev_p] = st.same_as_operand()
rules[shapes.pad_p] = _sliced
rules[shapes.concatenate_p] = _concatenate
rules[dot_general_p] = _dot_general
for _p in (reductions.reduce_sum_p, reductions.reduce_prod_p, reductions.reduce_max_p,
           reductions.reduce_min_p, reductions.reduce_and_p, reductions.reduce_or_p,
           reductions.argmax_p, reductions.argmin_p):
  rules[_p] = st.drop_axes("axes")
for _p in (sorting.cumsum_p, sorting.cumprod_p, sorting.cummax_p, sorting.cummin_p,
           bits.reduce_precision_p, stop_gradient_p,
           slicing.dynamic_update_slice_p, slicing.scatter_p):
  rules[_p] = st.same_as_operand()
rules[sorting.sort_p] = _sort
rules[sorting.top_k_p] = _top_k
rules[slicing.slice_p] = _sliced
rules[slicing.dynamic_slice_p] = _sliced
rules[conversion.convert_element_type_p] = st.elementwise
rules[conversion.bitcast_convert_type_p] = _bitcast
for _p in (binary.pow_p, binary.complex_p, comparison.select_n_p, comparison.clamp_p,
           unary.abs_p, unary.integer_pow_p, unary.real_p, unary.imag_p, unary.conj_p):
  rules[_p] = st.elementwise
