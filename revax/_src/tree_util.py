"""Pytrees, through optree: nested tuples, lists, dicts, None and registered node types.

revax registers its own nodes in the "revax" namespace; None is an empty node (not a leaf) and
dict keys are sorted when flattening, as in JAX.

Two views of one registry: the functions here default to the transformations' view (namespace
"revax"), in which typed PRNG key arrays are nodes over their uint32 data, so jit, vmap, grad,
scan, ... trace the data as they trace any array; revax.tree_util and revax.tree give JAX's
view (namespace "revax.user", `revax._src.pytrees`), in which key arrays are leaves. Node types
users register are registered in both; `register_array_leaf` registers a type in the first
only.

Paths are tuples of key objects (`DictKey`, `SequenceKey`, `GetAttrKey`, `FlattenedIndexKey`)
that print as indexing text, as JAX's do.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Hashable, TypeVar

import optree

from revax._src.pytreedef import NAMESPACE as NAMESPACE  # the transformations' view: typed
# key arrays are nodes over their data
from revax._src.pytreedef import PyTreeDef as PyTreeDef
USER_NAMESPACE = "revax.user"  # revax.tree_util's (JAX's) view: typed key arrays are leaves
T = TypeVar("T")


# ---------------------------------------------------------------------------------------------
# Key entries: one step of a path into a pytree.

@dataclasses.dataclass(frozen=True)
class DictKey:
  """The step `[key]` into a mapping."""
  key: Hashable

  def __str__(self):
    return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class SequenceKey:
  """The step `[idx]` into a list or tuple."""
  idx: int

  def __str__(self):
    return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
  """The step `.name` into a namedtuple, dataclass or object attribute."""
  name: str

  def __str__(self):
    return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
  """The `key`-th child of a node registered without keys."""
  key: int

  def __str__(self):
    return f"[<flat index {self.key}>]"


KeyEntry = TypeVar("KeyEntry", bound=Hashable)
KeyPath = tuple[KeyEntry, ...]

# Node types registered with their own key entries (register_pytree_with_keys and friends):
# optree hands their entries back unchanged, every other custom node gets FlattenedIndexKey.
_KEYED_TYPES: set[type] = set()


def _simple_entrystr(key) -> str:
  for cls, field in ((SequenceKey, "idx"), (DictKey, "key"), (GetAttrKey, "name"),
                     (FlattenedIndexKey, "key")):
    if isinstance(key, cls):
      return str(getattr(key, field))
  return str(key)


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
  """A path as text: `(DictKey('a'), SequenceKey(0))` -> `"['a'][0]"`.

  Args:
    keys: a tuple of key entries (or any objects with a string form).
    simple: print the bare keys ("a", "0") instead of indexing text.
    separator: text put between the keys.

  Returns:
    The joined text.
  """
  str_fn = _simple_entrystr if simple else str
  return separator.join(map(str_fn, keys))


def _key_of(entry) -> Any:
  """The JAX key entry for one optree accessor entry."""
  kind = entry.kind
  if kind in (optree.PyTreeKind.DICT, optree.PyTreeKind.ORDEREDDICT,
              optree.PyTreeKind.DEFAULTDICT):
    return DictKey(entry.entry)
  if kind in (optree.PyTreeKind.LIST, optree.PyTreeKind.TUPLE, optree.PyTreeKind.DEQUE):
    return SequenceKey(entry.entry)
  if kind in (optree.PyTreeKind.NAMEDTUPLE, optree.PyTreeKind.STRUCTSEQUENCE):
    return GetAttrKey(entry.type._fields[entry.entry]
                      if kind == optree.PyTreeKind.NAMEDTUPLE else entry.name)
  if entry.type in _KEYED_TYPES:
    return entry.entry
  return FlattenedIndexKey(entry.entry)


# ---------------------------------------------------------------------------------------------
# Flattening.

_DICT_KINDS = (optree.PyTreeKind.DICT, optree.PyTreeKind.DEFAULTDICT)
_SORTED: dict = {}  # treedef -> the equal treedef whose dicts hold their keys in sorted order


def _sort_dict_node(node):
  """One node of `PyTreeSpec.transform`: a dict node rebuilt with its keys in the order
  flattening visits them (sorted), any other node unchanged. ValueError, as in JAX, when the
  keys cannot be sorted (keys of types that do not compare, such as 1 and 'b')."""
  if node.kind not in _DICT_KINDS:
    return node
  try:
    sorted(node.entries())
  except TypeError:
    raise ValueError("Comparator raised exception while sorting pytree dictionary keys.") \
        from None
  namespace = node.namespace or NAMESPACE
  leaf = optree.treespec_leaf(none_is_leaf=False, namespace=namespace)
  mapping = dict.fromkeys(node.entries(), leaf)  # entries come in flattening (sorted) order
  if node.kind == optree.PyTreeKind.DICT:
    return optree.treespec_dict(mapping, none_is_leaf=False, namespace=namespace)
  factory = node.unflatten([None] * node.num_leaves).default_factory
  return optree.treespec_defaultdict(factory, mapping, none_is_leaf=False, namespace=namespace)


def _sorted_dicts(spec) -> PyTreeDef:
  """The PyTreeDef of optree's `spec`, with its dicts' keys recorded in sorted order, so that
  unflattening builds dicts in sorted key order as JAX does (optree's treedef keeps the
  flattened dict's insertion order and restores it). Equal specs (equality ignores key order)
  share one, cached."""
  try:
    return _SORTED[spec]
  except KeyError:
    pass
  except TypeError:  # node data that cannot be hashed: not cached
    return PyTreeDef(spec.transform(_sort_dict_node))
  if len(_SORTED) > 4096:
    _SORTED.clear()
  out = _SORTED[spec] = PyTreeDef(spec.transform(_sort_dict_node))
  return out

def tree_flatten(tree, is_leaf=None, *, namespace=NAMESPACE):
  """(leaves, treedef) of `tree`; dict keys in sorted order, None an empty node.

  Args:
    tree: a pytree.
    is_leaf: optional predicate; a subtree where it is true is a leaf.

  Returns:
    The list of leaves and the tree's structure.
  """
  leaves, treedef = optree.tree_flatten(tree, is_leaf=is_leaf, none_is_leaf=False,
                                        namespace=namespace)
  return leaves, _sorted_dicts(treedef)


def tree_unflatten(treedef, leaves):
  """The pytree of structure `treedef` holding `leaves` (the inverse of `tree_flatten`); its
  dicts have their keys in sorted order, as in JAX."""
  if not isinstance(treedef, PyTreeDef):
    raise TypeError(f"tree_unflatten expects a PyTreeDef, got {type(treedef).__name__}")
  return treedef.unflatten(leaves)


def tree_leaves(tree, is_leaf=None, *, namespace=NAMESPACE):
  """The leaves of `tree`, in flattening order."""
  leaves, spec = optree.tree_flatten(tree, is_leaf=is_leaf, none_is_leaf=False,
                                     namespace=namespace)
  if spec.num_nodes > spec.num_leaves:  # (dicts' keys must sort, as in JAX)
    _sorted_dicts(spec)
  return leaves


def tree_structure(tree, is_leaf=None, *, namespace=NAMESPACE):
  """The treedef of `tree`."""
  return _sorted_dicts(optree.tree_structure(tree, is_leaf=is_leaf, none_is_leaf=False,
                                             namespace=namespace))


def _flatten_with_path_taking_is_leaf(tree, is_leaf, namespace, path=()):
  """[(path, leaf)] where `is_leaf(path, x)` decides leaves (JAX's is_leaf_takes_path)."""
  if is_leaf(path, tree):
    return [(path, tree)]
  if (not is_tree_node(type(tree), namespace=namespace)
      and not optree.is_namedtuple_instance(tree)):
    return [(path, tree)]
  out = []
  for key, child in flatten_one_level_with_keys(tree, namespace=namespace)[0]:
    out += _flatten_with_path_taking_is_leaf(child, is_leaf, namespace, path + (key,))
  return out


def tree_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False, *,
                           namespace=NAMESPACE):
  """([(path, leaf), ...], treedef): each leaf with the tuple of keys leading to it.

  Args:
    tree: a pytree.
    is_leaf: optional predicate `x -> bool` (or `(path, x) -> bool` with is_leaf_takes_path).
    is_leaf_takes_path: whether `is_leaf` takes the path as its first argument.

  Returns:
    The (path, leaf) pairs and the treedef.
  """
  if is_leaf is not None and is_leaf_takes_path:
    pairs = _flatten_with_path_taking_is_leaf(tree, is_leaf, namespace)
    leaf_ids = {id(x) for _, x in pairs}
    return pairs, tree_structure(tree, is_leaf=lambda x: id(x) in leaf_ids, namespace=namespace)
  accessors, leaves, treedef = optree.tree_flatten_with_accessor(
      tree, is_leaf=is_leaf, none_is_leaf=False, namespace=namespace)
  paths = [tuple(_key_of(e) for e in accessor) for accessor in accessors]
  return list(zip(paths, leaves, strict=True)), _sorted_dicts(treedef)


def tree_leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False, *,
                          namespace=NAMESPACE):
  """[(path, leaf), ...] of `tree`."""
  return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path, namespace=namespace)[0]


