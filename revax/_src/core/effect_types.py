"""Effect objects: what `eqn.effects`, `jaxpr.effects` and `closed_jaxpr.effects` hold.

Code written against JAX (equinox, custom primitives, jaxpr walkers) reads side effects as sets
of effect objects: `DebugEffect()` for a debug callback, `OrderedIOEffect()` for an ordered
`io_callback`, `WriteEffect(ref_var)` for a write to a ref, and so on. These are those classes,
with JAX's names, `str` forms, reprs, equality and hashing, so that such code (and an `effects`
set compared or printed) behaves the same on revax's jaxprs.

Which equation carries which effect is decided in core/effects.py (a rule per primitive);
revax's own passes (dead-code elimination, ordering tokens) still read the per-primitive flags
there, which these objects describe but do not replace. Positional effects from a rule are
resolved to variables by core/effects.py's `resolve_input_effects`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Set
from typing import Any


class Effect:
  """A generic side effect (JAX's `jax.extend.core.Effect`): an equation holding one is never
  removed as dead code."""


Effects = Set[Effect]
no_effects: frozenset = frozenset()


class JaxprInputEffect(Effect):
  """An effect on one input of an equation or a jaxpr (a ref read or written).

  `input` is the input's `Var` in an equation or jaxpr; in an abstract evaluation rule, where no
  variable is in scope, it is the input's position, resolved to the variable when the equation is
  formed (`resolve_input_effects`).
  """

  def __init__(self, input: Any):
    self.input = input

  def replace(self, input: Any):
    return self.__class__(input)

  def __eq__(self, other):
    if not isinstance(other, JaxprInputEffect):
      return NotImplemented
    return self.input == other.input

  def __hash__(self):
    return hash((self.__class__, self.input))

  def __repr__(self):
    return f"{self.__class__.__name__}({self.input})"


class EffectTypeSet:
  """A set of effect classes; an effect belongs when it is an instance of one (JAX's)."""

  def __init__(self):
    self._effect_types: set = set()

  def __repr__(self):
    return f"EffectTypeSet({self._effect_types})"

  def add_type(self, effect_type: type) -> None:
    self._effect_types.add(effect_type)

  def contains(self, eff: Effect) -> bool:
    return any(isinstance(eff, t) for t in self._effect_types)

  def filter_in(self, effects: Iterable[Effect]) -> list:
    return [e for e in effects if self.contains(e)]

  def filter_not_in(self, effects: Iterable[Effect]) -> list:
    return [e for e in effects if not self.contains(e)]


# Effects whose calls run in program order: a computation holding one threads an ordering token.
ordered_effects = EffectTypeSet()


# --- host callbacks ------------------------------------------------------------------------------
class DebugEffect(Effect):
  """The effect of `debug.callback` / `debug.print` (and `inspect_array_sharding`)."""
  __str__ = lambda self: "Debug"


class OrderedDebugEffect(Effect):
  """The effect of `debug.callback(..., ordered=True)`: calls run in program order."""
  __str__ = lambda self: "OrderedDebug"


class IOEffect(Effect):
  """The effect of an unordered `io_callback`."""
  __str__ = lambda self: "IO"


class OrderedIOEffect(Effect):
  """The effect of `io_callback(..., ordered=True)`."""
  __str__ = lambda self: "OrderedIO"


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()
io_effect = IOEffect()
ordered_io_effect = OrderedIOEffect()
ordered_effects.add_type(OrderedDebugEffect)
ordered_effects.add_type(OrderedIOEffect)


@dataclasses.dataclass(frozen=True, slots=True)
class FfiEffect(Effect):
  """The effect of an `ffi.ffi_call` declared with `has_side_effect=True`."""

  def __str__(self):
    return "FFI"


ffi_effect = FfiEffect()


class NoDCEEffect(Effect):
  """The effect of a sink that only keeps its operands alive (never removed as dead code)."""

  def __hash__(self):
    return hash(type(self))

  def __eq__(self, other):
    return type(self) is type(other)


no_dce_effect = NoDCEEffect()


# --- mutable arrays (refs) -----------------------------------------------------------------------
class InternalMutableArrayEffect(Effect):
  """The effect of creating or freezing a ref inside a computation."""


internal_mutable_array_effect = InternalMutableArrayEffect()


class RefEffect(JaxprInputEffect):
  """An effect on a ref input: printed `Read<a>`, `Write<a>` or `Accum<a>`."""
  name: str

  def __eq__(self, other):
    if not isinstance(other, self.__class__):
      return False
    return self.input == other.input

  def __hash__(self):
    return hash((self.__class__, self.input))

  def __str__(self):
    return f"{self.name}<{self.input}>"


class ReadEffect(RefEffect):
  name: str = "Read"


class WriteEffect(RefEffect):
  name: str = "Write"


class AccumEffect(RefEffect):
  name: str = "Accum"
