"""JAX's three stax example programs (examples/mnist_classifier.py, mnist_vae.py and
differentially_private_sgd.py), written after their structure at small sizes with synthetic
data. Each program is one source text whose import lines name the package; it runs with
`revax` and with `jax` (nothing else changes) and the two runs must agree. jax's run is read
from its record (tests/recorded_oracle.py: the program texts are this module's, so a changed
program runs jax live until recorded again); it was two thirds of these tests' time."""
import numpy as np
import pytest

from tests.recorded_oracle import Oracle

ORACLE = Oracle(__file__)

IMPORTS = """
import itertools
import numpy.random as npr
import {pkg}.numpy as jnp
from {pkg} import jit, grad, lax, random, vmap
from {pkg}.example_libraries import optimizers, stax
from {pkg}.example_libraries.stax import (Conv, Dense, FanOut, Flatten, MaxPool, LogSoftmax,
                                          Relu, Softplus, parallel, serial)
from {pkg}.tree_util import tree_flatten, tree_unflatten
from {pkg}.nn import log_sigmoid
"""

SYNTHETIC_DATA = """
def synthetic_mnist(n, side, seed=0):
  # images whose class decides which stripe is bright, so a classifier can learn them
  rng = npr.RandomState(seed)
  labels = rng.randint(0, 10, n)
  images = rng.rand(n, side, side).astype("float32") * 0.3
  for i, c in enumerate(labels):
    images[i, c % side, :] += 0.7
  one_hot = (labels[:, None] == np.arange(10)).astype("float32")
  return images.reshape(n, side * side), one_hot, labels
"""

MNIST_CLASSIFIER = IMPORTS + "import numpy as np\n" + SYNTHETIC_DATA + """
def loss(params, batch):
  inputs, targets = batch
  preds = predict(params, inputs)
  return -jnp.mean(jnp.sum(preds * targets, axis=1))

def accuracy(params, batch):
  inputs, targets = batch
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(predict(params, inputs), axis=1)
  return jnp.mean(predicted_class == target_class)

init_random_params, predict = stax.serial(
    Dense(32), Relu,
    Dense(32), Relu,
    Dense(10), LogSoftmax)

rng = random.PRNGKey(0)
step_size, num_epochs, batch_size, momentum_mass = 0.1, 3, 16, 0.9
train_images, train_labels, _ = synthetic_mnist(64, 8)
num_batches = len(train_images) // batch_size

def data_stream():
  rng = npr.RandomState(0)
  while True:
    perm = rng.permutation(len(train_images))
    for i in range(num_batches):
      batch_idx = perm[i * batch_size:(i + 1) * batch_size]
      yield train_images[batch_idx], train_labels[batch_idx]
batches = data_stream()

opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=momentum_mass)

@jit
def update(i, opt_state, batch):
  params = get_params(opt_state)
  return opt_update(i, grad(loss)(params, batch), opt_state)

_, init_params = init_random_params(rng, (-1, 64))
opt_state = opt_init(init_params)
itercount = itertools.count()
losses = []
for epoch in range(num_epochs):
  for _ in range(num_batches):
    opt_state = update(next(itercount), opt_state, next(batches))
  params = get_params(opt_state)
  losses.append(float(loss(params, (train_images, train_labels))))
train_acc = float(accuracy(params, (train_images, train_labels)))
"""

