"""`jax._src.tree_util`: flax's nnx graph code asks `type(x) in _registry` (is this type a
pytree node?). Here `_registry` answers that question from revax's pytree registry."""
from revax._src.pytrees import is_tree_node as _is_tree_node
from revax.tree_util import *  # noqa: F401,F403


class _RegistryView:
  """`typ in _registry`: whether `typ` is a registered pytree node type (built-ins included)."""

  def __contains__(self, typ) -> bool:
    return isinstance(typ, type) and _is_tree_node(typ)

  def __repr__(self):
    return "<revax pytree registry (jax._src.tree_util._registry view)>"


_registry = _RegistryView()
