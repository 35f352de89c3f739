import pytest

from revax import tree_util


def test_flatten_unflatten_roundtrip_and_none_is_a_node():
  tree = {"b": (1, None, [2, 3]), "a": 4}
  leaves, treedef = tree_util.tree_flatten(tree)
  assert leaves == [4, 1, 2, 3]  # dict keys sorted, None holds no leaf
  assert tree_util.tree_unflatten(treedef, leaves) == tree


def test_tree_map_over_several_trees():
  assert tree_util.tree_map(lambda x, y: x + y, (1, [2]), (10, [20])) == (11, [22])


def test_tree_map_structure_mismatch_is_an_error():
  with pytest.raises(ValueError):
    tree_util.tree_map(lambda x, y: x, (1, 2), (1, 2, 3))


class Point:
  def __init__(self, x, y):
    self.x, self.y = x, y


tree_util.register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda _, c: Point(*c))


def test_registered_node():
  leaves, treedef = tree_util.tree_flatten([Point(1, 2), 3])
  assert leaves == [1, 2, 3]
  p = tree_util.tree_unflatten(treedef, [4, 5, 6])[0]
  assert (p.x, p.y) == (4, 5)


@tree_util.register_pytree_node_class
class Pair:
  def __init__(self, a, b):
    self.a, self.b = a, b

  def tree_flatten(self):
    return (self.a, self.b), "aux"

  @classmethod
  def tree_unflatten(cls, aux, children):
    assert aux == "aux"
    return cls(*children)


def test_register_pytree_node_class():
  assert tree_util.tree_leaves(Pair(1, (2, 3))) == [1, 2, 3]
  assert tree_util.tree_reduce(lambda a, b: a + b, Pair(1, (2, 3))) == 6


def test_dicts_rebuild_in_sorted_key_order_as_jax():
  # optree's treedef restored a dict's insertion order on unflatten; jax rebuilds dicts with
  # sorted keys, so `tree.map`, `grad` and jit outputs print their dicts sorted
  import collections

  import jax
  import revax
  tree = {"w": {"z": 1, "a": (2, None)}, "b": [3, {"y": 4, "c": 5}]}
  dd = collections.defaultdict(list, {"z": 1, "a": 2})
  for mod in (revax, jax):
    assert list(mod.tree.map(lambda x: x, tree)) == ["b", "w"]
    assert list(mod.tree.map(lambda x: x, tree)["w"]) == ["a", "z"]
    assert list(mod.tree.unflatten(mod.tree.structure(tree), range(5))["b"][1]) == ["c", "y"]
    assert list(mod.tree.map(lambda x: x + 1, dd)) == ["a", "z"]
    assert type(mod.tree.map(lambda x: x, dd)) is collections.defaultdict
    assert list(mod.tree.map(lambda x: x, collections.OrderedDict(z=1, a=2))) == ["z", "a"]
    assert list(mod.grad(lambda p: p["w"] * p["b"])({"w": 1.0, "b": 2.0})) == ["b", "w"]
    assert list(mod.jit(lambda: {"z": 1.0, "a": 2.0})()) == ["a", "z"]
    assert mod.tree.map(lambda a, b: a + b, {"z": 1, "a": 2}, {"a": 10, "z": 20}) == {"a": 12, "z": 21}
