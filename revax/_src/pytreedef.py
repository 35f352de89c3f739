"""`PyTreeDef`: the structure of a pytree, as jax's (`jax.tree_util.PyTreeDef`).

revax flattens with optree; a `PyTreeDef` holds optree's `PyTreeSpec` and shows jax's face:
it prints as jax's does (`PyTreeDef([*, {'a': *}])`, custom nodes and namedtuples as
`CustomNode(Name[node data], [children])`) and has jax's methods (`node_data`, `children`,
`num_leaves`, `num_nodes`, `unflatten`, `flatten_up_to`, `compose`, `walk`,
`from_iterable_tree`, `from_node_data_and_children`), equality, hashing and pickling.
"""
from __future__ import annotations

import collections

import optree

NAMESPACE = "revax"
_KIND = optree.PyTreeKind
_LEAF = object()  # stands for a leaf while a node is rebuilt from its data


def _raw_node_data(spec):
  """(type, optree's node data) of `spec`'s root; None for a leaf."""
  if spec.is_leaf():
    return None
  return spec.walk([None] * spec.num_leaves, lambda typ, data, children: (typ, data), None)


def _jax_node_data(spec):
  """(type, node data) of `spec`'s root as jax gives it: None for a leaf, the sorted keys (a
  list) for a dict, the keys (a tuple) for an OrderedDict, (factory, keys) for a defaultdict,
  None for tuples, lists, None and namedtuples, the auxiliary data for custom nodes."""
  raw = _raw_node_data(spec)
  if raw is None:
    return None
  typ, data = raw
  kind = spec.kind
  if kind in (_KIND.NONE, _KIND.TUPLE, _KIND.LIST, _KIND.NAMEDTUPLE, _KIND.STRUCTSEQUENCE):
    return typ, None
  if kind == _KIND.DICT:
    return typ, list(data)
  if kind == _KIND.ORDEREDDICT:
    return typ, tuple(data)
  if kind == _KIND.DEFAULTDICT:
    return typ, (data[0], tuple(data[1]))
  return typ, data


def _raw_from_jax_node_data(typ, data):
  """optree's node data for jax's (the inverse of `_jax_node_data`)."""
  if typ is type(None) or typ in (tuple, list):
    return None
  if isinstance(typ, type) and issubclass(typ, tuple) and hasattr(typ, "_fields"):
    return typ
  if typ is dict or typ is collections.OrderedDict:
    return list(data)
  if typ is collections.defaultdict:
    return (data[0], list(data[1]))
  return data


def _build_node(typ, raw_data, children):
  """The node of type `typ` with optree's node data `raw_data` over `children`."""
  entry = optree.register_pytree_node.get(typ, namespace=NAMESPACE)
  if entry is None:
    raise ValueError(f"Unknown node type: {typ}")
  if entry.kind == _KIND.NAMEDTUPLE:
    return typ(*children)
  if entry.kind == _KIND.NONE:
    return None
  return entry.unflatten_func(raw_data, children)


def _example(spec):
  """A tree of structure `spec` holding `_LEAF` at each leaf."""
  return optree.tree_unflatten(spec, [_LEAF] * spec.num_leaves)


def _structure(tree):
  return optree.tree_structure(tree, is_leaf=lambda x: x is _LEAF, none_is_leaf=False,
                               namespace=NAMESPACE)


def _repr_node(spec) -> str:
  kind = spec.kind
  if kind == _KIND.LEAF:
    return "*"
  if kind == _KIND.NONE:
    return "None"
  children = [_repr_node(c) for c in spec.children()]
  if kind == _KIND.TUPLE:
    return f"({children[0]},)" if len(children) == 1 else f"({', '.join(children)})"
  if kind == _KIND.LIST:
    return f"[{', '.join(children)}]"
  if kind == _KIND.DICT:
    return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(spec.entries(), children,
                                                          strict=True)) + "}"
  typ, data = _jax_node_data(spec)
  name = f"namedtuple[{typ.__name__}]" if kind == _KIND.NAMEDTUPLE else f"{typ.__name__}[{data}]"
  return f"CustomNode({name}, [{', '.join(children)}])"


def _unpickle(spec):
  return PyTreeDef(spec)


