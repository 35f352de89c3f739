"""jax.debug.print inside jit and vmap, lax.cond / switch / while_loop, jnp.select / piecewise."""
import jax
import jax.numpy as jnp
from jax import lax


@jax.jit
def f(x):
  y = jnp.sin(x) * 2
  jax.debug.print("inside jit: x={x} y={y}", x=x, y=y)
  return y.sum()


print("result:", f(jnp.array([0.0, 1.0])))
jax.effects_barrier()
jax.vmap(lambda v: jax.debug.print("vmapped value {}", v))(jnp.arange(3))
jax.effects_barrier()
jax.debug.print("eager {a} and {b:.2f}", a=jnp.int32(3), b=jnp.float32(2.5))
jax.effects_barrier()


def piecewise_fn(x):
  return lax.cond(x > 0, lambda x: x ** 2, lambda x: -x, x)


print("cond:", piecewise_fn(2.0), piecewise_fn(-3.0))
print("cond grad:", jax.grad(piecewise_fn)(2.0), jax.grad(piecewise_fn)(-3.0))
print("cond vmap:", jax.vmap(piecewise_fn)(jnp.array([-1.0, 2.0])))
print("cond operands:", lax.cond(True, lambda a, b: a + b, lambda a, b: a - b, 1.0, 2.0))
branches = [lambda x: x + 1, lambda x: x * 10, lambda x: -x]
print("switch:", [lax.switch(i, branches, 3.0) for i in range(3)], lax.switch(7, branches, 3.0))
print("switch vmap:", jax.vmap(lambda i, x: lax.switch(i, branches, x))(jnp.array([0, 1, 2]), jnp.ones(3)))
print("switch jit:", jax.jit(lambda i: lax.switch(i, branches, jnp.float32(2)))(1))


def collatz(n):
  def cond(state):
    n, steps = state
    return n != 1
  def body(state):
    n, steps = state
    return jnp.where(n % 2 == 0, n // 2, 3 * n + 1), steps + 1
  return lax.while_loop(cond, body, (n, 0))[1]


print("collatz:", jax.jit(collatz)(27), jax.vmap(collatz)(jnp.array([6, 7, 8])))
x = jnp.linspace(-2, 2, 5)
print("select:", jnp.select([x < -1, x > 1], [x * 0, x * 2], default=x))
print("piecewise:", jnp.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t ** 2]))
print("where one arg:", jnp.where(x > 0))
print("clip:", jnp.clip(x, -1, 1), jnp.clip(x, max=0.5))


@jax.jit
def branchy(x, flag):
  return jnp.where(flag, x, 0.0) + lax.cond(flag, lambda: 1.0, lambda: 2.0)


print("branchy:", branchy(jnp.ones(2), True), branchy(jnp.ones(2), False))
try:
  jax.jit(lambda x: x if x > 0 else -x)(1.0)
except jax.errors.TracerBoolConversionError:
  print("TracerBoolConversionError raised")
try:
  jax.jit(lambda x: int(x))(1.0)
except jax.errors.ConcretizationTypeError:
  print("ConcretizationTypeError raised")
print("fori_loop python ints:", lax.fori_loop(0, 5, lambda i, s: s + i, 0))
print("fori_loop jnp bounds:", jax.jit(lambda n: lax.fori_loop(0, n, lambda i, s: s * 2, 1.0))(4))
