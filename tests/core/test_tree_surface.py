"""revax.tree and the rest of revax.tree_util against jax.tree / jax.tree_util (jax 0.10.2)."""
import collections
import dataclasses
import functools

import jax
import numpy as np
import pytest

import revax
from revax import tree as rtree
from revax import tree_util as rtu

NT = collections.namedtuple("NT", "x y")
TREES = [
    {"b": (1, None, [2, 3]), "a": 4},
    [NT(1, {"z": 2, "y": 3}), (), None, 5],
    collections.OrderedDict(b=1, a=2),
    collections.defaultdict(int, {"q": 1, "p": (2, 3)}),
    7,
    None,
]


def _path_str(pairs):
  return [(rtu.keystr(p), x) for p, x in pairs]


@pytest.mark.parametrize("tree", TREES)
def test_flatten_leaves_structure_and_paths_match_jax(tree):
  assert rtree.leaves(tree) == jax.tree.leaves(tree)
  leaves, treedef = rtree.flatten(tree)
  assert leaves == jax.tree.flatten(tree)[0]
  assert treedef.num_leaves == jax.tree.structure(tree).num_leaves
  assert treedef.num_nodes == jax.tree.structure(tree).num_nodes
  assert rtree.unflatten(treedef, leaves) == tree
  ours = [(rtu.keystr(p), x) for p, x in rtree.leaves_with_path(tree)]
  theirs = [(jax.tree_util.keystr(p), x) for p, x in jax.tree.leaves_with_path(tree)]
  assert ours == theirs
  ours = [(rtu.keystr(p, simple=True, separator="/"), x) for p, x in rtree.flatten_with_path(tree)[0]]
  theirs = [(jax.tree_util.keystr(p, simple=True, separator="/"), x)
            for p, x in jax.tree.flatten_with_path(tree)[0]]
  assert ours == theirs
  assert rtu.treedef_is_leaf(rtree.structure(tree)) == jax.tree_util.treedef_is_leaf(
      jax.tree.structure(tree))


def test_dicts_flatten_in_sorted_key_order_whatever_the_insertion_order():
  d1, d2 = {"a": 1, "b": 2}, {"b": 20, "a": 10}
  assert rtree.structure(d1) == rtree.structure(d2)
  assert rtree.leaves(d2) == jax.tree.leaves(d2) == [10, 20]
  assert rtree.map(lambda x, y: x + y, d1, d2) == {"a": 11, "b": 22}


def test_key_entries_print_and_compare_like_jax():
  for ours, theirs in [(rtu.DictKey("a"), jax.tree_util.DictKey("a")),
                       (rtu.SequenceKey(3), jax.tree_util.SequenceKey(3)),
                       (rtu.GetAttrKey("w"), jax.tree_util.GetAttrKey("w")),
                       (rtu.FlattenedIndexKey(2), jax.tree_util.FlattenedIndexKey(2))]:
    assert str(ours) == str(theirs)
    assert repr(ours) == repr(theirs)
    assert hash(ours) == hash(type(ours)(*dataclasses.astuple(ours)))
  path = rtree.leaves_with_path({"a": [NT(1, 2)]})[1][0]
  assert path == (rtu.DictKey("a"), rtu.SequenceKey(0), rtu.GetAttrKey("y"))


def test_map_with_path_reduce_all_transpose_broadcast():
  tree = {"w": [1, 2], "b": 3}
  f = lambda p, x, y: f"{rtu.keystr(p)}={x + y}"
  g = lambda p, x, y: f"{jax.tree_util.keystr(p)}={x + y}"
  assert rtree.map_with_path(f, tree, tree) == jax.tree.map_with_path(g, tree, tree)
  assert rtree.reduce(lambda a, b: a * b, tree, 10) == jax.tree.reduce(lambda a, b: a * b, tree, 10)
  assert rtree.reduce_associative(lambda a, b: a + b, tree) == 6
  with pytest.raises(TypeError):
    rtree.reduce_associative(lambda a, b: a + b, ())
  assert rtree.reduce_associative(lambda a, b: a + b, (), identity=0) == 0
  assert rtree.all([1, (True, 2)]) and not rtree.all([1, (0,)])
  outer, inner = rtree.structure([0, 0, 0]), rtree.structure((0, 0))
  x = [(1, 2), (3, 4), (5, 6)]
  assert rtree.transpose(outer, inner, x) == jax.tree.transpose(
      jax.tree.structure([0, 0, 0]), jax.tree.structure((0, 0)), x)
  assert rtree.transpose(outer, None, x) == ([1, 3, 5], [2, 4, 6])
  prefix, full = (1, {"a": 2}), ((3, 4), {"a": [5, None]})
  assert rtree.broadcast(prefix, full) == jax.tree.broadcast(prefix, full)


