"""Pytrees, through optree: nested tuples, lists, dicts, None and registered node types.

revax registers its own nodes in the "revax" namespace; None is an empty node (not a leaf) and
dict keys are sorted, as in JAX.
"""
from __future__ import annotations

import functools

import optree

NAMESPACE = "revax"
PyTreeDef = optree.PyTreeSpec


def tree_flatten(tree, is_leaf=None):
  """(leaves, treedef) of `tree`."""
  return optree.tree_flatten(tree, is_leaf=is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_unflatten(treedef, leaves):
  return optree.tree_unflatten(treedef, leaves)


def tree_flatten_with_path(tree, is_leaf=None):
  """([(path, leaf), ...], treedef): each leaf with the tuple of keys leading to it."""
  paths, leaves, treedef = optree.tree_flatten_with_path(tree, is_leaf=is_leaf, none_is_leaf=False,
                                                         namespace=NAMESPACE)
  return list(zip(paths, leaves, strict=True)), treedef


def keystr(path) -> str:
  """A path as indexing text: `('a', 0)` -> "['a'][0]"."""
  return "".join(f"[{k!r}]" for k in path)


def tree_leaves(tree, is_leaf=None):
  return optree.tree_leaves(tree, is_leaf=is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_structure(tree, is_leaf=None):
  return optree.tree_structure(tree, is_leaf=is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_map(f, tree, *rest, is_leaf=None):
  """Apply `f` leafwise to `tree` and the trees in `rest` (which must have its structure)."""
  return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_all(tree):
  return all(tree_leaves(tree))


_NO_INIT = object()


def tree_reduce(function, tree, initializer=_NO_INIT, is_leaf=None):
  leaves = tree_leaves(tree, is_leaf=is_leaf)
  if initializer is _NO_INIT:
    return functools.reduce(function, leaves)
  return functools.reduce(function, leaves, initializer)


def treedef_children(treedef):
  return treedef.children()


def treedef_is_leaf(treedef) -> bool:
  return treedef.is_leaf()


def register_pytree_node(nodetype, flatten_func, unflatten_func):
  """Register `nodetype` as a pytree node.

  Args:
    nodetype: the class to register.
    flatten_func: `x -> (children, aux_data)`; aux_data must be hashable.
    unflatten_func: `(aux_data, children) -> x`.

  Example:
    >>> class Point:
    ...   def __init__(self, x, y): self.x, self.y = x, y
    >>> register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda _, c: Point(*c))
  """
  optree.register_pytree_node(nodetype, flatten_func, unflatten_func, namespace=NAMESPACE)
  return nodetype


def register_pytree_node_class(cls):
  """Class decorator: `cls.tree_flatten()` and `cls.tree_unflatten(aux, children)` define it."""
  register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
  return cls

