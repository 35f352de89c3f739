"""with_sharding_constraint: ask that a value inside a jitted program be laid out as a sharding.

The `sharding_constraint` primitive is the identity on values. In a program partitioned over a
mesh it lowers to `sdy.sharding_constraint` (Shardy then lays the value out so, inserting the
collectives that takes); in a single-device program it lowers to nothing. Eagerly it places the
value as the sharding says (a sharded Array over several devices). It is linear (its JVP
constrains the tangent, its transpose the cotangent), batches by leaving the batch dimension
unsplit, and is its own inverse.

The sharding is a NamedSharding (an object with `.mesh` and `.spec`); this module reads only
those attributes, so it sits below the sharding classes.
"""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core import mesh_context, sharding_types
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir, sharding_lowering
from revax._src.interpreters import invertible as inv

__all__ = ["with_sharding_constraint", "sharding_constraint_p", "placed", "resolve_out_sharding",
           "typed_result_param", "wanted_type"]

# Set by sharded_api (above this layer): place(value, sharding) -> Array laid out so.
eager_place = None


def with_sharding_constraint(x, shardings):
  """`x` (a pytree of arrays) constrained to `shardings` (one sharding, or a pytree prefix of
  `x` with a sharding at each leaf).

  Args:
    x: arrays, or a pytree of them.
    shardings: NamedSharding(s), or PartitionSpecs over the mesh set with `revax.set_mesh`.

  Returns:
    `x`'s values, laid out as asked.

  Raises:
    ValueError: a sharding whose spec does not fit an array's rank or does not divide its
      dimensions.
    RuntimeError: a PartitionSpec and no mesh set with `revax.set_mesh` (JAX's error).

  Example:
    >>> from revax.sharding import Mesh, NamedSharding, PartitionSpec as P
    >>> mesh = Mesh(np.array(revax.devices()[:1]), ("data",))
    >>> f = revax.jit(lambda x: lax.with_sharding_constraint(x, NamedSharding(mesh, P("data"))) * 2)
    >>> f(jnp.arange(4.))
    Array([0., 2., 4., 6.], dtype=float32)
  """
  leaves, tree = tree_util.tree_flatten(x)
  if mesh_context.is_spec(shardings):  # a bare spec: over the mesh set with revax.set_mesh
    shardings = mesh_context.resolve_spec(shardings, "with_sharding_constraint", RuntimeError)
  if _is_sharding(shardings):
    per_leaf = [shardings] * len(leaves)
  else:
    try:
      per_leaf = tree_util.prefix_leaves(shardings, x, is_leaf=_is_sharding)
    except (ValueError, TypeError) as e:
      raise ValueError(f"with_sharding_constraint: shardings must be a sharding or a pytree "
                       f"prefix of the value: {e}") from None
  out = []
  for leaf, s in zip(leaves, per_leaf, strict=True):
    if mesh_context.is_spec(s):
      s = mesh_context.resolve_spec(s, "with_sharding_constraint", RuntimeError)
    if mesh_context.concrete is not None:  # (a type's sharding: over a concrete mesh)
      s = mesh_context.concrete(s, "with_sharding_constraint", _mesh_of(leaf))
    if s is not None and not _is_sharding(s):
      raise TypeError(f"with_sharding_constraint: shardings must be Sharding objects "
                      f"(NamedSharding, SingleDeviceSharding) or None, got "
                      f"{type(s).__name__}: {s!r}")
    if not hasattr(s, "mesh"):
      out.append(leaf)  # None or SingleDeviceSharding: nothing to constrain
      continue
    out.append(sharding_constraint_p.bind(leaf, sharding=s))
  return tree_util.tree_unflatten(tree, out)


def placed(x, out_sharding):
  """`x` laid out as the `out_sharding=` argument of a lax/nn function asks (JAX's keyword on
  lax.empty, reduce, rng_bit_generator, ragged_dot_general, initializers, ...); None leaves it
  as it is.

  Raises:
    TypeError: `out_sharding` is not a NamedSharding or PartitionSpec.
    ValueError: its spec names an Auto or Manual mesh axis (JAX allows Explicit axes only), or a
      bare PartitionSpec and no mesh is set with `revax.set_mesh`.
  """
  out_sharding = resolve_out_sharding(out_sharding)
  if out_sharding is None:
    return x
  return with_sharding_constraint(x, out_sharding)


