"""The "Pytrees" tutorial and its custom nodes: register_pytree_node, register_pytree_with_keys,
register_dataclass with explicit fields, tree_util.Partial, key paths and keystr, None and
empty containers, and the errors of mismatched trees."""
import collections
import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax import tree_util
from jax.tree_util import (register_pytree_node, register_pytree_with_keys, register_dataclass,
                           tree_flatten_with_path, keystr, GetAttrKey, DictKey, SequenceKey)

example_trees = [
    [1, "a", object()],
    (1, (2, 3), ()),
    [1, {"k1": 2, "k2": (3, 4)}, 5],
    {"a": 2, "b": (2, 3)},
]
for pytree in example_trees:
  leaves = jax.tree.leaves(pytree)
  print(f"{len(leaves)} leaves:", [type(l).__name__ for l in leaves])

print("an array is one leaf:", jax.tree.leaves(jnp.array([1, 2, 3])))
list_of_lists = [[1, 2, 3], [1, 2], [1, 2, 3, 4]]
print("map:", jax.tree.map(lambda x: x * 2, list_of_lists))
print("map two trees:", jax.tree.map(lambda x, y: x + y, list_of_lists, list_of_lists))
try:
  jax.tree.map(lambda x, y: x + y, [1, 2], [1, 2, 3])
except ValueError as e:
  print("mismatched trees:", type(e).__name__)
try:
  jax.tree.map(lambda x, y: x + y, {"a": 1}, {"b": 1})
except ValueError as e:
  print("mismatched keys:", type(e).__name__)


class MyContainer:
  """A named container."""

  def __init__(self, name: str, a: int, b: int, c: int):
    self.name = name
    self.a = a
    self.b = b
    self.c = c


def flatten_MyContainer(container):
  flat_contents = [container.a, container.b, container.c]
  aux_data = container.name
  return flat_contents, aux_data


def unflatten_MyContainer(aux_data, flat_contents):
  return MyContainer(aux_data, *flat_contents)


register_pytree_node(MyContainer, flatten_MyContainer, unflatten_MyContainer)
trees = [MyContainer("Alice", 1, 2, 3), MyContainer("Bob", 4, 5, 6)]
print("custom leaves:", jax.tree.leaves(trees))
mapped = jax.tree.map(lambda x: x + 1, trees)
print("custom map:", [(m.name, m.a, m.b, m.c) for m in mapped])
print("custom paths:", [keystr(p) for p, _ in tree_flatten_with_path(trees)[0]])


class KeyedContainer:
  def __init__(self, weights, biases, tag):
    self.weights, self.biases, self.tag = weights, biases, tag


register_pytree_with_keys(
    KeyedContainer,
    lambda c: (((GetAttrKey("weights"), c.weights), (GetAttrKey("biases"), c.biases)), c.tag),
    lambda tag, children: KeyedContainer(*children, tag))
kc = KeyedContainer(jnp.ones(2), {"b0": jnp.zeros(1)}, "layer")
for path, leaf in tree_flatten_with_path(kc)[0]:
  print("keyed path:", keystr(path), path[0].name, leaf.shape)
print("keyed grad:", jax.grad(lambda c: jnp.sum(c.weights * 3) + c.biases["b0"][0])(kc).weights)


@functools.partial(register_dataclass, data_fields=["x", "y"], meta_fields=["op"])
@dataclasses.dataclass
class Point:
  x: jax.Array
  y: jax.Array
  op: str


pt = Point(jnp.array(1.0), jnp.array(2.0), "add")
print("dataclass leaves:", jax.tree.leaves(pt), jax.tree.structure(pt).num_leaves)
print("dataclass jit:", jax.jit(lambda p: p.x + p.y if p.op == "add" else p.x * p.y)(pt))
print("dataclass paths:", [keystr(p) for p, _ in tree_flatten_with_path(pt)[0]])
print("dataclass vmap:", jax.vmap(lambda p: p.x * p.y)(Point(jnp.arange(3.0), jnp.ones(3), "mul")))


