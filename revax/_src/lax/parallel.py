"""Collectives over named axes: psum, pmean, pmax, pmin, all_gather, psum_scatter, ppermute,
all_to_all (and pswapaxes, one of its forms), pbroadcast, axis_index; pcast/pvary and
psum_invariant, the typed forms inside shard_map; psend/precv, which XLA:CPU cannot run
(ragged_all_to_all: parallel_ragged.py).

A named axis is bound by `vmap(f, axis_name=...)`: the members of the axis are the examples of
the batch, and a collective combines or exchanges values across them. Each collective is a
primitive whose `axes` param names the axes it acts over; its wrapper checks the names are bound
(NameError otherwise, as in JAX) and records the sizes it needs in the params. Each primitive
block has:
- abstract eval (the per-member shape),
- a collective rule, applied by the BatchTrace that owns the axis: the collective becomes plain
  operations over the batch dimension (psum is a sum over it, all_gather moves it into place,
  ppermute gathers along it, ...), also for operands that are the same for every member;
- a batching rule for traces that do not own the axis (nested vmaps with other names),
- JVP and transpose (the linear ones, with JAX's transposes: psum's is psum, all_gather's is
  psum_scatter, ppermute's is the inverse permutation, all_to_all's swaps its axes),
- no eager evaluation: outside every transformation that binds the axis, the name is unbound,
- its varying-manual-axes rule (core/vma.py), used inside shard_map with check_vma: psum (bound
  as psum_invariant), pmax and pmin make a value invariant over their axes, all_gather,
  psum_scatter, ppermute and all_to_all keep it varying, axis_index varies over its axes; the
  wrappers first cast an operand invariant over the axes with pvary, as JAX's do. pvary itself
  changes no value; its transpose is psum_invariant's and the other way round.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes, vma
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive, Tracer
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.interpreters.batching import not_mapped
from revax._src.lax import batch_util, binary, comparison, convenience, creation, reductions
from revax._src.lax import shapes, slicing

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "pshuffle",
           "all_to_all", "axis_index", "axis_size", "pbroadcast", "pswapaxes", "pcast",
           "psend", "precv"]


def _names(axis_name) -> tuple:
  names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
  for name in names:
    batching.axis_size(name)  # NameError when unbound
  return names


def _group_size(names) -> int:
  size = 1
  for name in names:
    size *= batching.axis_size(name)
  return size


def axis_size(axis_name) -> int:
  """The number of members of the named axis (or the product over a tuple of names)."""
  return _group_size(_names(axis_name))


def _no_groups(axis_index_groups):
  if axis_index_groups is not None:
    raise NotImplementedError("axis_index_groups is not supported by revax's collectives")


def _unbound_impl(name):
  def impl(*args, axes, **params):
    batching.axis_size(axes[0])  # raises the NameError
    raise NameError(f"{name} over {axes} outside of any transformation that binds the axis")
  return impl


def _remaining(axes, name):
  return tuple(a for a in axes if a != name)


# name -> rule(ctx, *args, **params) for a collective inside a manual region of a program over a
# mesh (shard_map under jit); filled by parallel_lowering.py
manual_lowerings: dict = {}


def _no_lowering(name):
  def rule(ctx, *args, axes, **params):
    manual = manual_lowerings.get(name)
    if manual is not None and getattr(ctx.module, "manual_axes", None):
      return manual(ctx, *args, axes=axes, **params)
    raise NotImplementedError(f"{name} over {axes} reached XLA lowering: collectives are "
                              "applied by the vmap that binds their axis name, or by a "
                              "shard_map over a mesh of several devices")
  return rule


def _register(prim, name, collective, batch, not_invertible_reason, transpose=None):
  """The rules every collective has: no eager evaluation (its name is unbound there), the
  collective rule for the owning BatchTrace, the batching rule for the others, the lowering
  that says why it never runs (`name` says which manual lowering it has), the inverse reason,
  and, for linear ones, JVP and transpose."""
  dispatch.custom_impls[prim] = _unbound_impl(name)
  batching.collective_batchers[prim] = collective
  batching.primitive_batchers[prim] = batch
  mlir.register_lowering(prim, _no_lowering(name))
  inv.not_invertible(prim, not_invertible_reason)
  if transpose is not None:
    ad.deflinear(prim, transpose)


# --- psum / pmax / pmin ---
def _reducer(name, reduce_fn, unmapped_fn, lowered_as=None):
  prim = Primitive(name)
  prim.def_abstract_eval(lambda x, *, axes: x)

  def collective(axis_size, axis_name, vals, dims, *, axes):
    (x,), (d,) = vals, dims
    out = unmapped_fn(x, axis_size) if d is not_mapped else reduce_fn(x, (d,))
    rest = _remaining(axes, axis_name)
    return (prim.bind(out, axes=rest) if rest else out), not_mapped

  def batch(vals, dims, *, axes):
    (x,), (d,) = vals, dims
    return prim.bind(x, axes=axes), d

  _register(prim, lowered_as or name, collective, batch,
            "many-to-one (a reduction over the members of an axis)")
  return prim


def _psum_unmapped(x, size):
  if dtypes.is_bool(get_aval(x).dtype):
    return x
  return binary.mul(x, np.array(size, get_aval(x).dtype))


psum_p = _reducer("psum", reductions.reduce_sum, _psum_unmapped)
# psum of a value typed with its varying manual axes (shard_map with check_vma): varying over
# `axes` in, invariant out; its transpose is pvary (JAX's psum_invariant)
psum_invariant_p = _reducer("psum_invariant", reductions.reduce_sum, _psum_unmapped, "psum")
pmax_p = _reducer("pmax", reductions.reduce_max, lambda x, size: x)
pmin_p = _reducer("pmin", reductions.reduce_min, lambda x, size: x)
ad.deflinear(psum_p, lambda ct, x, *, axes: [psum_p.bind(ct, axes=axes)])
ad.deflinear(psum_invariant_p, lambda ct, x, *, axes: [pvary_p.bind(ct, axes=axes)])
ad.not_differentiable(pmax_p, "JAX defines no derivative for pmax")
ad.not_differentiable(pmin_p, "JAX defines no derivative for pmin")


def _tree_collective(prim, x, axis_name, axis_index_groups, api_name=None):
  _no_groups(axis_index_groups)
  names = _names(axis_name)

  def one(leaf):
    if not names:
      return leaf
    if isinstance(leaf, (int, float, bool, complex)) and not isinstance(leaf, np.generic):
      from revax._src.interpreters.dispatch import to_array
      leaf = to_array(leaf)
    if vma.active() and api_name is not None:  # typed: invariant over `names` first made varying
      if prim is psum_p:
        if _state_of(get_aval(leaf), names, "jax.lax.psum") == "invarying":
          leaf = pvary_p.bind(leaf, axes=vma.in_mesh_order(names))
        return psum_invariant_p.bind(leaf, axes=names)
      leaf = _vary_over(leaf, names)
    return prim.bind(leaf, axes=names)
    return prim.bind(leaf, axes=names)
  return tree_util.tree_map(one, x)


def psum(x, axis_name, *, axis_index_groups=None):
  """Sum `x` (a pytree of arrays) over the members of the named axis (or axes).

  Example:
    >>> revax.vmap(lambda v: lax.psum(v, "i"), axis_name="i")(jnp.arange(3.))
    Array([3., 3., 3.], dtype=float32)

  A value that is no traced value (a constant, the same on every member) sums to the number of
  members times itself, computed at once as JAX does: `psum(1, "i")` is the axis size, a Python
  int.
  """
  leaves = tree_util.tree_leaves(x)
  if all(not isinstance(leaf, Tracer) for leaf in leaves):
    _no_groups(axis_index_groups)
    size = _group_size(_names(axis_name))
    return tree_util.tree_map(lambda leaf: _constant_times(leaf, size), x)
  return _tree_collective(psum_p, x, axis_name, axis_index_groups, "psum")


def _constant_times(leaf, size):
  """`size * leaf` for a constant `leaf`, in its type (JAX's `lax._const(leaf, size) * leaf`;
  a bool counts as int32)."""
  if type(leaf) in (int, float, complex):
    return type(leaf)(size) * leaf
  if dtypes.is_bool(get_aval(leaf).dtype):
    from revax._src.lax.conversion import convert_element_type
    leaf = convert_element_type(leaf, np.int32)
  return np.array(size, get_aval(leaf).dtype) * leaf


def pmax(x, axis_name, *, axis_index_groups=None):
  """The maximum of `x` over the members of the named axis."""
  return _tree_collective(pmax_p, x, axis_name, axis_index_groups, "pmax")


def pmin(x, axis_name, *, axis_index_groups=None):
  """The minimum of `x` over the members of the named axis."""
  return _tree_collective(pmin_p, x, axis_name, axis_index_groups, "pmin")


def pmean(x, axis_name, *, axis_index_groups=None):
  """The mean of `x` over the members of the named axis (a true division, as JAX's: the mean
  of integers is a float)."""
  _no_groups(axis_index_groups)
  size = _group_size(_names(axis_name))
  summed = psum(x, axis_name)
  return tree_util.tree_map(lambda s: s / size, summed)


# --- varying manual axes (JAX's vma: shard_map with check_vma) ---
pvary_p = Primitive("pvary")


def _state_of(aval, names, api_name) -> str:
  """JAX's state of `aval` over the mesh axes `names`: 'varying' or 'invarying' (ValueError
  when the axes disagree)."""
  states = {"varying" if a in vma.varying(aval) else "invarying" for a in names}
  if len(states) > 1:
    raise ValueError(
        f"{api_name} can only accept axis_name which corresponds to one of varying, unreduced, "
        f"reduced or invarying state of the input. Got input type: {aval}, axes: {names} and "
        f"input state: {states}")
  return states.pop()


def _vary_over(x, names):
  """`x` cast with pvary to vary over `names` too (JAX's insert_collective_pvary)."""
  missing = [a for a in names if a not in vma.varying(get_aval(x))]
  return pvary_p.bind(x, axes=vma.in_mesh_order(missing)) if missing else x


def _pvary_abstract_eval(x, *, axes):
  return x


def _pvary_vma(avals, params, out):
  (x,), axes = avals, params["axes"]
  if set(axes) & vma.varying(x):
    raise ValueError(
        "pvary is a invariant->variant collective. This means that the axis names mentioned in "
        "`axes` passed to `pvary` must not be present in `jax.typeof(inp).mat.varying`. Got "
        f"axes={axes} and jax.typeof(inp)={x}")
  return vma.with_varying(out, vma.varying(x) | set(axes))


def _pvary_collective(axis_size, axis_name, vals, dims, *, axes):
  """Under the vmap that owns one of its axes: the value is unchanged (a member's value is
  whatever it was; only its type said it was the same for all)."""
  (x,), (d,) = vals, dims
  rest = _remaining(axes, axis_name)
  return (pvary_p.bind(x, axes=rest) if rest else x), d


def _invariant_vma(avals, params, out):
  """psum_invariant, pmax, pmin under check_vma: varying over `axes` in, invariant out."""
  (x,), axes = avals, params["axes"]
  if not set(axes) & vma.varying(x):
    raise ValueError(
        "psum is a variant->invariant collective. This means that the axis names mentioned in "
        "`axes` passed to `psum` must be present in `jax.typeof(inp).mat.varying`. Got "
        f"axes={axes} and jax.typeof(inp).mat.varying={vma.varying(x)}")
  return vma.with_varying(out, vma.varying(x) - set(axes))


def _collective_vma(name):
  """JAX's rule for the collectives that keep a value varying (all_gather, ppermute,
  all_to_all, psum_scatter): their operand must vary over their axes; so does the result."""
  def rule(avals, params, out):
    (x,), axes = avals, params["axes"]
    if any(a not in vma.varying(x) for a in axes):
      raise ValueError(
          f"Collective {name} must be applied to a device-varying  type, but got "
          f"{vma.varying(x)} for collective acting over axis name {axes}. Please open an issue "
          "at https://github.com/jax-ml/jax/issues and as a temporary workaround pass the "
          "check_vma=False argument to `jax.shard_map`")
    return vma.with_varying(out, vma.varying(x))
  return rule


pvary_p.def_abstract_eval(_pvary_abstract_eval)
vma.vma_rules[pvary_p] = _pvary_vma
vma.pvary_binder[0] = lambda x, axes: pvary_p.bind(x, axes=tuple(axes))
_register(pvary_p, "pvary", _pvary_collective,
          lambda vals, dims, *, axes: (pvary_p.bind(vals[0], axes=axes), dims[0]),
          "a cast of a value's type inside shard_map (it exists only there)",
          transpose=lambda ct, x, *, axes: [psum_invariant_p.bind(ct, axes=axes)])
manual_lowerings["pvary"] = lambda ctx, x, *, axes: x  # (it changes no value)
for _prim in (psum_invariant_p, pmax_p, pmin_p):
  vma.vma_rules[_prim] = _invariant_vma


# --- axis_index ---
axis_index_p = Primitive("axis_index")
axis_index_p.def_abstract_eval(lambda *, axes: ShapedArray((), np.dtype(np.int32)))
dispatch.custom_impls[axis_index_p] = _unbound_impl("axis_index")


def axis_index(axis_name):
  """This member's position along the named axis (int32; row-major over a tuple of names).

  Example:
    >>> revax.vmap(lambda v: lax.axis_index("i"), axis_name="i")(jnp.zeros(3))
    Array([0, 1, 2], dtype=int32)
  """
  names = _names(axis_name)
  return axis_index_p.bind(axes=names)


def _axis_index_collective(axis_size, axis_name, vals, dims, *, axes):
  idx = shapes.iota(np.int32, axis_size)
  rest = _remaining(axes, axis_name)
  if rest:  # row-major over `axes`, wherever this name stands among them
    after = _group_size(axes[axes.index(axis_name) + 1:])
    others = axis_index_p.bind(axes=rest)  # row-major over the names before, then after
    before_part = binary.mul(binary.div(others, np.int32(after)), np.int32(axis_size * after))
    after_part = binary.rem(others, np.int32(after))
    idx = binary.add(binary.add(before_part, after_part),
                     binary.mul(idx, np.int32(after)))
  return idx, 0


batching.collective_batchers[axis_index_p] = _axis_index_collective
vma.vma_rules[axis_index_p] = lambda avals, params, out: vma.with_varying(out, params["axes"])
batching.primitive_batchers[axis_index_p] = lambda vals, dims, *, axes: (
    axis_index_p.bind(axes=axes), not_mapped)
mlir.register_lowering(axis_index_p, _no_lowering("axis_index"))
ad.not_differentiable(axis_index_p, "integer output")
inv.not_invertible(axis_index_p, "it has no operand to rebuild")


# --- all_gather ---
all_gather_p = Primitive("all_gather")


_GATHER_TO = ("varying", "reduced", "invarying")


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False, to="varying"):
  """Every member's `x`, stacked along a new axis `axis` (or concatenated along `axis` when
  `tiled`), the same on every member.

  Inside `shard_map(..., check_vma=True)` the result's type varies over `axis_name` (and what
  `x` varies over) with `to="varying"`; with `to="invarying"` it is typed as the same on every
  member along `axis_name` (JAX's all_gather_invariant; its transpose takes each member's
  slice). `to="reduced"` (a reduced type) is not part of revax's types.

  Example:
    >>> revax.vmap(lambda v: lax.all_gather(v, "i"), axis_name="i")(jnp.arange(3.))
    Array([[0., 1., 2.],
           [0., 1., 2.],
           [0., 1., 2.]], dtype=float32)
  """
  if to not in _GATHER_TO:
    raise ValueError(f"Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` values "
                     f"are: {set(_GATHER_TO)}")
  _no_groups(axis_index_groups)
  names = _names(axis_name)
  size = _group_size(names)
  if to == "reduced":
    raise NotImplementedError("all_gather(to='reduced'): reduced manual axis types are not part "
                              "of revax's types")
  prim = all_gather_invariant_p if to == "invarying" and vma.active() else all_gather_p

  def one(leaf):
    aval = get_aval(leaf)
    nd = aval.ndim if tiled else aval.ndim + 1
    if not -nd <= axis < nd:
      raise ValueError(f"all_gather axis {axis} is out of bounds for an operand of shape "
                       f"{aval.shape}{'' if tiled else ' (plus the new gathered axis)'}")
    if vma.active():
      leaf = _vary_over(leaf, names)
    return prim.bind(leaf, axes=names, axis=axis % nd, axis_size=size, tiled=bool(tiled))
  return tree_util.tree_map(one, x)


