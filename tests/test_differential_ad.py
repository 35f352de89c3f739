"""Differential tests against jax 0.10.2: the same functions through both, values and
derivatives (grad, jacfwd, jacrev, hessian, vmap, vmap-of-grad) compared."""
import numpy as np
import pytest

import revax
import revax.lax as rlax
import revax.numpy as rnp
from tests.platform_tolerances import allclose_tol
from tests.recorded_oracle import Oracle

jax = pytest.importorskip("jax")
jnp, jlax = jax.numpy, jax.lax

rng = np.random.default_rng(0)
W1 = rng.standard_normal((4, 5)).astype(np.float32) * 0.5
W2 = rng.standard_normal((5, 3)).astype(np.float32) * 0.5
X = rng.standard_normal((6, 4)).astype(np.float32)
V = rng.standard_normal((5,)).astype(np.float32)
M = rng.standard_normal((3, 4)).astype(np.float32)
LABELS = np.array([0, 2, 1, 1, 0, 2])
ORACLE = Oracle(__file__)


def _jax(parts, compute):
  """jax's leaves of compute() as NumPy arrays (recorded: tests/recorded_oracle.py)."""
  return ORACLE(parts, lambda: [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(compute())])


def _funcs(np_, lax):
  def mlp_loss(w):
    h = np_.tanh(X @ w)
    return np_.mean((h @ W2) ** 2)

  def softmax_xent(logits):
    logz = logits - logits.max(axis=1, keepdims=True)
    logp = logz - np_.log(np_.exp(logz).sum(axis=1, keepdims=True))
    return -np_.mean(logp[np_.arange(6), LABELS])

  def layer_norm(x):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mu) / np_.sqrt(var + 1e-5)).sum() * 0.5 + (x ** 2).sum() * 0.1

  def logsumexp(x):
    m = x.max()
    return m + np_.log(np_.exp(x - m).sum())

  return {
      "mlp_loss": (mlp_loss, W1),
      "softmax_xent": (softmax_xent, X[:, :3] * 2),
      "layer_norm": (layer_norm, M),
      "logsumexp": (logsumexp, V),
      "pad_slice_concat": (lambda x: (lax.pad(x, 0.0, ((1, 2, 1),))[2:7] ** 2).sum()
                           + np_.concatenate([x, x[::-1] * 2]).sum() ** 2 * 0.01, V),
      "indexing": (lambda x: (x[np_.array([0, 2, 2])] ** 2).sum() + x[1:3].sum(), V),
      "at_add": (lambda x: (np_.asarray(x).at[np_.array([1, 1, 3])].add(x[:3] * 2.0) ** 2).sum(), V),
      "sort": (lambda x: (np_.sort(x) * np_.arange(5.0)).sum(), V),
      "cumsum": (lambda x: (np_.cumsum(x) ** 2).sum(), V),
      "integer_arg": (lambda x: (x * np_.arange(5) ** 2).sum(), V),
      "sin_cos": (lambda x: (np_.sin(x) * np_.cos(2 * x)).sum(), V),
      "exp_log1p": (lambda x: np_.log1p(np_.exp(x)).sum(), V),
      "division": (lambda x: (x / (1.0 + x ** 2)).sum(), V),
      "maximum": (lambda x: np_.maximum(x, 0.1 * x).sum(), V + 0.05),
      "where": (lambda x: np_.where(x > 0, x ** 2, -x).sum(), V + 0.05),
      "matmul_chain": (lambda m: ((m @ m.T) @ m).sum(), M),
      "transpose_reshape": (lambda m: (m.T.reshape(2, 6) * np_.arange(12.0).reshape(2, 6)).sum() ** 2, M),
      "broadcast": (lambda m: ((m[:, None, :] - m[None, :, :]) ** 2).sum(), M),
      "tanh_rnn": (lambda x: np_.tanh(np_.tanh(x * 0.5) * x + 0.3).sum(), V),
      "power_sqrt": (lambda x: np_.sqrt(x ** 2 + 1.0).sum() + (np_.abs(x) ** 1.5).sum(), V + 0.05),
      "reductions": (lambda m: m.max(axis=0).sum() + m.min(axis=1).sum() + m.prod(axis=0).sum(), M),
  }


NAMES = sorted(_funcs(rnp, rlax))


def _compare(a, b, tol=2e-5):
  la, lb = jax.tree_util.tree_leaves(a), revax.tree_util.tree_leaves(b)
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    # (on a TPU, jitted tanh/exp/log are the chip's: platform_tolerances.TRANSCENDENTAL)
    np.testing.assert_allclose(np.asarray(y), np.asarray(x), **allclose_tol(rtol=tol, atol=tol))


@pytest.mark.parametrize("name", NAMES)
def test_value_and_grad_match_jax(name):
  rf, x = _funcs(rnp, rlax)[name]
  jf, _ = _funcs(jnp, jlax)[name]
  _compare(_jax((name, "value"), lambda: jf(x)), rf(x))
  _compare(_jax((name, "grad"), lambda: jax.grad(jf)(x)), revax.grad(rf)(x))
  _compare(_jax((name, "jit grad"), lambda: jax.jit(jax.grad(jf))(x)),
           revax.jit(revax.grad(rf))(x))


@pytest.mark.parametrize("name", NAMES)
def test_jacobians_and_hessian_match_jax(name):
  rf, x = _funcs(rnp, rlax)[name]
  jf, _ = _funcs(jnp, jlax)[name]
  _compare(_jax((name, "jacfwd"), lambda: jax.jacfwd(jax.grad(jf))(x)),
           revax.jacfwd(revax.grad(rf))(x), 2e-4)
  _compare(_jax((name, "jacrev"), lambda: jax.jacrev(jax.grad(jf))(x)),
           revax.jacrev(revax.grad(rf))(x), 2e-4)
  if x.size <= 6:
    _compare(_jax((name, "hessian"), lambda: jax.hessian(jf)(x)), revax.hessian(rf)(x), 2e-4)


@pytest.mark.parametrize("name", NAMES)
def test_vmap_and_vmap_of_grad_match_jax(name):
  rf, x = _funcs(rnp, rlax)[name]
  jf, _ = _funcs(jnp, jlax)[name]
  xs = np.stack([x, x * 0.5 + 0.1, x * -1.2])
  _compare(_jax((name, "vmap"), lambda: jax.vmap(jf)(xs)), revax.vmap(rf)(xs))
  _compare(_jax((name, "vmap grad"), lambda: jax.vmap(jax.grad(jf))(xs)),
           revax.vmap(revax.grad(rf))(xs), 1e-4)
  _compare(_jax((name, "grad vmap"), lambda: jax.grad(lambda v: jax.vmap(jf)(v).sum())(xs)),
           revax.grad(lambda v: revax.vmap(rf)(v).sum())(xs), 1e-4)
