"""Flax-free pytrees: NamedTuple optimizer state, dataclass and class-based nodes, flattening,
key paths and tree utilities."""
import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.tree_util import register_pytree_node_class, tree_map_with_path, keystr


class AdamState(NamedTuple):
  step: jnp.ndarray
  mu: dict
  nu: dict


def adam_init(params):
  zeros = jax.tree.map(jnp.zeros_like, params)
  return AdamState(jnp.array(0), zeros, zeros)


def adam_update(grads, state, params, lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
  step = state.step + 1
  mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
  nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state.nu, grads)
  mu_hat = jax.tree.map(lambda m: m / (1 - b1 ** step), mu)
  nu_hat = jax.tree.map(lambda v: v / (1 - b2 ** step), nu)
  new = jax.tree.map(lambda p, m, v: p - lr * m / (jnp.sqrt(v) + eps), params, mu_hat, nu_hat)
  return new, AdamState(step, mu, nu)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Linear:
  weight: jax.Array
  bias: jax.Array
  name: str = dataclasses.field(default="linear", metadata=dict(static=True))

  def __call__(self, x):
    return x @ self.weight + self.bias


@register_pytree_node_class
class Scaled:
  def __init__(self, inner, factor):
    self.inner = inner
    self.factor = factor

  def __call__(self, x):
    return self.factor * self.inner(x)

  def tree_flatten(self):
    return (self.inner,), self.factor

  @classmethod
  def tree_unflatten(cls, factor, children):
    return cls(*children, factor)

  def __repr__(self):
    return f"Scaled({self.inner!r}, factor={self.factor})"


model = Scaled(Linear(jnp.ones((2, 2)), jnp.zeros(2)), 2.0)
x = jnp.array([[1.0, -1.0], [0.5, 2.0]])
target = jnp.array([[1.0, 0.0], [0.0, 1.0]])


def loss(model):
  return jnp.mean((model(x) - target) ** 2)


state = adam_init(model)
print("state step:", state.step, type(state).__name__)
for _ in range(5):
  grads = jax.grad(loss)(model)
  model, state = jax.jit(adam_update)(grads, state, model)
print("loss:", loss(model))
print("model:", model)
print("step:", state.step)

leaves, treedef = jax.tree.flatten(model)
print("leaves:", leaves)
print("treedef leaves:", treedef.num_leaves, treedef.num_nodes)
print("num leaves:", treedef.num_leaves, jax.tree.structure(model) == treedef)
rebuilt = jax.tree.unflatten(treedef, [l * 0 for l in leaves])
print("rebuilt:", rebuilt)
tree = {"layer1": {"w": jnp.ones(2), "b": 0.5}, "layer2": [jnp.arange(3), None, (1.0, 2)]}
print("structure:", jax.tree.structure(tree).num_leaves, jax.tree.structure(tree).num_nodes)
print("leaves:", jax.tree.leaves(tree))
print("with None leaf:", jax.tree.leaves(tree, is_leaf=lambda t: t is None))
paths = tree_map_with_path(lambda path, leaf: keystr(path), tree)
print("paths:", paths)
for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
  print(keystr(path), jnp.shape(leaf))
print("key types:", [type(k).__name__ for k in jax.tree_util.tree_flatten_with_path(tree)[0][0][0]])
print("reduce:", jax.tree.reduce(lambda a, b: a + jnp.sum(b), tree, 0.0))
print("all:", jax.tree.all(jax.tree.map(lambda l: l is not None, tree)))
print("transpose:", jax.tree.transpose(jax.tree.structure([0, 0]), jax.tree.structure((0, 0, 0)),
                                       [(1, 2, 3), (4, 5, 6)]))
print("tree_util.tree_map on NamedTuple:", jax.tree_util.tree_map(lambda a: a * 2, AdamState(1, {"a": 2}, [3])))
print("map with is_leaf:", jax.tree.map(lambda t: len(t), {"a": (1, 2), "b": [(3,)]}, is_leaf=lambda t: isinstance(t, tuple)))
print("dataclass replace:", dataclasses.replace(model.inner, bias=jnp.ones(2)).bias)
print("vmap over dataclass:", jax.vmap(lambda m: m(jnp.ones(2)))(Linear(jnp.ones((3, 2, 2)), jnp.zeros((3, 2)))))
