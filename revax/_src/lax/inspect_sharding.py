"""The `inspect_sharding` primitive behind `revax.debug.inspect_array_sharding`: a side effect
with no results that hands a value's sharding to a Python callback.

Eagerly the callback gets the Array's own sharding. Under jvp and vmap it sees the primal (the
whole batched value), as JAX's rules bind it on those. Under jit JAX calls back when XLA has
partitioned the program, with the sharding the partitioner chose, rebuilt over the program's
mesh with Auto axes. revax calls back when the program is lowered: for a value whose type is
split over Explicit mesh axes (the layout the program then constrains it to), with that same
NamedSharding JAX reports; for any other value inside jit it raises NotImplementedError (PJRT
does not report the layouts XLA chose for intermediates, so revax cannot tell them).
"""
from __future__ import annotations

from revax._src.core import mesh_context, sharding_types
from revax._src.core import effect_types as eff
from revax._src.core.effects import def_effectful, def_effects
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv

__all__ = ["inspect_sharding_p"]


def _abstract_eval(aval, *, callback):
  del aval, callback
  return []


def _impl(value, *, callback):
  callback(value.sharding)
  return []


def _jvp(primals, tangents, **params):
  return inspect_sharding_p.bind(*primals, **params), []


def _batch(vals, dims, **params):
  inspect_sharding_p.bind(*vals, **params)  # the whole batched value (as JAX's rule)
  return [], []


def _lower(ctx, value, *, callback):
  aval = ctx.avals_in[0]
  parts = sharding_types.spec_parts(aval) if getattr(aval, "sharding", None) else None
  if parts is None:
    raise NotImplementedError(
        f"revax.debug.inspect_array_sharding inside jit of a value of type "
        f"{aval.str_short()}: JAX reports the layout XLA's partitioner chose for it, which "
        "revax cannot read (PJRT does not report the layouts of intermediate values). Values "
        "whose types are split over Explicit mesh axes (revax.make_mesh's default) report "
        "their type's sharding; call it outside jit to see an Array's sharding")
  mesh = aval.sharding.mesh
  auto = type(mesh.axis_types[0]).Auto if mesh.axis_types else None
  # as JAX's: the program's mesh with Auto axes (the partitioner knows no axis types)
  mesh = mesh.update(axis_types=(auto,) * len(mesh.axis_names)) if mesh.axis_names else mesh
  while parts and parts[-1] is None:
    parts = parts[:-1]
  callback(mesh_context.named_sharding(mesh, mesh_context.spec_type(*parts)))
  return []


inspect_sharding_p = Primitive("inspect_sharding", multiple_results=True)
inspect_sharding_p.def_abstract_eval(_abstract_eval)
dispatch.custom_impls[inspect_sharding_p] = _impl
ad.primitive_jvps[inspect_sharding_p] = _jvp
batching.primitive_batchers[inspect_sharding_p] = _batch
mlir.register_lowering(inspect_sharding_p, _lower)
inv.not_invertible(inspect_sharding_p, "a side effect with no outputs")
def_effectful(inspect_sharding_p)
def_effects(inspect_sharding_p, lambda eqn: {eff.debug_effect})  # (as JAX's: kept from DCE)
