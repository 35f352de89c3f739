"""jax/examples/differentially_private_sgd.py in miniature: per-example gradients with vmap,
per-example clipping of the whole gradient pytree, Gaussian noise from split keys, a stax model
with optimizers.sgd, and a comparison with plain SGD."""
import itertools

import numpy.random as npr

import jax
import jax.numpy as jnp
from jax import grad, jit, random, vmap
from jax.example_libraries import optimizers, stax
from jax.example_libraries.stax import Dense, Tanh, LogSoftmax

rs = npr.RandomState(0)
num_train, dim, num_classes = 40, 5, 3
w_true = rs.randn(dim, num_classes)
train_x = rs.randn(num_train, dim).astype("float32")
train_y = jax.nn.one_hot(jnp.argmax(jnp.asarray(train_x @ w_true), axis=1), num_classes)

init_random_params, predict = stax.serial(Dense(8), Tanh, Dense(num_classes), LogSoftmax)


def loss(params, batch):
  inputs, targets = batch
  logits = predict(params, inputs)
  logits = stax.logsoftmax(logits)
  return -jnp.mean(jnp.sum(logits * targets, axis=1))


def accuracy(params, batch):
  inputs, targets = batch
  return jnp.mean(jnp.argmax(predict(params, inputs), axis=1) == jnp.argmax(targets, axis=1))


def clipped_grad(params, l2_norm_clip, single_example_batch):
  """Evaluate gradient for a single-example batch and clip its grad norm."""
  grads = grad(loss)(params, single_example_batch)
  nonempty_grads, tree_def = jax.tree.flatten(grads)
  total_grad_norm = jnp.linalg.norm(jnp.array([jnp.linalg.norm(neg.ravel()) for neg in nonempty_grads]))
  divisor = jnp.maximum(total_grad_norm / l2_norm_clip, 1.)
  normalized_nonempty_grads = [g / divisor for g in nonempty_grads]
  return jax.tree.unflatten(tree_def, normalized_nonempty_grads)


def private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size):
  """Return differentially private gradients for params, evaluated on batch."""
  clipped_grads = vmap(clipped_grad, (None, None, 0))(params, l2_norm_clip, batch)
  clipped_grads_flat, grads_treedef = jax.tree.flatten(clipped_grads)
  aggregated_clipped_grads = [g.sum(0) for g in clipped_grads_flat]
  rngs = random.split(rng, len(aggregated_clipped_grads))
  noised_aggregated_clipped_grads = [
      g + l2_norm_clip * noise_multiplier * random.normal(r, g.shape)
      for r, g in zip(rngs, aggregated_clipped_grads)]
  normalized_noised_aggregated_clipped_grads = [g / batch_size for g in noised_aggregated_clipped_grads]
  return jax.tree.unflatten(grads_treedef, normalized_noised_aggregated_clipped_grads)


def shape_as_image(x, y):
  return x.reshape(-1, 1, dim), y.reshape(-1, 1, num_classes)


batch_size = 8
num_batches = num_train // batch_size


def data_stream():
  rng = npr.RandomState(0)
  while True:
    perm = rng.permutation(num_train)
    for i in range(num_batches):
      idx = perm[i * batch_size:(i + 1) * batch_size]
      yield train_x[idx], train_y[idx]


for dpsgd in [True, False]:
  batches = data_stream()
  opt_init, opt_update, get_params = optimizers.sgd(0.5)

  @jit
  def update(_, i, opt_state, batch):
    params = get_params(opt_state)
    return opt_update(i, grad(loss)(params, batch), opt_state)

  @jit
  def private_update(rng, i, opt_state, batch):
    params = get_params(opt_state)
    rng = random.fold_in(rng, i)
    return opt_update(i, private_grad(params, batch, rng, 1.0, 0.5, batch_size), opt_state)

  key = random.PRNGKey(0)
  _, init_params = init_random_params(key, (-1, dim))
  opt_state = opt_init(init_params)
  itercount = itertools.count()
  for epoch in range(4):
    for _ in range(num_batches):
      i = next(itercount)
      if dpsgd:
        opt_state = private_update(key, i, opt_state, shape_as_image(*next(batches)))
      else:
        opt_state = update(key, i, opt_state, next(batches))
    params = get_params(opt_state)
    print(f"dpsgd={dpsgd} epoch {epoch}: loss {loss(params, (train_x, train_y)):.4f} "
          f"acc {accuracy(params, (train_x, train_y)):.3f}")

g = vmap(clipped_grad, (None, None, 0))(init_params, 1.0, shape_as_image(train_x[:4], train_y[:4]))
print("per-example clipped:", jax.tree.map(jnp.shape, g))
norms = vmap(lambda t: optimizers.l2_norm(t))(g)
print("clipped norms <= 1:", bool(jnp.all(norms <= 1.0 + 1e-5)), norms)
