"""shard_map: write the program of one member of a mesh, with collectives over its axes.

`shard_map(f, mesh=mesh, in_specs=..., out_specs=...)` splits each argument into blocks as its
PartitionSpec says (a dimension split over mesh axis "x" of size n is cut into n blocks; an
argument not split over an axis is the same for every member along it), runs `f` on one member's
blocks, where collectives over the mesh axes (`psum(v, "x")`, `all_gather`, `ppermute`, ...)
combine the members, and joins the members' results as `out_specs` says. An output whose spec
leaves out a mesh axis must be the same for every member along it (what `psum` over that axis
gives). With check_vma (the default) the body is traced first with its values typed by the
manual axes they vary over (core/vma.py: an argument varies over the axes its in_spec splits
it over, psum makes a value invariant, pvary varies it), and an output typed as varying over an
axis its out_spec leaves out is an error with JAX's message; the body's jaxpr is then what runs.

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
partial evaluation, single-device lowering) is jit's rule applied to the vmap form.

Under vmap the primitive stays a manual computation: each member runs its program on its share
of the batch. Without spmd_axis_name the batch dimension is not split (every member holds the
whole batch); with `vmap(..., spmd_axis_name="x")` it is split over mesh axis "x" (added to the
specs at the batch dimension), so each member batches its program over `size / |x|` examples,
as JAX does. A shard_map called inside such a vmap is staged as the primitive for this reason.
"""
from __future__ import annotations

import contextlib
import math

from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.core.avals import AbstractRef, get_aval
from revax._src.core.eval import eval_jaxpr
from revax._src.core import pretty_printer as pp
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Var, pp_hidden_params, pp_param_rules
from revax._src.core.trace import Primitive, Tracer, _context, eval_trace
from revax._src.interpreters import ad, batching, dispatch, mlir, partial_eval, staging
from revax._src.interpreters import invertible as inv
from revax._src.interpreters import manual_lowering
from revax._src.jit import jit, jit_p
from revax._src.lax import batch_util, parallel, parallel_lowering  # noqa: F401 (collectives)
from revax._src.lax import convenience, parallel_ragged, shapes  # noqa: F401 (its manual lowering)
from revax._src.core import mesh_context, sharding_types, vma
from revax._src.core.vma import ManualAxisType
from revax._src.core.vma_jaxpr import untyped_jaxpr
from revax._src.sharding import AxisType, Mesh, PartitionSpec, check_spec

__all__ = ["shard_map", "smap", "Infer"]


class InferFromArgs:
  """shard_map's default `in_specs`: read each argument's spec from its sharding."""

  def __repr__(self):
    return "revax.sharding.Infer"


