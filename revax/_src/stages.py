"""The stages of a jitted computation, as types (as jax.stages): a `Wrapped` function (what jit
returns), `Traced`, `Lowered` (`.lower(...)`: StableHLO text) and `Compiled` (`.compile()`: an
executable), `ArgInfo` (an argument's type and donation) and `CompilerOptions`.

revax's jit returns its own classes (jit.py's `Jitted`; jit_stages.py's `Traced`, `Lowered`,
`Compiled` and the sharded ones); the classes here are abstract base classes those modules
register them with, so `isinstance(revax.jit(f).lower(x), revax.stages.Lowered)` holds as in JAX (and so for
`jit(f).trace(x)` and `Traced`). This module imports none of them: the stages sit below jit.
"""
from __future__ import annotations

import abc
import dataclasses
from typing import Any

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]

CompilerOptions = dict[str, str | bool]


class Wrapped(abc.ABC):
  """A function ready to be traced, lowered and compiled (what `revax.jit` returns)."""

  @abc.abstractmethod
  def __call__(self, *args, **kwargs):
    """Run the computation."""

  @abc.abstractmethod
  def lower(self, *args, **kwargs):
    """Lower for these arguments: a `Lowered`."""


class Traced(abc.ABC):
  """A traced computation (JAX's `jit(f).trace(...)`)."""


class Lowered(abc.ABC):
  """A computation lowered to StableHLO for one signature; `.as_text()`, `.compile()`."""

  @abc.abstractmethod
  def as_text(self) -> str:
    """The StableHLO module as text."""

  @abc.abstractmethod
  def compile(self):
    """Compile: a `Compiled`."""


class Compiled(abc.ABC):
  """A compiled executable for one signature; callable with arguments of that signature."""

  @abc.abstractmethod
  def __call__(self, *args, **kwargs):
    """Run the executable."""

  @abc.abstractmethod
  def as_text(self) -> str:
    """The compiled module as text."""


@dataclasses.dataclass(frozen=True, slots=True)
class ArgInfo:
  """An argument of a lowered computation: its abstract value and whether it is donated."""
  _aval: Any
  donated: bool

  @property
  def shape(self):
    if not hasattr(self._aval, "shape"):
      raise TypeError(f"No shape attribute with aval of type {type(self._aval)}")
    return self._aval.shape

  @property
  def dtype(self):
    if not hasattr(self._aval, "dtype"):
      raise TypeError(f"No dtype attribute with aval of type {type(self._aval)}")
    return self._aval.dtype
