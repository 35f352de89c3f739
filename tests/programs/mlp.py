"""A two-layer MLP classifier on synthetic blobs, initialised with jax.nn.initializers."""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

num_classes, dim, hidden = 3, 4, 16
key = jax.random.key(0)
key, data_key = jax.random.split(key)
centers = 3.0 * jax.random.normal(data_key, (num_classes, dim))
labels = jnp.arange(90) % num_classes
key, noise_key = jax.random.split(key)
inputs = centers[labels] + jax.random.normal(noise_key, (90, dim))


def init_params(key, sizes):
  w_init = jax.nn.initializers.glorot_normal()
  b_init = jax.nn.initializers.zeros
  params = []
  keys = jax.random.split(key, len(sizes) - 1)
  for k, (m, n) in zip(keys, zip(sizes[:-1], sizes[1:])):
    params.append({"W": w_init(k, (m, n), jnp.float32), "b": b_init(k, (n,), jnp.float32)})
  return params


def forward(params, x):
  *hidden_layers, last = params
  for layer in hidden_layers:
    x = jax.nn.gelu(x @ layer["W"] + layer["b"])
  return x @ last["W"] + last["b"]


def loss(params, x, y):
  logits = forward(params, x)
  log_probs = jax.nn.log_softmax(logits)
  return -jnp.mean(jnp.sum(jax.nn.one_hot(y, num_classes) * log_probs, axis=-1))


@partial(jax.jit, static_argnames=("lr",), donate_argnums=(0,))
def sgd_step(params, x, y, lr):
  l, g = jax.value_and_grad(loss)(params, x, y)
  return jax.tree.map(lambda p, g: p - lr * g, params, g), l


key, init_key = jax.random.split(key)
params = init_params(init_key, [dim, hidden, hidden, num_classes])
print("shapes:", jax.tree.map(lambda a: a.shape, params))
print("num params:", sum(p.size for p in jax.tree.leaves(params)))

batch = 30
for epoch in range(3):
  key, perm_key = jax.random.split(key)
  perm = jax.random.permutation(perm_key, inputs.shape[0])
  for i in range(0, inputs.shape[0], batch):
    idx = perm[i:i + batch]
    params, l = sgd_step(params, inputs[idx], labels[idx], lr=0.2)
  print(f"epoch {epoch} loss {float(l):.4f}")

preds = jnp.argmax(forward(params, inputs), axis=-1)
print("accuracy:", jnp.mean(preds == labels))
print("preds[:10]:", preds[:10])
print("pred dtype:", preds.dtype)
print("other inits:",
      jax.nn.initializers.he_uniform()(jax.random.key(1), (2, 3)),
      jax.nn.initializers.lecun_normal()(jax.random.key(2), (3, 2)),
      jax.nn.initializers.normal(0.5)(jax.random.key(3), (2,)),
      jax.nn.initializers.constant(0.1)(jax.random.key(4), (2,), jnp.float16),
      jax.nn.initializers.orthogonal()(jax.random.key(5), (3, 3)),
      jax.nn.initializers.variance_scaling(1.0, "fan_avg", "uniform")(jax.random.key(6), (2, 2)),
      sep="\n")
print(np.asarray(jax.nn.relu(jnp.array([-1.0, 0.0, 2.0]))), jax.nn.silu(1.0), jax.nn.softplus(0.0))