@register_dataclass
@dataclasses.dataclass
class Params:
  w: jax.Array
  b: jax.Array
  n_layers: int = dataclasses.field(metadata=dict(static=True), default=1)


pp = Params(jnp.ones(2), jnp.zeros(()))
print("field metadata:", jax.tree.map(lambda a: a.shape, pp))

# None, empty containers, namedtuples, OrderedDict and defaultdict
print("None is a node:", jax.tree.leaves([None, 1, None]), jax.tree.structure(None).num_leaves)
print("map over None:", jax.tree.map(lambda x: x + 1, {"a": None, "b": 1}))
print("empty:", jax.tree.leaves([(), [], {}]), jax.tree.structure([(), [], {}]).num_nodes)
Pair = collections.namedtuple("Pair", ["left", "right"])
print("namedtuple:", jax.tree.map(lambda x: x * 10, Pair(1, (2, 3))))
od = collections.OrderedDict([("z", 1), ("a", 2)])
print("OrderedDict keeps order:", jax.tree.leaves(od), jax.tree.leaves({"z": 1, "a": 2}))
dd = collections.defaultdict(list, {"y": 3, "x": 4})
print("defaultdict:", jax.tree.leaves(dd), type(jax.tree.map(lambda v: v, dd)).__name__)
nested = {"enc": [jnp.ones(2), (jnp.zeros(1), {"w": 3.0})], "dec": Pair(jnp.ones(()), None)}
for path, leaf in tree_flatten_with_path(nested)[0]:
  print(f"  {keystr(path)!s:24} {type(path[-1]).__name__:14} {jnp.shape(leaf)}")
print("keystr simple:", keystr(tree_flatten_with_path(nested)[0][1][0], simple=True, separator="/"))
print("key classes:", DictKey("k"), SequenceKey(2), GetAttrKey("attr"))
print("leaves_with_path:", [(keystr(p), v) for p, v in jax.tree_util.tree_leaves_with_path({"a": [1, 2]})])
print("map_with_path:", jax.tree_util.tree_map_with_path(lambda p, v: len(p) * v, {"a": [1, (2,)], "b": 3}))
print("tree.flatten_with_path:", [keystr(p) for p, _ in jax.tree.flatten_with_path([1, {"q": 2}])[0]])
print("tree.map_with_path:", jax.tree.map_with_path(lambda p, v: keystr(p), (1, [2])))

# treedefs
td = jax.tree.structure({"a": [0, 0], "b": (0,)})
print("treedef:", td.num_nodes, td.num_leaves)
print("children:", len(td.children()), td.num_leaves)
print("unflatten:", jax.tree.unflatten(td, [1, 2, 3]))
print("flatten_up_to:", td.flatten_up_to({"a": [jnp.ones(1), 5], "b": ({"deep": 1},)}))
print("all_leaves:", tree_util.all_leaves([1, 2.0, jnp.ones(2)]), tree_util.all_leaves([[1]]))
print("treedef equality:", jax.tree.structure([1, 2]) == jax.tree.structure([3, 4]),
      jax.tree.structure([1, 2]) == jax.tree.structure((3, 4)))
print("tree_util.Partial:", tree_util.Partial(jnp.add, 1.0)(2.0))
pf = tree_util.Partial(lambda a, b, scale: scale * (a - b), jnp.arange(3.0), scale=2.0)
print("Partial leaves:", jax.tree.leaves(pf))
print("Partial through jit and vmap:", jax.jit(lambda f, x: f(x))(pf, 1.0), jax.vmap(lambda f, x: f(x), in_axes=(None, 0))(pf, jnp.arange(3.0)))
print("tree.reduce max:", jax.tree.reduce(max, {"a": 3, "b": [7, 1]}))
print("tree_util.tree_reduce with initializer:", tree_util.tree_reduce(lambda a, b: a + b, [1, 2, 3], 10))
print("leaves is_leaf:", jax.tree.leaves({"a": (1, 2), "b": [3]}, is_leaf=lambda x: isinstance(x, tuple)))
print("broadcast:", jax.tree.broadcast(1.0, {"a": [0, 0], "b": 0}))
