"""shard_map: write the program of one member of a mesh, with collectives over its axes.

`shard_map(f, mesh=mesh, in_specs=..., out_specs=...)` splits each argument into blocks as its
PartitionSpec says (a dimension split over mesh axis "x" of size n is cut into n blocks; an
argument not split over an axis is the same for every member along it), runs `f` on one member's
blocks, where collectives over the mesh axes (`psum(v, "x")`, `all_gather`, `ppermute`, ...)
combine the members, and joins the members' results as `out_specs` says. An output whose spec
leaves out a mesh axis must be the same for every member along it (what `psum` over that axis
gives); otherwise it is an error, as JAX's replication check makes it.

The members are the examples of nested named vmaps, one per mesh axis (outermost first): each
argument's split dimensions are moved to the front in mesh order, and each vmap maps the leading
dimension of the arguments split over its axis. So shard_map composes with jit, grad and vmap
like any function, and gives JAX's values; the program runs on one device (placing one member
per device is a later step).
"""
from __future__ import annotations

import functools
import math

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.interpreters import batching
from revax._src.lax import batch_util, shapes
from revax._src.sharding import Mesh, PartitionSpec, check_spec

__all__ = ["shard_map"]


def shard_map(f=None, /, *, out_specs, in_specs=None, mesh=None, axis_names=frozenset(),
              check_vma=True):
  """Map `f` over the members of `mesh`, each seeing its blocks of the arguments.

  Args:
    f: the per-member function.
    out_specs: a PartitionSpec (or pytree prefix of the outputs) per output.
    in_specs: a PartitionSpec (or pytree prefix of the positional arguments) per argument.
    mesh: the `Mesh` whose axes name the members.
    axis_names: the mesh axes `f` is manual over (default: all).
    check_vma: accepted for compatibility; outputs are always checked for replication.

  Returns:
    The mapped function (or a decorator when `f` is omitted).

  Example:
    >>> from revax.sharding import PartitionSpec as P
    >>> mesh = revax.make_mesh((1,), ("x",))  # one device here; the same code scales out
    >>> total = revax.shard_map(lambda v: lax.psum(v.sum(), "x"), mesh=mesh,
    ...                         in_specs=P("x"), out_specs=P())
    >>> total(jnp.arange(8.))
    Array(28., dtype=float32)
  """
  if f is None:
    return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                               axis_names=axis_names, check_vma=check_vma)
  if not isinstance(mesh, Mesh):
    raise TypeError(f"shard_map requires a Mesh as mesh=, got {mesh!r}")
  if in_specs is None:
    raise NotImplementedError("shard_map without in_specs infers them from the arguments' "
                              "shardings, which revax's arrays do not carry yet; pass in_specs")
  manual = tuple(a for a in mesh.axis_names if not axis_names or a in axis_names)

  @functools.wraps(f)
  def mapped(*args):
    specs = _broadcast_prefix(in_specs, args, "in_specs")
    leaves, in_tree = tree_util.tree_flatten(args)
    for spec in specs:
      check_spec(spec, mesh, "shard_map in_specs")
      _check_manual(spec, manual, "in_specs")
    blocks = [_split(x, spec, mesh, manual) for x, spec in zip(leaves, specs, strict=True)]
    store = {}

    def member(*flat):
      out = f(*tree_util.tree_unflatten(in_tree, flat))
      out_leaves, store["tree"] = tree_util.tree_flatten(out)
      store["specs"] = _broadcast_prefix(out_specs, out, "out_specs")
      return out_leaves

    fn = member
    for axis in reversed(manual):  # the innermost vmap maps the last mesh axis
      fn = _map_axis(fn, axis, specs, store, mesh)
    outs = fn(*blocks)
    joined = [_join(y, spec, mesh, manual) for y, spec in zip(outs, store["specs"], strict=True)]
    return tree_util.tree_unflatten(store["tree"], joined)

  return mapped


def _check_manual(spec, manual, what):
  for dim in range(len(spec)):
    for axis in spec.axes_of(dim):
      if axis not in manual:
        raise ValueError(f"shard_map {what} refers to mesh axis {axis!r}, which is not among the "
                         f"manual axes {manual}")