def _all_gather_abstract_eval(x, *, axes, axis, axis_size, tiled):
  shape = list(x.shape)
  if tiled:
    shape[axis] *= axis_size
  else:
    shape.insert(axis, axis_size)
  return x.update(shape=tuple(shape))


def _all_gather_collective(size, axis_name, vals, dims, *, axes, axis, axis_size, tiled):
  (x,), (d,) = vals, dims
  stacked = batch_util.bdim_at(x, d, axis, size)  # the members, along the gathered axis
  if _remaining(axes, axis_name):
    stacked = _gather_rest(stacked, axis, axes, axis_name, size)
  if tiled:
    shape = get_aval(stacked).shape
    stacked = shapes.reshape(stacked, shape[:axis] + (shape[axis] * shape[axis + 1],)
                             + shape[axis + 2:])
  return stacked, not_mapped


def _gather_rest(stacked, axis, axes, axis_name, size):
  """`stacked` (this axis's members along `axis`) with the members along the other names of
  `axes` gathered too (by the vmaps that own them): all of them along `axis`, numbered
  row-major over `axes` (as a collective over several names numbers its members)."""
  m = axes.index(axis_name)
  before, after = _group_size(axes[:m]), _group_size(axes[m + 1:])
  g = all_gather_p.bind(stacked, axes=_remaining(axes, axis_name), axis=axis,
                        axis_size=before * after, tiled=False)
  shp = get_aval(g).shape  # (..., before * after, size, ...) from `axis` on
  g = shapes.reshape(g, shp[:axis] + (before, after, size) + shp[axis + 2:])
  g = batch_util.moveaxis(g, axis + 2, axis + 1)
  return shapes.reshape(g, shp[:axis] + (before * size * after,) + shp[axis + 2:])


