"""The "Stateful computations" tutorial: a counter whose state is threaded explicitly through
jit, a PRNG threaded through a loop, and linear regression whose parameters are the state."""
from typing import NamedTuple

import jax
import jax.numpy as jnp


class Counter:
  """A stateful counter: its state lives in a Python attribute, which jit only sees once."""

  def __init__(self):
    self.n = 0

  def count(self) -> int:
    self.n += 1
    return self.n

  def reset(self):
    self.n = 0


counter = Counter()
for _ in range(3):
  print("plain:", counter.count())
counter.reset()
fast_count = jax.jit(counter.count)
for _ in range(3):
  print("jitted (stale state):", fast_count())

CounterState = int


class CounterV2:
  def count(self, n: CounterState):
    return n + 1, n + 1

  def reset(self) -> CounterState:
    return 0


counter = CounterV2()
state = counter.reset()
fast_count = jax.jit(counter.count)
for _ in range(3):
  value, state = fast_count(state)
  print("explicit state:", value, repr(state))


# a PRNG threaded through a jitted step, and the same in lax.scan
@jax.jit
def step(key, total):
  key, sub = jax.random.split(key)
  return key, total + jax.random.uniform(sub)


key, total = jax.random.PRNGKey(0), 0.0
for _ in range(4):
  key, total = step(key, total)
print("threaded total:", total, "key:", key)
(key2, total2), _ = jax.lax.scan(lambda c, _: (step(*c), None), (jax.random.PRNGKey(0), 0.0), None, length=4)
print("scan agrees:", bool(jnp.allclose(total, total2)), bool(jnp.all(key == key2)))


class Params(NamedTuple):
  weight: jnp.ndarray
  bias: jnp.ndarray


def init(rng) -> Params:
  weights_key, bias_key = jax.random.split(rng)
  weight = jax.random.normal(weights_key, ())
  bias = jax.random.normal(bias_key, ())
  return Params(weight, bias)


def loss(params: Params, x: jnp.ndarray, y: jnp.ndarray) -> jnp.ndarray:
  pred = params.weight * x + params.bias
  return jnp.mean((pred - y) ** 2)


LEARNING_RATE = 0.005


@jax.jit
def update(params: Params, x: jnp.ndarray, y: jnp.ndarray) -> Params:
  grad = jax.grad(loss)(params, x, y)
  return jax.tree.map(lambda param, g: param - g * LEARNING_RATE, params, grad)


rng = jax.random.key(42)
true_w, true_b = 2, -1
x_rng, noise_rng = jax.random.split(rng)
xs = jax.random.normal(x_rng, (128, 1))
noise = jax.random.normal(noise_rng, (128, 1)) * 0.5
ys = xs * true_w + true_b + noise

params = init(rng)
print("init:", params)
for i in range(1000):
  params = update(params, xs, ys)
print(f"w: {params.weight:.2f}, b: {params.bias:.2f}")
print("final loss:", loss(params, xs, ys))
print("params type:", type(params).__name__, params.weight.dtype, params.weight.shape)


# state as a dict of arrays carried by fori_loop, e.g. running mean/variance (Welford)
def welford(xs):
  def body(i, s):
    n = s["n"] + 1
    delta = xs[i] - s["mean"]
    mean = s["mean"] + delta / n
    return {"n": n, "mean": mean, "m2": s["m2"] + delta * (xs[i] - mean)}
  s = jax.lax.fori_loop(0, xs.shape[0], body, {"n": 0, "mean": 0.0, "m2": 0.0})
  return s["mean"], s["m2"] / s["n"]


data = jnp.sin(jnp.arange(20.0))
print("welford:", jax.jit(welford)(data), "numpy-style:", data.mean(), data.var())