Infer = InferFromArgs()


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma=True):
  """Map `f` over the members of `mesh`, each seeing its blocks of the arguments.

  Args:
    f: the per-member function.
    out_specs: a PartitionSpec (or pytree prefix of the outputs) per output.
    in_specs: a PartitionSpec (or pytree prefix of the positional arguments) per argument; a
      None leaf passes its arguments as they are (static, not split). Default: each argument's
      spec is read from its sharding (an Array placed with NamedSharding over `mesh`; any other
      array is whole on every member). When `f` is manual over every mesh axis, each given spec
      must say how its argument is split over the Explicit axes (ValueError otherwise, as in
      JAX): place the argument first, or leave in_specs out.
    mesh: the `Mesh` whose axes name the members; None: the mesh set with `revax.set_mesh`.
    axis_names: the mesh axes `f` is manual over (default: all).
    check_vma: type the values inside `f` with the manual axes they vary over (JAX's vma:
      `typeof(x)` prints `f32[4]{V:i}`; collectives, `pcast` and the implicit pvary keep the
      types) and check statically that each output varies only over the mesh axes its
      out_specs name (ValueError otherwise, with JAX's message); False: nothing is typed and an
      output's first member is taken, as JAX's unchecked replication.

  Returns:
    The mapped function (or a decorator when `f` is omitted).

  Example:
    >>> from revax.sharding import PartitionSpec as P
    >>> mesh = revax.make_mesh((1,), ("x",))  # one device here; the same code scales out
    >>> total = revax.shard_map(lambda v: lax.psum(v.sum(), "x"), mesh=mesh,
    ...                         in_specs=P("x"), out_specs=P())
    >>> xs = revax.device_put(jnp.arange(8.), revax.sharding.NamedSharding(mesh, P("x")))
    >>> total(xs)
    Array(28., dtype=float32)
  """
  if f is None:
    return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                               axis_names=axis_names, check_vma=check_vma)
  from_context = mesh is None
  if mesh is None:  # the mesh set with revax.set_mesh
    mesh = mesh_context.concrete_mesh()
    if mesh is None:
      raise ValueError("The context mesh cannot be empty: pass mesh= or use "
                       "`revax.set_mesh(mesh)` to enter a mesh context")
  if not isinstance(mesh, Mesh):
    raise TypeError(f"shard_map requires a Mesh as mesh=, got {mesh!r}")
  manual = tuple(a for a in mesh.axis_names if not axis_names or a in axis_names)
  eager_runs = {}  # (argument structure, specs) -> (jitted program over the mesh, its store)

  @wrapping.wraps(f)
  def mapped(*args):
    all_leaves, in_tree = tree_util.tree_flatten(args)
    if in_specs is Infer:
      if any(mesh.axis_types[mesh.axis_names.index(a)] is not AxisType.Explicit for a in manual):
        raise TypeError(f"shard_map in_specs must be given (a pytree of PartitionSpecs) when "
                        f"the manual axes {manual} are not all of type AxisType.Explicit: only "
                        "Explicit axes let shard_map read the specs from the arguments")
      all_specs = [_inferred_spec(x, mesh, manual) for x in all_leaves]
    else:
      all_specs = _broadcast_prefix(in_specs, args, "in_specs")
    static = {i: x for i, (x, spec) in enumerate(zip(all_leaves, all_specs, strict=True))
              if spec is None}
    leaves = [x for i, x in enumerate(all_leaves) if i not in static]
    specs = [spec for spec in all_specs if spec is not None]
    _refuse_refs([get_aval(x) for x in leaves], "passes")
    for x, spec in zip(leaves, specs, strict=True):
      check_spec(spec, mesh, "shard_map in_specs")
      _check_manual(spec, manual, "in_specs")
      if in_specs is not Infer and len(manual) == len(mesh.axis_names):
        _check_spec_matches_type(x, spec, mesh, manual)  # (JAX checks only full-manual maps)
    store = {"check": check_vma, "fun": f, "context_mesh": from_context}

    def member(*flat):
      flat = iter(flat)
      flat = [static[i] if i in static else next(flat) for i in range(len(all_leaves))]
      out = f(*tree_util.tree_unflatten(in_tree, flat))
      out_leaves, store["tree"] = tree_util.tree_flatten(out)
      store["specs"] = _broadcast_prefix(out_specs, out, "out_specs")
      return out_leaves

    several = math.prod(mesh.shape[a] for a in manual) > 1
    store["eager"] = _context.trace is eval_trace
    if several and _context.trace is eval_trace:
      # eagerly, as in JAX: one program over the mesh, whose results are sharded Arrays (its
      # jit kept per argument structure, so repeated calls neither retrace nor relower)
      key = (in_tree, tuple(specs)) if not static else None
      run = eager_runs.get(key) if key is not None else None
      if run is None:
        run_store = store
        run = (jit(lambda *xs: _bind_manual(member, xs, specs, run_store, mesh, manual)),
               run_store)
        if key is not None:
          eager_runs[key] = run
      outs, store = run[0](*leaves), run[1]
    elif several and (isinstance(_context.trace, staging.DynamicJaxprTrace)
                      or batching.spmd_axis_names()):
      outs = _bind_manual(member, leaves, specs, store, mesh, manual)
    elif check_vma:  # typed: the body traced once (its types checked), then run as vmaps
      avals = [get_aval(x) for x in leaves]
      body, consts = _trace_member(member, avals, specs, store, mesh, manual)
      vstore = {"specs": store["specs"], "check": False}
      plain = untyped_jaxpr(body)
      with vma.not_typing():
        outs = _members_by_vmap(lambda *m: staging_eval(plain, consts, m), leaves, specs, vstore,
                                mesh, manual)
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
def _member_aval(aval, spec, mesh, manual=(), check=False):
  """A member's block of an argument of type `aval` split as `spec` says; with `check` (JAX's
  check_vma) typed as varying over the manual axes `spec` splits it over (and those it varied
  over already, in an enclosing shard_map)."""
  shape = list(aval.shape)
  for d in range(len(shape)):
    n = math.prod(mesh.shape[a] for a in spec.axes_of(d))
    if shape[d] % n:
      raise ValueError(f"shard_map: dimension {d} of an argument of shape {aval.shape} (size "
                       f"{shape[d]}) is not divisible by the {n} members of mesh axes "
                       f"{spec.axes_of(d)}")
    shape[d] //= n
  axes = ({a for d in range(len(spec)) for a in spec.axes_of(d) if a in manual}
          | vma.varying(aval)) if check else ()
  return aval.update(shape=tuple(shape), weak_type=False,
                     manual_axis_type=ManualAxisType(varying=axes) if axes else None)