def _pick(rows, which):
  """Row `which[b]` of `rows` (an array of T rows, the same on every member) for each `b` of
  `which` (n indices), zeros where `which[b]` names no row; bit-exact (selects only)."""
  rows_aval = get_aval(rows)
  count, member = rows_aval.shape[0], rows_aval.shape[1:]
  n = get_aval(which).shape[0]
  out_shape = (n,) + member
  acc = shapes.broadcast_in_dim(np.zeros((), rows_aval.dtype), out_shape, ())
  for k in range(count):
    hit = shapes.broadcast_in_dim(comparison.eq(which, np.int32(k)), out_shape, (0,))
    row = slicing.slice(rows, (k,) + (0,) * len(member), (k + 1,) + member)
    row = shapes.broadcast_in_dim(shapes.reshape(row, member), out_shape,
                                  tuple(range(1, 1 + len(member))))
    acc = convenience.select(hit, row, acc)
  return acc


def _all_gather_batch(vals, dims, *, axes, axis, axis_size, tiled):
  (x,), (d,) = vals, dims
  # per member, the output's dims are the operand's with the gathered axis at `axis`
  x = batch_util.moveaxis(x, d, 0)
  out = all_gather_p.bind(x, axes=axes, axis=axis + 1, axis_size=axis_size, tiled=tiled)
  return out, 0


