"""revax.nn.max_pool / avg_pool against flax.linen's pooling semantics (written here on
jax.lax.reduce_window, since flax is not installed) and jax.example_libraries.stax's pooling
layers: values, gradients and vmaps, eager and jitted; integer inputs; errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.example_libraries import stax

import revax
import revax.nn as nn

jax.config.update("jax_platforms", "cpu")


def _flax_pool(inputs, init, reduce_fn, window_shape, strides, padding):
  """flax.linen.pooling.pool (for any number of batch dims)."""
  num_batch = inputs.ndim - (len(window_shape) + 1)
  strides = strides or (1,) * len(window_shape)
  strides = (1,) * num_batch + tuple(strides) + (1,)
  dims = (1,) * num_batch + tuple(window_shape) + (1,)
  if not isinstance(padding, str):
    padding = ((0, 0),) * num_batch + tuple(map(tuple, padding)) + ((0, 0),)
  return jax.lax.reduce_window(inputs, init, reduce_fn, dims, strides, padding)


def flax_max_pool(x, window_shape, strides=None, padding="VALID"):
  return _flax_pool(x, -jnp.inf, jax.lax.max, window_shape, strides, padding)


def flax_avg_pool(x, window_shape, strides=None, padding="VALID", count_include_pad=True):
  y = _flax_pool(x, 0.0, jax.lax.add, window_shape, strides, padding)
  if count_include_pad:
    return y / np.prod(window_shape)
  return y / _flax_pool(jnp.ones(x.shape[:-1] + (1,)), 0.0, jax.lax.add, window_shape, strides,
                        padding)


CASES = [  # (input shape, window_shape, strides, padding)
    ((2, 5, 7, 3), (2, 2), None, "VALID"),
    ((2, 5, 7, 3), (3, 3), (2, 2), "SAME"),
    ((2, 5, 7, 3), (2, 3), (2, 1), ((0, 1), (1, 1))),
    ((2, 5, 7, 3), (2, 2), (1, 2), [(1, 0), (0, 1)]),
    ((5, 7, 3), (2, 2), (2, 2), ((0, 1), (1, 0))),  # no batch dim
    ((2, 3, 5, 4, 2), (2, 2), (2, 1), "SAME"),  # two batch dims
    ((3, 9, 2), (3,), (2,), ((1, 1),)),  # 1-d windows
    ((1, 4, 5, 6, 2), (2, 2, 3), (1, 2, 2), "SAME"),  # 3-d windows
]


def _x(shape, seed=0):
  """Distinct values (no ties between max candidates)."""
  n = int(np.prod(shape))
  return ((np.random.default_rng(seed).permutation(n) - n / 2) * 0.1).reshape(shape).astype(
      np.float32)


def _pools(max_pool, avg_pool, x, window, strides, padding):
  return [max_pool(x, window, strides, padding), avg_pool(x, window, strides, padding),
          avg_pool(x, window, strides, padding, count_include_pad=False)]


def _all_close(ours, theirs, what):
  for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-5,
                               err_msg=f"{what} {k}")


def test_values_match_flax_semantics():
  """Every case, eager and (for two cases) jitted, against jax (one jitted program)."""
  xs = [_x(shape, k) for k, (shape, *_) in enumerate(CASES)]

  def values(max_pool, avg_pool, xs, cases=CASES):
    return [v for x, (_, window, strides, padding) in zip(xs, cases)
            for v in _pools(max_pool, avg_pool, x, window, strides, padding)]

  theirs = jax.jit(lambda xs: values(flax_max_pool, flax_avg_pool, xs))(xs)
  _all_close(values(nn.max_pool, nn.avg_pool, xs), theirs, "value")
  jitted = revax.jit(lambda xs: values(nn.max_pool, nn.avg_pool, xs, CASES[2:4]))(xs[2:4])
  _all_close(jitted, theirs[6:12], "jitted value")


def test_grads_and_vmaps_match_flax_semantics():
  """Gradients of a loss over all three pools, and vmaps of the pools and of the gradient
  (batch at axis 1), for a few cases; jax's side in one jitted program."""
  cases = [CASES[2], CASES[4], CASES[5]]
  xs = [_x(shape) for shape, *_ in cases]
  xbs = [np.stack([x, -x, 2 * x], 1) for x in xs]

  def quantities(max_pool, avg_pool, grad, vmap, xs, xbs):
    res = []
    for x, xb, (_, window, strides, padding) in zip(xs, xbs, cases):
      loss = lambda x: sum((p ** 2).sum() for p in _pools(max_pool, avg_pool, x, window,
                                                           strides, padding))
      res += [grad(loss)(x), vmap(grad(loss), in_axes=1)(xb),
              vmap(lambda x: max_pool(x, window, strides, padding), in_axes=1)(xb)]
    return res

  theirs = jax.jit(lambda xs, xbs: quantities(flax_max_pool, flax_avg_pool, jax.grad, jax.vmap,
                                              xs, xbs))(xs, xbs)
  _all_close(quantities(nn.max_pool, nn.avg_pool, revax.grad, revax.vmap, xs, xbs), theirs,
             "quantity")


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_matches_stax_pooling_layers(padding):
  """stax's MaxPool, and its AvgPool (which divides by the number of input elements in each
  window: count_include_pad=False)."""
  x = _x((2, 6, 7, 3))
  for window, strides in [((2, 2), (2, 2)), ((3, 2), (1, 2))]:
    _, max_apply = stax.MaxPool(window, strides, padding)
    _, avg_apply = stax.AvgPool(window, strides, padding)
    np.testing.assert_allclose(np.asarray(nn.max_pool(x, window, strides, padding)),
                               np.asarray(max_apply((), x)), rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(nn.avg_pool(x, window, strides, padding, count_include_pad=False)),
        np.asarray(avg_apply((), x)), rtol=1e-5, atol=1e-6)


