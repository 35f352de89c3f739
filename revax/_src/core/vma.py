"""Varying manual axes (JAX's "vma"): how a value inside shard_map varies over the mesh axes.

Inside `shard_map(..., check_vma=True)` every value's type says over which manual mesh axes it
may differ between members (`varying`, printed `f32[3]{V:i}`) and so over which it is the same
for every member (invariant). An argument split over axis `i` by its in_spec is varying in `i`;
`psum` over `i` makes a value invariant in `i`; `pvary` (`pcast(..., to="varying")`) marks an
invariant value as varying without changing it. Operations combine varying axes: an operation
whose operands vary over different axes first casts the less varying ones with `pvary` (the
implicit pvary JAX inserts), so its operands agree and its result varies over their union. At
the end shard_map checks statically that each output varies only over the axes its out_spec
names. With check_vma=False no value carries varying axes, and nothing is checked.

This module holds the type (`ManualAxisType`), the state saying whether such typing is active
(a shard_map body with check_vma=True is being traced) and in which mesh order axes print, the
rule tables (`vma_rules`: a primitive's own rule; the others follow the standard rule: operands
agree, the result varies as they do) and the hook `auto_pvary` the staging trace calls before
recording an equation.
"""
from __future__ import annotations

import threading


class ManualAxisType:
  """The manual-axis state of a value inside shard_map (JAX's `ManualAxisType`): the mesh axes
  it varies over (`varying`), and the unreduced/reduced ones (always empty in revax, whose
  shard_map has no unreduced/reduced out_specs). `revax.typeof(x).mat` is one.

  Args:
    varying: the mesh axes the value may differ over.
    unreduced: mesh axes over which it is a partial sum (disjoint from `varying`).
    reduced: mesh axes over which it is reduced (disjoint from `varying`).

  Example:
    >>> from revax.sharding import ManualAxisType
    >>> sorted(ManualAxisType(varying={"i", "j"}).varying)
    ['i', 'j']
  """
  __slots__ = ("varying", "unreduced", "reduced", "_order")

  def __init__(self, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
    if frozenset(varying) & frozenset(unreduced):  # (the arguments as given, as JAX prints)
      raise ValueError(f"varying and unreduced cannot have common mesh axes. Got "
                       f"varying={varying} and unreduced={unreduced}")
    if frozenset(varying) & frozenset(reduced):
      raise ValueError(f"varying and reduced cannot have common mesh axes. Got "
                       f"varying={varying} and reduced={reduced}")
    varying, unreduced, reduced = frozenset(varying), frozenset(unreduced), frozenset(reduced)
    self.varying, self.unreduced, self.reduced = varying, unreduced, reduced
    self._order = in_mesh_order(varying) if varying else ()

  def __repr__(self):
    return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
            f"reduced={self.reduced})")

  def __eq__(self, other):
    return (type(other) is ManualAxisType and self.varying == other.varying
            and self.unreduced == other.unreduced and self.reduced == other.reduced)

  def __hash__(self):
    return hash((self.varying, self.unreduced, self.reduced))

  def update(self, **kwargs) -> "ManualAxisType":
    """A copy with `varying`, `unreduced` or `reduced` replaced."""
    fields = {"varying": self.varying, "unreduced": self.unreduced, "reduced": self.reduced}
    fields.update(kwargs)
    return ManualAxisType(**fields)

  @property
  def empty(self) -> bool:
    return not (self.varying or self.unreduced or self.reduced)

  @property
  def vur(self) -> frozenset:
    return self.varying | self.unreduced | self.reduced

  def suffix(self) -> str:
    """'{V:i}', '{V:(i,j)}' (JAX's form, axes in mesh order), '' when empty."""
    if not self.varying:
      return ""
    names = self._order
    return "{V:" + (names[0] if len(names) == 1 else "(" + ",".join(names) + ")") + "}"


EMPTY = ManualAxisType()


# --- the state: which check_vma shard_map bodies are being traced ------------------------------
class _State(threading.local):
  def __init__(self):
    self.depth = 0         # check_vma shard_map bodies being traced (0: no typing)
    self.mesh_order = ()   # mesh axis names of the enclosing shard_maps, outermost first


_state = _State()


def active() -> bool:
  """Whether values are typed with their varying manual axes (a check_vma body is traced)."""
  return _state.depth > 0


def in_mesh_order(axes) -> tuple:
  """`axes` ordered as the enclosing shard_maps' meshes order them (others after, by name)."""
  order = _state.mesh_order
  rank = {a: i for i, a in enumerate(order)}
  return tuple(sorted(axes, key=lambda a: (rank.get(a, len(order)), str(a))))


