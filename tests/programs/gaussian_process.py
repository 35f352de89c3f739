"""Gaussian-process regression with an RBF kernel: Cholesky, triangular solves, the log
marginal likelihood and its gradient in the hyperparameters; Bayesian linear regression."""
import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax.scipy.linalg import cho_factor, cho_solve, solve_triangular
from jax.scipy.stats import norm, multivariate_normal

key = jax.random.PRNGKey(0)
kx, ky = jax.random.split(key)
X = jnp.sort(jax.random.uniform(kx, (12,), minval=-3, maxval=3))
y = jnp.sin(X) + 0.1 * jax.random.normal(ky, X.shape)
Xs = jnp.linspace(-3, 3, 5)


def rbf(a, b, length, amp):
  d = a[:, None] - b[None, :]
  return amp ** 2 * jnp.exp(-0.5 * (d / length) ** 2)


def neg_log_marginal(raw):
  length, amp, noise = jax.nn.softplus(raw)
  K = rbf(X, X, length, amp) + (noise ** 2 + 1e-6) * jnp.eye(X.shape[0])
  L = jnp.linalg.cholesky(K)
  alpha = solve_triangular(L.T, solve_triangular(L, y, lower=True), lower=False)
  return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * X.shape[0] * jnp.log(2 * jnp.pi)


raw = jnp.array([0.5, 0.5, -1.0])
value_and_grad = jax.jit(jax.value_and_grad(neg_log_marginal))
for i in range(20):
  v, g = value_and_grad(raw)
  raw = raw - 0.05 * g
  if i % 5 == 0:
    print(f"iter {i}: nlml {v:.4f}")
length, amp, noise = jax.nn.softplus(raw)
print("hyper:", length, amp, noise)

K = rbf(X, X, length, amp) + noise ** 2 * jnp.eye(X.shape[0])
c, low = cho_factor(K, lower=True)
Ks = rbf(Xs, X, length, amp)
mean = Ks @ cho_solve((c, low), y)
L = jnp.linalg.cholesky(K)
v = solve_triangular(L, Ks.T, lower=True)
var = amp ** 2 - jnp.sum(v ** 2, axis=0)
print("posterior mean:", mean)
print("posterior var:", var)
print("logpdf of y:", norm.logpdf(y[:3], loc=jnp.sin(X[:3]), scale=0.1))
print("cdf/ppf:", norm.cdf(0.5), norm.ppf(jnp.array([0.1, 0.5, 0.9])), norm.pdf(1.0))
print("mvn logpdf:", multivariate_normal.logpdf(y, jnp.zeros_like(y), K))
print("trans solve:", solve_triangular(L, jnp.ones(12), lower=True, trans="T")[:3])
print("slogdet:", jnp.linalg.slogdet(K))
print("inv diag:", jnp.diag(jnp.linalg.inv(K))[:3])
print("solve:", jnp.linalg.solve(K, y)[:3])

# Bayesian linear regression: conjugate posterior over weights
Phi = jnp.stack([jnp.ones_like(X), X, X ** 2], axis=1)
prior_prec, noise_prec = 1.0, 100.0
A = prior_prec * jnp.eye(3) + noise_prec * Phi.T @ Phi
post_cov = jsp.linalg.cho_solve(jsp.linalg.cho_factor(A), jnp.eye(3))
post_mean = noise_prec * post_cov @ Phi.T @ y
print("posterior weights:", post_mean)
print("posterior std:", jnp.sqrt(jnp.diag(post_cov)))
print("eigh:", jnp.linalg.eigh(A)[0])
print("sample:", jax.random.multivariate_normal(jax.random.PRNGKey(5), post_mean, post_cov, (2,)))