def flatten_one_level(tree, *, namespace=NAMESPACE):
  """(children, node data) of one pytree node; ValueError for a leaf.

  Dicts give their values in sorted key order and the sorted keys as node data, as JAX does.
  """
  if not is_tree_node(type(tree), namespace=namespace):
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  children, metadata, _entries, _ = optree.tree_flatten_one_level(
      tree, none_is_leaf=False, namespace=namespace)
  if isinstance(tree, dict):
    return tuple(children), tuple(_entries)
  if tree is None or type(tree) is tuple:
    return tuple(children), metadata
  return children, metadata


def flatten_one_level_with_keys(tree, *, namespace=NAMESPACE):
  """([(key, child), ...], node data) of one pytree node; ValueError for a leaf."""
  if not is_tree_node(type(tree), namespace=namespace):
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  children, metadata, entries, _ = optree.tree_flatten_one_level(
      tree, none_is_leaf=False, namespace=namespace)
  spec = optree.tree_structure(tree, is_leaf=lambda x: x is not tree, none_is_leaf=False,
                              namespace=namespace)
  accessors = spec.accessors()
  keys = [_key_of(a[0]) for a in accessors]
  if isinstance(tree, dict):
    metadata = tuple(entries)
  return list(zip(keys, children, strict=True)), metadata


