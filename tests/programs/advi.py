"""jax/examples/advi.py: automatic differentiation variational inference of a correlated 2-d
posterior with a diagonal Gaussian, the reparameterization gradient averaged with vmap over
samples, jax.scipy.stats logpdfs, and adam from example_libraries."""
from functools import partial

import jax
import jax.numpy as jnp
import jax.scipy.stats.norm as norm
from jax import jit, grad, lax, random, vmap
from jax.example_libraries import optimizers


def diag_gaussian_sample(rng, mean, log_std):
  return mean + jnp.exp(log_std) * random.normal(rng, mean.shape)


def diag_gaussian_logpdf(x, mean, log_std):
  return jnp.sum(vmap(norm.logpdf)(x, mean, jnp.exp(log_std)))


def elbo(logprob, rng, mean, log_std):
  sample = diag_gaussian_sample(rng, mean, log_std)
  return logprob(sample) - diag_gaussian_logpdf(sample, mean, log_std)


def batch_elbo(logprob, rng, params, num_samples):
  rngs = random.split(rng, num_samples)
  vectorized_elbo = vmap(partial(elbo, logprob), in_axes=(0, None, None))
  return jnp.mean(vectorized_elbo(rngs, *params))


def funnel_log_density(params):
  return norm.logpdf(params[0], 0, jnp.exp(params[1])) + norm.logpdf(params[1], 0, 1.35)


num_samples = 20


@jit
def objective(params, t):
  rng = random.PRNGKey(t)
  return -batch_elbo(funnel_log_density, rng, params, num_samples)


init_mean = jnp.zeros(2)
init_std = jnp.zeros(2)
init_params = (init_mean, init_std)
opt_init, opt_update, get_params = optimizers.adam(step_size=0.05)
opt_state = opt_init(init_params)


@jit
def update(i, opt_state):
  params = get_params(opt_state)
  gradient = grad(objective)(params, i)
  return opt_update(i, gradient, opt_state)


for t in range(60):
  opt_state = update(t, opt_state)
  if t % 20 == 0:
    print(f"iteration {t}: elbo {-objective(get_params(opt_state), t):.4f}")
mean, log_std = get_params(opt_state)
print("mean:", mean, "std:", jnp.exp(log_std))
samples = vmap(diag_gaussian_sample, (0, None, None))(random.split(random.PRNGKey(0), 4), mean, log_std)
print("samples:", samples)
print("log density on grid:", vmap(funnel_log_density)(jnp.stack([jnp.linspace(-1, 1, 3), jnp.zeros(3)], 1)))


# the same optimisation with lax.scan over iterations, and a full-covariance Gaussian target
cov = jnp.array([[1.0, 0.6], [0.6, 2.0]])


def gaussian_target(z):
  return jax.scipy.stats.multivariate_normal.logpdf(z, jnp.array([1.0, -1.0]), cov)


@jit
def fit(params):
  def step(params, t):
    g = grad(lambda p: -batch_elbo(gaussian_target, random.PRNGKey(t), p, 32))(params)
    return jax.tree.map(lambda p, gi: p - 0.05 * gi, params, g), None
  return lax.scan(step, params, jnp.arange(150))[0]


m, ls = fit((jnp.zeros(2), jnp.zeros(2)))
print("fitted mean:", m, "fitted std:", jnp.exp(ls))
print("mean-field std target:", 1 / jnp.sqrt(jnp.diag(jnp.linalg.inv(cov))))
print("other logpdfs:", jax.scipy.stats.t.logpdf(0.5, 3.0), jax.scipy.stats.laplace.logpdf(0.5),
      jax.scipy.stats.gamma.logpdf(2.0, 3.0), jax.scipy.stats.beta.logpdf(0.3, 2.0, 5.0),
      jax.scipy.stats.poisson.logpmf(3, 2.5), norm.logcdf(-3.0), norm.sf(1.0))
