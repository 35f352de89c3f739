"""An LSTM written with lax.scan, trained for a few steps to predict a sine wave."""
import jax
import jax.numpy as jnp
from jax import lax

hidden, steps = 8, 12
key = jax.random.PRNGKey(3)
keys = jax.random.split(key, 3)
params = {
    "Wx": 0.3 * jax.random.normal(keys[0], (1, 4 * hidden)),
    "Wh": 0.3 * jax.random.normal(keys[1], (hidden, 4 * hidden)),
    "b": jnp.zeros(4 * hidden),
    "out": 0.3 * jax.random.normal(keys[2], (hidden, 1)),
}
t = jnp.linspace(0, 3, steps + 1)
xs = jnp.sin(t)[:-1, None]
ys = jnp.sin(t)[1:, None]


def lstm_cell(params, carry, x):
  h, c = carry
  gates = x @ params["Wx"] + h @ params["Wh"] + params["b"]
  i, f, g, o = jnp.split(gates, 4, axis=-1)
  c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
  h = jax.nn.sigmoid(o) * jnp.tanh(c)
  return (h, c), h @ params["out"]


def predict(params, xs):
  init = (jnp.zeros(hidden), jnp.zeros(hidden))
  (h, c), preds = lax.scan(lambda carry, x: lstm_cell(params, carry, x), init, xs)
  return preds, h


def loss(params):
  preds, _ = predict(params, xs)
  return jnp.mean((preds - ys) ** 2)


step = jax.jit(lambda p: jax.tree.map(lambda a, g: a - 0.3 * g, p, jax.grad(loss)(p)))
print("initial loss:", loss(params))
for i in range(5):
  params = step(params)
print("final loss:", loss(params))
preds, h = predict(params, xs)
print("preds shape:", preds.shape, "h:", h.shape, h.dtype)

# scan idioms: length with no xs, reverse, unroll, pytree carries, cumulative sums
def body(carry, _):
  a, b = carry
  return (b, a + b), a

(_, last), fib = lax.scan(body, (0, 1), None, length=10)
print("fib:", fib, last)
cums = lax.scan(lambda c, x: (c + x, c + x), 0.0, jnp.arange(5.0), reverse=True)
print("reverse cumsum:", cums)
print("unrolled:", lax.scan(lambda c, x: (c * x, c), 1.0, jnp.arange(1.0, 6.0), unroll=2))
print("vmap over scan:", jax.vmap(lambda x0: lax.scan(lambda c, x: (c + x, c), x0, xs[:4, 0])[0])(jnp.arange(3.0)))
# a vanilla RNN via fori_loop
W = 0.5 * jnp.eye(3) + 0.1
def rnn(h0):
  return lax.fori_loop(0, 4, lambda i, h: jnp.tanh(W @ h + i), h0)
print("rnn jacobian:", jax.jacrev(rnn)(jnp.ones(3)))
