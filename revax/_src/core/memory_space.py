"""Memory spaces in types: which memory of its device a value lives in (JAX's `MemorySpace`).

A device addresses several memories (PJRT memory spaces): its own ("device"), host memory it
can reach directly ("pinned_host") and plain host memory ("unpinned_host"). JAX types a value
in pinned host memory apart: `typeof(x)` reads `float32<host>[4]` and `.memory_space` is
`MemorySpace.Host`; a value in the device's memory (or unpinned host memory, which JAX does not
type apart) is `MemorySpace.Device`. `jax.device_put(x, jax.memory.Space.Host)` moves a value
there and its type follows it.

Primitives compute their results' memory space from their operands' (`apply`, called by
`Primitive.abstract_eval` once any value was typed outside device memory): the operands of rank
> 0 must agree (ValueError otherwise, JAX's message) and the results live where they do; scalars
do not count. Primitives that hold a jaxpr (jit, control flow, custom derivatives) and
device_put compute their own.
"""
from __future__ import annotations

import enum

__all__ = ["MemorySpace", "mem_kind_to_space", "mem_space_to_kind", "apply", "own_rule"]


class MemorySpace(enum.Enum):
  """Where a value lives on its device (JAX's `jax.memory.Space`): `Device` (the device's own
  memory), `Host` (pinned host memory) or `Any` (no particular one).

  Example:
    >>> from revax._src.core.memory_space import MemorySpace
    >>> MemorySpace.Host, MemorySpace.Host.name
    (MemorySpace.Host, 'Host')
  """
  Device = enum.auto()
  Host = enum.auto()
  Any = enum.auto()

  def __repr__(self):
    return f"MemorySpace.{self.name}"

  __str__ = __repr__
  # (as JAX's: an identity hash, where Enum's would hash the name string)
  __hash__ = object.__hash__


def mem_kind_to_space(kind: str | None) -> MemorySpace:
  """The memory space of a PJRT memory kind: Host for "pinned_host", else Device (JAX's)."""
  return MemorySpace.Host if kind == "pinned_host" else MemorySpace.Device


def mem_space_to_kind(space: MemorySpace) -> str:
  """The memory kind a memory space places values in: "device" or "pinned_host".

  Raises:
    ValueError: `MemorySpace.Any`, which names no memory.
  """
  if space is MemorySpace.Device:
    return "device"
  if space is MemorySpace.Host:
    return "pinned_host"
  raise ValueError(f"{space!r} names no memory to place a value in")


_DEVICE = MemorySpace.Device

# True once a value was typed outside device memory in this process (until then abstract
# evaluation skips `apply`)
active = False

# primitives that compute their results' memory spaces themselves (device_put)
own_rule: set = set()


def default_space(prim, avals) -> MemorySpace:
  """JAX's default rule: where the array operands of rank > 0 live (they must agree), Device
  when there are none, Any when every array operand is Any."""
  arrays = [a for a in avals if _is_array(a)]
  if arrays and all(a.memory_space is MemorySpace.Any for a in arrays):
    return MemorySpace.Any
  prev = None
  for a in arrays:  # (array operands: a Ref's memory is its own, a token has none)
    if not a.ndim:
      continue
    if prev is not None and prev.memory_space is not a.memory_space:
      raise ValueError(
          f"memory_space of all inputs passed to `{prim.name}` must be the same. Got one "
          f"operand with type: {prev.str_short(short_dtypes=False)} and another operand with "
          f"type: {a.str_short(short_dtypes=False)}")
    prev = a
  return MemorySpace.Device if prev is None else prev.memory_space


# (Jaxpr, ClosedJaxpr): set by core/jaxpr.py, which imports this module's importers
jaxpr_types: tuple = ()


def _holds_jaxpr(params) -> bool:
  types = jaxpr_types
  for v in params.values():
    if isinstance(v, types):
      return True
    if type(v) is tuple and v and isinstance(v[0], types):
      return True
  return False


def apply(prim, avals, params, out):
  """`out` (a primitive's result aval, or list of them) typed in the memory space the
  primitive's operands give (see `default_space`); unchanged for primitives with their own
  rule or a jaxpr inside."""
  for a in avals:  # (the common case first: every operand in device memory)
    space = getattr(a, "memory_space", None)
    if space is not _DEVICE and space is not None:
      break
  else:
    return out
  if prim in own_rule or _holds_jaxpr(params):
    return out
  space = default_space(prim, avals)
  if space is _DEVICE:
    return out
  if isinstance(out, (list, tuple)):
    return type(out)(_placed(o, space) for o in out)
  return _placed(out, space)


def _is_array(aval) -> bool:
  """An array type (a ShapedArray); not a Ref (whose memory space is its own) nor a token."""
  return isinstance(getattr(aval, "memory_space", None), MemorySpace) and \
      not hasattr(aval, "inner_aval")


def _placed(aval, space):
  return aval.update(memory_space=space) if _is_array(aval) else aval
