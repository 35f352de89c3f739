"""Sharding rules of the structural primitives: how a split over Explicit mesh axes flows from
operands to results (core/sharding_types.py explains shardings in types).

Elementwise primitives get theirs where they are made (standard.unop / naryop); the rules of the
shape, reduction, contraction, slicing and sorting families sit here together, since each is a
few lines that read only the primitive's params. A primitive with no rule types its result
unsplit (XLA's partitioner then chooses the layout; the values are the same).
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core import sharding_types as st
from revax._src.core.sharding_types import merge, spec_parts
from revax._src.interpreters import ad
from revax._src.lax import (binary, bits, comparison, conversion, reductions, shapes, slicing,
                            sorting, special, stacking, unary)
from revax._src.lax.convolution import conv_general_dilated_p
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
  """JAX's rule: an unsplit operand gives an unsplit result; a reshape that only adds or drops
  size-1 dimensions keeps the splits; one that splits one dimension into several gives its
  axes to the new dimensions major first (as their sizes divide), and one that merges several
  into one gives it their axes (the merged dimensions' splits, in order, none unsplit before a
  split one). Any other reshape of a split operand needs an `out_sharding=`.

  Raises:
    ShardingTypeError: the result's split cannot be told from the operand's.
  """
  new = tuple(params["new_sizes"])
  given = _given(params, len(new), "sharding")
  if given is not None:
    return [given]
  op, src = avals[0], spec_parts(avals[0])
  if all(p is None for p in src):
    return [(None,) * len(new)]
  if [n for n in op.shape if n != 1] == [n for n in new if n != 1]:
    kept = iter(p for n, p in zip(op.shape, src, strict=True) if n != 1)
    return [tuple(None if n == 1 else next(kept) for n in new)]
  dims = params.get("dimensions")
  try:
    is_split, out_split = _split_on_one_axis(op.shape, new)
    if is_split:
      return [_split_an_axis(op, src, out_split, new, dims)]
    is_merge, merged = _split_on_one_axis(new, op.shape) if len(new) < len(op.shape) \
        else (False, [])
    if is_merge:
      return [_merge_an_axis(op, src, merged, new, dims)]
  except _ReshapeExplicitError:
    pass
  _raise_reshape_error(op, new)


class _ReshapeExplicitError(Exception):
  pass


def _raise_reshape_error(op, new):
  raise st.ShardingTypeError(
      "This reshape is not supported. Please specify the sharding of the output via the "
      f"`out_sharding` argument of revax.lax.reshape. Got operand type: {op}, new sizes: "
      f"{new}")


def _split_on_one_axis(op_shape, new_sizes):
  """(True, one entry per operand dimension: its size, or the list of new sizes it splits
  into) when the reshape splits operand dimensions one by one (JAX's analysis); (False, [])
  when it does not."""
  if len(new_sizes) <= len(op_shape):
    return False, []
  orig = op_shape
  num_1s = 0
  while op_shape and new_sizes and op_shape[-1] == 1 and new_sizes[-1] == 1:
    num_1s += 1
    op_shape, new_sizes = op_shape[:-1], new_sizes[:-1]
  i = j = count = 0
  out = []
  while j < len(new_sizes):
    if i >= len(op_shape):
      return False, []
    if op_shape[i] == new_sizes[j]:
      out.append(op_shape[i])
    else:
      count += 1
      if count > 1:
        raise _ReshapeExplicitError()
      temp = [new_sizes[j]]
      next_j, next_i = j + 1, i + 1
      while (math.prod(temp) != op_shape[i]
             or (next_j < len(new_sizes) and new_sizes[next_j] == 1)):
        if math.prod(temp) > op_shape[i]:
          return False, []
        if (math.prod(temp) == op_shape[i] and next_i < len(op_shape)
            and new_sizes[next_j] == op_shape[next_i]):
          break
        j += 1
        if j >= len(new_sizes):
          return False, []
        temp.append(new_sizes[j])
        next_j += 1
      out.append(temp)
    i += 1
    j += 1
  out.extend([1] * num_1s)
  if len(out) != len(orig):
    return False, []
  return True, out


def _split_partitions(mesh, axes, sizes, op, new):
  """The axes `axes` (major first) dealt to dimensions of `sizes`, each taking axes while its
  size is still divisible (JAX's split_partitions)."""
  it = iter(axes)
  parts = []
  for o in sizes:
    taken = []
    while o > 1:
      a = next(it, None)
      if a is None:
        break
      o, rem = divmod(o, mesh.shape[a])
      if rem:
        _raise_reshape_error(op, new)
      taken.append(a)
    parts.append(None if not taken else taken[0] if len(taken) == 1 else tuple(taken))
  if next(it, None) is not None:
    _raise_reshape_error(op, new)
  return parts


def _split_an_axis(op, src, out_split, new, dims):
  spec = []
  for out, part in zip(out_split, src, strict=True):
    if not isinstance(out, list):
      spec.append(part)
    elif part is None:
      spec.extend([None] * len(out))
    elif dims is None:
      spec.extend(_split_partitions(op.sharding.mesh, st.axes_of_part(part), out, op, new))
    else:
      _raise_reshape_error(op, new)
  return tuple(spec)


def _merge_an_axis(op, src, merged, new, dims):
  spec = []
  it = iter(src)
  for n, group in zip(new, merged, strict=True):
    if not isinstance(group, list):
      spec.append(next(it))
      continue
    parts = [next(it) for _ in group]
    if all(p is None for p in parts):
      spec.append(None)
    elif dims is None:
      flat = [a if p is not None else None for p in parts
              for a in (st.axes_of_part(p) or (None,))]
      while flat[-1] is None:
        flat.pop()
      if None in flat:
        _raise_reshape_error(op, new)
      spec.extend(_split_partitions(op.sharding.mesh, flat, [n], op, new))
    else:
      _raise_reshape_error(op, new)
  return tuple(spec)


def _given(params, rank: int, name: str = "out_sharding"):
  """The result's spec from an `out_sharding=` the equation carries (its Explicit axes), or
  None when it carries none."""
  given = params.get(name)
  if given is None:
    return None
  return st.explicit_parts(given, rank) or (None,) * rank


def _dot_general(avals, params, outs):
  """JAX's rule: batch dimensions take lhs's split (rhs's must agree), free dimensions keep
  theirs, and contracted ones leave the result; where both operands split a contracted
  dimension the result's split is ambiguous (XLA could sum the pieces or not) and the program
  must say it with `out_sharding=`.

  Raises:
    ShardingTypeError: batch or contracting dimensions split differently, or both operands
      split a contracted dimension and no out_sharding is given.
  """
  given = _given(params, len(outs[0].shape))
  if given is not None:
    return [given]
  (lc, rc), (lb, rb) = params["dimension_numbers"]
  lhs, rhs = spec_parts(avals[0]), spec_parts(avals[1])
  lbs, rbs = tuple(lhs[i] for i in lb), tuple(rhs[i] for i in rb)
  lcs, rcs = tuple(lhs[i] for i in lc), tuple(rhs[i] for i in rc)
  _check_specs_match(lbs, rbs, "dot_general requires lhs batch dimensions and rhs batch "
                     f"dimensions to have the consistent sharding, got {lbs} and {rbs}.")
  _check_specs_match(lcs, rcs, "dot_general requires contracting dimensions to have "
                     f"consistent sharding, got {lcs} and {rcs}.")
  if any(l is not None and r is not None for l, r in zip(lcs, rcs, strict=True)):
    raise st.ShardingTypeError(
        "Contracting dimensions are sharded and it is ambiguous how the output should be "
        "sharded. Please specify the output sharding via the `out_sharding` parameter. Got "
        f"lhs_contracting_spec={lcs} and rhs_contracting_spec={rcs}")
  lfree = tuple(p for d, p in enumerate(lhs) if d not in lc and d not in lb)
  rfree = tuple(p for d, p in enumerate(rhs) if d not in rc and d not in rb)
  return [lbs + lfree + rfree]  # (one axis on two dimensions: sharding_types.typed raises)


def _check_specs_match(lhs_spec, rhs_spec, msg):
  for l, r in zip(lhs_spec, rhs_spec, strict=True):
    if l is not None and r is not None and st.axes_of_part(l) != st.axes_of_part(r):
      raise st.ShardingTypeError(msg)


def _same_split(avals, what: str):
  """The one split all split operands share (JAX: operands typed over a mesh must have the same
  sharding; unsplit revax operands count as having none, like JAX's NumPy operands).

  Raises:
    ShardingTypeError: two split operands differ."""
  split = [spec_parts(a) for a in avals if a.sharding is not None]
  if any(p != split[0] for p in split[1:]):
    raise st.ShardingTypeError(what.format(", ".join(str(a.sharding) for a in avals)))
  return split[0] if split else None


def _concatenate(avals, params, outs):
  """JAX's rule: the operands' shardings agree, and the result has it (the concatenated
  dimension included)."""
  spec = _same_split(avals, "All operands should have the same sharding. Got shardings {}")
  return [spec]


def _select_n(avals, params, outs):
  """JAX's rule: the cases agree, and `which` is a scalar or split as they are."""
  which, cases = avals[0], avals[1:]
  spec = _same_split(cases, "select cases must have the same shardings, got [{}].")
  if which.shape and which.sharding is not None and spec_parts(which) != spec:
    raise st.ShardingTypeError(
        f"select `which` must be scalar or have the same sharding as cases, got `which` "
        f"sharding {which.sharding} but case sharding {cases[0].sharding}.")
  return [spec or (None,) * len(outs[0].shape)]


def _sliced(avals, params, outs):
  """Dimensions the slice keeps whole keep their split; cut ones become unsplit (what revax's
  own expansions get, see `_varying_out_shape`)."""
  src = spec_parts(avals[0])
  return [tuple(p if avals[0].shape[d] == outs[0].shape[d] else None
                for d, p in enumerate(src))] * len(outs)


def _varying_out_shape(name: str, shown_shape=tuple):
  """JAX's rule for slicing and padding: each dimension keeps its split where its new size is
  divisible by the split's device count (so its pieces stay even). Inside revax's own
  expansions (sharding_types.internal_expansion: scan as a loop, lowerings written in revax),
  which slice split values where JAX's lowerings do not, cut dimensions become unsplit.

  Raises:
    ShardingTypeError: a split dimension's new size is not divisible so."""
  def rule(avals, params, outs):
    if st.in_internal_expansion():  # (kept splits, where `apply` would unsplit them all)
      return _sliced(avals, params, outs)
    op, src = avals[0], spec_parts(avals[0])
    for n_in, n_out, part in zip(op.shape, outs[0].shape, src, strict=True):
      if n_in != n_out and part is not None and n_out % _devices(op, part):
        raise st.ShardingTypeError(
            f"{name} on sharded dims where out dim ({n_out}) is not divisible by mesh axes "
            f"({_devices(op, part)}) with spec ({part}) is not implemented. Got input "
            f"type={op.str_short()} and output shape={shown_shape(outs[0].shape)}")
    return [src] * len(outs)
  return rule


def _conv_general_dilated(avals, params, outs):
  """JAX's rule: with a kernel split nowhere and an lhs whose feature dimension is whole, the
  result is split as the lhs, each split dimension whose size changes staying divisible (the
  slicing rule's check); anything else needs `out_sharding=`.

  Raises:
    ShardingTypeError: a split kernel or lhs feature dimension (JAX's message)."""
  lhs, rhs = avals
  if (all(p is None for p in spec_parts(rhs))
      and spec_parts(lhs)[params["dimension_numbers"].lhs_spec[1]] is None):
    # (jax's conv shape rule computes the output shape with NumPy: its message shows np.int64s)
    return _varying_out_shape("conv_general_dilated", lambda shape: tuple(map(np.int64, shape)))(
        [lhs], params, outs)
  raise st.ShardingTypeError("Please specify the output sharding via `out_sharding` parameter "
                             "of `conv_general_dilated`")


def _devices(aval, part) -> int:
  """How many pieces `part` (a spec entry) splits a dimension into."""
  mesh = aval.sharding.mesh
  return math.prod(mesh.shape[a] for a in st.axes_of_part(part))


def _unsplit_along(param: str, what: str):
  """Operations along one dimension that must not be split (sort, top_k, cumulative
  reductions), as JAX's rules; the results are split as the operands.

  Raises:
    ShardingTypeError: the operand splits that dimension."""
  def rule(avals, params, outs):
    axis = params[param] % max(len(avals[0].shape), 1)
    for a in avals:
      if a.sharding is not None and spec_parts(a)[axis] is not None:
        raise st.ShardingTypeError(what.format(
            sharding=a.sharding, axis=axis, type=a.str_short(short_dtypes=False)))
    split = _same_split(avals, "Arguments to sort must have equal shardings, got: {}")
    return [split or (None,) * len(outs[0].shape) if len(o.shape) == len(avals[0].shape)
            else (None,) * len(o.shape) for o in outs]
  return rule


_sort = _unsplit_along("dimension", "Arguments to sort must be unsharded over the sorting "
                       "dimension. Got arg sharding={sharding} and sorting dimension={axis}")
_top_k = _unsplit_along("axis", "The input should be unsharded over the axis along which to "
                        "compute the top_k values. Got input type={type} and axis={axis}")
_approx_top_k = _unsplit_along(
    "reduction_dimension", "reduction dimension {axis} in operand {type} should be unsharded "
    "i.e. the spec of that dim should be `None`.")
_cumulative = _unsplit_along("axis", "Input should be unsharded over the axis being reduced. "
                             "Got input type={type} and axis={axis}")


def _gather(avals, params, outs):
  """JAX's gather rule: the operand's dimensions that are indexed are whole slices or unsplit,
  batching dimensions agree, and the indices are unsplit but for batching dimensions; then
  offset dimensions keep the operand's split and the others the indices'.

  Raises:
    ShardingTypeError: JAX's, asking for `.at[...].get(out_sharding=)`, where it cannot tell
      the result's split."""
  operand, indices = avals[0], avals[1]
  dn, sizes = params["dimension_numbers"], params["slice_sizes"]
  op_spec, idx_spec = list(spec_parts(operand)), list(spec_parts(indices))
  rank = len(outs[0].shape)
  if all(p is None for p in op_spec + idx_spec):
    return [(None,) * rank]
  whole = all(sizes[i] == operand.shape[i] or op_spec[i] is None for i in dn.start_index_map)
  pairs = list(zip(dn.operand_batching_dims, dn.start_indices_batching_dims, strict=True))
  batched = all(idx_spec[j] == op_spec[i] or op_spec[i] is None or idx_spec[j] is None
                for i, j in pairs)
  idx_unsplit = all(p is None for k, p in enumerate(idx_spec)
                    if k not in dn.start_indices_batching_dims)
  if not (whole and batched and idx_unsplit):
    raise st.ShardingTypeError(
        "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
        "indexing as out sharding could not be resolved unambiguously (or would require "
        f"collectives on inputs). Got operand={operand!r}, indices={indices!r}")
  for i, j in pairs:
    idx_spec[j] = idx_spec[j] or op_spec[i]
  kept = iter(i for i in range(len(sizes))
              if i not in dn.collapsed_slice_dims and i not in dn.operand_batching_dims)
  from_indices = iter(idx_spec)
  return [tuple(op_spec[next(kept)] if d in dn.offset_dims else next(from_indices)
                for d in range(rank))]


def _bitcast(avals, params, outs):
  src = spec_parts(avals[0])
  rank = len(outs[0].shape)
  return [tuple(src[:rank]) + (None,) * max(0, rank - len(src))]


rules[shapes.broadcast_in_dim_p] = _broadcast_in_dim
rules[shapes.transpose_p] = _transpose
rules[shapes.squeeze_p] = _squeeze
rules[shapes.reshape_p] = _reshape
def _split(avals, params, outs):
  """JAX's rule: each piece as a slice of the operand (`_varying_out_shape`)."""
  rule = _varying_out_shape("split")
  return [rule(avals, params, [o])[0] for o in outs]


def _stack(avals, params, outs):
  """JAX's rule: the operands' shardings agree; the new dimension is unsplit."""
  spec = _same_split(avals, "All operands should have the same sharding. Got shardings {}")
  if spec is None:
    return [None]
  parts = list(spec)
  parts.insert(params["axis"], None)
  return [tuple(parts)]


def _unstack(avals, params, outs):
  """JAX's rule: the unstacked dimension is unsplit; the others keep their splits."""
  src, axis = spec_parts(avals[0]), params["axis"]
  if src[axis] is not None:
    raise st.ShardingTypeError(f"unstack operand cannot be sharded on the unstacking axis "
                               f"{axis}. Got operand type={avals[0].str_short()}")
  return [src[:axis] + src[axis + 1:]] * len(outs)


rules[shapes.rev_p] = st.same_as_operand()
rules[stacking.split_p] = _split
rules[stacking.stack_p] = _stack
rules[stacking.unstack_p] = _unstack
rules[stacking.tile_p] = st.same_as_operand()  # (lax.tile refuses tiling a split dimension)
rules[shapes.pad_p] = _varying_out_shape("padding")
rules[shapes.concatenate_p] = _concatenate
rules[dot_general_p] = _dot_general
rules[conv_general_dilated_p] = _conv_general_dilated
for _p in (reductions.reduce_sum_p, reductions.reduce_prod_p, reductions.reduce_max_p,
           reductions.reduce_min_p, reductions.reduce_and_p, reductions.reduce_or_p,
           reductions.reduce_xor_p, reductions.argmax_p, reductions.argmin_p):
  rules[_p] = st.drop_axes("axes")
for _p in (sorting.cumsum_p, sorting.cumprod_p, sorting.cummax_p, sorting.cummin_p,
           sorting.cumlogsumexp_p):
  rules[_p] = _cumulative
for _p in (bits.reduce_precision_p, stop_gradient_p,
           slicing.dynamic_update_slice_p, slicing.scatter_p):
  rules[_p] = st.same_as_operand()
rules[sorting.sort_p] = _sort
rules[sorting.top_k_p] = _top_k
rules[sorting.approx_top_k_p] = _approx_top_k
rules[slicing.gather_p] = _gather
rules[slicing.slice_p] = _varying_out_shape("slicing")
rules[slicing.dynamic_slice_p] = _varying_out_shape("dynamic_slice")
rules[conversion.convert_element_type_p] = st.elementwise_named("convert_element_type")
rules[conversion.bitcast_convert_type_p] = _bitcast
rules[comparison.select_n_p] = _select_n
for _p in (slicing.scatter_add_p, slicing.scatter_sub_p, slicing.scatter_mul_p,
           slicing.scatter_min_p, slicing.scatter_max_p):
  rules[_p] = st.same_as_operand()
for _p in (comparison.eq_p, comparison.ne_p, comparison.lt_p, comparison.le_p, comparison.gt_p,
           comparison.ge_p, comparison.eq_to_p, comparison.le_to_p, comparison.lt_to_p,
           special.igamma_p, special.igammac_p, special.igamma_grad_a_p,
           special.regularized_incomplete_beta_p, special.zeta_p, special.polygamma_p,
           special.bessel_i0e_p, special.bessel_i1e_p,
           binary.pow_p, binary.complex_p, comparison.clamp_p,
           unary.abs_p, unary.integer_pow_p, unary.real_p, unary.imag_p, unary.conj_p):
  rules[_p] = st.elementwise_named(_p.name)


# --- unreduced and reduced axes (JAX's `ur` rules) ----------------------------------------------
# A value unreduced over mesh axes is a sum of the devices' partial values; only what is linear
# in it may take it without adding them up first. Primitives without a rule here refuse an
# unreduced operand (core/sharding_types.py: JAX's default).
unreduced_of, reduced_of = st.unreduced_of, st.reduced_of


def _dot_general_ur(avals, params):
  """JAX's rule: no operand may be unreduced; a result asked for as unreduced (out_sharding)
  must be so over exactly the axes both operands split their contracted dimensions over."""
  lhs, rhs = avals
  if unreduced_of(lhs) or unreduced_of(rhs):
    raise st.ShardingTypeError(f"lhs or rhs passed to dot_general cannot be unreduced. Got "
                               f"lhs={lhs!r} and rhs={rhs!r}")
  given = params.get("out_sharding")
  asked = given.spec.unreduced if given is not None else frozenset()
  if not asked:
    return frozenset(), frozenset()
  (lc, rc), _ = params["dimension_numbers"]
  lcs = tuple(spec_parts(lhs)[i] for i in lc)
  rcs = tuple(spec_parts(rhs)[i] for i in rc)
  if lcs != rcs:
    raise st.ShardingTypeError(
        "lhs and rhs contracting dims should be sharded identically when out_sharding provided "
        f"to dot_general mentions unreduced_axes. Got lhs_contracting_spec={lcs}, "
        f"rhs_contracting_spec={rcs}")
  flat = frozenset(a for p in lcs for a in st.axes_of_part(p))
  if asked != flat:
    raise st.ShardingTypeError(
        f"out_sharding's unreduced axes should be equal to the contracting specs. Got "
        f"unreduced axes={asked} and contracting spec={lcs}")
  return asked, frozenset()


def _add_ur(avals, params):
  """JAX's rule: the sum of two values unreduced over the same axes is so too; one unreduced
  operand alone would need communication."""
  x, y = (unreduced_of(a) for a in avals)
  reduced = st.common_reduced(avals)
  if x and y:
    if x != y:
      raise st.ShardingTypeError(f"lhs and rhs to `add` must be unreduced along the same mesh "
                                 f"axes. Got lhs={x}, rhs={y}")
    return x, reduced
  if x or y:
    lhs, rhs = ("lhs", "rhs") if x else ("rhs", "lhs")
    raise st.ShardingTypeError(
        f"{lhs} is unreduced while {rhs} is not. `add` operation does not allow this because "
        f"there will be implicit communication. Please reduce {lhs} via `reshard` before "
        f"calling `add`.")
  return frozenset(), reduced


def _mul_ur(avals, params):
  """JAX's rule: an unreduced operand times one reduced over the same axes stays unreduced."""
  x, y = avals
  xu, yu, xr, yr = unreduced_of(x), unreduced_of(y), reduced_of(x), reduced_of(y)
  if xu and yu:
    raise st.ShardingTypeError(f"lhs and rhs to `mul` cannot be unreduced since mul is "
                               f"bilinear. Got lhs={xu}, rhs={yu}")
  if xu and xu != yr:
    raise st.ShardingTypeError(f"RHS should be reduced along the same axes LHS is unreduced "
                               f"on. Got lhs={_full(x)} and rhs={_full(y)}")
  if yu and yu != xr:
    raise st.ShardingTypeError(f"LHS should be reduced along the same axes RHS is unreduced "
                               f"on. Got lhs={_full(x)} and rhs={_full(y)}")
  if xu or yu:
    return xu or yu, frozenset()
  return frozenset(), st.common_reduced(avals)


def _full(aval) -> str:
  return aval.str_short(short_dtypes=False)


def _keeps_ur(avals, params):
  """A primitive linear in its one operand keeps its unreduced and reduced axes."""
  return unreduced_of(avals[0]), reduced_of(avals[0])


st.ur_rules[dot_general_p] = _dot_general_ur
st.ur_rules[binary.add_p] = st.ur_rules[ad.add_any_p] = _add_ur
st.ur_rules[binary.mul_p] = _mul_ur
for _p in (conversion.convert_element_type_p, shapes.transpose_p, reductions.reduce_sum_p):
  st.ur_rules[_p] = _keeps_ur