def _trace_member(member, avals, specs, store, mesh, manual):
  """The per-member program traced at the members' blocks of `avals` with the mesh axes bound
  (and, with check_vma, its values typed with their varying manual axes and its outputs
  checked against out_specs). Returns (jaxpr, consts); `store` receives the outputs' tree and
  specs."""
  check = store.get("check", True)
  for x, spec in zip(avals, specs, strict=True):
    if len(spec) > x.ndim:
      raise ValueError(f"shard_map in_specs {spec!r} has more entries than the argument's rank "
                       f"{x.ndim} (shape {x.shape})")
  with contextlib.ExitStack() as stack:
    for axis in manual:
      stack.enter_context(batching.extend_axis_env(axis, mesh.shape[axis]))
    stack.enter_context(parallel.mesh_axes_bound(manual))
    stack.enter_context(vma.typing_body(mesh.axis_names, manual, check))
    in_avals = [_member_aval(a, s, mesh, manual, check)
                for a, s in zip(avals, specs, strict=True)]

    def typed_member(*args):
      outs = member(*args)
      if not check:
        return outs
      # JAX's implicit pvary of an output invariant over manual axes its out_spec names
      return [_vary_as_spec(y, spec, manual) for y, spec in zip(outs, store["specs"],
                                                                 strict=True)]
    body, consts = staging.trace_to_jaxpr(typed_member, in_avals)
    if check:
      _check_out_vma(body, store, mesh)
  return body, consts


def _check_out_vma(body, store, mesh):
  """JAX's static replication check: an output may vary only over the mesh axes its out_spec
  names (ValueError otherwise, with JAX's message: eagerly, as JAX's eager shard_map reports
  it, for the first such output alone and in the name of its internal function)."""
  fails = []
  for k, (v, spec) in enumerate(zip(body.outvars, store["specs"], strict=True)):
    named = {a for d in range(len(spec)) for a in spec.axes_of(d)}
    unmentioned = [a for a in mesh.axis_names if a not in named]
    varying = vma.varying(v.aval)
    if varying & set(unmentioned):
      fails.append((k, spec, unmentioned, varying, named))
  if not fails:
    return
  eager = store.get("eager", False)
  name = "_rem_singleton" if eager else getattr(store.get("fun"), "__name__",
                                                  str(store.get("fun")))
  order = lambda axes: ",".join(a for a in mesh.axis_names if a in axes)
  msgs = []
  for k, spec, unmentioned, varying, named in fails[:1] if eager else fails:
    where = "" if eager else _out_path(store, k)
    if len(unmentioned) > 1:
      msgs.append(f"* out_specs{where} is {spec!r} which implies that the corresponding output "
                  f"value is only varying across mesh axes {{{order(named)}}} and not "
                  f"{{{order(set(unmentioned) & varying)}}}, but it was inferred to be possibly "
                  f"varying over {{{order(varying)}}}")
    else:
      msgs.append(f"* out_specs{where} is {spec!r} which implies that the corresponding output "
                  f"value is replicated across mesh axis '{unmentioned[0]}', but could not "
                  "infer replication over any axes")
  if len(msgs) == 1:
    msgs = [msgs[0][2:]]
  raise ValueError(
      f"shard_map applied to the function '{name}' was given out_specs which require "
      f"replication which can't be statically inferred given the mesh:\n\n"
      f"The mesh given has shape {tuple(mesh.shape[a] for a in mesh.axis_names)} with "
      f"corresponding axis names {tuple(mesh.axis_names)}.\n\n" + "\n\n".join(msgs) +
      "\n\nCheck if these output values are meant to be replicated over those mesh axes. If "
      "not, consider revising the corresponding out_specs entries. If so, consider disabling "
      "the check by passing the check_vma=False argument to `jax.shard_map`.")


