"""The "Control flow and logical operators with JIT" tutorial: lax.cond/switch/select/
fori_loop/while_loop/scan with pytree operands and carries, lax.map with batch_size, static
arguments, and the concretization errors caught by type."""
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax


# python control flow on static arguments
def f(x, n):
  y = 0.0
  for i in range(n):
    y = y + x[i]
  return y


f_jit = jax.jit(f, static_argnames="n")
print("static_argnames:", f_jit(jnp.arange(5.0), n=3), f_jit(jnp.arange(5.0), n=4))
g_jit = jax.jit(lambda x, mode: x * 2 if mode == "double" else x - 1, static_argnums=(1,))
print("static string:", g_jit(3.0, "double"), g_jit(3.0, "dec"))


def g(x):
  if x < 3:
    return 3.0 * x ** 2
  return -4 * x


print("python if, no jit:", g(2.0), jax.grad(g)(2.0), jax.grad(g)(4.0))
try:
  jax.jit(g)(2.0)
except jax.errors.TracerBoolConversionError as e:
  print("python if under jit:", type(e).__name__, isinstance(e, jax.errors.ConcretizationTypeError))
try:
  jax.jit(lambda x, n: jnp.zeros(n) + x)(1.0, 3)
except TypeError as e:
  print("shape from tracer:", type(e).__name__)
try:
  jax.jit(lambda x: float(x))(1.0)
except jax.errors.ConcretizationTypeError as e:
  print("float(tracer):", type(e).__name__)
try:
  jax.jit(lambda x: list(range(x)))(3)
except jax.errors.TracerIntegerConversionError as e:
  print("range(tracer):", type(e).__name__)
try:
  jax.jit(lambda x: jnp.array([1, 2, 3])[x].item())(1)
except jax.errors.ConcretizationTypeError as e:
  print("item of tracer:", type(e).__name__)

# cond and switch with pytree operands
state = {"pos": jnp.array([1.0, -1.0]), "vel": jnp.array([0.5, 0.5]), "t": jnp.array(0)}


def move(s):
  return {"pos": s["pos"] + s["vel"], "vel": s["vel"], "t": s["t"] + 1}


def bounce(s):
  return {"pos": s["pos"], "vel": -s["vel"], "t": s["t"] + 1}


print("cond pytree:", lax.cond(state["pos"][0] > 2.0, bounce, move, state))
print("cond jit:", jax.jit(lambda s, p: lax.cond(p, bounce, move, s))(state, True))
print("cond tuple operands:", lax.cond(False, lambda a, b: (a + 1, b), lambda a, b: (a - 1, 2 * b), 1, jnp.ones(2)))
print("switch pytree:", lax.switch(2, [move, bounce, lambda s: s], state)["t"])
print("switch clamps index:", lax.switch(-5, [lambda: 0, lambda: 1], ), lax.switch(9, [lambda: 0, lambda: 1]))
print("select:", lax.select(jnp.array([True, False, True]), jnp.arange(3.0), -jnp.arange(3.0)))
print("select_n:", lax.select_n(jnp.array([0, 1, 2, 1]), jnp.zeros(4), jnp.ones(4), jnp.full(4, 2.0)))
print("cond grad pytree:", jax.grad(lambda p: lax.cond(p["a"] > 0, lambda p: p["a"] * p["b"], lambda p: p["b"], p))({"a": 2.0, "b": 3.0}))

# loops with pytree carries
def fib_pair(n):
  return lax.fori_loop(0, n, lambda i, ab: (ab[1], ab[0] + ab[1]), (0, 1))


print("fori_loop tuple carry:", fib_pair(10), jax.jit(fib_pair)(20))


def newton(a):
  def cond_fun(c):
    return (jnp.abs(c["x"] ** 2 - a) > 1e-5) & (c["i"] < 50)

  def body_fun(c):
    return {"x": 0.5 * (c["x"] + a / c["x"]), "i": c["i"] + 1}

  return lax.while_loop(cond_fun, body_fun, {"x": a, "i": 0})


print("while_loop dict carry:", newton(10.0))
print("vmap while_loop:", jax.vmap(newton)(jnp.array([4.0, 100.0])))


def ema(carry, x):
  mean, count = carry
  mean = 0.9 * mean + 0.1 * x["value"]
  return (mean, count + x["weight"]), {"mean": mean, "sq": mean ** 2}


xs = {"value": jnp.arange(6.0), "weight": jnp.ones(6, jnp.int32)}
(final_mean, total), history = lax.scan(ema, (0.0, 0), xs)
print("scan pytree xs:", final_mean, total, history["mean"], history["sq"].shape)
print("scan reverse unroll:", lax.scan(ema, (0.0, 0), xs, reverse=True, unroll=3)[0])
print("scan no ys:", lax.scan(lambda c, x: (c + x, None), 0.0, jnp.arange(4.0)))

# lax.map
print("lax.map:", lax.map(lambda r: jnp.dot(r, r), jnp.arange(12.0).reshape(4, 3)))
print("lax.map pytree:", lax.map(lambda d: d["a"] * d["b"], {"a": jnp.arange(5.0), "b": jnp.arange(5.0) + 1}, batch_size=2))
print("lax.map batch_size=3 of 7:", lax.map(jnp.sin, jnp.arange(7.0), batch_size=3))

# logical operators
x = jnp.array([1, 2, 3, 4])
print("logical ops:", jnp.logical_and(x > 1, x < 4), (x > 1) & (x < 4), ~(x > 2), (x == 1) | (x == 4))
print("jnp.where pytree-free:", jnp.where(x % 2 == 0, x, -x), jnp.where(x > 2, 1.0, 0))
print("any/all in jit:", jax.jit(lambda v: (jnp.any(v > 3), jnp.all(v > 0)))(x))


@partial(jax.jit, static_argnums=0)
def apply_n_times(n, x):
  for _ in range(n):
    x = jnp.sin(x)
  return x


print("static first arg:", apply_n_times(2, 1.0), apply_n_times(3, 1.0))
print("jit static kwargs:", jax.jit(lambda x, *, k: x ** k, static_argnames="k")(2.0, k=3))
print("ensure_compile_time_eval:", jax.jit(lambda x: x + (lambda: jnp.arange(3).sum())())(1))
