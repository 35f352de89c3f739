"""Utilities around a training script: Partial callbacks, named scopes, printing tracers,
host callbacks, scipy's BFGS, learning-rate schedules in jit, and common mistakes' errors."""
import functools

import jax
import jax.numpy as jnp
import jax.scipy.optimize
import numpy as np


def schedule(step, base=0.1, warmup=5):
  return base * jnp.minimum(1.0, (step + 1) / warmup) * 0.5 * (1 + jnp.cos(jnp.pi * step / 20))


print("schedule:", jax.jit(jax.vmap(schedule))(jnp.arange(0, 20, 5)))
scaled = jax.tree_util.Partial(jnp.multiply, 3.0)
print("Partial through jit:", jax.jit(lambda f, x: f(x))(scaled, jnp.arange(3.0)))


@jax.jit
def show_tracer(x):
  print("tracer shape/dtype at trace time:", x.shape, x.dtype, x.ndim)
  print("the tracer itself:", x, "and under grad:", jax.grad(lambda t: print(t) or t * t)(x[0]))
  return x * 2


show_tracer(jnp.ones(3))
show_tracer(jnp.ones(3))  # cached: does not print again


@functools.partial(jax.jit, static_argnames=("mode",))
def transform(x, mode="double"):
  with jax.named_scope("transform_block"):
    return x * 2 if mode == "double" else x + 1


print("static_argnames:", transform(jnp.ones(2)), transform(jnp.ones(2), mode="inc"))


def host_fn(x):
  return np.sort(np.asarray(x))[::-1].copy()


@jax.jit
def use_callback(x):
  y = jax.pure_callback(host_fn, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                        vmap_method="sequential")
  return y + 1


print("pure_callback:", use_callback(jnp.array([3.0, 1.0, 2.0])))
print("pure_callback vmap:", jax.vmap(use_callback)(jnp.array([[3.0, 1.0], [0.0, 5.0]])))


def rosen(x):
  return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


res = jax.scipy.optimize.minimize(rosen, jnp.array([0.5, 0.5]), method="BFGS")
print("BFGS:", res.success, jnp.round(res.x, 3), res.fun < 1e-6)

# mistakes users make, and the errors they learn from
try:
  jnp.dot(jnp.ones((2, 3)), jnp.ones((2, 3)))
except TypeError as e:
  print("dot shape error:", type(e).__name__)
try:
  jax.jit(lambda x, n: x * n, static_argnums=1)(1.0, jnp.array(2))
except (TypeError, ValueError) as e:
  print("unhashable static:", type(e).__name__)
try:
  jax.grad(lambda x: x)(jnp.arange(3.0))
except TypeError as e:
  print("grad non-scalar:", type(e).__name__, "scalar" in str(e))
try:
  jax.grad(lambda x: x * 2)(3)
except TypeError as e:
  print("grad int input:", type(e).__name__)
try:
  jnp.ones(3)[0] = 1.0
except TypeError as e:
  print("in-place assignment:", type(e).__name__)
try:
  jax.vmap(lambda a, b: a + b)(jnp.ones(3), jnp.ones(4))
except ValueError as e:
  print("vmap size mismatch:", type(e).__name__)
try:
  jnp.reshape(jnp.arange(6), (4, 2))
except TypeError as e:
  print("reshape:", type(e).__name__)
try:
  jax.lax.fori_loop(0, 3, lambda i, c: c + 1.0, 0)
except TypeError as e:
  print("loop carry type change:", type(e).__name__)
try:
  jax.lax.cond(True, lambda: jnp.ones(2), lambda: jnp.ones(3))
except TypeError as e:
  print("cond branch mismatch:", type(e).__name__)
gx, gn = jax.grad(lambda x, n: x * n, allow_int=True, argnums=(0, 1))(2.0, 3)
print("grad allow_int:", gx, gn.shape, gn.dtype)
print("float0 dtype:", jax.grad(lambda x, n: x * n, allow_int=True, argnums=1)(2.0, 3).dtype)