def _vary_as_spec(y, spec, manual):
  named = [a for d in range(len(spec)) for a in spec.axes_of(d) if a in manual]
  missing = [a for a in named if a not in vma.varying(get_aval(y))]
  return parallel.pvary_p.bind(y, axes=vma.in_mesh_order(missing)) if missing else y


def _out_path(store, k) -> str:
  """The key path of output `k` in the outputs' tree ('' for a single output)."""
  tree = store["tree"]
  if tree_util.treedef_is_leaf(tree):
    return ""
  paths = [p for p, _ in tree_util.tree_flatten_with_path(
      tree_util.tree_unflatten(tree, list(range(tree.num_leaves))))[0]]
  return tree_util.keystr(paths[k])


def _bind_manual(member, leaves, specs, store, mesh, manual):
  """Stage shard_map as `shard_map_p`: the per-member program (collectives as StableHLO
  collectives over the mesh's partitions when lowered into a program over that mesh) and the
  same computation as nested vmaps (used by every other rule and by single-device lowering)."""
  avals = [get_aval(x) for x in leaves]
  _refuse_refs(avals, "passes")
  body, body_consts = _trace_member(member, avals, specs, store, mesh, manual)
  out_specs = tuple(store["specs"])
  # (with check_vma the outputs' types were checked against out_specs: the vmap form takes
  # member 0's value of an output its spec says is replicated, as JAX trusts the types)
  vstore = {"specs": store["specs"], "check": False}
  plain = untyped_jaxpr(body)
  with vma.not_typing(), sharding_types.internal_expansion():  # (revax's own reshapes)
    fallback, fb_consts = staging.trace_to_jaxpr(
        lambda *xs: _members_by_vmap(lambda *m: staging_eval(plain, body_consts, m), xs, specs,
                                     vstore, mesh, manual), avals)
  _refuse_refs([get_aval(c) for c in body_consts], "closes over")
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
                          out_specs=out_specs, manual=tuple(manual),
                          check_vma=bool(store.get("check", True)),
                          context_mesh=bool(store.get("context_mesh", False)))


def _refuse_refs(avals, how: str) -> None:
  """Refs made inside a shard_map body work; a ref crossing its boundary has no per-device
  meaning revax defines (jax 0.10.2 fails on one too)."""
  for a in avals:
    if isinstance(a, AbstractRef):
      raise NotImplementedError(f"a shard_map body that {how} a mutable array reference "
                                f"({a.str_short()}) is not supported; make the ref inside the "
                                "body, or pass and return its value")


def staging_eval(jaxpr, consts, args):
  return eval_jaxpr(jaxpr, consts, *args)


shard_map_p = Primitive("shard_map", multiple_results=True)