def _all_gather_transpose(ct, x, *, axes, axis, axis_size, tiled):
  return [psum_scatter_p.bind(ct, axes=axes, scatter_dimension=axis, axis_size=axis_size,
                              tiled=tiled)]


all_gather_p.def_abstract_eval(_all_gather_abstract_eval)
vma.vma_rules[all_gather_p] = _collective_vma("all_gather")

# all_gather typed as the same on every member along its axes (shard_map with check_vma): the
# values are all_gather's; the cotangent of an invariant result is invariant, so its transpose
# takes each member's own slice (JAX's all_gather_invariant)
all_gather_invariant_p = Primitive("all_gather_invariant")


def _all_gather_invariant_vma(avals, params, out):
  (x,), axes = avals, params["axes"]
  return vma.with_varying(out, vma.varying(x) - set(axes))


def _all_gather_invariant_collective(size, axis_name, vals, dims, **params):
  return _all_gather_collective(size, axis_name, vals, dims, **params)


def _all_gather_invariant_batch(vals, dims, *, axes, axis, axis_size, tiled):
  (x,), (d,) = vals, dims
  x = batch_util.moveaxis(x, d, 0)
  return all_gather_invariant_p.bind(x, axes=axes, axis=axis + 1, axis_size=axis_size,
                                     tiled=tiled), 0


def _all_gather_invariant_transpose(ct, x, *, axes, axis, axis_size, tiled):
  idx = axis_index_p.bind(axes=axes)
  if tiled:
    block = get_aval(ct).shape[axis] // axis_size
    return [convenience.dynamic_slice_in_dim(ct, binary.mul(idx, np.int32(block)), block, axis)]
  return [convenience.dynamic_index_in_dim(ct, idx, axis, keepdims=False)]


all_gather_invariant_p.def_abstract_eval(_all_gather_abstract_eval)
vma.vma_rules[all_gather_invariant_p] = _all_gather_invariant_vma
_register(all_gather_invariant_p, "all_gather", _all_gather_invariant_collective,
          _all_gather_invariant_batch,
          "each member's value is one slice of a result that depends on the others",
          transpose=_all_gather_invariant_transpose)
_register(all_gather_p, "all_gather", _all_gather_collective, _all_gather_batch,
          "each member's value is one slice of a result that depends on the others",
          transpose=_all_gather_transpose)


