"""Eager primitives on sharded arrays: one primitive compiled over the mesh of its sharded
operands (an `SpmdProgram` of one equation) and run there, its results sharded Arrays. Installed
as the eager dispatcher's hook (`dispatch.sharded_apply`, the interpreters layer sitting below
this one) when this module is imported, which sharded_api.py, where sharded arrays are made,
does."""
from __future__ import annotations

from revax._src.core.avals import get_aval
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from revax._src.interpreters import dispatch
from revax._src.mesh_placement import settle
from revax._src.runtime import sharded as rt
from revax._src.runtime.array import Array
from revax._src.runtime.client import CompileError
from revax._src.sharding import NamedSharding
from revax._src.spmd_program import SpmdProgram, typed_results

__all__ = ["apply_primitive"]


_eager: dict = {}  # (prim, avals, params, shardings) -> SpmdProgram, or None (gather instead)


def apply_primitive(prim, args, params):
  """Run one primitive over the mesh of its sharded operands, compiled with their shardings
  (results laid out as their types say over an all-Explicit mesh, else as XLA chooses, as JAX
  does); None when that is not possible (operands on
  different meshes, a primitive that cannot be partitioned): the caller then gathers."""
  shardings = [x._sharding if type(x) is rt.ShardedArray else None for x in args]
  meshes = {s.mesh for s in shardings if isinstance(s, NamedSharding)}
  if len(meshes) != 1 or any(s is not None and not isinstance(s, NamedSharding)
                             for s in shardings):
    return None
  (mesh,) = meshes
  try:
    avals = tuple(x.aval if isinstance(x, Array) else get_aval(x) for x in args)
    key = (prim, avals, tuple(sorted(params.items())), tuple(shardings))
    hash(key)
  except TypeError:
    return None
  program = _eager.get(key, False)
  if program is False:
    program = None
    try:
      out = prim.abstract_eval(*avals, **params)
      out_avals = out if prim.multiple_results else [out]
      invars = [Var(a) for a in avals]
      outvars = [Var(a) for a in out_avals]
      closed = ClosedJaxpr(Jaxpr([], invars, outvars, [JaxprEqn(prim, invars, outvars,
                                                                 dict(params))]), [])
      program = SpmdProgram(closed, prim.name, mesh, shardings,
                            typed_results(out_avals, [None] * len(out_avals), shardings))
    except (CompileError, NotImplementedError):
      program = None  # e.g. a primitive whose lowering is single-device only
    if len(_eager) > 1024:  # a bound for long eager sessions over many shapes
      _eager.clear()
    _eager[key] = program
  if program is None:
    return None
  outs = [settle(o, mesh, True) for o in program(list(args))]  # (unsplit results: as JAX's)
  return outs if prim.multiple_results else outs[0]


dispatch.sharded_apply = apply_primitive
