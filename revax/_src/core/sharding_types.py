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

import contextlib
import threading

from revax._src.core import mesh_context

__all__ = ["rules", "apply", "ShardingTypeError", "spec_parts", "typed", "of_placement",
           "elementwise", "elementwise_named", "same_as_operand",
           "internal_expansion", "in_internal_expansion", "explicit_parts", "drop_axes"]

# primitive -> rule(avals, params, out_avals) -> list of spec tuples (or None) per output
rules: dict = {}

# True once any value has had a split type in this process (until then abstract evaluation
# skips the check of its operands)
active = False

class _Lenient(threading.local):
  depth = 0


_lenient = _Lenient()


@contextlib.contextmanager
def internal_expansion():
  """A block in which revax traces its own expansion of a primitive (a lowering written in
  revax, scan as a while loop): there a sharding rule that refuses its operands (JAX's rules
  judge user programs, and JAX's own lowerings are not written with its traced operations) makes
  the result unsplit instead of raising, and XLA lays it out."""
  _lenient.depth += 1
  try:
    yield
  finally:
    _lenient.depth -= 1


def in_internal_expansion() -> bool:
  return _lenient.depth > 0


def make_sharding(mesh, parts, unreduced=frozenset(), reduced=frozenset()):
  """NamedSharding(mesh, PartitionSpec(*parts, unreduced=..., reduced=...)), through the
  constructors sharding.py installs in mesh_context (the classes sit above this layer)."""
  return mesh_context.named_sharding(
      mesh, mesh_context.spec_type(*parts, unreduced=unreduced, reduced=reduced))


class ShardingTypeError(Exception):
  """Operands whose shardings a primitive cannot combine, or a result whose sharding it cannot
  tell without an `out_sharding=` (JAX's error of that name, like it an Exception and not a
  TypeError)."""


def spec_parts(aval) -> tuple:
  """The sharding of `aval` as one entry per dimension (all None when unsplit)."""
  s = aval.sharding
  if s is None:
    return (None,) * len(aval.shape)
  parts = tuple(s.spec.partitions)
  return parts + (None,) * (len(aval.shape) - len(parts))


def unreduced_of(aval) -> frozenset:
  """The mesh axes over which `aval`'s value is a sum of partial values not yet added up."""
  s = getattr(aval, "sharding", None)
  return frozenset() if s is None else s.spec.unreduced


def reduced_of(aval) -> frozenset:
  """The mesh axes over which `aval` is marked reduced."""
  s = getattr(aval, "sharding", None)
  return frozenset() if s is None else s.spec.reduced


def axes_of_part(part) -> tuple:
  """The mesh axes of one entry of a spec (None, a name or a tuple of names), as a tuple."""
  return () if part is None else (part if isinstance(part, tuple) else (part,))



def typed(aval, mesh, parts, name: str = "an operation", unreduced=frozenset(),
          reduced=frozenset()):
  """`aval` typed as split by `parts` over `mesh` (unsplit: no sharding), unreduced and reduced
  over the axes given.

  Raises:
    ShardingTypeError: `parts` uses one mesh axis on two dimensions (`name` made it)."""
  parts = tuple(parts)
  if all(p is None for p in parts) and not unreduced and not reduced:
    return aval if aval.sharding is None else aval.update(sharding=None)
  global active
  active = True
  seen = [a for p in parts for a in axes_of_part(p)]
  if len(seen) != len(set(seen)):
    raise ShardingTypeError(f"{name}'s result of type {aval.str_short()} would be split over "
                            f"mesh axes {parts}, which uses one axis on two dimensions; reshard "
                            "an operand first (revax.sharding.reshard)")
  return aval.update(sharding=make_sharding(mesh, parts, unreduced, reduced))


def apply(primitive, avals, params, out):
  """The result types `out` of `primitive` with their shardings, from the operands'."""
  mesh = next(a.sharding.mesh for a in avals if getattr(a, "sharding", None) is not None)
  given = params.get("sharding") if params else None  # a constraint's (reshard's) own mesh
  if getattr(given, "mesh", None) is not None and getattr(given.mesh, "axis_names", None):
    mesh = given.mesh
  rule = rules.get(primitive)
  if rule is None:
    return out
  many = primitive.multiple_results
  outs = list(out) if many else [out]
  try:
    specs = rule(avals, params, outs)
  except ShardingTypeError:
    if not in_internal_expansion():
      raise
    specs = [None] * len(outs)  # revax's own expansion: unsplit (XLA lays it out)
  for o, spec in zip(outs, specs, strict=True):
    seen = [a for p in spec or () for a in axes_of_part(p)]
    if len(seen) != len(set(seen)):  # one mesh axis on two dimensions
      raise ShardingTypeError(
          f"{primitive.name} operation with inputs: "
          f"{', '.join(a.str_short() for a in avals)} produces an illegally sharded result: "
          f"{_str_split(o, spec)}")
  urs = _unreduced_results(primitive, avals, params, len(outs))
  typed_outs = [o if spec is None and not ur[0] and not ur[1] else
                typed(o, mesh, spec or (None,) * len(o.shape), primitive.name, *ur)
                for o, spec, ur in zip(outs, specs, urs, strict=True)]
  return typed_outs if many else typed_outs[0]


