"""jax/examples/mnist_vae.py on synthetic binary images: a stax encoder/decoder, the
reparameterization trick with random.split, a Bernoulli log-likelihood, and adam under jit
with a lax.fori_loop over batches."""
import numpy as np

import jax
import jax.numpy as jnp
from jax import jit, grad, lax, random
from jax.example_libraries import optimizers
from jax.example_libraries import stax
from jax.example_libraries.stax import Dense, FanOut, Relu, Softplus

side = 6
rs = np.random.RandomState(1)
patterns = (rs.rand(3, side * side) > 0.5).astype(np.float32)
train_images = jnp.asarray(patterns[rs.randint(0, 3, 48)])
flip = jnp.asarray(rs.rand(48, side * side) < 0.05)
train_images = jnp.where(flip, 1.0 - train_images, train_images)


def gaussian_kl(mu, sigmasq):
  """KL divergence from a diagonal Gaussian to the standard Gaussian."""
  return -0.5 * jnp.sum(1. + jnp.log(sigmasq) - mu**2. - sigmasq)


def gaussian_sample(rng, mu, sigmasq):
  """Sample a diagonal Gaussian."""
  return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)


def bernoulli_logpdf(logits, x):
  """Bernoulli log pdf of data x given logits."""
  return -jnp.sum(jnp.logaddexp(0., jnp.where(x, -1., 1.) * logits))


def elbo(rng, params, images):
  """Monte Carlo estimate of the negative evidence lower bound."""
  enc_params, dec_params = params
  mu_z, sigmasq_z = encode(enc_params, images)
  logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
  return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)


def image_sample(rng, params, nrow, ncol):
  """Sample images from the generative model."""
  _, dec_params = params
  code_rng, img_rng = random.split(rng)
  logits = decode(dec_params, random.normal(code_rng, (nrow * ncol, 2)))
  sampled_images = random.bernoulli(img_rng, jnp.logaddexp(0., logits))
  return sampled_images.reshape(nrow, ncol, side, side)


encoder_init, encode = stax.serial(
    Dense(32), Relu, Dense(32), Relu,
    FanOut(2), stax.parallel(Dense(2), stax.serial(Dense(2), Softplus)),
)
decoder_init, decode = stax.serial(Dense(32), Relu, Dense(32), Relu, Dense(side * side))

step_size = 0.01
num_epochs = 4
batch_size = 16
nrow, ncol = 2, 3
num_batches = train_images.shape[0] // batch_size

enc_init_rng, dec_init_rng = random.split(random.PRNGKey(2))
_, init_encoder_params = encoder_init(enc_init_rng, (batch_size, side * side))
_, init_decoder_params = decoder_init(dec_init_rng, (batch_size, 2))
init_params = init_encoder_params, init_decoder_params
opt_init, opt_update, get_params = optimizers.adam(step_size)


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
  elbo_rng, data_rng, image_rng = random.split(test_rng, 3)
  binarized = random.bernoulli(data_rng, images)
  test_elbo = elbo(elbo_rng, params, binarized) / images.shape[0]
  sampled_images = image_sample(image_rng, params, nrow, ncol)
  return test_elbo, sampled_images


test_rng = random.PRNGKey(1)
opt_state = opt_init(init_params)
for epoch in range(num_epochs):
  opt_state = run_epoch(random.PRNGKey(epoch), opt_state, train_images)
  test_elbo, sampled_images = evaluate(opt_state, train_images)
  print(f"epoch {epoch}: elbo {test_elbo:.3f}")
print("samples:", sampled_images.shape, sampled_images.dtype, int(sampled_images.sum()))
enc, dec = get_params(opt_state)
mu, sigmasq = encode(enc, train_images[:3])
print("codes:", mu, sigmasq)
print("kl:", gaussian_kl(mu, sigmasq))
print("bernoulli logpdf:", bernoulli_logpdf(jnp.array([0.0, 2.0, -2.0]), jnp.array([True, True, False])))
print("vs scipy:", jax.scipy.stats.bernoulli.logpmf(jnp.array([1, 1, 0]), jax.nn.sigmoid(jnp.array([0.0, 2.0, -2.0]))).sum())