MNIST_VAE = IMPORTS + "import numpy as np\n" + SYNTHETIC_DATA + """
def gaussian_kl(mu, sigmasq):
  return -0.5 * jnp.sum(1. + jnp.log(sigmasq) - mu**2. - sigmasq)

def gaussian_sample(rng, mu, sigmasq):
  return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)

def bernoulli_logpdf(logits, x):
  return -jnp.sum(jnp.logaddexp(0., jnp.where(x, -1., 1.) * logits))

def elbo(rng, params, images):
  enc_params, dec_params = params
  mu_z, sigmasq_z = encode(enc_params, images)
  logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
  return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)

def image_sample(rng, params, nrow, ncol):
  _, dec_params = params
  code_rng, img_rng = random.split(rng)
  logits = decode(dec_params, random.normal(code_rng, (nrow * ncol, 4)))
  sampled_images = random.bernoulli(img_rng, jnp.logaddexp(0., logits))
  return sampled_images.reshape(nrow * ncol, 8, 8)

encoder_init, encode = stax.serial(
    Dense(32), Relu, Dense(32), Relu,
    FanOut(2), stax.parallel(Dense(4), stax.serial(Dense(4), Softplus)),
)
decoder_init, decode = stax.serial(
    Dense(32), Relu, Dense(32), Relu, Dense(8 * 8),
)

step_size, num_epochs, batch_size = 0.001, 2, 8
nrow, ncol = 2, 2
train_images, _, _ = synthetic_mnist(32, 8)
train_images = (train_images > 0.5).astype("float32")
num_complete_batches, leftover = divmod(train_images.shape[0], batch_size)
num_batches = num_complete_batches + bool(leftover)

enc_init_rng, dec_init_rng = random.split(random.PRNGKey(2))
_, init_encoder_params = encoder_init(enc_init_rng, (batch_size, 8 * 8))
_, init_decoder_params = decoder_init(dec_init_rng, (batch_size, 4))
init_params = init_encoder_params, init_decoder_params

opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=0.9)
train_images = jnp.asarray(train_images)

def binarize_batch(rng, i, images):
  i = i % num_batches
  batch = lax.dynamic_slice_in_dim(images, i * batch_size, batch_size)
  return random.bernoulli(rng, batch)

@jit
def run_epoch(rng, opt_state, images):
  def body_fun(i, opt_state):
    elbo_rng, data_rng = random.split(random.fold_in(rng, i))
    batch = binarize_batch(data_rng, i, images)
    loss = lambda params: -elbo(elbo_rng, params, batch) / batch_size
    g = grad(loss)(get_params(opt_state))
    return opt_update(i, g, opt_state)
  return lax.fori_loop(0, num_batches, body_fun, opt_state)

@jit
def evaluate(opt_state, images):
  params = get_params(opt_state)
  elbo_rng, data_rng, image_rng = random.split(random.PRNGKey(3), 3)
  binarized_test = random.bernoulli(data_rng, images)
  test_elbo = elbo(elbo_rng, params, binarized_test) / images.shape[0]
  sampled_images = image_sample(image_rng, params, nrow, ncol)
  return test_elbo, sampled_images

opt_state = opt_init(init_params)
elbos = []
for epoch in range(num_epochs):
  opt_state = run_epoch(random.PRNGKey(epoch), opt_state, train_images)
  test_elbo, sampled_images = evaluate(opt_state, train_images)
  elbos.append(float(test_elbo))
sampled_shape = tuple(sampled_images.shape)
"""