def _shard_map_abstract_eval(*avals, fallback, mesh, out_specs, manual, **_):
  """The vmap form's result types, split as JAX types shard_map's results: over the Explicit
  manual axes as `out_specs` says, over the other Explicit axes as the body left them."""
  outs = fallback.out_avals
  kinds = dict(zip(mesh.axis_names, mesh.axis_types, strict=True))
  ours = {a for a in manual if kinds[a] is AxisType.Explicit}
  if not ours:
    return outs
  typed = []
  for aval, spec in zip(outs, out_specs, strict=True):
    body = sharding_types.spec_parts(aval)
    parts = []
    for d in range(aval.ndim):
      axes = tuple(a for a in (spec.axes_of(d) if d < len(spec) else ()) if a in ours)
      axes += tuple(a for a in sharding_types.axes_of_part(body[d]) if a not in manual)
      parts.append(None if not axes else axes[0] if len(axes) == 1 else axes)
    typed.append(sharding_types.typed(aval, mesh, parts, "shard_map"))
  return typed


shard_map_p.def_abstract_eval(_shard_map_abstract_eval)


def _shard_map_printed(p: dict) -> dict:
  """The params as JAX prints a shard_map equation's: in JAX's names (the member program as
  `jaxpr`, printed ahead by name where JAX's printer would; the mesh abstract; the vmap form,
  revax's own, not shown), the specs as JAX's `str` of a tuple of them."""
  specs = lambda ss: pp.text("(" + ", ".join(repr(x) for x in ss) + (",)" if len(ss) == 1 else ")"))
  return {"check_vma": p["check_vma"], "in_specs": specs(p["in_specs"]), "jaxpr": p["body"],
          "mesh": p["mesh"].abstract_mesh if p["context_mesh"] else p["mesh"],
          "newly_manual_axes": frozenset(p["manual"]), "out_specs": specs(p["out_specs"])}


pp_param_rules[shard_map_p] = _shard_map_printed
pp_hidden_params[shard_map_p] = ("fallback",)


def _as_jit(rule):
  """A rule of shard_map_p that is jit's rule applied to the vmap form (`fallback`)."""
  def apply(*args, body, fallback, mesh, in_specs, out_specs, manual, **_):
    # (the fallback's split/join reshapes are revax's own: their types were judged when the
    # body was traced, so re-tracing them under a transformation must not refuse them)
    with sharding_types.internal_expansion():
      return rule(*args, jaxpr=fallback, name="shard_map")
  return apply


def _partial_eval(trace, args, params, unknowns):
  with sharding_types.internal_expansion():
    return partial_eval.partial_eval_rules[jit_p](
        trace, args, {"jaxpr": params["fallback"], "name": "shard_map"}, unknowns)


def _batch_spec(spec, dim, axes):
  """`spec` of a value batched at `dim`: the batch dimension split over `axes` (None: whole)."""
  parts = list(getattr(spec, "partitions", spec)) + [None] * (dim - len(spec))
  parts.insert(dim, axes)
  return PartitionSpec(*parts)


def _spec_axes(specs) -> set:
  return {a for spec in specs for d in range(len(spec)) for a in spec.axes_of(d)}


def _names_axis(jaxpr, name) -> bool:
  """Whether an equation of `jaxpr` (or of a jaxpr inside one) is a collective over `name`."""
  for eqn in jaxpr.eqns:
    if (batching.collective_batchers.get(eqn.primitive) is not None
        and name in eqn.params.get("axes", ())):
      return True
    for v in eqn.params.values():
      for sub in v if isinstance(v, tuple) else (v,):
        sub = sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub
        if isinstance(sub, Jaxpr) and _names_axis(sub, name):
          return True
  return False


def _realigned(closed, dims, want, size):
  """`closed` (outputs batched at `dims`) with its outputs moved (or broadcast) to `want`."""
  if list(dims) == list(want):
    return closed

  def fun(*args):
    outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return [y if w is None else batch_util.bdim_at(y, d, w, size)
            for y, d, w in zip(outs, dims, want, strict=True)]
  jaxpr, consts = staging.trace_to_jaxpr(fun, closed.in_avals)
  return ClosedJaxpr(jaxpr, consts)