def test_integer_and_bool_inputs():
  x = np.random.default_rng(3).integers(-50, 50, (2, 4, 6, 2)).astype(np.int32)
  out = nn.max_pool(x, (2, 2), (2, 2), ((0, 1), (0, 0)))
  assert out.dtype == np.int32
  np.testing.assert_array_equal(np.asarray(out), np.asarray(flax_max_pool(
      x.astype(np.float32), (2, 2), (2, 2), ((0, 1), (0, 0)))).astype(np.int32))
  avg = nn.avg_pool(x, (2, 2))
  assert avg.dtype == np.float32
  np.testing.assert_allclose(np.asarray(avg), np.asarray(flax_avg_pool(x.astype(np.float32),
                                                                       (2, 2))), rtol=1e-6)
  b = np.random.default_rng(4).random((1, 4, 4, 1)) < 0.3
  np.testing.assert_array_equal(np.asarray(nn.max_pool(b, (2, 2), (2, 2))),
                                b.reshape(1, 2, 2, 2, 2, 1).any(axis=(2, 4)))


def test_max_pool_structure_and_padding_pairs_kept():
  x = _x((2, 5, 7, 3))
  closed = revax.make_jaxpr(lambda x: nn.max_pool(x, (2, 2), (2, 2), [(0, 1), (1, 0)]))(x)
  (eqn,) = closed.jaxpr.eqns
  assert eqn.primitive.name == "reduce_window_max"
  assert eqn.params["padding"] == ((0, 0), (0, 1), (1, 0), (0, 0))
  assert eqn.params["window_dimensions"] == (1, 2, 2, 1)
  closed = revax.make_jaxpr(lambda x: nn.avg_pool(x, (2, 2), padding="SAME"))(x)
  assert [e.primitive.name for e in closed.jaxpr.eqns] == ["reduce_window_sum", "div"]


def test_errors():
  x = np.zeros((4, 4, 3), np.float32)
  with pytest.raises(ValueError, match=r"pooling inputs must have the window's 3 spatial "
                                       r"dimensions and a features dimension \(at least rank "
                                       r"4\), got shape \(4, 4, 3\)"):
    nn.max_pool(x, (2, 2, 2))
  with pytest.raises(ValueError, match=r"pooling strides \(1,\) must have one entry per window "
                                       r"dimension"):
    nn.avg_pool(x, (2, 2), (1,))
  with pytest.raises(ValueError, match=r"pooling padding \(\(0, 1\),\) must be 'SAME', 'VALID' "
                                       r"or one \(lo, hi\) pair per window dimension \(2\)"):
    nn.max_pool(x, (2, 2), padding=((0, 1),))
  with pytest.raises(RuntimeError, match="Unrecognized padding type"):
    nn.max_pool(x, (2, 2), padding="FULL")
