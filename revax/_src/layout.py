"""Array layouts (`jax.experimental.layout`): `Layout` (the order of dimensions in memory, and
tiling), `Format` (a layout with a sharding).

revax compiles every program with default (row-major) layouts, as JAX does unless asked; these
classes describe layouts with JAX's fields, equality and hashing, so that code passing them
around (flax maps shardings inside a `Format`) works unchanged.
"""
from __future__ import annotations

from revax._src.sharding import Sharding

__all__ = ["Layout", "Format", "AutoLayout"]


class AutoLayout:
  """`Layout.AUTO`: let the compiler choose the layout."""

  def __repr__(self):
    return "AUTO"


class Layout:
  """The memory order of an array's dimensions (major to minor) and its tiling.

  Example:
    >>> from revax.experimental.layout import Layout
    >>> Layout((0, 1)) == Layout((0, 1))
    True
  """
  AUTO = AutoLayout()

  def __init__(self, major_to_minor, tiling=None, sub_byte_element_size_in_bits: int = 0):
    self.major_to_minor = tuple(major_to_minor)
    self.tiling = None if tiling is None else tuple(map(tuple, tiling))
    self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

  def __repr__(self):
    return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
            f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")

  def _key(self):
    return self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return isinstance(other, Layout) and self._key() == other._key()

  def update(self, **kwargs) -> "Layout":
    """A copy with the given fields replaced."""
    return Layout(kwargs.get("major_to_minor", self.major_to_minor),
                  kwargs.get("tiling", self.tiling),
                  kwargs.get("sub_byte_element_size_in_bits",
                             self.sub_byte_element_size_in_bits))

  def check_compatible_aval(self, aval_shape) -> None:
    """ValueError unless the layout has one entry per dimension of `aval_shape`."""
    if len(self.major_to_minor) != len(aval_shape):
      raise ValueError(
          f"Length of major_to_minor and the rank of the value should match. Got "
          f"major_to_minor={self.major_to_minor} and shape={tuple(aval_shape)}")


class Format:
  """A layout together with a sharding (either may be None; `Layout.AUTO` allowed).

  Example:
    >>> from revax.experimental.layout import Format
    >>> Format().layout is None
    True
  """
  __slots__ = ("layout", "sharding")

  def __init__(self, layout=None, sharding=None):
    if isinstance(layout, Layout) and sharding is None:
      raise ValueError(
          f"Sharding has to be concrete when layout is of type {type(layout)}. Please pass a "
          "`jax.sharding.NamedSharding` or `jax.sharding.SingleDeviceSharding` to the sharding "
          f"argument. Got sharding {sharding}")
    if not isinstance(layout, (Layout, type(None), AutoLayout)):
      raise TypeError(
          "Invalid value received for the layout argument. Expected values are `None`, "
          f"`Layout.AUTO` or an instance of `Layout`. Got {layout} of type {type(layout)}")
    if not isinstance(sharding, (Sharding, type(None))):
      raise TypeError(
          "Invalid value received for the sharding argument. Expected values are `None` or an "
          f"instance of `jax.Sharding`. Got {sharding} of type {type(sharding)}")
    self.layout = layout
    self.sharding = sharding

  def __repr__(self):
    return f"Format(layout={self.layout}, sharding={self.sharding})"

  def __hash__(self):
    return hash((self.layout, self.sharding))

  def __eq__(self, other):
    return (isinstance(other, Format) and self.layout == other.layout
            and self.sharding == other.sharding)