def _broadcast_prefix(prefix, tree, what):
  """One PartitionSpec per leaf of `tree`, from a pytree prefix of specs."""
  is_spec = lambda x: isinstance(x, PartitionSpec) or x is None
  try:
    return tree_util.tree_leaves(tree_util.tree_map(
        lambda spec, sub: [spec or PartitionSpec()] * len(tree_util.tree_leaves(sub)),
        prefix, tree, is_leaf=is_spec), is_leaf=lambda x: isinstance(x, PartitionSpec))
  except (ValueError, TypeError) as e:
    raise ValueError(f"shard_map {what} must be a pytree prefix of the "
                     f"{'arguments' if what == 'in_specs' else 'outputs'}, with a PartitionSpec "
                     f"at each leaf: {e}") from None


def _split(x, spec, mesh, manual):
  """`x` with one leading dimension per manual axis it is split over (mesh order), each dim it
  splits cut into (axis sizes..., block)."""
  aval = get_aval(x)
  if len(spec) > aval.ndim:
    raise ValueError(f"shard_map in_specs {spec!r} has more entries than the argument's rank "
                     f"{aval.ndim} (shape {aval.shape})")
  shape, split_at = [], {}
  for dim, size in enumerate(aval.shape):
    axes = spec.axes_of(dim)
    n = math.prod(mesh.shape[a] for a in axes)
    if size % n:
      raise ValueError(f"shard_map: dimension {dim} of an argument of shape {aval.shape} (size "
                       f"{size}) is not divisible by the {n} members of mesh axes {axes}")
    for a in axes:
      split_at[a] = len(shape)
      shape.append(mesh.shape[a])
    shape.append(size // n)
  if not split_at:
    return x
  x = shapes.reshape(x, tuple(shape))
  order = [split_at[a] for a in manual if a in split_at]
  rest = [i for i in range(len(shape)) if i not in order]
  return shapes.transpose(x, tuple(order + rest))


def _map_axis(fn, axis, specs, store, mesh):
  """`fn` (flat in, flat out) mapped over the members along `axis`: arguments split over it are
  mapped at their leading dim; outputs whose spec uses it come back stacked in front, the others
  must be the same for every member."""
  size = mesh.shape[axis]
  in_dims = [0 if _uses(spec, axis) else None for spec in specs]

  def call(*args):
    outs, dims = batching.batch_flat(fn, list(args), in_dims, size, axis)
    result = []
    for k, (y, d, spec) in enumerate(zip(outs, dims, store["specs"], strict=True)):
      if _uses(spec, axis):
        result.append(batch_util.bdim_at(y, d, 0, size))
      elif d is not None:
        raise ValueError(
            f"shard_map out_specs {spec!r} of output {k} leave out mesh axis {axis!r}, so the "
            f"output must be the same on every member along {axis!r}, but it varies along it: "
            f"reduce it over the axis (e.g. lax.psum(y, {axis!r})) or name the axis in out_specs")
      else:
        result.append(y)
    return result
  return call


def _uses(spec, axis) -> bool:
  return any(axis in spec.axes_of(d) for d in range(len(spec)))


def _join(y, spec, mesh, manual):
  """The global output from the members' results stacked in front (one dim per manual axis the
  spec uses, mesh order)."""
  used = [a for a in manual if _uses(spec, a)]
  if not used:
    return y
  aval = get_aval(y)
  member_nd = aval.ndim - len(used)
  if len(spec) > member_nd:
    raise ValueError(f"shard_map out_specs {spec!r} has more entries than the output's rank "
                     f"{member_nd}")
  lead = {a: i for i, a in enumerate(used)}
  order, final_shape = [], []
  for dim in range(member_nd):
    axes = spec.axes_of(dim)
    order += [lead[a] for a in axes]
    order.append(len(used) + dim)
    final_shape.append(math.prod(mesh.shape[a] for a in axes) * aval.shape[len(used) + dim])
  y = shapes.transpose(y, tuple(order)) if order != list(range(aval.ndim)) else y
  return shapes.reshape(y, tuple(final_shape))