# --- psum_scatter ---
psum_scatter_p = Primitive("psum_scatter")


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
  """The sum of `x` over the members, of which member `i` keeps the `i`-th slice along
  `scatter_dimension` (the `i`-th block of that dimension when `tiled`)."""
  _no_groups(axis_index_groups)
  names = _names(axis_name)
  size = _group_size(names)

  def one(leaf):
    aval = get_aval(leaf)
    if not -aval.ndim <= scatter_dimension < aval.ndim:
      raise ValueError(f"psum_scatter scatter_dimension {scatter_dimension} is out of bounds for "
                       f"an operand of shape {aval.shape}")
    dim = scatter_dimension % aval.ndim
    n = aval.shape[dim]
    if tiled and n % size:
      raise ValueError(f"tiled reduce_scatter operand scatter dimension size {n} must be "
                       f"divisible by shard_count {size}")
    if not tiled and n != size:
      raise ValueError(f"reduce_scatter operand scatter dimension size {n} must match shard "
                       f"count {size}")
    if vma.active():
      _state_of(aval, names, "jax.lax.psum_scatter")  # (ValueError when partly varying)
      leaf = _vary_over(leaf, names)
    return psum_scatter_p.bind(leaf, axes=names, scatter_dimension=dim, axis_size=size,
                               tiled=bool(tiled))
  return tree_util.tree_map(one, x)


def _psum_scatter_abstract_eval(x, *, axes, scatter_dimension, axis_size, tiled):
  shape = list(x.shape)
  if tiled:
    shape[scatter_dimension] //= axis_size
  else:
    del shape[scatter_dimension]
  return x.update(shape=tuple(shape))


