"""The pytree functions of revax.tree_util and revax.tree: JAX's view of pytrees, in which typed
PRNG key arrays (and other types registered with `tree_util.register_array_leaf`) are leaves.

Each function is `revax._src.tree_util`'s function of the same name (same docstring and
signature, without its `namespace` argument) run in the "revax.user" namespace. revax's own
transformations use `tree_util`'s default view, in which a key array is a node over its uint32
data (see that module's docstring).

Example:
  >>> k = revax.random.key(0)
  >>> revax.tree_util.tree_leaves({"key": k, "x": 1.0})[0] is k
  True
"""
from __future__ import annotations

import functools
import inspect

from revax._src import tree_util


def _users_view(fn):
  """`fn` run with namespace=USER_NAMESPACE, shown with `fn`'s docstring and signature less
  `namespace`."""

  @functools.wraps(fn)
  def in_users_view(*args, **kwargs):
    return fn(*args, namespace=tree_util.USER_NAMESPACE, **kwargs)

  signature = inspect.signature(fn)
  in_users_view.__signature__ = signature.replace(parameters=[
      p for name, p in signature.parameters.items() if name != "namespace"])
  del in_users_view.__wrapped__  # (inspect would read fn's signature through it)
  in_users_view.__module__ = __name__  # (the API reference documents this function, not fn)
  return in_users_view


tree_flatten = _users_view(tree_util.tree_flatten)
tree_leaves = _users_view(tree_util.tree_leaves)
tree_structure = _users_view(tree_util.tree_structure)
tree_flatten_with_path = _users_view(tree_util.tree_flatten_with_path)
tree_leaves_with_path = _users_view(tree_util.tree_leaves_with_path)
flatten_one_level = _users_view(tree_util.flatten_one_level)
flatten_one_level_with_keys = _users_view(tree_util.flatten_one_level_with_keys)
is_tree_node = _users_view(tree_util.is_tree_node)
all_leaves = _users_view(tree_util.all_leaves)
tree_map = _users_view(tree_util.tree_map)
tree_map_with_path = _users_view(tree_util.tree_map_with_path)
tree_all = _users_view(tree_util.tree_all)
tree_reduce = _users_view(tree_util.tree_reduce)
tree_reduce_associative = _users_view(tree_util.tree_reduce_associative)
tree_broadcast = _users_view(tree_util.tree_broadcast)
tree_transpose = _users_view(tree_util.tree_transpose)
treedef_tuple = _users_view(tree_util.treedef_tuple)
default_registry = tree_util.user_registry