def _shard_map_batch(axis_size, vals, dims, *, body, fallback, mesh, in_specs, out_specs,
                     manual, **flags):
  """shard_map of a batch: still one manual computation. With vmap's spmd_axis_name the batch
  dimension is split over those (manual) mesh axes and each member's program is batched over
  its share; without, it is whole on every member. The vmap form is batched over the whole
  batch, its outputs placed where the member program's are."""
  spmd = batching.batching_spmd_axis_name()
  member_size = axis_size
  if spmd is not None:
    if set(spmd) & _spec_axes(in_specs):
      raise ValueError("vmap spmd_axis_name cannot appear in shard_map in_specs")
    if set(spmd) & _spec_axes(out_specs):
      raise ValueError("vmap spmd_axis_name cannot appear in shard_map out_specs")
    missing = [a for a in spmd if a not in manual]
    if missing:
      raise ValueError(f"vmap spmd_axis_name {spmd} names {missing}, which are not manual axes "
                       f"of the shard_map inside it (manual axes {manual} of mesh "
                       f"{tuple(mesh.axis_names)})")
    n = math.prod(mesh.shape[a] for a in spmd)
    if axis_size % n:
      raise ValueError(f"vmap of size {axis_size} with spmd_axis_name {spmd} around a shard_map: "
                       f"the batch is not divisible by the {n} members of mesh axes {spmd}")
    member_size = axis_size // n
    name = batching.batching_axis_name()
    if name is not None and _names_axis(body.jaxpr, name):
      raise NotImplementedError(
          f"a collective over vmap axis {name!r} inside a shard_map under vmap with "
          f"spmd_axis_name {spmd}: each member holds only its share of the batch (JAX fails "
          f"here too); apply the collective outside the shard_map")
  body_b, body_dims = batching.batch_jaxpr(body, dims, member_size)
  whole_b, whole_dims = batching.batch_jaxpr(fallback, dims, axis_size)
  want = [b if b is not None or w is None else 0
          for b, w in zip(body_dims, whole_dims, strict=True)]
  body_b = _realigned(body_b, body_dims, want, member_size)
  whole_b = _realigned(whole_b, whole_dims, want, axis_size)
  new_in = tuple(sp if d is None else _batch_spec(sp, d, spmd)
                 for sp, d in zip(in_specs, dims, strict=True))
  new_out = tuple(sp if d is None else _batch_spec(sp, d, spmd)
                  for sp, d in zip(out_specs, want, strict=True))
  outs = shard_map_p.bind(*vals, body=body_b, fallback=whole_b, mesh=mesh, in_specs=new_in,
                          out_specs=new_out, manual=manual, **flags)
  return outs, want


dispatch.custom_impls[shard_map_p] = _as_jit(lambda *a, **p: jit_p.bind(*a, **p))
ad.primitive_jvps[shard_map_p] = _as_jit(ad.primitive_jvps[jit_p])
ad.primitive_transposes[shard_map_p] = _as_jit(ad.primitive_transposes[jit_p])
batching.axis_size_batchers[shard_map_p] = _shard_map_batch
partial_eval.partial_eval_rules[shard_map_p] = _partial_eval
inv.not_invertible(shard_map_p, "shard_map: apply invertible inside the mapped function")
mlir.register_lowering(shard_map_p, manual_lowering.lower_shard_map)


def _check_manual(spec, manual, what):
  for dim in range(len(spec)):
    for axis in spec.axes_of(dim):
      if axis not in manual:
        raise ValueError(f"shard_map {what} refers to mesh axis {axis!r}, which is not among the "
                         f"manual axes {manual}")


def _inferred_spec(x, mesh, manual) -> PartitionSpec:
  """The in_spec of argument `x` read from its sharding: a NamedSharding over `mesh` gives its
  spec (over the manual axes), any other concrete array is whole (P())."""
  # a traced value's type says how it is split over Explicit axes (unsplit: whole)
  sharding = x.aval.sharding if isinstance(x, Tracer) else getattr(x, "sharding", None)
  spec = getattr(sharding, "spec", None)
  if spec is None or getattr(sharding, "mesh", None) != mesh:
    return PartitionSpec()
  keep = lambda axes: tuple(a for a in axes if a in manual) or None
  return PartitionSpec(*(keep(spec.axes_of(d)) for d in range(len(spec))))


