"""Rematerialization with jax.checkpoint and policies; gradients must not change."""
from functools import partial

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

key = jax.random.PRNGKey(0)
ws = [0.5 * jax.random.normal(k, (4, 4)) for k in jax.random.split(key, 3)]
x = jnp.linspace(-1, 1, 4)


def layer(w, x):
  h = checkpoint_name(jnp.dot(w, x), "pre_activation")
  return jnp.tanh(h)


def net(ws, x, policy=None, use_ckpt=True):
  for w in ws:
    fn = jax.checkpoint(layer, policy=policy) if use_ckpt else layer
    x = fn(w, x)
  return jnp.sum(x ** 2)


plain = jax.grad(net)(ws, x, use_ckpt=False)
for name, policy in [("none", None),
                     ("nothing_saveable", jax.checkpoint_policies.nothing_saveable),
                     ("everything_saveable", jax.checkpoint_policies.everything_saveable),
                     ("dots_saveable", jax.checkpoint_policies.dots_saveable),
                     ("dots_with_no_batch_dims", jax.checkpoint_policies.dots_with_no_batch_dims_saveable),
                     ("save_only_these_names", jax.checkpoint_policies.save_only_these_names("pre_activation")),
                     ("save_any_names_but_these", jax.checkpoint_policies.save_any_names_but_these("pre_activation"))]:
  g = jax.jit(jax.grad(partial(net, policy=policy)))(ws, x)
  same = all(bool(jnp.allclose(a, b, atol=1e-6)) for a, b in zip(g, plain))
  print(f"{name}: grads equal {same}")
print("grad:", plain[0])


@jax.remat
def expensive(x):
  return jnp.sin(jnp.sin(x))


print("remat grad:", jax.grad(lambda x: expensive(x).sum())(jnp.arange(3.0)))


@partial(jax.checkpoint, static_argnums=(1,))
def power(x, n):
  for _ in range(n):
    x = x * x
  return x


print("static_argnums:", jax.grad(power)(1.1, 3))
print("prevent_cse=False:", jax.jit(jax.grad(jax.checkpoint(jnp.sin, prevent_cse=False)))(0.5))
print("checkpoint in scan:", jax.grad(lambda c: jax.lax.scan(jax.checkpoint(lambda c, _: (jnp.sin(c), None)), c, None, length=4)[0])(1.0))
print("vmap of checkpoint:", jax.vmap(jax.grad(jax.checkpoint(lambda t: t ** 3)))(jnp.arange(3.0)))
