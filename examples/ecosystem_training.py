"""Train a flax (nnx) model with optax, and an equinox model with optax, written for jax.

Run it on jax (`python examples/ecosystem_training.py`) or on revax without changing a line
(`python -m revax.run_as_jax examples/ecosystem_training.py`): the losses agree to float
tolerance. Needs optax, flax and equinox installed.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from flax import nnx

x = jnp.linspace(-1.0, 1.0, 96).reshape(32, 3)
y = jnp.sum(jnp.sin(3 * x), axis=1, keepdims=True)


class MLP(nnx.Module):
  def __init__(self, rngs: nnx.Rngs):
    self.hidden = nnx.Linear(3, 16, rngs=rngs)
    self.out = nnx.Linear(16, 1, rngs=rngs)

  def __call__(self, x):
    return self.out(jax.nn.tanh(self.hidden(x)))


def train_flax(steps=20):
  model = MLP(nnx.Rngs(0))
  optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

  @nnx.jit
  def step(model, optimizer):
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss

  return [float(step(model, optimizer)) for _ in range(steps)]


def train_equinox(steps=20):
  model = eqx.nn.MLP(3, 1, 16, 2, activation=jax.nn.tanh, key=jax.random.PRNGKey(0))
  optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1, momentum=0.9))
  state = optimizer.init(eqx.filter(model, eqx.is_array))

  @eqx.filter_jit
  def step(model, state):
    loss, grads = eqx.filter_value_and_grad(
        lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
    updates, state = optimizer.update(grads, state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), state, loss

  losses = []
  for _ in range(steps):
    model, state, loss = step(model, state)
    losses.append(float(loss))
  return losses


if __name__ == "__main__":
  for name, losses in (("flax.nnx + optax.adam", train_flax()),
                       ("equinox + optax.sgd", train_equinox())):
    print(name, " ".join(f"{v:.6f}" for v in losses[::5]), f"final {losses[-1]:.6f}")
