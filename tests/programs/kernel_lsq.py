"""jax/examples/kernel_lsq.py: kernel least squares with Gram matrices built by nested vmap,
solved by gradient descent and directly with jnp.linalg.solve, Cholesky and
jax.scipy.linalg.cho_solve; plus a kernel-ridge fit of a 1-d function."""
from functools import partial

import numpy.random as npr

import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax import grad, jit, vmap


def gram(kernel, xs):
  return vmap(lambda x: vmap(lambda y: kernel(x, y))(xs))(xs)


def minimize(f, x, num_steps=200):
  grad_f = jit(grad(f))
  for _ in range(num_steps):
    x -= 0.0005 * grad_f(x)
  return x


def train(kernel, xs, ys, regularization=0.01):
  gram_ = jit(partial(gram, kernel))
  gram_mat = gram_(xs)
  n = xs.shape[0]

  def objective(v):
    risk = .5 * jnp.sum((jnp.dot(gram_mat, v) - ys) ** 2.)
    reg = regularization * jnp.sum(v ** 2.)
    return risk + reg

  v = minimize(objective, jnp.zeros(n))

  def predict(x):
    prods = vmap(lambda x_: kernel(x, x_))(xs)
    return jnp.sum(v * prods)

  return jit(vmap(predict))


n, d = 20, 5
rng = npr.RandomState(0)
truth = rng.randn(d).astype("float32")
xs = rng.randn(n, d).astype("float32")
ys = jnp.dot(xs, truth)
predict = train(jnp.dot, xs, ys)
print("MSE:", jnp.sum((predict(xs) - ys) ** 2.))


print("gram symmetric:", bool(jnp.allclose(gram(jnp.dot, xs), gram(jnp.dot, xs).T)))


def rbf(x, y, length=1.0):
  return jnp.exp(-0.5 * jnp.sum((x - y) ** 2) / length ** 2)


def matern52(x, y, length=1.0):
  r = jnp.sqrt(jnp.sum((x - y) ** 2) + 1e-12) / length
  return (1 + jnp.sqrt(5.0) * r + 5.0 / 3.0 * r ** 2) * jnp.exp(-jnp.sqrt(5.0) * r)


x1 = jnp.linspace(-2, 2, 15)[:, None]
y1 = jnp.sin(3 * x1[:, 0]) + 0.1 * x1[:, 0] ** 2
xt = jnp.array([[-1.5], [0.1], [1.2]])
for name, kernel in [("rbf", rbf), ("matern52", matern52), ("poly", lambda a, b: (1 + a @ b / 4) ** 3)]:
  K = gram(kernel, x1) + 0.05 * jnp.eye(x1.shape[0])
  alpha_solve = jnp.linalg.solve(K, y1)
  L = jnp.linalg.cholesky(K)
  alpha_chol = jsp.linalg.cho_solve((L, True), y1)
  cross = vmap(lambda a: vmap(lambda b: kernel(a, b))(x1))(xt)
  print(f"{name}: agree {bool(jnp.allclose(alpha_solve, alpha_chol, rtol=1e-3, atol=1e-3))} "
        f"pred {cross @ alpha_chol} logdet {2 * jnp.sum(jnp.log(jnp.diag(L))):.4f}")

# gradient of the kernel w.r.t. its lengthscale, through the whole solve
def fit_error(length):
  K = gram(partial(rbf, length=length), x1) + 0.05 * jnp.eye(x1.shape[0])
  alpha = jsp.linalg.solve(K, y1, assume_a="pos")
  return jnp.mean((K @ alpha - 0.05 * alpha - y1) ** 2) + 1e-3 * alpha @ alpha


print("d error / d length:", jax.grad(fit_error)(0.7))
print("vmapped over lengths:", vmap(fit_error)(jnp.array([0.3, 0.7, 1.5])))
cf = jsp.linalg.cho_factor(gram(rbf, x1) + 0.1 * jnp.eye(15))
print("cho_factor lower flag:", cf[1], cf[0].shape)
print("cho_solve matrix rhs:", jsp.linalg.cho_solve(cf, jnp.stack([y1, -y1], 1))[:2])
print("lu_solve:", jsp.linalg.lu_solve(jsp.linalg.lu_factor(gram(rbf, x1[:4]) + jnp.eye(4)), jnp.ones(4)))
print("batched solve:", jnp.linalg.solve(jnp.stack([jnp.eye(2), 2 * jnp.eye(2)]), jnp.ones((2, 2, 1)))[..., 0])