DP_SGD = IMPORTS + "import numpy as np\n" + SYNTHETIC_DATA + """
init_random_params, predict = stax.serial(
    stax.Conv(4, (3, 3), padding='SAME', strides=(2, 2)),
    stax.Relu,
    stax.MaxPool((2, 2), (1, 1)),
    stax.Conv(8, (2, 2), padding='VALID', strides=(2, 2)),
    stax.Relu,
    stax.MaxPool((2, 2), (1, 1)),
    stax.Flatten,
    stax.Dense(16),
    stax.Relu,
    stax.Dense(10),
)

def loss(params, batch):
  inputs, targets = batch
  logits = predict(params, inputs)
  logits = stax.logsoftmax(logits)
  return -jnp.mean(jnp.sum(logits * targets, axis=1))

def accuracy(params, batch):
  inputs, targets = batch
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(predict(params, inputs), axis=1)
  return jnp.mean(predicted_class == target_class)

def clipped_grad(params, l2_norm_clip, single_example_batch):
  grads = grad(loss)(params, single_example_batch)
  nonempty_grads, tree_def = tree_flatten(grads)
  total_grad_norm = jnp.sqrt(sum(jnp.vdot(g, g) for g in nonempty_grads))
  divisor = jnp.maximum(total_grad_norm / l2_norm_clip, 1.)
  normalized_nonempty_grads = [g / divisor for g in nonempty_grads]
  return tree_unflatten(tree_def, normalized_nonempty_grads)

def private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size):
  clipped_grads = vmap(clipped_grad, (None, None, 0))(params, l2_norm_clip, batch)
  clipped_grads_flat, grads_treedef = tree_flatten(clipped_grads)
  aggregated_clipped_grads = [g.sum(0) for g in clipped_grads_flat]
  rngs = random.split(rng, len(aggregated_clipped_grads))
  noised_aggregated_clipped_grads = [
      g + l2_norm_clip * noise_multiplier * random.normal(r, g.shape)
      for r, g in zip(rngs, aggregated_clipped_grads)]
  normalized_noised_aggregated_clipped_grads = [
      g / batch_size for g in noised_aggregated_clipped_grads]
  return tree_unflatten(grads_treedef, normalized_noised_aggregated_clipped_grads)

def shape_as_image(images, labels, dummy_dim=False):
  target_shape = (-1, 1, 12, 12, 1) if dummy_dim else (-1, 12, 12, 1)
  return jnp.reshape(images, target_shape), labels

learning_rate, batch_size, epochs = 0.15, 8, 2
l2_norm_clip, noise_multiplier = 1.5, 0.5
train_images, train_labels, _ = synthetic_mnist(32, 12)
num_batches = train_images.shape[0] // batch_size
key = random.PRNGKey(0)

def data_stream():
  rng = npr.RandomState(0)
  while True:
    perm = rng.permutation(train_images.shape[0])
    for i in range(num_batches):
      batch_idx = perm[i * batch_size:(i + 1) * batch_size]
      yield train_images[batch_idx], train_labels[batch_idx]
batches = data_stream()

opt_init, opt_update, get_params = optimizers.sgd(learning_rate)

@jit
def private_update(rng, i, opt_state, batch):
  params = get_params(opt_state)
  rng = random.fold_in(rng, i)
  return opt_update(
      i, private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size),
      opt_state)

_, init_params = init_random_params(key, (-1, 12, 12, 1))
opt_state = opt_init(init_params)
itercount = itertools.count()
losses = []
for epoch in range(epochs):
  for _ in range(num_batches):
    i = next(itercount)
    opt_state = private_update(key, i, opt_state,
                               shape_as_image(*next(batches), dummy_dim=True))
  params = get_params(opt_state)
  losses.append(float(loss(params, shape_as_image(train_images, train_labels))))
train_acc = float(accuracy(params, shape_as_image(train_images, train_labels)))
"""


def _run(program, pkg):
  namespace = {}
  exec(compile(program.format(pkg=pkg), f"<{pkg} example>", "exec"), namespace)
  return namespace


def _jax(name, *values):
  """{value: what jax's run of the program `name` left in it} (recorded)."""
  def compute():
    namespace = _run(globals()[name], "jax")
    return {v: namespace[v] for v in values}
  return ORACLE((name, values), compute)


def test_mnist_classifier():
  r, j = _run(MNIST_CLASSIFIER, "revax"), _jax("MNIST_CLASSIFIER", "losses", "train_acc")
  np.testing.assert_allclose(r["losses"], j["losses"], rtol=1e-4)
  assert r["losses"][-1] < r["losses"][0] and r["train_acc"] == pytest.approx(j["train_acc"])


def test_mnist_vae():
  r, j = _run(MNIST_VAE, "revax"), _jax("MNIST_VAE", "elbos")
  np.testing.assert_allclose(r["elbos"], j["elbos"], rtol=1e-4)
  assert r["sampled_shape"] == (4, 8, 8)


def test_differentially_private_sgd():
  r, j = _run(DP_SGD, "revax"), _jax("DP_SGD", "losses")
  np.testing.assert_allclose(r["losses"], j["losses"], rtol=1e-4)
  assert np.isfinite(r["losses"]).all()


if __name__ == "__main__":  # time one run of each program per package
  import sys
  import time
  for name in ("MNIST_CLASSIFIER", "MNIST_VAE", "DP_SGD"):
    for pkg in sys.argv[1:] or ("revax", "jax"):
      t0 = time.perf_counter()
      _run(globals()[name], pkg)
      print(f"{name} {pkg}: {time.perf_counter() - t0:.1f} s")
