"""Random-walk Metropolis with lax.fori_loop and Hamiltonian Monte Carlo with lax.while_loop
leapfrog steps, sampling a correlated 2-d Gaussian."""
import jax
import jax.numpy as jnp
from jax import lax

cov = jnp.array([[1.0, 0.8], [0.8, 1.0]])
prec = jnp.linalg.inv(cov)


def log_prob(x):
  return -0.5 * x @ prec @ x


def metropolis(key, x0, n_steps, step_size):
  def body(i, state):
    key, x, lp, accepted, samples = state
    key, k_prop, k_acc = jax.random.split(key, 3)
    prop = x + step_size * jax.random.normal(k_prop, x.shape)
    lp_prop = log_prob(prop)
    accept = jnp.log(jax.random.uniform(k_acc)) < lp_prop - lp
    x = jnp.where(accept, prop, x)
    lp = jnp.where(accept, lp_prop, lp)
    samples = samples.at[i].set(x)
    return key, x, lp, accepted + accept, samples

  init = (key, x0, log_prob(x0), 0, jnp.zeros((n_steps,) + x0.shape))
  _, x, _, accepted, samples = lax.fori_loop(0, n_steps, body, init)
  return samples, accepted / n_steps


samples, rate = jax.jit(metropolis, static_argnums=2)(jax.random.PRNGKey(0), jnp.zeros(2), 200, 0.8)
print("metropolis acceptance:", rate, rate.dtype)
print("mean:", samples[50:].mean(0), "cov:", jnp.cov(samples[50:].T))


def leapfrog(x, p, eps, n):
  grad_lp = jax.grad(log_prob)

  def cond(state):
    i, _, _ = state
    return i < n

  def body(state):
    i, x, p = state
    p = p + 0.5 * eps * grad_lp(x)
    x = x + eps * p
    p = p + 0.5 * eps * grad_lp(x)
    return i + 1, x, p

  _, x, p = lax.while_loop(cond, body, (0, x, p))
  return x, p


@jax.jit
def hmc_step(key, x):
  k_mom, k_acc = jax.random.split(key)
  p0 = jax.random.normal(k_mom, x.shape)
  x1, p1 = leapfrog(x, p0, 0.2, 10)
  log_ratio = log_prob(x1) - 0.5 * p1 @ p1 - (log_prob(x) - 0.5 * p0 @ p0)
  accept = jnp.log(jax.random.uniform(k_acc)) < log_ratio
  return jnp.where(accept, x1, x), accept


x = jnp.array([2.0, -2.0])
chain = []
n_accept = 0
for k in jax.random.split(jax.random.PRNGKey(1), 30):
  x, acc = hmc_step(k, x)
  chain.append(x)
  n_accept += int(acc)
chain = jnp.stack(chain)
print("hmc accepted:", n_accept)
print("hmc last:", chain[-1])
print("hmc mean:", chain.mean(0))

# many independent chains with vmap, a sampler that returns the whole trajectory with scan
keys = jax.random.split(jax.random.PRNGKey(2), 4)
finals = jax.vmap(lambda k, x0: hmc_step(k, x0)[0])(keys, jnp.ones((4, 2)))
print("vmapped chains:", finals)
def scan_chain(key, x0):
  def step(x, k):
    x, acc = hmc_step(k, x)
    return x, (x, acc)
  return lax.scan(step, x0, jax.random.split(key, 8))
last, (traj, accs) = jax.jit(scan_chain)(jax.random.PRNGKey(3), jnp.zeros(2))
print("scan chain:", traj.shape, accs.dtype, accs.sum(), last)
