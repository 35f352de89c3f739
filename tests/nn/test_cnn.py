"""A small CNN end to end (conv -> relu -> max_pool with (lo, hi) padding pairs -> dense):
per-example gradients by vmap(grad) equal a Python loop, eager and jitted, and jax's values."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.platform_tolerances import allclose_tol

jax = pytest.importorskip("jax")
jnp = jax.numpy

PAD = ((1, 0), (0, 1))


def _params(key_lib, key):
  k1, k2 = key_lib.random.split(key)
  return {"conv": key_lib.nn.initializers.he_normal()(k1, (3, 3, 1, 4)),
          "dense": key_lib.nn.initializers.glorot_normal()(k2, (4 * 4 * 4, 3))}


def _revax_loss(params, image, label):
  h = revax.lax.conv_general_dilated(image[None], params["conv"], (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
  h = revax.nn.max_pool(revax.nn.relu(h), (2, 2), (2, 2), padding=PAD)
  logits = h.reshape(1, -1) @ params["dense"]
  return -revax.nn.log_softmax(logits)[0, label]


def _jax_max_pool(x):
  return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                               ((0, 0),) + PAD + ((0, 0),))


def _jax_loss(params, image, label):
  h = jax.lax.conv_general_dilated(image[None], params["conv"], (1, 1), "SAME",
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"))
  h = _jax_max_pool(jax.nn.relu(h))
  logits = h.reshape(1, -1) @ params["dense"]
  return -jax.nn.log_softmax(logits)[0, label]


def test_per_example_gradients_of_a_small_cnn():
  params = _params(revax, revax.random.PRNGKey(0))
  images = np.asarray(revax.random.normal(revax.random.PRNGKey(1), (5, 7, 7, 1)))
  labels = np.array([0, 2, 1, 1, 0])
  per_example = revax.vmap(revax.grad(_revax_loss), in_axes=(None, 0, 0))
  batched = per_example(params, images, labels)
  jitted = revax.jit(per_example)(params, images, labels)
  loop = [revax.grad(_revax_loss)(params, x, y) for x, y in zip(images, labels)]
  jparams = {k: np.asarray(v) for k, v in params.items()}
  reference = jax.vmap(jax.grad(_jax_loss), in_axes=(None, 0, 0))(jparams, images, labels)
  for name in ("conv", "dense"):
    stacked = np.stack([np.asarray(g[name]) for g in loop])
    np.testing.assert_allclose(batched[name], stacked, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jitted[name], stacked, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(batched[name], reference[name], rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(revax.vmap(_revax_loss, in_axes=(None, 0, 0))(params, images, labels),
                             jax.vmap(_jax_loss, in_axes=(None, 0, 0))(jparams, images, labels),
                             **allclose_tol(rtol=1e-5))
