"""revax.example_libraries.stax against jax.example_libraries.stax: the same keys give the same
parameters and output shapes, and the same parameters give the same outputs, layer by layer."""
import jax
import jax.example_libraries.stax as jstax
import numpy as np
import pytest

import revax
import revax.example_libraries.stax as rstax
from tests.platform_tolerances import allclose_tol

rs = np.random.RandomState(0)


def _close(a, b, rtol=1e-5, atol=1e-5):
  """Equal leaves; on a TPU to the chip's tolerance (its samplers' erf_inv and log, tanh...)."""
  la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
  assert len(la) == len(lb)
  for u, v in zip(la, lb, strict=True):
    np.testing.assert_allclose(np.asarray(u), np.asarray(v), **allclose_tol(rtol, atol))


def _layers(mod):
  return {
      "dense": (mod.Dense(7), (3, 5)),
      "conv_same_strided": (mod.Conv(4, (3, 3), (2, 1), "SAME"), (2, 6, 5, 3)),
      "general_conv_nchw": (mod.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (2, 2)), (2, 3, 5, 5)),
      "conv_transpose": (mod.ConvTranspose(3, (3, 3), (2, 2), "SAME"), (2, 4, 4, 2)),
      "conv1d_transpose": (mod.Conv1DTranspose(3, (3,), (2,), "VALID"), (2, 5, 2)),
      "batchnorm": (mod.BatchNorm(), (4, 3, 3, 2)),
      "batchnorm_axis0_noscale": (mod.BatchNorm(axis=0, scale=False), (6, 3)),
      "maxpool": (mod.MaxPool((2, 2), (2, 2)), (2, 5, 5, 3)),
      "sumpool_same": (mod.SumPool((3, 3), padding="SAME"), (2, 4, 4, 1)),
      "avgpool_same": (mod.AvgPool((3, 3), (2, 2), "SAME"), (2, 5, 5, 2)),
      "avgpool_spec": (mod.AvgPool((2, 2), spec="NCHW"), (2, 3, 4, 4)),
      "flatten": (mod.Flatten, (2, 3, 4)),
      "serial_mlp": (mod.serial(mod.Dense(8), mod.Relu, mod.Dense(4), mod.LogSoftmax), (5, 6)),
      "fan_out_parallel_sum": (mod.serial(mod.FanOut(2), mod.parallel(mod.Dense(3), mod.Identity),
                                          mod.FanInSum), (4, 3)),
      "fan_in_concat": (mod.serial(mod.FanOut(2), mod.parallel(mod.Tanh, mod.Dense(2)),
                                   mod.FanInConcat()), (4, 3)),
      "activations": (mod.serial(mod.Elu, mod.Gelu, mod.Selu, mod.LeakyRelu, mod.Softplus,
                                 mod.Sigmoid, mod.Exp, mod.Softmax), (3, 4)),
      "shape_dependent": (mod.shape_dependent(lambda s: mod.Dense(s[-1] * 2)), (3, 4)),
  }


@pytest.mark.parametrize("name", sorted(_layers(rstax)))
def test_layer_matches_jax(name):
  (r_init, r_apply), shape = _layers(rstax)[name]
  (j_init, j_apply), _ = _layers(jstax)[name]
  r_shape, r_params = r_init(revax.random.PRNGKey(1), shape)
  j_shape, j_params = j_init(jax.random.PRNGKey(1), shape)
  assert tuple(r_shape) == tuple(j_shape)
  _close(r_params, j_params, rtol=1e-6, atol=1e-7)
  x = rs.randn(*shape).astype(np.float32)
  _close(r_apply(r_params, x), j_apply(j_params, x))
  _close(revax.jit(r_apply)(r_params, x), j_apply(j_params, x))


def test_dropout_same_mask_as_jax_and_needs_rng():
  x = rs.randn(4, 5).astype(np.float32)
  _, r_apply = rstax.Dropout(0.7)
  _, j_apply = jstax.Dropout(0.7)
  _close(r_apply((), x, rng=revax.random.PRNGKey(3)), j_apply((), x, rng=jax.random.PRNGKey(3)))
  with pytest.raises(ValueError, match="PRNG key"):
    r_apply((), x)
  assert rstax.Dropout(0.5, mode="test")[1]((), x, rng=revax.random.PRNGKey(0)) is x
  r_init, r_apply = rstax.serial(rstax.Dense(3), rstax.Dropout(0.5))
  j_init, j_apply = jstax.serial(jstax.Dense(3), jstax.Dropout(0.5))
  rp, jp = r_init(revax.random.PRNGKey(0), (4, 5))[1], j_init(jax.random.PRNGKey(0), (4, 5))[1]
  _close(r_apply(rp, x, rng=revax.random.PRNGKey(9)), j_apply(jp, x, rng=jax.random.PRNGKey(9)))


def test_module_level_names_are_the_nn_functions():
  x = rs.randn(6).astype(np.float32)
  for name in ("relu", "log_softmax", "logsoftmax", "softmax", "softplus", "sigmoid", "elu",
               "leaky_relu", "selu", "gelu", "standardize"):
    _close(getattr(rstax, name)(x), getattr(jstax, name)(x))
  for name in ("glorot", "glorot_normal", "randn", "normal"):
    _close(getattr(rstax, name)()(revax.random.PRNGKey(0), (3, 4)),
           getattr(jstax, name)()(jax.random.PRNGKey(0), (3, 4)), rtol=1e-6, atol=1e-7)
  _close(rstax.zeros(None, (2,)), jstax.zeros(None, (2,)))
  _close(rstax.ones(None, (2,)), jstax.ones(None, (2,)))
