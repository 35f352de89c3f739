"""custom_jvp and custom_vjp for numerically stable functions and gradient surgery."""
from functools import partial

import jax
import jax.numpy as jnp


@jax.custom_jvp
def log1pexp(x):
  return jnp.log1p(jnp.exp(x))


log1pexp.defjvps(lambda t, ans, x: t * jax.nn.sigmoid(x))
print("naive grad at 100:", jax.grad(lambda x: jnp.log1p(jnp.exp(x)))(100.0))
print("stable grad at 100:", jax.grad(log1pexp)(100.0))
print("vmap grad:", jax.vmap(jax.grad(log1pexp))(jnp.array([-10.0, 0.0, 10.0])))
print("jit second derivative:", jax.jit(jax.grad(jax.grad(log1pexp)))(0.0))


@jax.custom_jvp
def safe_norm(x):
  return jnp.sqrt(jnp.sum(x ** 2))


@safe_norm.defjvp
def safe_norm_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  n = safe_norm(x)
  direction = jnp.where(n == 0, 0.0, x / jnp.where(n == 0, 1.0, n))
  return n, direction @ t


print("safe norm grad at 0:", jax.grad(safe_norm)(jnp.zeros(3)))
print("plain norm grad at 0:", jax.grad(lambda x: jnp.sqrt(jnp.sum(x ** 2)))(jnp.zeros(3)))


@jax.custom_vjp
def clip_gradient(x, lo, hi):
  return x


def clip_fwd(x, lo, hi):
  return x, (lo, hi)


def clip_bwd(res, g):
  lo, hi = res
  return jnp.clip(g, lo, hi), None, None


clip_gradient.defvjp(clip_fwd, clip_bwd)
print("clipped grad:", jax.grad(lambda x: jnp.sum(clip_gradient(x, -0.5, 0.5) * 3.0))(jnp.ones(2)))


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply_fn(f, x):
  return f(x)


def apply_fwd(f, x):
  return f(x), x


def apply_bwd(f, x, g):
  _, vjp = jax.vjp(f, x)
  return (2.0 * vjp(g)[0],)


apply_fn.defvjp(apply_fwd, apply_bwd)
print("nondiff_argnums:", jax.grad(lambda x: apply_fn(jnp.sin, x))(0.0))
print("under jit+vmap:", jax.jit(jax.vmap(jax.grad(lambda x: apply_fn(jnp.sin, x))))(jnp.array([0.0, 1.0])))


@jax.custom_jvp
def relu_like(x):
  return jnp.maximum(x, 0.0)


relu_like.defjvp(lambda p, t: (relu_like(p[0]), jnp.where(p[0] > 0, t[0], 0.5 * t[0])))
print("custom relu jvp:", jax.jvp(relu_like, (jnp.array([-1.0, 1.0]),), (jnp.ones(2),)))
print("jacfwd through custom_vjp fails?", end=" ")
try:
  jax.jacfwd(lambda x: clip_gradient(x, -1.0, 1.0))(jnp.ones(2))
  print("no")
except TypeError as e:
  print("TypeError")
print("stop_gradient:", jax.grad(lambda x: x * jax.lax.stop_gradient(x))(3.0))