def is_tree_node(typ, *, namespace=NAMESPACE) -> bool:
  """Whether `typ` is a pytree node type (built-in, namedtuple or registered)."""
  if isinstance(typ, type) and issubclass(typ, tuple) and hasattr(typ, "_fields"):
    return True
  return optree.register_pytree_node.get(typ, namespace=namespace) is not None


def all_leaves(iterable, is_leaf=None, *, namespace=NAMESPACE) -> bool:
  """Whether every element of `iterable` is a leaf (a pytree of itself alone)."""
  items = list(iterable)
  leaves = tree_leaves(items, is_leaf, namespace=namespace)
  return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves, strict=True))


class _Registry:
  """revax's pytree registry (what `default_registry` names in JAX), in one view."""

  def __init__(self, namespace: str):
    self.namespace = namespace

  def flatten(self, tree, is_leaf=None):
    return tree_flatten(tree, is_leaf, namespace=self.namespace)

  def flatten_one_level(self, tree):
    try:
      return flatten_one_level(tree, namespace=self.namespace)
    except ValueError:
      return None

  def flatten_one_level_with_keys(self, tree):
    try:
      return flatten_one_level_with_keys(tree, namespace=self.namespace)
    except ValueError:
      return None

  def is_node(self, typ) -> bool:
    return is_tree_node(typ, namespace=self.namespace)

  def __repr__(self):
    return f"<revax pytree registry, namespace {self.namespace!r}>"


