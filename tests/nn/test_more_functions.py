"""log1mexp, logmeanexp, sparse_plus, sparse_sigmoid, tanh and dot_product_attention against
jax.nn: values, gradients, jit and vmap."""
import jax
import numpy as np
import pytest

import revax
from revax import nn as rnn
from tests.platform_tolerances import allclose_tol

X = np.linspace(0.05, 3.0, 9).astype(np.float32)
XS = np.linspace(-2.0, 2.0, 9).astype(np.float32)


@pytest.mark.parametrize("name,x", [("log1mexp", X), ("sparse_plus", XS),
                                    ("sparse_sigmoid", XS), ("tanh", XS)])
def test_elementwise_values_and_grads(name, x):
  f, g = getattr(rnn, name), getattr(jax.nn, name)
  np.testing.assert_allclose(f(x), g(x), **allclose_tol(rtol=1e-6, atol=1e-7))
  np.testing.assert_allclose(revax.jit(f)(x), g(x), **allclose_tol(rtol=1e-6, atol=1e-7))
  grad_r = revax.vmap(revax.grad(lambda t: f(t)))(x + 0.013)
  grad_j = jax.vmap(jax.grad(lambda t: g(t)))(x + 0.013)
  np.testing.assert_allclose(grad_r, grad_j, **allclose_tol(rtol=1e-5, atol=1e-6))


def test_logmeanexp():
  x = np.random.RandomState(0).randn(3, 5).astype(np.float32)
  where = x > -0.5
  for kw in [{}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": 1, "where": where}]:
    np.testing.assert_allclose(rnn.logmeanexp(x, **kw), jax.nn.logmeanexp(x, **kw), rtol=1e-6)
  np.testing.assert_allclose(revax.grad(lambda t: rnn.logmeanexp(t))(x),
                             jax.grad(lambda t: jax.nn.logmeanexp(t))(x), rtol=1e-5)


rs = np.random.RandomState(1)
Q = rs.randn(2, 5, 4, 8).astype(np.float32)
K = rs.randn(2, 6, 2, 8).astype(np.float32)
V = rs.randn(2, 6, 2, 8).astype(np.float32)
MASK = rs.rand(2, 1, 5, 6) > 0.3
BIAS = rs.randn(1, 4, 5, 6).astype(np.float32)


@pytest.mark.parametrize("kw", [
    {}, {"is_causal": True}, {"local_window_size": (1, 2)}, {"mask": MASK, "bias": BIAS},
    {"query_seq_lengths": np.array([3, 5], np.int32),
     "key_value_seq_lengths": np.array([6, 2], np.int32)},
    {"scale": 0.5, "is_causal": True, "local_window_size": 2},
], ids=lambda kw: "-".join(kw) or "plain")
def test_dot_product_attention(kw):
  np.testing.assert_allclose(rnn.dot_product_attention(Q, K, V, **kw),
                             jax.nn.dot_product_attention(Q, K, V, **kw),
                             **allclose_tol(rtol=1e-5, atol=1e-6))  # (softmax's exp)


def test_dot_product_attention_grad_residual_and_3d_inputs():
  loss_r = lambda q, k, v: (rnn.dot_product_attention(q, k, v, is_causal=True) ** 2).sum()
  loss_j = lambda q, k, v: (jax.nn.dot_product_attention(q, k, v, is_causal=True) ** 2).sum()
  for a, b in zip(revax.grad(loss_r, (0, 1, 2))(Q, K, V), jax.grad(loss_j, (0, 1, 2))(Q, K, V),
                  strict=True):
    np.testing.assert_allclose(a, b, **allclose_tol(rtol=1e-4, atol=1e-5))
  out, res = rnn.dot_product_attention(Q, K, V, return_residual=True)
  out_j, res_j = jax.nn.dot_product_attention(Q, K, V, return_residual=True)
  np.testing.assert_allclose(res, res_j, **allclose_tol(rtol=1e-5))
  np.testing.assert_allclose(rnn.dot_product_attention(Q[0], K[0], V[0]),
                             jax.nn.dot_product_attention(Q[0], K[0], V[0]), rtol=1e-5, atol=1e-6)


def test_dot_product_attention_errors():
  with pytest.raises(ValueError, match="multiple of key/value heads"):
    rnn.dot_product_attention(Q[:, :, :3], K, V)
  with pytest.raises(ValueError, match="value shape"):
    rnn.dot_product_attention(Q, K, V[:, :5])
  with pytest.raises(ValueError, match="mask dtype"):
    rnn.dot_product_attention(Q, K, V, mask=MASK.astype(np.float32))
  with pytest.raises(ValueError, match="Unsupported implementation"):
    rnn.dot_product_attention(Q, K, V, implementation="flash")
