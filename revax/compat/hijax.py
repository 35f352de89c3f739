"""`jax.experimental.hijax` in the jax-compatibility mode: the names flax's nnx uses at import
time to define its "hijax" Variable types (subclasses of `HiPrimitive` and `MutableHiType`,
`aval_method` / `aval_property` attributes, `register_hitype`, effects allowed in control flow).

revax has no higher-order ("hi") types. flax only uses them for Variables created with
`nnx.var_defaults(hijax=True)` (its default is False), so the definitions are accepted and
recorded here, and binding a hijax primitive or building a hijax aval raises
NotImplementedError naming hijax.
"""
from __future__ import annotations

from revax._src.core.avals import ShapedArray as AbstractValue  # noqa: F401
from revax._src.core.effect_types import EffectTypeSet
from revax._src.extend.core import Primitive as _Primitive
from revax._src.interpreters.ad import Zero as Zero  # noqa: F401
from revax._src.interpreters.ad import instantiate_zeros as instantiate_zeros  # noqa: F401
from revax._src.interpreters.ad import is_undefined_primal as is_undefined_primal  # noqa: F401

_WHY = ("jax.experimental.hijax: revax has no higher-order (hijax) types; flax's hijax "
        "Variables (nnx.var_defaults(hijax=True)) cannot run on revax")


class HiPrimitive(_Primitive):
  """A primitive on hijax types: definable (flax subclasses it), not bindable on revax."""

  def bind(self, *args, **params):
    raise NotImplementedError(f"{_WHY} (primitive {self.name!r})")


class HiType:
  """The base of hijax abstract values (flax subclasses it at import)."""


class MutableHiType(HiType):
  """The base of mutable hijax abstract values (flax's AbstractVariable)."""


class AvalQDD:
  """A hijax aval with its quasi-dynamic data: not constructible on revax."""

  def __init__(self, *args, **kwargs):
    raise NotImplementedError(_WHY)


class AvalMutableQDD(AvalQDD):
  """A mutable hijax aval with its quasi-dynamic data: not constructible on revax."""


def aval_method(fun):
  """Mark `fun` as a method callable on a hijax value's aval (a plain method here)."""
  return fun


def aval_property(fget=None, fset=None, fdel=None, doc=None):
  """A property readable on a hijax value's aval (a plain property here)."""
  return property(fget, fset, fdel, doc)


hitypes: dict = {}  # type -> its function to an abstract value, as flax registers them


def register_hitype(typ, to_aval) -> None:
  """Record `typ` as a hijax type (revax never traces values of it: see the module doc)."""
  hitypes[typ] = to_aval


# the effect types allowed inside control flow (jax's effects.control_flow_allowed_effects)
control_flow_allowed_effects = EffectTypeSet()