def test_is_leaf_and_is_leaf_takes_path():
  tree = {"a": (1, 2), "b": [3, (4, 5)]}
  is_tuple = lambda x: isinstance(x, tuple)
  assert rtree.leaves(tree, is_leaf=is_tuple) == jax.tree.leaves(tree, is_leaf=is_tuple)
  by_path = lambda p, x: len(p) == 2
  ours = rtree.leaves_with_path(tree, is_leaf=by_path, is_leaf_takes_path=True)
  theirs = jax.tree.leaves_with_path(tree, is_leaf=by_path, is_leaf_takes_path=True)
  assert _path_str(ours) == [(jax.tree_util.keystr(p), x) for p, x in theirs]


@dataclasses.dataclass
class Params:
  w: object
  b: object
  name: str = dataclasses.field(default="dense", metadata=dict(static=True))


rtu.register_dataclass(Params)
jax.tree_util.register_dataclass(Params)


def test_register_dataclass_paths_and_jit():
  p = Params(np.float32(2.0), np.float32(1.0))
  assert rtree.leaves(p) == [2.0, 1.0]
  assert [rtu.keystr(k) for k, _ in rtree.leaves_with_path(p)] == [".w", ".b"]
  q = revax.jit(lambda p: rtree.map(lambda x: x * 3, p))(p)
  assert isinstance(q, Params) and q.name == "dense" and float(q.w) == 6.0
  g = revax.grad(lambda p: p.w * p.b)(p)
  assert (float(g.w), float(g.b)) == (1.0, 2.0)


def test_register_dataclass_explicit_fields_and_errors():
  @dataclasses.dataclass
  class C:
    x: int
    k: str

  rtu.register_dataclass(C, data_fields=["x"], meta_fields=["k"])
  leaves, treedef = rtree.flatten(C(1, "s"))
  assert leaves == [1] and rtree.unflatten(treedef, [5]) == C(5, "s")

  @dataclasses.dataclass
  class D:
    x: int
    y: int

  with pytest.raises(ValueError, match="Missing"):
    rtu.register_dataclass(D, data_fields=["x"], meta_fields=[])


def test_tree_static_field_and_register_static():
  @rtu.register_dataclass
  @dataclasses.dataclass
  class Op:
    x: object
    op: str = rtree.static(default="add")

  assert rtree.leaves(Op(1)) == [1]

  @rtu.register_static
  class Mode(str):
    pass

  assert rtree.leaves([Mode("add"), 1]) == [1]
  f = revax.jit(lambda x, m: x + 1 if m == "add" else x - 1)
  assert int(f(1, Mode("add"))) == 2 and int(f(1, Mode("sub"))) == 0


def test_register_pytree_with_keys_and_node_class_with_keys():
  class Box:
    def __init__(self, a, b):
      self.a, self.b = a, b

  rtu.register_pytree_with_keys(
      Box, lambda x: (((rtu.GetAttrKey("a"), x.a), (rtu.GetAttrKey("b"), x.b)), None),
      lambda _, c: Box(*c))
  assert [rtu.keystr(p) for p, _ in rtree.leaves_with_path(Box(1, [2]))] == [".a", ".b[0]"]

  class Plain:
    def __init__(self, a, b):
      self.a, self.b = a, b

  rtu.register_pytree_node(Plain, lambda x: ((x.a, x.b), None), lambda _, c: Plain(*c))
  paths = [rtu.keystr(p) for p, _ in rtree.leaves_with_path(Plain(1, 2))]
  assert paths == ["[<flat index 0>]", "[<flat index 1>]"]
  assert rtu.is_tree_node(Plain) and rtu.is_tree_node(dict) and not rtu.is_tree_node(int)
  assert rtu.is_tree_node(type(None)) == jax.tree_util.is_tree_node(type(None))


def test_flatten_one_level_all_leaves_treedef_tuple():
  tree = {"b": {"c": 3}, "a": [1, 2]}
  assert rtu.flatten_one_level(tree) == jax.tree_util.flatten_one_level(tree)
  ours = rtu.flatten_one_level_with_keys(tree)
  theirs = jax.tree_util.flatten_one_level_with_keys(tree)
  assert [(str(k), c) for k, c in ours[0]] == [(str(k), c) for k, c in theirs[0]]
  with pytest.raises(ValueError):
    rtu.flatten_one_level(1)
  assert rtu.all_leaves(rtree.leaves(tree)) and not rtu.all_leaves([tree])
  t = rtu.treedef_tuple([rtree.structure([1, 2]), rtree.structure({"a": 1})])
  assert t == rtree.structure(([1, 2], {"a": 1}))
  assert rtu.default_registry.flatten_one_level(1) is None


def test_partial_is_a_pytree_through_jit():
  add = rtu.Partial(lambda a, b: a + b, np.float32(3.0))
  assert rtree.leaves(add) == [3.0]
  out = revax.jit(lambda f, x: f(x))(add, np.float32(1.0))
  assert float(out) == 4.0
  nested = rtu.Partial(functools.partial(lambda a, b, c: a + b + c, 1), 2)
  assert rtree.leaves(nested) == [2] and nested(3) == 6