class typing_body:
  """Context of tracing a shard_map body over a mesh with axis names `mesh_axes`: with
  `check=True` values are typed with their varying manual axes; with False nothing is typed
  (pcast leaves values as they are)."""

  def __init__(self, mesh_axes, manual, check: bool):
    self.mesh_axes, self.manual, self.check = tuple(mesh_axes), tuple(manual), check

  def __enter__(self):
    self.saved = (_state.depth, _state.mesh_order)
    _state.mesh_order = _state.mesh_order + tuple(
        a for a in self.mesh_axes if a not in _state.mesh_order)
    if self.check:
      _state.depth += 1
    else:
      _state.depth = 0  # (an unchecked shard_map inside a checked one types nothing)
    return self

  def __exit__(self, *exc):
    _state.depth, _state.mesh_order = self.saved
    return False


class not_typing:
  """Context in which nothing is typed (revax's own re-tracing of a body's jaxpr as vmaps)."""

  def __enter__(self):
    self.saved = _state.depth
    _state.depth = 0

  def __exit__(self, *exc):
    _state.depth = self.saved
    return False


class _Nothing:
  def __enter__(self):
    return self

  def __exit__(self, *exc):
    return False


def typing_if_typed(avals):
  """A context typing values when some of `avals` vary over manual axes and typing is off:
  a jaxpr of a shard_map body re-traced or re-checked (vmap of the body, check_jaxpr) keeps
  the types it was traced with."""
  if _state.depth or not any(getattr(a, "_mat", None) is not None for a in avals):
    return _Nothing()
  return typing_body((), (), True)


# --- reading and writing the varying axes of avals -----------------------------------------------
def varying(aval) -> frozenset:
  mat = getattr(aval, "_mat", None)
  return mat.varying if mat is not None else frozenset()


def with_varying(aval, axes):
  """`aval` varying over exactly `axes`."""
  inner = getattr(aval, "inner_aval", None)
  if inner is not None:  # a Ref: its array's type
    return aval.update(inner_aval=with_varying(inner, axes))
  if not hasattr(aval, "_mat") or varying(aval) == frozenset(axes):
    return aval
  return aval.update(manual_axis_type=ManualAxisType(varying=axes) if axes else None)


# --- the rules ----------------------------------------------------------------------------------
# primitive -> rule(avals, params, outs) -> outs with their varying axes (its own typing: the
# collectives, pvary, the call and control-flow primitives whose result types come from jaxprs)
vma_rules: dict = {}


def declared_outputs_rule(prim):
  """The rule of a primitive whose operands must agree (cast first, as JAX's) but whose
  results are typed as it declares them (ffi_call's: invariant)."""
  def rule(avals, params, outs):
    standard_rule(prim, avals, [])
    return outs
  return rule


def standard_rule(prim, avals, outs):
  """JAX's standard rule: the operands must vary over the same axes, and the results vary so."""
  vmas = [varying(getattr(a, "inner_aval", a)) for a in avals]
  if not vmas:
    return outs
  first = vmas[0]
  if any(v != first for v in vmas[1:]):
    raise ValueError(
        f"Primitive {prim.name} requires varying manual axes to match, but got {vmas}. Please "
        "open an issue at https://github.com/jax-ml/jax/issues and as a temporary workaround "
        "pass the check_vma=False argument to `jax.shard_map`")
  if not first:
    return outs
  if prim.multiple_results:
    return [with_varying(o, first) for o in outs]
  return with_varying(outs, first)


def apply(prim, avals, params, outs):
  """The results' types of `prim` with their varying axes (typing active)."""
  rule = vma_rules.get(prim)
  if rule is not None:
    return rule(avals, params, outs)
  if _holds_jaxpr(params):  # a call or control-flow primitive: its jaxprs typed its results
    return outs
  return standard_rule(prim, avals, outs)


def _holds_jaxpr(params) -> bool:
  for v in params.values():
    for x in v if type(v) is tuple else (v,):
      if hasattr(x, "eqns") or hasattr(getattr(x, "jaxpr", None), "eqns"):
        return True
  return False


# set by lax/parallel.py: pvary(x, axes) binds its primitive (staging records the implicit casts)
pvary_binder = [None]
def cast_to(x, x_aval, axes):
  """`x` (of type `x_aval`) cast with pvary to vary over `axes` too (typing active): zeros and
  buffers made for a value (`zeros_like`, a loop's stacked outputs, a zero tangent) vary as
  that value does, as JAX's."""
  if not _state.depth:
    return x
  missing = frozenset(axes) - varying(x_aval)
  return pvary_binder[0](x, in_mesh_order(missing)) if missing else x


# primitives whose operands are never cast implicitly (their rules type them themselves)
no_auto_pvary: set = set()


def auto_pvary(prim, args, avals, params):
  """The operands of `prim` cast with pvary so they all vary over the union of their varying
  axes (JAX's implicit pvary), when they differ. Returns (args, avals) unchanged otherwise."""
  if prim in no_auto_pvary or len(avals) < 2 or _holds_jaxpr(params):
    return None
  vmas = [varying(getattr(a, "inner_aval", a)) for a in avals]
  union = frozenset().union(*vmas)
  if all(v == union for v in vmas):
    return None
  out = []
  for x, a, v in zip(args, avals, vmas, strict=True):
    if v != union and not hasattr(a, "inner_aval"):
      x = pvary_binder[0](x, in_mesh_order(union - v))
    out.append(x)
  return out