def resolve_out_sharding(out_sharding):
  """The `out_sharding=` argument of a lax/jnp function as a NamedSharding (a bare
  PartitionSpec over the mesh in context), checked as JAX checks it; None stays None.

  Raises:
    TypeError, ValueError: as `placed`.
  """
  if out_sharding is None:
    return None
  if getattr(getattr(out_sharding, "mesh", None), "empty", False):
    return None  # a type's sharding with no mesh (`typeof(x).sharding`): none asked (as jax)
  if mesh_context.is_spec(out_sharding):
    out_sharding = mesh_context.resolve_spec(out_sharding, "out_sharding")
  if mesh_context.concrete is not None:  # (a type's sharding: over the mesh in context)
    out_sharding = mesh_context.concrete(out_sharding, "out_sharding")
  mesh = getattr(out_sharding, "mesh", None)
  if mesh is None or not hasattr(out_sharding, "spec"):
    raise TypeError(f"out_sharding must be a NamedSharding or a PartitionSpec, got "
                    f"{type(out_sharding).__name__}: {out_sharding!r}")
  kinds = dict(zip(mesh.axis_names, mesh.axis_types, strict=True))
  for dim in range(len(out_sharding.spec)):
    for axis in out_sharding.spec.axes_of(dim):
      if axis in kinds and kinds[axis].name != "Explicit":  # JAX's rule
        raise ValueError(f"The PartitionSpec passed as out_sharding cannot contain axis names "
                         f"that are of type Auto or Manual. Got PartitionSpec: "
                         f"{out_sharding.spec!r} with axis name: {axis} of type: "
                         f"AxisType.{kinds[axis].name} (make the mesh with "
                         f"axis_types=(AxisType.Explicit, ...), as revax.make_mesh does by "
                         f"default)")
  return out_sharding


def typed_result_param(out_sharding, *avals) -> dict:
  """The params that tell a primitive whose sharding rule may ask for an `out_sharding=` (JAX:
  dot_general, reshape) the result's sharding: `{"out_sharding": NamedSharding}` when one is
  given and a mesh has Explicit axes; {} otherwise (the param is absent from the primitive's
  equations then, so programs without it print and cache as before).

  Raises:
    TypeError, ValueError: as `placed`.
  """
  out_sharding = resolve_out_sharding(out_sharding)
  if out_sharding is None or not sharding_types.active:
    return {}
  return {"out_sharding": out_sharding}


def wanted_type(aval: ShapedArray, like) -> dict:
  """`{"out_sharding": ...}` asking for `aval`'s split over Explicit axes (unsplit: P()) when
  `like` (operand avals) are split, for the transpose and batching rules of primitives whose
  sharding rule may ask for one (their results take their primal's type, as JAX's); {} else."""
  if not sharding_types.active:
    return {}
  mesh = next((a.sharding.mesh for a in (aval, *like) if getattr(a, "sharding", None) is not None),
              None)
  if mesh is None:
    return {}
  return {"out_sharding": sharding_types.make_sharding(mesh, sharding_types.spec_parts(aval))}


def _mesh_of(x):
  """The mesh `x` (an array or tracer) is split over, if any."""
  aval_sharding = getattr(get_aval(x), "sharding", None)
  mesh = getattr(aval_sharding, "mesh", None) or getattr(getattr(x, "sharding", None), "mesh",
                                                          None)
  return mesh


def like_type(x, aval: ShapedArray):
  """`x` split over Explicit mesh axes as `aval`'s type says (unsplit where it is not): what a
  transpose rule does to give a cotangent its primal's type, as JAX's do."""
  have = getattr(get_aval(x), "sharding", None)
  if not sharding_types.active or have == aval.sharding:
    return x
  want = aval.sharding if aval.sharding is not None else sharding_types.make_sharding(
      have.mesh, ())
  return sharding_constraint_p.bind(x, sharding=want)


def _is_sharding(s) -> bool:
  # (on the class: a type's sharding has no devices, and its _device_list raises)
  return hasattr(type(s), "_indices") and hasattr(type(s), "_device_list")


def _abstract_eval(x: ShapedArray, *, sharding):
  sharding._indices(x.shape)  # ValueError: a rank or a divisibility the spec does not fit
  return sharding_types.of_placement(x, sharding)  # typed over the mesh's Explicit axes


def _impl(x, *, sharding):
  if eager_place is not None:  # over one device: the Array reports the sharding (as in JAX)
    return eager_place(x, sharding)
  return dispatch.to_array(x)


def _transpose(ct, x, *, sharding):
  """The cotangent constrained as the forward was, its unreduced and reduced axes those of the
  operand's type swapped (JAX's `to_ct_spec`: the cotangent of a value unreduced over some
  axes is reduced over them, and the other way round)."""
  aval = x.aval if ad.is_undefined_primal(x) else get_aval(x)
  u, r = sharding_types.unreduced_of(aval), sharding_types.reduced_of(aval)
  if u or r or sharding.spec.unreduced or sharding.spec.reduced:
    sharding = type(sharding)(sharding.mesh, sharding.spec.update(unreduced=r, reduced=u))
  return [sharding_constraint_p.bind(ad.instantiate_zeros(ct), sharding=sharding)]