def _check_spec_matches_type(x, spec, mesh, manual) -> None:
  """JAX's rule for a shard_map manual over every mesh axis: an argument's in_spec must say how
  its type is split over the Explicit axes (an unsplit value, NumPy's or a Python scalar too,
  is P()). ValueError otherwise."""
  explicit = {a for a, kind in zip(mesh.axis_names, mesh.axis_types, strict=True)
              if kind is AxisType.Explicit and a in manual}
  if not explicit:
    return
  aval = get_aval(x)
  sharding = aval.sharding if isinstance(x, Tracer) else getattr(x, "sharding", None)
  typed = getattr(sharding, "spec", None) if getattr(sharding, "mesh", None) is not None else None
  split = lambda s, d: tuple(a for a in s.axes_of(d) if a in explicit) if d < len(s) else ()
  dims = range(aval.ndim)
  if all(split(spec, d) == (split(typed, d) if typed is not None else ()) for d in dims):
    return
  padded = lambda s: PartitionSpec(*(s[d] if s is not None and d < len(s) else None
                                       for d in dims))
  raise ValueError(
      f"in_specs passed to shard_map: {padded(spec)} does not match the specs of the input: "
      f"{padded(typed)} for "
      f"arg: {aval.str_short()}. `in_specs` is an optional argument so you can omit specifying "
      f"it and shard_map will infer the in_specs from the arguments. If you want to reshard "
      f"your inputs, you can use `revax.sharding.reshard` on the arguments and then pass those "
      f"to shard_map.")


def _broadcast_prefix(prefix, tree, what):
  """One PartitionSpec (or None: static) per leaf of `tree`, from a pytree prefix of specs."""
  is_spec = lambda x: isinstance(x, PartitionSpec) or x is None
  try:
    return tree_util.prefix_leaves(prefix, tree, is_leaf=is_spec)
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
  with sharding_types.internal_expansion():  # (revax's own reshape of a split type)
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
      elif d is not None and not store.get("check", True):
        result.append(convenience.index_in_dim(y, 0, d, keepdims=False))  # (unchecked: member 0's)
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
  with sharding_types.internal_expansion():  # (revax's own reshape of a split type)
    return shapes.reshape(y, tuple(final_shape))



def smap(f=None, /, *, in_axes=Infer, out_axes, axis_name):
  """shard_map over one axis of the mesh in context (set with `revax.set_mesh`), described as
  vmap is: `in_axes` / `out_axes` say which dimension of each argument / result is split over
  `axis_name` (None: not split).

  Raises:
    TypeError: an axis_name that is a list or tuple, or axes that are not ints / None.
    ValueError: no mesh is set.
  """
  if f is None:
    return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
  if isinstance(axis_name, (list, tuple)):
    raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
  if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
    raise TypeError(f"smap in_axes must be an int, None, revax.sharding.Infer, or a tuple of "
                    f"entries corresponding to the positional arguments, but got {in_axes}.")
  is_axis = lambda a: a is None or isinstance(a, int)
  if in_axes is not Infer and not all(
      isinstance(a, int) for a in tree_util.tree_leaves(in_axes)):
    raise TypeError(f"smap in_axes must be an int, None, revax.sharding.Infer, or (nested) "
                    f"container with those types as leaves, but got {in_axes}.")
  if not all(isinstance(a, int) for a in tree_util.tree_leaves(out_axes)):
    raise TypeError(f"smap out_axes must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {out_axes}.")
  as_spec = lambda a: PartitionSpec() if a is None else PartitionSpec(*[None] * a, axis_name)
  to_specs = lambda axes: tree_util.tree_map(as_spec, axes, is_leaf=lambda a: a is None)
  in_specs = Infer if in_axes is Infer else (
      to_specs(in_axes) if isinstance(in_axes, tuple) else as_spec(in_axes))
  out_specs = as_spec(out_axes) if is_axis(out_axes) else to_specs(out_axes)
  return shard_map(f, out_specs=out_specs, in_specs=in_specs, axis_names={axis_name})