# primitive -> rule(avals, params) -> (unreduced, reduced) of every output
ur_rules: dict = {}


def _unreduced_results(primitive, avals, params, n: int) -> list:
  """(unreduced, reduced) axes of each of the `n` results: the primitive's rule in `ur_rules`;
  without one, as JAX's default rules: no operand may be unreduced (NotImplementedError), and
  the operands' reduced axes (which must agree) carry over."""
  rule = ur_rules.get(primitive)
  if rule is not None:
    return [rule(avals, params)] * n
  if any(unreduced_of(a) for a in avals):
    raise NotImplementedError(f"unreduced rule for {primitive.name} is not implemented.")
  return [(frozenset(), common_reduced(avals))] * n


def common_reduced(avals) -> frozenset:
  """The reduced axes the operands share (JAX's default: they must agree).

  Raises:
    ShardingTypeError: two operands reduced over different axes."""
  found = {r for a in avals if (r := reduced_of(a))}
  if len(found) > 1:
    raise ShardingTypeError(f"All inputs should be reduced across the same mesh axes. Got "
                            f"specs: {found}")
  return next(iter(found), frozenset())


def _str_split(aval, parts) -> str:
  """'f32[8@a,8@a]': `aval` printed as if split by `parts` (which a type cannot hold)."""
  dims = []
  for n, p in zip(aval.shape, parts, strict=True):
    axes = axes_of_part(p)
    dims.append(f"{n}" + ("" if not axes else f"@{axes[0]}" if len(axes) == 1
                          else "@(" + ",".join(axes) + ")"))
  return aval.str_short().split("[")[0] + "[" + ",".join(dims) + "]"


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
  parts = explicit_parts(sharding, len(aval.shape))
  if parts is None:
    return aval if aval.sharding is None else aval.update(sharding=None)
  spec = sharding.spec
  return typed(aval, sharding.mesh, parts, unreduced=spec.unreduced, reduced=spec.reduced)


def explicit_parts(sharding, rank: int):
  """How `sharding` (a NamedSharding) splits a value of rank `rank` over its mesh's Explicit
  axes, one entry per dimension; None for a sharding without a mesh or a mesh without types."""
  mesh, spec = getattr(sharding, "mesh", None), getattr(sharding, "spec", None)
  kinds = getattr(mesh, "axis_types", None)
  if spec is None or not kinds:
    return None
  explicit = {n for n, t in zip(mesh.axis_names, kinds, strict=True) if t.name == "Explicit"}
  parts = []
  for d in range(rank):
    entries = spec.partitions
    axes = tuple(a for a in axes_of_part(entries[d] if d < len(entries) else None)
                 if a in explicit)
    parts.append(None if not axes else axes[0] if len(axes) == 1 else axes)
  return tuple(parts)


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
  """NumPy broadcasting, as JAX's rule: a dimension every operand splits alike keeps that
  split; otherwise operands of size 1 there that do not split it do not count, and the others
  must not split it over different axes (scalars and lower-rank operands do not count).

  Raises:
    ShardingTypeError: two operands split one dimension over different axes."""
  rank = len(outs[0].shape)
  shaped = [a for a in avals if len(a.shape) == rank and rank]
  specs = [spec_parts(a) for a in shaped]
  spec = []
  for d in range(rank):
    parts = [p[d] for p in specs]
    counted = [p for p, a in zip(parts, shaped, strict=True) if not (a.shape[d] == 1 and p is None)]
    chosen = None
    for p in counted:
      if chosen is None:
        chosen = p
      elif p is not None and axes_of_part(p) != axes_of_part(chosen):
        raise ShardingTypeError(f"{name} got incompatible shardings for broadcasting: "
                                f"{', '.join(str(tuple(p)) for p in specs)}.")
    spec.append(chosen)
  return [tuple(spec)] * len(outs)


def elementwise_named(name: str):
  """`elementwise` whose error names the primitive `name` (as JAX's: 'add got ...')."""
  def rule(avals, params, outs):
    return elementwise(avals, params, outs, name)
  rule.broadcasting = True
  return rule


# JAX types the result of a broadcasting rule of several operands over the mesh in context even
# when no operand is over a mesh (mesh_placement.py places such eager results accordingly)
elementwise.broadcasting = True


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
