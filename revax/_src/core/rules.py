"""RuleTable: the per-primitive rule tables that each interpreter owns."""
from __future__ import annotations


class RuleTable(dict):
  """A dict from Primitive to rule that refuses double registration.

  Each interpreter owns its tables (`ad.primitive_jvps`, `mlir.lowerings`, ...); a primitive's
  family file fills them in. Registering a rule twice is a bug (two definitions, one silently
  lost), so it raises.
  """

  def __init__(self, name: str):
    super().__init__()
    self.name = name

  def __setitem__(self, prim, rule):
    if prim in self:
      raise ValueError(f"{self.name} rule for primitive '{prim}' is already registered")
    super().__setitem__(prim, rule)

  def __repr__(self):
    return f"RuleTable({self.name!r}, {len(self)} rules)"