def _psum_scatter_collective(size, axis_name, vals, dims, *, axes, scatter_dimension, axis_size,
                             tiled):
  (x,), (d,) = vals, dims
  rest = _remaining(axes, axis_name)
  if rest:  # the sum over every member, of which each keeps its block (row-major number)
    local = _psum_unmapped(x, size) if d is not_mapped else reductions.reduce_sum(x, (d,))
    total = psum_p.bind(local, axes=rest)
    shape, count = get_aval(total).shape, _group_size(axes)
    n = shape[scatter_dimension]
    if tiled:
      total = shapes.reshape(total, shape[:scatter_dimension] + (count, n // count)
                             + shape[scatter_dimension + 1:])
    rows = batch_util.moveaxis(total, scatter_dimension, 0)
    me, _ = _axis_index_collective(size, axis_name, [], [], axes=axes)
    return _pick(rows, me), 0
  total = _psum_unmapped(x, size) if d is not_mapped else reductions.reduce_sum(x, (d,))
  # the full sum; member i keeps slice i of `scatter_dimension`, which becomes the batch dim
  if tiled:
    shape = get_aval(total).shape
    n = shape[scatter_dimension]
    total = shapes.reshape(total, shape[:scatter_dimension] + (size, n // size)
                           + shape[scatter_dimension + 1:])
  return total, scatter_dimension


def _psum_scatter_batch(vals, dims, *, axes, scatter_dimension, axis_size, tiled):
  (x,), (d,) = vals, dims
  x = batch_util.moveaxis(x, d, 0)
  return psum_scatter_p.bind(x, axes=axes, scatter_dimension=scatter_dimension + 1,
                             axis_size=axis_size, tiled=tiled), 0


def _psum_scatter_transpose(ct, x, *, axes, scatter_dimension, axis_size, tiled):
  return [all_gather_p.bind(ct, axes=axes, axis=scatter_dimension, axis_size=axis_size,
                            tiled=tiled)]


psum_scatter_p.def_abstract_eval(_psum_scatter_abstract_eval)
vma.vma_rules[psum_scatter_p] = _collective_vma("reduce_scatter")
_register(psum_scatter_p, "psum_scatter", _psum_scatter_collective, _psum_scatter_batch,
          "many-to-one (a sum over the members)", transpose=_psum_scatter_transpose)


# --- ppermute ---
ppermute_p = Primitive("ppermute")


def ppermute(x, axis_name, perm):
  """Send member `src`'s `x` to member `dst` for each `(src, dst)` in `perm`; members that
  receive nothing get zeros.

  Example:
    >>> shift = [(i, (i + 1) % 3) for i in range(3)]
    >>> revax.vmap(lambda v: lax.ppermute(v, "i", shift), axis_name="i")(jnp.arange(3.))
    Array([2., 0., 1.], dtype=float32)
  """
  names = _names(axis_name)
  perm = _checked_perm("ppermute", perm, _group_size(names))
  bound = _mesh_axes()
  if all(n in bound for n in names):  # inside shard_map the members are numbered in mesh order,
    names = tuple(sorted(names, key=bound.index))  # whatever order the names come in (as JAX)
  vary = (lambda leaf: _vary_over(leaf, names)) if vma.active() else (lambda leaf: leaf)
  return tree_util.tree_map(lambda leaf: ppermute_p.bind(vary(leaf), axes=names, perm=perm), x)


def _checked_perm(name, perm, size) -> tuple:
  """`perm` as a tuple of (source, destination) int pairs, each used once, all members."""
  try:
    perm = tuple((int(s), int(t)) for s, t in perm)
  except (TypeError, ValueError):
    raise ValueError(f"{name} perm must be a sequence of (source, destination) index pairs, got "
                     f"{perm!r}") from None
  srcs, dsts = [s for s, _ in perm], [t for _, t in perm]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
    raise ValueError(f"{name} sources and destinations must be unique, got perm={list(perm)}")
  if any(not 0 <= i < size for i in srcs + dsts):
    raise ValueError(f"{name} perm={list(perm)} names members outside the axis of size {size}")
  return perm


def _ppermute_collective(size, axis_name, vals, dims, *, axes, perm):
  (x,), (d,) = vals, dims
  if _remaining(axes, axis_name):  # over several names: from every member's value
    count = _group_size(axes)
    every = _gather_rest(batch_util.bdim_at(x, d, 0, size), 0, axes, axis_name, size)
    sources = np.full((count, 1), -1, np.int32)
    for src, dst in perm:
      sources[dst, 0] = src
    me, _ = _axis_index_collective(size, axis_name, [], [], axes=axes)
    mine = shapes.reshape(_pick(sources, me), (size,))
    return _pick(every, mine), 0
  x = batch_util.bdim_at(x, d, 0, size)
  aval = get_aval(x)
  received = {dst: src for src, dst in perm}
  member = aval.shape[1:]
  zeros = shapes.broadcast_in_dim(np.zeros((), aval.dtype), (1,) + member, ())
  pieces = [slicing.slice(x, (received[i],) + (0,) * len(member),
                          (received[i] + 1,) + member) if i in received else zeros
            for i in range(size)]
  return shapes.concatenate(pieces, 0), 0


def _ppermute_batch(vals, dims, *, axes, perm):
  return ppermute_p.bind(vals[0], axes=axes, perm=perm), dims[0]


def _ppermute_transpose(ct, x, *, axes, perm):
  return [ppermute_p.bind(ct, axes=axes, perm=tuple((t, s) for s, t in perm))]


ppermute_p.def_abstract_eval(lambda x, *, axes, perm: x)
vma.vma_rules[ppermute_p] = _collective_vma("ppermute")
_register(ppermute_p, "ppermute", _ppermute_collective, _ppermute_batch,
          "members that receive nothing get zeros", transpose=_ppermute_transpose)


def pshuffle(x, axis_name, perm):
  """Member `i` receives the `x` of member `perm[i]` (`perm` a permutation of the members)."""
  size = _group_size(_names(axis_name))
  if sorted(perm) != list(range(size)):
    raise ValueError(f"pshuffle perm must be a permutation of range({size}), got {list(perm)}")
  return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


# --- pbroadcast ---
pbroadcast_p = Primitive("pbroadcast")


def pbroadcast(x, axis_name, source):
  """Every member gets the `x` of member `source` (a collective broadcast; over a tuple of names
  `source` is the row-major index over them). The same as `psum(where(axis_index(axis_name) ==
  source, x, 0), axis_name)`, without the arithmetic.

  Example:
    >>> revax.vmap(lambda v: lax.pbroadcast(v, "i", 2), axis_name="i")(jnp.arange(4.))
    Array([2., 2., 2., 2.], dtype=float32)
  """
  names = _names(axis_name)
  sizes = tuple(batching.axis_size(n) for n in names)
  size = _group_size(names)
  if isinstance(source, bool) or not isinstance(source, (int, np.integer)):
    raise TypeError(f"pbroadcast source must be a Python int (a member index), got {source!r}")
  if not 0 <= source < size:
    raise ValueError(f"pbroadcast source={source} is not a member of axis {axis_name!r} of "
                     f"size {size}: it must be in [0, {size})")
  return tree_util.tree_map(
      lambda leaf: pbroadcast_p.bind(_as_array(leaf), axes=names, sizes=sizes,
                                     source=int(source)), x)


def _as_array(leaf):
  if isinstance(leaf, (int, float, bool, complex)) and not isinstance(leaf, np.generic):
    from revax._src.interpreters.dispatch import to_array
    return to_array(leaf)
  return leaf


def _pbroadcast_collective(axis_size, axis_name, vals, dims, *, axes, sizes, source):
  (x,), (d,) = vals, dims
  coords = dict(zip(axes, np.unravel_index(source, sizes)))
  if d is not not_mapped:  # every member takes the source member's slice: the same for all
    c = int(coords[axis_name])
    x = shapes.squeeze(convenience.slice_in_dim(x, c, c + 1, axis=d), (d,))
  rest = _remaining(axes, axis_name)
  if not rest:
    return x, not_mapped
  rest_sizes = tuple(s for a, s in zip(axes, sizes) if a != axis_name)
  rest_source = int(np.ravel_multi_index(tuple(int(coords[a]) for a in rest), rest_sizes))
  return pbroadcast_p.bind(x, axes=rest, sizes=rest_sizes, source=rest_source), not_mapped


def _pbroadcast_batch(vals, dims, *, axes, sizes, source):
  return pbroadcast_p.bind(vals[0], axes=axes, sizes=sizes, source=source), dims[0]


def _pbroadcast_transpose(ct, x, *, axes, sizes, source):
  # only the source member's value reaches the others: it gets the sum of their cotangents
  total = psum_p.bind(ct, axes=axes)
  is_source = comparison.eq(axis_index_p.bind(axes=axes), np.int32(source))
  return [convenience.select(is_source, total, creation.zeros_like_array(total))]


pbroadcast_p.def_abstract_eval(lambda x, *, axes, sizes, source: x)
vma.vma_rules[pbroadcast_p] = _collective_vma("ppermute")  # (JAX's pbroadcast is a ppermute)
_register(pbroadcast_p, "pbroadcast", _pbroadcast_collective, _pbroadcast_batch,
          "many-to-one (every member gets one member's value)",
          transpose=_pbroadcast_transpose)


# --- all_to_all ---
all_to_all_p = Primitive("all_to_all")


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
  """Split `x` along `split_axis` into one chunk per member, send chunk `j` to member `j`, and
  concatenate the received chunks along `concat_axis` (stack them on a new axis `concat_axis`,
  dropping `split_axis`, when not `tiled`)."""
  _no_groups(axis_index_groups)
  names = _names(axis_name)
  size = _group_size(names)

  def one(leaf):
    aval = get_aval(leaf)
    if not -aval.ndim <= split_axis < aval.ndim:
      raise ValueError(f"all_to_all split_axis {split_axis} is out of bounds for shape "
                       f"{aval.shape}")
    split = split_axis % aval.ndim
    n = aval.shape[split]
    if tiled and n % size:
      raise ValueError(f"The size of all_to_all split_axis ({n}) has to be divisible by the size "
                       f"of the named axis {axis_name} ({size})")
    if not tiled and n != size:
      raise ValueError(f"all_to_all requires the size of the mapped axis axis_name to equal "
                       f"x.shape[split_axis], but they are {size} and {n} respectively.")
    out_nd = aval.ndim
    if not -out_nd <= concat_axis < out_nd:
      raise ValueError(f"all_to_all concat_axis {concat_axis} is out of bounds for shape "
                       f"{aval.shape}")
    if vma.active():
      leaf = _vary_over(leaf, names)
    return all_to_all_p.bind(leaf, axes=names, split_axis=split, concat_axis=concat_axis % out_nd,
                             axis_size=size, tiled=bool(tiled))
  return tree_util.tree_map(one, x)


def _all_to_all_abstract_eval(x, *, axes, split_axis, concat_axis, axis_size, tiled):
  shape = list(x.shape)
  if tiled:
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
  else:
    del shape[split_axis]
    shape.insert(concat_axis, axis_size)
  return x.update(shape=tuple(shape))


def _all_to_all_collective(size, axis_name, vals, dims, *, axes, split_axis, concat_axis,
                           axis_size, tiled):
  (x,), (d,) = vals, dims
  if _remaining(axes, axis_name):
    return _all_to_all_several(size, axis_name, x, d, axes=axes, split_axis=split_axis,
                               concat_axis=concat_axis, axis_size=axis_size, tiled=tiled)
  x = batch_util.bdim_at(x, d, 0, size)  # [sender, per-member dims...]
  shape = get_aval(x).shape
  s = split_axis + 1
  chunk = shape[s] // size
  # [sender, ..., receiver, chunk, ...]: the split axis as (receiver, chunk)
  x = shapes.reshape(x, shape[:s] + (size, chunk) + shape[s + 1:])
  x = batch_util.moveaxis(x, s, 0)  # [receiver, sender, ..., chunk, ...]
  # per receiver: [sender, ..., chunk, ...]; the sender axis goes where the chunks are joined
  member = list(get_aval(x).shape[1:])  # sender at 0, chunk at s
  if not tiled:  # drop the chunk axis (size 1) and stack the senders at concat_axis
    x = shapes.reshape(x, (size,) + tuple(member[:s] + member[s + 1:]))
    return batch_util.moveaxis(x, 1, concat_axis + 1), 0
  # tiled: put the sender axis just before the axis the chunks join along, then merge the two
  c = concat_axis + 1
  x = batch_util.moveaxis(x, 1, c)
  shp = get_aval(x).shape
  return shapes.reshape(x, shp[:c] + (shp[c] * shp[c + 1],) + shp[c + 2:]), 0


def _all_to_all_several(size, axis_name, x, d, *, axes, split_axis, concat_axis, axis_size,
                        tiled):
  """Over several names (members numbered row-major over them): first among the members along
  this trace's axis, then, for the traces that own them, among those along the other names;
  finally the senders back in row-major order and their chunks joined as asked. Below, the
  leading dim of every array is this axis's members; the others are a member's dims."""
  rest = _remaining(axes, axis_name)
  s_rest = axis_size // size
  s_suffix = int(np.prod([batching.axis_size(n) for n in axes[axes.index(axis_name) + 1:]]))
  s_prefix = s_rest // s_suffix
  x = batch_util.bdim_at(x, d, 0, size)
  shape = get_aval(x).shape
  s = split_axis + 1
  q = shape[s] // axis_size
  # the chunk for member (prefix, this, suffix) of the split dim: this axis's index first, then
  # the others' (row-major over the other names) with the chunk
  x = shapes.reshape(x, shape[:s] + (s_prefix, size, s_suffix, q) + shape[s + 1:])
  x = shapes.reshape(batch_util.moveaxis(x, s + 1, s), shape[:s] + (size, s_rest * q)
                     + shape[s + 1:])
  y, _ = _all_to_all_collective(size, axis_name, [x], [0], axes=(axis_name,),
                                split_axis=split_axis, concat_axis=0, axis_size=size, tiled=False)
  # y: [member, sender along this axis, ..., chunks for the others, ...]
  z = all_to_all_p.bind(y, axes=rest, split_axis=split_axis + 2, concat_axis=1,
                        axis_size=s_rest, tiled=True)
  # z: [member, sender as (prefix, suffix, this), ..., chunk, ...] -> senders row-major
  zs = get_aval(z).shape
  z = shapes.reshape(z, (zs[0], s_prefix, s_suffix, size) + zs[2:])
  z = shapes.reshape(batch_util.moveaxis(z, 3, 2), zs)
  if tiled:  # the senders just before the concat dim, merged with it
    z = batch_util.moveaxis(z, 1, concat_axis + 1)
    zs = get_aval(z).shape
    c = concat_axis + 1
    return shapes.reshape(z, zs[:c] + (zs[c] * zs[c + 1],) + zs[c + 2:]), 0
  z = shapes.squeeze(z, (split_axis + 2,))  # the chunk (size 1) goes; senders at concat_axis
  return batch_util.moveaxis(z, 1, concat_axis + 1), 0


def _all_to_all_batch(vals, dims, *, axes, split_axis, concat_axis, axis_size, tiled):
  (x,), (d,) = vals, dims
  x = batch_util.moveaxis(x, d, 0)
  return all_to_all_p.bind(x, axes=axes, split_axis=split_axis + 1, concat_axis=concat_axis + 1,
                           axis_size=axis_size, tiled=tiled), 0


def _all_to_all_transpose(ct, x, *, axes, split_axis, concat_axis, axis_size, tiled):
  return [all_to_all_p.bind(ct, axes=axes, split_axis=concat_axis, concat_axis=split_axis,
                            axis_size=axis_size, tiled=tiled)]


all_to_all_p.def_abstract_eval(_all_to_all_abstract_eval)
vma.vma_rules[all_to_all_p] = _collective_vma("all_to_all")
_register(all_to_all_p, "all_to_all", _all_to_all_collective, _all_to_all_batch,
          "each member's result depends on the other members' values",
          transpose=_all_to_all_transpose)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
  """Swap the named axis with the positional axis `axis` of `x` (whose size must equal the
  named axis's): member `i` gets slice `i` along `axis` from every member, stacked along `axis`
  in member order. It is `all_to_all(x, axis_name, axis, axis)`, as in JAX.

  Example:
    >>> x = jnp.arange(4.).reshape(2, 2)  # member i holds row i
    >>> revax.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(x)
    Array([[0., 2.],
           [1., 3.]], dtype=float32)
  """
  return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# --- pcast ---
_mesh_local = threading.local()


def _mesh_axes() -> tuple:
  """The mesh axes of the shard_maps being traced (outermost first): pcast is meaningful there."""
  return getattr(_mesh_local, "axes", ())


@contextlib.contextmanager
def mesh_axes_bound(axes):
  """Entered by shard_map while it traces the member function: `axes` are mesh axes, so a pcast
  over them is allowed."""
  saved = _mesh_axes()
  _mesh_local.axes = saved + tuple(axes)
  try:
    yield
  finally:
    _mesh_local.axes = saved


_PCAST_TO = ("varying", "reduced", "unreduced")


def pcast(x, axis_name, *, to: str):
  """Change how the type of `x` (a pytree) records its variation over mesh axes: `to="varying"`
  marks a value that is the same on every member as one that may differ (JAX's `pvary`).

  Inside `shard_map(..., check_vma=True)` values are typed with the mesh axes they vary over;
  the cast to "varying" of a value invariant over `axis_name` binds `pvary`, which changes no
  value but its type (`f32[3]` becomes `f32[3]{V:x}`); its transpose sums the cotangent over
  the members (psum). With check_vma=False nothing is typed and the value is returned as it is.
  The "reduced"/"unreduced" states are not part of revax's types (NotImplementedError).

  Example:
    >>> mesh = revax.make_mesh((1,), ("x",))
    >>> f = revax.shard_map(lambda v: lax.pcast(v, "x", to="varying"), mesh=mesh,
    ...                     in_specs=revax.P(), out_specs=revax.P("x"))
    >>> f(jnp.arange(2.))
    Array([0., 1.], dtype=float32)
  """
  if isinstance(axis_name, (set, frozenset)):
    raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got {axis_name}")
  names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
  if not axis_name:  # as JAX: nothing to cast over
    return x
  if to not in _PCAST_TO:
    raise ValueError(f"Got unexpected `to` value. Allowed `to` values are: {set(_PCAST_TO)}")
  if not _mesh_axes():
    raise ValueError(f"pcast over {axis_name!r} outside of any shard_map: pcast (pvary) should "
                     "be called under shard_map")
  _names(names)  # NameError for an unbound name
  for name in names:
    if name not in _mesh_axes():
      raise ValueError(f"pcast over axis {name!r}, which is not an axis of an enclosing "
                       "shard_map's mesh: pcast (pvary) should be called under shard_map")
  if to != "varying":
    raise NotImplementedError(
        f"pcast(to={to!r}): the reduced/unreduced states of a value (JAX's unreduced "
        "sharding types and shard_map out_specs with reduced/unreduced axes) are not part of "
        "revax's types, which carry splits over Explicit axes only")
  if not vma.active():  # check_vma=False (or a named vmap): no value is typed, nothing to cast
    return x

  def cast(leaf):
    state = _state_of(get_aval(leaf), names, "jax.lax.pcast")
    if state != "invarying":
      raise ValueError(f"Unsupported pcast from={state}, to={to!r}")
    return pvary_p.bind(leaf, axes=vma.in_mesh_order(names))
  return tree_util.tree_map(cast, x)


# --- names JAX removed (module-level __getattr__ of revax.lax) ---
_REMOVED = {"pvary": "revax.lax.pvary was deprecated in JAX v0.8.2 and removed in JAX v0.10.0; "
                     "use `revax.lax.pcast(..., to='varying')"}


def removed_getattr(name):
  """`revax.lax.<name>` for a name JAX removed: AttributeError with JAX's advice."""
  if name in _REMOVED:
    raise AttributeError(_REMOVED[name])
  raise AttributeError(f"module 'revax.lax' has no attribute {name!r}")


# --- psend / precv ---
_SEND_RECV = ("XLA:CPU cannot run them (measured: \"HLO opcode `send` is not supported by XLA:CPU "
              "ThunkEmitter\", for stablehlo.send/recv in a manual shard_map region), JAX lowers "
              "them on GPU only, and revax has no XLA token values (create_token) to order them")


def psend(x, axis_name, perm):
  """Send `x` from each `source` to `destination` of `perm` (the Send HLO), returning a token
  for `precv`. Not available in revax: the arguments are checked as JAX's ppermute checks them,
  then NotImplementedError says why. `ppermute` computes the same transfer."""
  names = _names(axis_name)
  _checked_perm("psend", perm, _group_size(names))
  raise NotImplementedError(f"psend: {_SEND_RECV}; use lax.ppermute for the same transfer")


def precv(token, out_shape, axis_name, perm):
  """Receive an array of `out_shape` sent by `psend` over `perm` (the Recv HLO). Not available in
  revax (see psend): the arguments are checked, then NotImplementedError says why."""
  names = _names(axis_name)
  _checked_perm("precv", perm, _group_size(names))
  if not hasattr(out_shape, "shape") or not hasattr(out_shape, "dtype"):
    raise TypeError(f"precv out_shape must have .shape and .dtype (a ShapeDtypeStruct), got "
                    f"{out_shape!r}")
  raise NotImplementedError(f"precv: {_SEND_RECV}; use lax.ppermute for the same transfer")
