"""Shardings in types: how values split over a mesh's Explicit axes flow through primitives.

Over a mesh whose axes are Explicit (`revax.make_mesh`'s default, as JAX 0.10.2's), JAX makes
the split part of a value's type: `typeof(x)` reads `f32[8@x]`, and every primitive says how
its result is split from how its operands are. revax keeps that in `ShapedArray.sharding` (a
NamedSharding whose spec names Explicit axes only, one entry per dimension; None when nothing is
split so). Concrete sharded Arrays carry it from their placement; primitives compute it here:
`Primitive.abstract_eval` calls `apply` after a primitive's own rule whenever an operand's type
is split, and `apply` runs the primitive's sharding rule from `rules`. The lowering constrains
each such result to its type's sharding (`sdy.sharding_constraint`), so the layout XLA chooses is
the one the type says, as in JAX.

A rule is `rule(avals, params, out_avals) -> [spec or None per output]`, a spec being a tuple
with one entry per output dimension (None, an axis name, or a tuple of names). A primitive
without a rule keeps what its abstract evaluation returned: call-like primitives (jit, custom
derivatives, control flow) return their body's types, which carry shardings already; anything
else is typed unsplit, and XLA chooses its layout (its value is the same).

Where operands disagree (two different axes on one dimension, one axis on two dimensions) the
rule raises `ShardingTypeError`, JAX's error for it.
"""
from __future__ import annotations

from revax._src.core import mesh_context

__all__ = ["rules", "apply", "ShardingTypeError", "spec_parts", "typed", "of_placement",
           "elementwise", "same_as_operand", "drop_axes"]

# primitive -> rule(avals, params, out_avals) -> list of spec tuples (or None) per output
rules: dict = {}

# True once any value has had a split type in this process (until then abstract evaluation
# skips the check of its operands)
active = False

def make_sharding(mesh, parts):
  """NamedSharding(mesh, PartitionSpec(*parts)), through the constructors sharding.py installs
  in mesh_context (the classes sit above this layer)."""
  return mesh_context.named_sharding(mesh, mesh_context.spec_type(*parts))


class ShardingTypeError(TypeError):
  """Operands whose shardings a primitive cannot combine (JAX's error of that name)."""


def spec_parts(aval) -> tuple:
  """The sharding of `aval` as one entry per dimension (all None when unsplit)."""
  s = aval.sharding
  if s is None:
    return (None,) * len(aval.shape)
  parts = tuple(s.spec)
  return parts + (None,) * (len(aval.shape) - len(parts))


def axes_of_part(part) -> tuple:
  """The mesh axes of one entry of a spec (None, a name or a tuple of names), as a tuple."""
  return () if part is None else (part if isinstance(part, tuple) else (part,))



def typed(aval, mesh, parts, name: str = "an operation"):
  """`aval` typed as split by `parts` over `mesh` (unsplit: no sharding).

  Raises:
    ShardingTypeError: `parts` uses one mesh axis on two dimensions (`name` made it)."""
  parts = tuple(parts)
  if all(p is None for p in parts):
    return aval if aval.sharding is None else aval.update(sharding=None)
  global active
  active = True
  seen = [a for p in parts for a in axes_of_part(p)]
  if len(seen) != len(set(seen)):
    raise ShardingTypeError(f"{name}'s result of type {aval.str_short()} would be split over "
                            f"mesh axes {parts}, which uses one axis on two dimensions; reshard "
                            "an operand first (revax.sharding.reshard)")
  return aval.update(sharding=make_sharding(mesh, parts))


def apply(primitive, avals, params, out):
  """The result types `out` of `primitive` with their shardings, from the operands'."""
  mesh = next(a.sharding.mesh for a in avals if getattr(a, "sharding", None) is not None)
  rule = rules.get(primitive)
  if rule is None:
    return out
  many = primitive.multiple_results
  outs = list(out) if many else [out]
  specs = rule(avals, params, outs)
  typed_outs = [o if spec is None else typed(o, mesh, spec, primitive.name)
                for o, spec in zip(outs, specs, strict=True)]
  return typed_outs if many else typed_outs[0]


def of_placement(aval, sharding):
  """`aval` typed as placed by `sharding` (a NamedSharding): its split over the mesh's
  Explicit axes (Auto and Manual axes are not part of types); `aval` as it is for any other
  sharding."""
  key = (aval, sharding)
  try:
    return _placements[key]  # (every sharded Array made asks: jit results on each call)
  except KeyError:
    pass
  except TypeError:  # an unhashable sharding
    return _of_placement(aval, sharding)
  out = _of_placement(aval, sharding)
  if len(_placements) > 4096:
    _placements.clear()
  _placements[key] = out
  return out


_placements: dict = {}


def _of_placement(aval, sharding):
  mesh, spec = getattr(sharding, "mesh", None), getattr(sharding, "spec", None)
  kinds = getattr(mesh, "axis_types", None)
  if spec is None or not kinds:
    return aval if aval.sharding is None else aval.update(sharding=None)
  explicit = {n for n, t in zip(mesh.axis_names, kinds, strict=True) if t.name == "Explicit"}
  parts = []
  for d in range(len(aval.shape)):
    axes = tuple(a for a in axes_of_part(spec[d] if d < len(spec) else None) if a in explicit)
    parts.append(None if not axes else axes[0] if len(axes) == 1 else axes)
  return typed(aval, mesh, parts)


# --- rules shared by many primitives -----------------------------------------------------------
def merge(name: str, parts_per_operand) -> tuple:
  """One dimension's split from its operands' (None where none splits it).

  Raises:
    ShardingTypeError: two operands split it differently.
  """
  chosen = None
  for p in parts_per_operand:
    if p is None:
      continue
    if chosen is None:
      chosen = p
    elif axes_of_part(p) != axes_of_part(chosen):
      raise ShardingTypeError(f"{name} got incompatible shardings for broadcasting: "
                              f"{axes_of_part(chosen)} and {axes_of_part(p)} on one dimension; "
                              "reshard one operand (revax.sharding.reshard) so that they agree")
  return chosen


def elementwise(avals, params, outs, name="elementwise operation"):
  """NumPy broadcasting: each output dimension takes the split of the operands that span it
  (an operand of size 1 there, or of lower rank, does not count)."""
  rank = len(outs[0].shape)
  spec = []
  for d in range(rank):
    parts = []
    for a in avals:
      k = d - (rank - len(a.shape))
      if k >= 0 and a.shape[k] == outs[0].shape[d]:
        parts.append(spec_parts(a)[k])
    spec.append(merge(name, parts))
  return [tuple(spec)] * len(outs)


def same_as_operand(index: int = 0):
  """Every output is split as operand `index` (shape-preserving primitives)."""
  def rule(avals, params, outs):
    return [spec_parts(avals[index])] * len(outs)
  return rule


def drop_axes(axes_param: str, index: int = 0):
  """Reductions over the dimensions `params[axes_param]`: the other dimensions keep theirs."""
  def rule(avals, params, outs):
    gone = {a % max(len(avals[index].shape), 1) for a in params[axes_param]}
    kept = tuple(p for d, p in enumerate(spec_parts(avals[index])) if d not in gone)
    return [kept] * len(outs)
  return rule
