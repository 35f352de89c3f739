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
like any function, and gives JAX's values, on one device.

Inside a staged program (under jit) over a mesh of several devices, shard_map is one primitive,
`shard_map_p`, holding both the per-member program (traced with the mesh axes bound as named
axes) and the nested-vmap form. Lowered into a program partitioned over the same mesh
(sharded_jit.py), it becomes `sdy.manual_computation`: each device runs the member program on
its block, and the collectives become StableHLO collectives over the mesh's partitions
(interpreters/manual_lowering.py). Every other rule (eager evaluation, JVP, transpose,
batching, partial evaluation, single-device lowering) is jit's rule applied to the vmap form.
"""
from __future__ import annotations

import contextlib
import functools
import math

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Var
from revax._src.core.trace import Primitive, _context
from revax._src.interpreters import ad, batching, dispatch, mlir, partial_eval, staging
from revax._src.interpreters import invertible as inv
from revax._src.interpreters import manual_lowering
from revax._src.jit import jit_p
from revax._src.lax import batch_util, parallel, parallel_lowering  # noqa: F401 (collectives)
from revax._src.lax import parallel_ragged, shapes  # noqa: F401 (its manual lowering)
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
    store = {}

    def member(*flat):
      out = f(*tree_util.tree_unflatten(in_tree, flat))
      out_leaves, store["tree"] = tree_util.tree_flatten(out)
      store["specs"] = _broadcast_prefix(out_specs, out, "out_specs")
      return out_leaves

    if math.prod(mesh.shape[a] for a in manual) > 1 and isinstance(_context.trace,
                                                                    staging.DynamicJaxprTrace):
      outs = _bind_manual(member, leaves, specs, store, mesh, manual)
    else:
      outs = _members_by_vmap(member, leaves, specs, store, mesh, manual)
    return tree_util.tree_unflatten(store["tree"], outs)

  return mapped


def _members_by_vmap(member, leaves, specs, store, mesh, manual):
  """The members as nested named vmaps (one per manual axis) over the split arguments."""
  blocks = [_split(x, spec, mesh, manual) for x, spec in zip(leaves, specs, strict=True)]
  fn = member
  for axis in reversed(manual):  # the innermost vmap maps the last mesh axis
    fn = _map_axis(fn, axis, specs, store, mesh)
  with parallel.mesh_axes_bound(manual):
    outs = fn(*blocks)
  return [_join(y, spec, mesh, manual) for y, spec in zip(outs, store["specs"], strict=True)]


# --- shard_map inside a staged program: one primitive, a manual computation over the mesh --------
def _member_aval(aval, spec, mesh):
  shape = list(aval.shape)
  for d in range(len(shape)):
    n = math.prod(mesh.shape[a] for a in spec.axes_of(d))
    if shape[d] % n:
      raise ValueError(f"shard_map: dimension {d} of an argument of shape {aval.shape} (size "
                       f"{shape[d]}) is not divisible by the {n} members of mesh axes "
                       f"{spec.axes_of(d)}")
    shape[d] //= n
  return aval.update(shape=tuple(shape), weak_type=False)


def _bind_manual(member, leaves, specs, store, mesh, manual):
  """Stage shard_map as `shard_map_p`: the per-member program (collectives as StableHLO
  collectives over the mesh's partitions when lowered into a program over that mesh) and the
  same computation as nested vmaps (used by every other rule and by single-device lowering)."""
  avals = [get_aval(x) for x in leaves]
  for x, spec in zip(avals, specs, strict=True):
    if len(spec) > x.ndim:
      raise ValueError(f"shard_map in_specs {spec!r} has more entries than the argument's rank "
                       f"{x.ndim} (shape {x.shape})")
  with contextlib.ExitStack() as stack:
    for axis in manual:
      stack.enter_context(batching.extend_axis_env(axis, mesh.shape[axis]))
    stack.enter_context(parallel.mesh_axes_bound(manual))
    body, body_consts = staging.trace_to_jaxpr(
        member, [_member_aval(a, s, mesh) for a, s in zip(avals, specs, strict=True)])
  out_specs = tuple(store["specs"])
  vstore = {"specs": store["specs"]}
  fallback, fb_consts = staging.trace_to_jaxpr(
      lambda *xs: _members_by_vmap(lambda *m: staging_eval(body, body_consts, m), xs, specs,
                                   vstore, mesh, manual), avals)
  consts, slots = [], {}
  for c in list(body_consts) + list(fb_consts):
    if id(c) not in slots:
      slots[id(c)] = len(consts)
      consts.append(c)

  def closed(jaxpr, own):
    mine = {slots[id(c)]: v for v, c in zip(jaxpr.constvars, own, strict=True)}
    lead = [mine.get(i) or Var(get_aval(c)) for i, c in enumerate(consts)]
    return ClosedJaxpr(Jaxpr([], lead + list(jaxpr.invars), jaxpr.outvars, jaxpr.eqns), [])

  all_specs = (PartitionSpec(),) * len(consts) + tuple(specs)
  return shard_map_p.bind(*consts, *leaves, body=closed(body, body_consts),
                          fallback=closed(fallback, fb_consts), mesh=mesh, in_specs=all_specs,
                          out_specs=out_specs, manual=tuple(manual))


def staging_eval(jaxpr, consts, args):
  return eval_jaxpr(jaxpr, consts, *args)


shard_map_p = Primitive("shard_map", multiple_results=True)
shard_map_p.def_abstract_eval(lambda *avals, fallback, **_: fallback.out_avals)


def _as_jit(rule):
  """A rule of shard_map_p that is jit's rule applied to the vmap form (`fallback`)."""
  def apply(*args, body, fallback, mesh, in_specs, out_specs, manual):
    return rule(*args, jaxpr=fallback, name="shard_map")
  return apply


def _partial_eval(trace, args, params, unknowns):
  return partial_eval.partial_eval_rules[jit_p](
      trace, args, {"jaxpr": params["fallback"], "name": "shard_map"}, unknowns)


dispatch.custom_impls[shard_map_p] = _as_jit(lambda *a, **p: jit_p.bind(*a, **p))
ad.primitive_jvps[shard_map_p] = _as_jit(ad.primitive_jvps[jit_p])
ad.primitive_transposes[shard_map_p] = _as_jit(ad.primitive_transposes[jit_p])
batching.axis_size_batchers[shard_map_p] = _as_jit(batching.axis_size_batchers[jit_p])
partial_eval.partial_eval_rules[shard_map_p] = _partial_eval
inv.not_invertible(shard_map_p, "shard_map: apply invertible inside the mapped function")
mlir.register_lowering(shard_map_p, manual_lowering.lower_shard_map)


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

