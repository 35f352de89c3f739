"""Per-example gradients with vmap(grad) and pytree in_axes; gradient clipping as in DP-SGD."""
import jax
import jax.numpy as jnp

key = jax.random.PRNGKey(11)
k1, k2, k3 = jax.random.split(key, 3)
params = {"w": jax.random.normal(k1, (3,)), "b": jnp.array(0.1)}
xs = jax.random.normal(k2, (6, 3))
ys = jax.random.normal(k3, (6,))


def loss(params, x, y):
  return (x @ params["w"] + params["b"] - y) ** 2


per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)
print("per-example shapes:", jax.tree.map(jnp.shape, per_example))
print("per-example b:", per_example["b"])
mean_grad = jax.tree.map(lambda g: g.mean(0), per_example)
full = jax.grad(lambda p: jnp.mean(jax.vmap(loss, (None, 0, 0))(p, xs, ys)))(params)
print("mean matches batch grad:", jax.tree.map(lambda a, b: bool(jnp.allclose(a, b, atol=1e-6)), mean_grad, full))

# in_axes as a pytree: map over w but share b
batched_params = {"w": jnp.stack([params["w"], 2 * params["w"]]), "b": params["b"]}
vals = jax.vmap(loss, in_axes=({"w": 0, "b": None}, None, None))(batched_params, xs[0], ys[0])
print("pytree in_axes:", vals)
print("out_axes=1:", jax.vmap(lambda x: jnp.outer(x, x), out_axes=1)(xs[:2]).shape)
print("in_axes=1:", jax.vmap(jnp.sum, in_axes=1)(xs))
print("axis_size:", jax.vmap(lambda: jnp.ones(2), axis_size=3)().shape)
print("nested:", jax.vmap(jax.vmap(lambda a, b: a * b, (0, None)), (None, 0))(jnp.arange(3.0), jnp.arange(2.0)))


def clip(g, max_norm):
  norm = jnp.sqrt(sum(jnp.sum(l ** 2) for l in jax.tree.leaves(g)))
  factor = jnp.minimum(1.0, max_norm / (norm + 1e-12))
  return jax.tree.map(lambda l: l * factor, g), norm


@jax.jit
def dp_grad(params, xs, ys, key):
  grads = jax.vmap(jax.grad(loss), (None, 0, 0))(params, xs, ys)
  clipped, norms = jax.vmap(clip, (0, None))(grads, 1.0)
  summed = jax.tree.map(lambda g: g.sum(0), clipped)
  leaves, treedef = jax.tree.flatten(summed)
  keys = jax.random.split(key, len(leaves))
  noisy = [l + 0.5 * jax.random.normal(k, l.shape) for l, k in zip(leaves, keys)]
  return jax.tree.unflatten(treedef, [n / xs.shape[0] for n in noisy]), norms


g, norms = dp_grad(params, xs, ys, jax.random.PRNGKey(0))
print("norms:", norms)
print("dp grad:", g)
print("vmap with kwargs:", jax.vmap(lambda x, scale=1.0: x * scale)(jnp.arange(3.0), scale=jnp.array([1.0, 2.0, 3.0])))
print("vectorize:", jnp.vectorize(lambda a, b: a @ b, signature="(n),(n)->()")(xs, xs[0]))
print("lax.map batch_size:", jax.lax.map(lambda r: r.sum(), xs, batch_size=4))