default_registry = _Registry(NAMESPACE)
user_registry = _Registry(USER_NAMESPACE)  # the registry revax.tree_util shows


# ---------------------------------------------------------------------------------------------
# Mapping and reducing.

def tree_map(f, tree, *rest, is_leaf=None, namespace=NAMESPACE):
  """Apply `f` leafwise to `tree` and the trees in `rest` (which must have its structure).

  Args:
    f: function of as many arguments as there are trees.
    tree: the pytree whose structure the result has.
    *rest: pytrees with `tree`'s structure (or with `tree` as a prefix).
    is_leaf: optional predicate; a subtree where it is true is a leaf.

  Returns:
    A pytree like `tree` holding `f(leaf, *rest_leaves)`.

  Example:
    >>> revax.tree.map(lambda x, y: x + y, (1, [2]), (10, [20]))
    (11, [22])
  """
  leaves, treedef = tree_flatten(tree, is_leaf, namespace=namespace)
  if not rest:
    return treedef.unflatten(map(f, leaves))
  others = [treedef.flatten_up_to(r) for r in rest]
  return treedef.unflatten(map(f, leaves, *others))


def tree_map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False,
                       namespace=NAMESPACE):
  """Like `tree_map`, but `f(path, leaf, *rest_leaves)` also gets each leaf's key path."""
  pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path,
                                          namespace=namespace)
  all_leaves_ = [[x for _, x in pairs]] + [treedef.flatten_up_to(r) for r in rest]
  paths = [p for p, _ in pairs]
  return treedef.unflatten(f(p, *xs) for p, *xs in zip(paths, *all_leaves_, strict=True))


def tree_all(tree, *, is_leaf=None, namespace=NAMESPACE) -> bool:
  """Whether every leaf of `tree` is truthy."""
  return all(tree_leaves(tree, is_leaf=is_leaf, namespace=namespace))


class Unspecified:
  """Marker for an argument left out."""

  def __repr__(self):
    return "Unspecified"


_NO_INIT = Unspecified()


def tree_reduce(function, tree, initializer=_NO_INIT, is_leaf=None, *, namespace=NAMESPACE):
  """`functools.reduce(function, leaves[, initializer])` over the leaves of `tree`."""
  leaves = tree_leaves(tree, is_leaf=is_leaf, namespace=namespace)
  if initializer is _NO_INIT:
    return functools.reduce(function, leaves)
  return functools.reduce(function, leaves, initializer)


def _parallel_reduce(seq, operation, identity):
  if not seq:
    if identity is _NO_INIT:
      raise TypeError("Must specify identity for parallel reduction of empty sequence.")
    return identity
  if len(seq) == 1:
    return seq[0]
  mid = len(seq) // 2
  return operation(_parallel_reduce(seq[:mid], operation, identity),
                   _parallel_reduce(seq[mid:], operation, identity))


def tree_reduce_associative(operation, tree, *, identity=_NO_INIT, is_leaf=None,
                            namespace=NAMESPACE):
  """Reduce the leaves of `tree` with an associative `operation` as a balanced tree of calls.

  Args:
    operation: associative binary function.
    tree: a pytree.
    identity: the result for a tree without leaves (TypeError if needed and not given).
    is_leaf: optional predicate.

  Returns:
    The reduction.
  """
  return _parallel_reduce(tree_leaves(tree, is_leaf=is_leaf, namespace=namespace), operation,
                          identity)


def tree_broadcast(prefix_tree, full_tree, is_leaf=None, *, namespace=NAMESPACE):
  """`prefix_tree` with each of its leaves repeated over the subtree of `full_tree` below it."""
  return optree.tree_broadcast_prefix(prefix_tree, full_tree, is_leaf=is_leaf,
                                      none_is_leaf=False, namespace=namespace)