class PyTreeDef:
  """The structure of a pytree: its node types, node data and where its leaves sit.

  Made by `revax.tree_util.tree_structure` / `tree_flatten`; `unflatten` builds a tree of this
  structure from leaves.

  Example:
    >>> treedef = revax.tree_util.tree_structure([1, {"b": 2, "a": (3, None)}])
    >>> treedef
    PyTreeDef([*, {'a': (*, None), 'b': *}])
    >>> treedef.num_leaves, treedef.num_nodes
    (3, 7)
    >>> treedef.unflatten([10, 20, 30])
    [10, {'a': (20, None), 'b': 30}]
  """

  __slots__ = ("_spec", "__weakref__")

  def __init__(self, spec):
    if not isinstance(spec, optree.PyTreeSpec):
      raise TypeError("PyTreeDef is made by revax.tree_util.tree_structure, not directly")
    self._spec = spec

  @property
  def num_leaves(self) -> int:
    """The number of leaves."""
    return self._spec.num_leaves

  @property
  def num_nodes(self) -> int:
    """The number of nodes, leaves and empty nodes (None, ()) included."""
    return self._spec.num_nodes

  def unflatten(self, leaves):
    """The tree of this structure holding `leaves` (an iterable, in flattening order)."""
    leaves = list(leaves)
    if len(leaves) != self._spec.num_leaves:
      few = "few" if len(leaves) < self._spec.num_leaves else "many"
      raise ValueError(f"Too {few} leaves for PyTreeDef; expected {self._spec.num_leaves}, "
                       f"got {len(leaves)}")
    return optree.tree_unflatten(self._spec, leaves)

  def flatten_up_to(self, tree):
    """The subtrees of `tree` at this structure's leaves (`tree` has it as a prefix)."""
    return self._spec.flatten_up_to(tree)

  def children(self):
    """The structures of the root's children (`[]` for a leaf)."""
    if self._spec.is_leaf():
      return []
    return [PyTreeDef(c) for c in self._spec.children()]

  def node_data(self):
    """(type, node data) of the root, None for a leaf (jax's `PyTreeDef.node_data`)."""
    return _jax_node_data(self._spec)

  def compose(self, inner):
    """The structure of this tree with `inner` at each of its leaves."""
    return PyTreeDef(self._spec.compose(_spec_of(inner)))

  def walk(self, f_node, f_leaf, leaves):
    """Folds `leaves` over the structure: `f_leaf(leaf)` at leaves (the leaf itself when
    `f_leaf` is None), `f_node(children_results, node_data)` at nodes, bottom-up (a
    namedtuple's node data is its type here, as in jax)."""
    it = iter(leaves)

    def go(spec):
      if spec.is_leaf():
        x = next(it)
        return x if f_leaf is None else f_leaf(x)
      results = tuple(go(c) for c in spec.children())
      typ, data = _jax_node_data(spec)
      return f_node(results, typ if spec.kind == _KIND.NAMEDTUPLE else data)

    return go(self._spec)

  def from_iterable_tree(self, tree):
    """The tree of this structure whose nodes' children are the items of the iterables of
    `tree` (nested the same way)."""
    def go(spec, sub):
      if spec.is_leaf():
        return sub
      typ, raw = _raw_node_data(spec)
      items = list(sub)
      kids = spec.children()
      if len(items) != len(kids):
        raise ValueError(f"Wrong number of children: expected {len(kids)}, got {len(items)}")
      return _build_node(typ, raw, [go(c, x) for c, x in zip(kids, items, strict=True)])

    return go(self._spec, tree)

  @staticmethod
  def from_node_data_and_children(registry, node_data, children):
    """The structure whose root has `node_data` (as `node_data()` gives it) over `children`
    (structures); `registry` is `revax.tree_util.default_registry`."""
    del registry
    children = list(children)
    if node_data is None:
      if children:
        raise ValueError("a leaf has no children")
      return PyTreeDef(_structure(_LEAF))
    typ, data = node_data
    node = _build_node(typ, _raw_from_jax_node_data(typ, data),
                       [_example(_spec_of(c)) for c in children])
    return PyTreeDef(_structure(node))

  def __eq__(self, other):
    if isinstance(other, PyTreeDef):
      return self._spec == other._spec
    return NotImplemented

  def __ne__(self, other):
    if isinstance(other, PyTreeDef):
      return self._spec != other._spec
    return False  # (jax's PyTreeDef answers False to `!=` with anything else too)

  def __hash__(self):
    return hash(self._spec)

  def __repr__(self):
    return f"PyTreeDef({_repr_node(self._spec)})"

  __str__ = __repr__

  def __reduce__(self):
    return _unpickle, (self._spec,)


def _spec_of(treedef):
  if isinstance(treedef, PyTreeDef):
    return treedef._spec
  raise TypeError(f"expected a PyTreeDef, got {type(treedef).__name__}")
