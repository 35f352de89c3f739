"""Which memory a lowered program's values live in, as JAX's lowering says it.

A program whose values all live in device memory says nothing about memories (JAX's
`all_default_mem_kind`). Once an argument or result is typed in another memory space
(`f32<host>[4]`), or a device_put inside moves a value to one, JAX marks every result of
`@main` with `mhlo.memory_kind` ("device" or "pinned_host", from its type) and every argument it
places with the kind it is in; revax marks the arguments in host memory (JAX also marks a
committed argument in device memory, which a jaxpr does not tell). On TPU and GPU a device_put
to a memory inside the program becomes an `annotate_device_placement` custom call with the
`_xla_buffer_placement` frontend attribute (lax/device_put.py), as JAX lowers it.
"""
from __future__ import annotations

from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr
from revax._src.core.memory_space import MemorySpace, mem_space_to_kind

__all__ = ["all_default", "kind_of", "attr_text", "transfer_kinds", "annotate_placement"]


def kind_of(aval) -> str | None:
  """The memory kind an aval's memory space places it in (None for tokens, refs, Any)."""
  space = getattr(aval, "memory_space", None)
  if not isinstance(space, MemorySpace) or space is MemorySpace.Any:
    return None
  return mem_space_to_kind(space)


def _target_kind(d) -> str | None:
  if isinstance(d, MemorySpace):
    return None if d is MemorySpace.Any else mem_space_to_kind(d)
  return getattr(d, "memory_kind", None)


def _jaxprs_in(value):
  if isinstance(value, Jaxpr):
    yield value
  elif isinstance(value, ClosedJaxpr):
    yield value.jaxpr
  elif type(value) in (tuple, list):
    for v in value:
      yield from _jaxprs_in(v)


def transfer_kinds(jaxpr) -> list:
  """The memory kinds the device_puts of `jaxpr` (and of the jaxprs inside it) move values to."""
  out = []
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "device_put":
      out.extend(k for k in map(_target_kind, eqn.params["devices"]) if k is not None)
    for value in eqn.params.values():
      for sub in _jaxprs_in(value):
        out.extend(transfer_kinds(sub))
  return out


def all_default(closed) -> bool:
  """Whether every argument, result and transfer of `closed` is in device memory."""
  for a in (*closed.in_avals, *closed.out_avals):
    if kind_of(a) not in (None, "device"):
      return False
  return all(k == "device" for k in transfer_kinds(closed.jaxpr))


def attr_text(attrs: dict) -> str | None:
  """An MLIR attribute dictionary's text from {name: value text} (names sorted, as MLIR prints
  them); None for an empty one."""
  if not attrs:
    return None
  return "{" + ", ".join(f"{k} = {attrs[k]}" for k in sorted(attrs)) + "}"


def annotate_placement(fb, value: str, kind: str, type_text: str) -> str:
  """`value` through JAX's `annotate_device_placement` custom call placing it in memory
  `kind` (XLA moves it there)."""
  return fb.op("stablehlo.custom_call", [value], [type_text], props={
      "backend_config": '""', "call_target_name": '"annotate_device_placement"',
      "has_side_effect": "true"},
      attrs={"mhlo.frontend_attributes": f'{{_xla_buffer_placement = "{kind}"}}'})[0]