def _batch(vals, dims, *, sharding):
  """The constraint on the batch: the batch dimension is split over the vmap's spmd_axis_name
  (which the spec itself must not use), or as the batched value's type splits it (unsplit
  when it does not) when the vmap has none."""
  (x,), (d,) = vals, dims
  spec, mesh = sharding.spec, sharding.mesh
  spmd = batching.batching_spmd_axis_name()
  if spmd is not None:
    used = {a for dim in range(len(spec)) for a in spec.axes_of(dim)}
    if set(spmd) & used:
      raise ValueError(f"vmap spmd_axis_name {spmd} cannot appear in with_sharding_constraint "
                       f"spec, but got spec {spec}")
  parts = list(spec.partitions) + [None] * (x.ndim - 1 - len(spec))
  split = get_aval(x).sharding
  if spmd is None and split is not None and split.mesh == mesh:
    # the batch dimension keeps the split it has over Explicit axes (JAX: the vmap's explicit
    # mesh axis), unless the spec uses that axis itself
    part = sharding_types.spec_parts(get_aval(x))[d]
    used = {a for dim in range(len(spec)) for a in spec.axes_of(dim)}
    spmd = None if used & set(sharding_types.axes_of_part(part)) else part
  parts.insert(d, spmd)
  batched = type(spec)(*parts)
  for a in sharding_types.axes_of_part(spmd):
    if a not in mesh.shape:
      raise ValueError(f"Resource axis: {a} of {batched} is not found in mesh: "
                       f"{tuple(mesh.axis_names)}.")
  return sharding_constraint_p.bind(x, sharding=type(sharding)(mesh, batched)), d


def _lower(ctx, x, *, sharding):
  added = sharding.spec.unreduced - sharding_types.unreduced_of(ctx.avals_in[0])
  if added and sharding_lowering.module_mesh(ctx) is not None:
    # (Shardy keeps the value on every device, so its sum over those axes would be a multiple
    # of it; jax's program keeps one copy. Eagerly, device_put and reshard place it right.)
    raise NotImplementedError(
        f"resharding a value to unreduced mesh axes {set(added)} it is not unreduced over, "
        "inside a program over a mesh, is not supported by revax; reshard it eagerly, or make "
        "it unreduced where it is computed (dot_general's out_sharding)")
  return constrain(ctx, x, sharding, ctx.avals_in[0])


def constrain(ctx, x, sharding, aval):
  """The lowered value `x` (of `aval`) constrained to `sharding` in the module being lowered;
  `x` itself in a single-device module or for a sharding without a mesh (one device)."""
  mesh = sharding_lowering.module_mesh(ctx)
  if mesh is None or not hasattr(sharding, "mesh") or sharding.mesh.size == 1:
    return x  # a single-device program: nothing to lay out
  name = sharding_lowering.MESH_NAME
  if dict(sharding.mesh.shape) != mesh:  # another mesh of the same devices (use_abstract_mesh)
    name = sharding_lowering.other_mesh_name(ctx.module, sharding.mesh)
    if name is None:
      raise ValueError(f"with_sharding_constraint over mesh {sharding.mesh!r} inside a program "
                       f"partitioned over another mesh {mesh}")
    mesh = dict(sharding.mesh.shape)
  attr = sharding_lowering.sharding_attr(sharding_lowering.spec_dims(sharding.spec, aval.ndim),
                                         mesh, aval.ndim, sharding.spec.unreduced, name)
  return ctx.fb.op("sdy.sharding_constraint", [x], [mlir.ir_type(aval)],
                   props={"sharding": attr})[0]


sharding_constraint_p = Primitive("sharding_constraint")
sharding_constraint_p.def_abstract_eval(_abstract_eval)
dispatch.custom_impls[sharding_constraint_p] = _impl
ad.deflinear(sharding_constraint_p, _transpose)
batching.primitive_batchers[sharding_constraint_p] = _batch
mlir.register_lowering(sharding_constraint_p, _lower)
sharding_types.rules[sharding_constraint_p] = lambda avals, params, outs: [
    sharding_types.spec_parts(outs[0])]  # (its abstract evaluation typed it already)
# unreduced and reduced as the sharding asked for says (from an unreduced operand to a
# sharding without those axes: the partial values are added up, XLA's all-reduce)
sharding_types.ur_rules[sharding_constraint_p] = lambda avals, params: (
    params["sharding"].spec.unreduced, params["sharding"].spec.reduced)
# (not inside a shard_map region: there the mesh axes are manual, a value is a member's block)
mlir.typed_constraint = lambda ctx, x, aval: (
    x if getattr(ctx.module, "manual_axes", None) else constrain(ctx, x, aval.sharding, aval))
inv.definverse_unary(sharding_constraint_p, lambda y, *, sharding: y)