class _PrefixGroup(list):
  """The copies of one prefix leaf for the leaves below it (a type no pytree holds, so the
  prefix's own lists stay tree nodes)."""


def prefix_leaves(prefix, tree, is_leaf=None, *, namespace=NAMESPACE) -> list:
  """One leaf of `prefix` (a pytree prefix of `tree`) per leaf of `tree`, in its leaf order:
  how jit's shardings and shard_map's specs are read.

  Raises:
    ValueError, TypeError: `prefix` is not a prefix of `tree` (tree_map's errors).

  Example:
    >>> from revax._src.tree_util import prefix_leaves
    >>> prefix_leaves(["a", "b"], [[1, 2], 3])
    ['a', 'a', 'b']
  """
  groups = tree_map(lambda p, sub: _PrefixGroup([p] * len(tree_leaves(sub, namespace=namespace))),
                    prefix, tree, is_leaf=is_leaf, namespace=namespace)
  return [p for g in tree_leaves(groups, is_leaf=lambda g: isinstance(g, _PrefixGroup),
                                 namespace=namespace) for p in g]


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose, *, namespace=NAMESPACE):
  """Turn a tree of structure outer-of-inner into one of structure inner-of-outer.

  Args:
    outer_treedef: the outer structure.
    inner_treedef: the inner structure (None: read it off the first outer leaf's subtree).
    pytree_to_transpose: the tree to transpose.

  Returns:
    The transposed tree.
  """
  flat, treedef = tree_flatten(pytree_to_transpose, namespace=namespace)
  if inner_treedef is None:
    inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0],
                                   namespace=namespace)
  inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
  if treedef.num_leaves != inner_size * outer_size:
    raise TypeError(f"Mismatch\n{treedef}\n != \n{outer_treedef.compose(inner_treedef)}")
  rows = [flat[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
  columns = [tree_unflatten(outer_treedef, col) for col in zip(*rows, strict=True)]
  return tree_unflatten(inner_treedef, columns)


def treedef_children(treedef):
  """The treedefs of the children of `treedef`'s root."""
  return treedef.children()


def treedef_is_leaf(treedef) -> bool:
  """Whether `treedef` has a single node (a leaf, or an empty node such as None or ())."""
  return treedef.num_nodes == 1


def treedef_tuple(treedefs, *, namespace=NAMESPACE):
  """The treedef of a tuple whose children have the structures `treedefs`."""
  specs = [t._spec for t in treedefs]
  return _sorted_dicts(optree.treespec_tuple(specs, none_is_leaf=False, namespace=namespace))


# ---------------------------------------------------------------------------------------------
# Registration.

def register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
  """Register `nodetype` as a pytree node.

  Args:
    nodetype: the class to register.
    flatten_func: `x -> (children, aux_data)`; aux_data must be hashable.
    unflatten_func: `(aux_data, children) -> x`.
    flatten_with_keys_func: optional `x -> ([(key, child), ...], aux_data)` giving the key
      entries of paths (without it, paths use `FlattenedIndexKey`).

  Example:
    >>> class Point:
    ...   def __init__(self, x, y): self.x, self.y = x, y
    >>> revax.tree_util.register_pytree_node(
    ...     Point, lambda p: ((p.x, p.y), None), lambda _, c: Point(*c))
    >>> revax.tree_util.tree_leaves([Point(1, 2), 3])
    [1, 2, 3]
  """
  if flatten_with_keys_func is not None:
    return register_pytree_with_keys(nodetype, flatten_with_keys_func, unflatten_func,
                                     flatten_func)
  for namespace in (NAMESPACE, USER_NAMESPACE):
    optree.register_pytree_node(nodetype, flatten_func, unflatten_func, namespace=namespace)
  return None


def registry_entry(nodetype):
  """The registration of the custom node type `nodetype` (with its `unflatten_func`), or None."""
  return optree.register_pytree_node.get(nodetype, namespace=NAMESPACE)


def register_array_leaf(nodetype, flatten_func, unflatten_func) -> None:
  """Register an Array-like type that is a leaf in JAX's view (revax.tree_util, revax.tree)
  and a node over its data arrays in the transformations' view (this module's functions), so
  that jit, vmap, grad, scan, ... trace its data while users' tree utilities keep it whole.
  revax's typed PRNG key arrays are such leaves: key<fry>[n] over its uint32[n, 2] data.

  Args:
    nodetype: the class.
    flatten_func: `x -> (data arrays, aux_data)`.
    unflatten_func: `(aux_data, data arrays) -> x`.
  """
  optree.register_pytree_node(nodetype, flatten_func, unflatten_func, namespace=NAMESPACE)
  ARRAY_LEAF_TYPES.add(nodetype)


ARRAY_LEAF_TYPES: set[type] = set()


def accepts_array_leaves(operands=(0,)):
  """Decorator: let an array function take array leaves (typed key arrays) as the operands at
  positions `operands` (a sequence argument there: each of its items), as JAX's shape functions
  take key arrays. Called with one, the function is applied by the leaf type's
  `apply_to_data(fn, args, kwargs, operands)`, which checks the operands are all of one kind;
  otherwise it runs as it is (a few isinstance checks).

  Args:
    operands: the positions of the arguments that may be array leaves; "all" for every
      positional argument, "rest" for all but the first.

  Returns:
    The decorator.
  """

  def decorate(fn):
    def on_leaves(args, kwargs):
      """The leaf type's application of `fn`, or None where no operand is an array leaf."""
      positions = (range(len(args)) if operands == "all" else
                   range(1, len(args)) if operands == "rest" else operands)
      for i in positions:
        a = args[i] if i < len(args) else None
        for item in (a if type(a) in (list, tuple) else (a,)):
          if type(item) in ARRAY_LEAF_TYPES:
            return type(item).apply_to_data(fn, args, kwargs, tuple(positions))
      return None

    if operands == (0,):  # (a hot path: one type test in the usual case)
      @functools.wraps(fn)
      def maybe_on_leaves(*args, **kwargs):
        if not args or (type(args[0]) not in ARRAY_LEAF_TYPES and
                        type(args[0]) not in (list, tuple)):
          return fn(*args, **kwargs)
        out = on_leaves(args, kwargs)
        return fn(*args, **kwargs) if out is None else out
    else:
      @functools.wraps(fn)
      def maybe_on_leaves(*args, **kwargs):
        out = on_leaves(args, kwargs)
        return fn(*args, **kwargs) if out is None else out
    return maybe_on_leaves
  return decorate


def is_array_leaf(x) -> bool:
  """Whether `x` is an array leaf (a typed key array; see `register_array_leaf`)."""
  return type(x) in ARRAY_LEAF_TYPES


def register_pytree_node_class(cls):
  """Class decorator: `cls.tree_flatten()` and `cls.tree_unflatten(aux, children)` define it."""
  register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
  return cls


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
  """Register `nodetype` as a pytree node whose children carry key entries for paths.

  Args:
    nodetype: the class to register.
    flatten_with_keys: `x -> ([(key, child), ...], aux_data)`.
    unflatten_func: `(aux_data, children) -> x`.
    flatten_func: optional faster `x -> (children, aux_data)` for plain flattening (revax
      flattens through `flatten_with_keys` either way; the keys it gives are the paths).
  """
  del flatten_func

  def flatten(x):
    pairs, aux = flatten_with_keys(x)
    pairs = list(pairs)
    return [c for _, c in pairs], aux, [k for k, _ in pairs]

  for namespace in (NAMESPACE, USER_NAMESPACE):
    optree.register_pytree_node(nodetype, flatten, unflatten_func, namespace=namespace)
  _KEYED_TYPES.add(nodetype)
  return None


def register_pytree_with_keys_class(cls):
  """Class decorator: `cls.tree_flatten_with_keys()` and `cls.tree_unflatten` define it."""
  flatten_func = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
  register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                            flatten_func)
  return cls


def register_static(cls):
  """Register `cls` as a pytree without leaves: instances live in the treedef (so `jit` treats
  them as static). Instances must be hashable. Usable as a decorator."""
  register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x)
  return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
  """Register a dataclass as a pytree: `data_fields` are children, `meta_fields` static data.

  Args:
    nodetype: the class (when omitted, returns a decorator).
    data_fields: names of the fields holding children; with `meta_fields` None, both are read
      from the dataclass fields (`metadata=dict(static=True)` marks a meta field).
    meta_fields: names of static fields (part of the treedef, must be hashable).
    drop_fields: fields left out of both (they must have defaults or be init=False).

  Returns:
    `nodetype`, so it works as a decorator.
  """
  if nodetype is None:
    return functools.partial(register_dataclass, data_fields=data_fields,
                             meta_fields=meta_fields, drop_fields=drop_fields)
  if (data_fields is None) != (meta_fields is None):
    raise TypeError("register_dataclass: specify both data_fields and meta_fields, or neither "
                    f"(got data_fields={data_fields!r}, meta_fields={meta_fields!r}).")
  if data_fields is None:
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError("register_dataclass: data_fields and meta_fields are required when "
                      f"{nodetype} is not a dataclass.")
    data_fields, meta_fields = [], []
    for f in dataclasses.fields(nodetype):
      if f.name in drop_fields:
        continue
      if f.metadata.get("static", False):
        meta_fields.append(f.name)
      elif f.init:
        data_fields.append(f.name)
  data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
  if dataclasses.is_dataclass(nodetype):
    init_names = {f.name for f in dataclasses.fields(nodetype) if f.init}
    listed = set(data_fields) | set(meta_fields) | set(drop_fields)
    if init_names - listed or (set(data_fields) | set(meta_fields)) - init_names:
      raise ValueError(
          "data_fields and meta_fields must include all dataclass fields with init=True and "
          f"only them. Missing: {sorted(init_names - listed)}; unexpected: "
          f"{sorted((set(data_fields) | set(meta_fields)) - init_names)}.")

  def flatten_with_keys(x):
    pairs = [(GetAttrKey(name), getattr(x, name)) for name in data_fields]
    return pairs, tuple(getattr(x, name) for name in meta_fields)

  def unflatten(meta, children):
    kwargs = dict(zip(meta_fields, meta, strict=True))
    kwargs.update(zip(data_fields, children, strict=True))
    return nodetype(**kwargs)

  register_pytree_with_keys(nodetype, flatten_with_keys, unflatten)
  return nodetype


def static(**kwargs):
  """A `dataclasses.field` marked static for `register_dataclass` (same arguments)."""
  metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
  return dataclasses.field(metadata=metadata, **kwargs)


class Partial(functools.partial):
  """A `functools.partial` that is a pytree: the bound arguments are its children, the function
  its static data, so it can be passed through `jit`, `vmap` and friends.

  Example:
    >>> from revax.tree_util import Partial
    >>> add3 = Partial(lambda a, b: a + b, 3)
    >>> revax.tree_util.tree_leaves(add3)
    [3]
    >>> revax.jit(lambda f, x: f(x))(add3, 4)  # passes through jit as a pytree
    Array(7, dtype=int32, weak_type=True)
  """

  def __new__(cls, func, *args, **kw):
    if isinstance(func, functools.partial) and not isinstance(func, Partial):
      # functools.partial would merge a nested partial's arguments into the children; keep
      # them static, as JAX does.
      func = _WrappedPartial(func)
    return super().__new__(cls, func, *args, **kw)


class _WrappedPartial:
  """Holds a partial inside a Partial so its bound arguments stay static."""

  def __init__(self, p):
    self.p = p

  def __call__(self, *args, **kwargs):
    return self.p(*args, **kwargs)

  def __eq__(self, other):
    return isinstance(other, _WrappedPartial) and self.p is other.p

  def __hash__(self):
    return id(self.p)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]))
