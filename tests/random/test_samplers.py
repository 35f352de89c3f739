"""Samplers against jax.random: bit-for-bit equal values for the samplers built from elementwise
operations (over several seeds and shapes, both key representations), close values for the
gamma family (whose eager sampler runs in NumPy), JAX's dtypes and shape rules, and the errors."""
import jax.random as jr
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.random as rr
from tests.random.test_keys import assert_same

SEEDS = [0, 17, 2**31 + 5]


def keys(seed):
  return rr.PRNGKey(seed), jr.PRNGKey(seed)


LOGITS = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)

# (name, call): each call is a function of (random module, key), so one table serves both.
EXACT = [
    ("uniform", lambda r, k: r.uniform(k, (64,))),
    ("uniform_bounds", lambda r, k: r.uniform(k, (3, 5), minval=-2.0, maxval=np.arange(1.0, 6.0))),
    ("uniform_bf16", lambda r, k: r.uniform(k, (9,), ml_dtypes.bfloat16)),
    ("normal", lambda r, k: r.normal(k, (500,))),
    ("normal_c64", lambda r, k: r.normal(k, (6,), np.complex64)),
    ("exponential", lambda r, k: r.exponential(k, (200,))),
    ("truncated_normal", lambda r, k: r.truncated_normal(k, -1.0, 2.0, (100,))),
    ("bernoulli", lambda r, k: r.bernoulli(k, 0.3, (50,))),
    ("bernoulli_high", lambda r, k: r.bernoulli(k, np.float32(1e-3), (40,), mode="high")),
    # some maxval <= minval (those give minval), some spans of one
    ("randint_bounds_arrays",
     lambda r, k: r.randint(k, (2, 4), np.arange(4), np.array([[3], [9]]))),
    ("randint_uint8_256", lambda r, k: r.randint(k, (40,), 0, 256, np.uint8)),  # maxval > dtype max
    ("permutation_int", lambda r, k: r.permutation(k, 20)),
    ("permutation_two_rounds", lambda r, k: r.permutation(k, 2000)),
    ("permutation_axis1_independent",
     lambda r, k: r.permutation(k, np.arange(12).reshape(3, 4), axis=1, independent=True)),
    ("categorical", lambda r, k: r.categorical(k, np.log(np.arange(1.0, 6.0, dtype=np.float32)),
                                               shape=(50,))),
    ("categorical_batched_shape", lambda r, k: r.categorical(k, LOGITS, shape=(2, 3))),
    ("categorical_no_replace", lambda r, k: r.categorical(k, LOGITS, shape=(2, 3), replace=False)),
    ("choice", lambda r, k: r.choice(k, 7, (5,))),
    ("choice_p", lambda r, k: r.choice(k, 4, (20,), p=np.array([0.1, 0.2, 0.3, 0.4], np.float32))),
]


@pytest.mark.parametrize("name, call", EXACT, ids=[c[0] for c in EXACT])
def test_bit_exact_with_jax(name, call):
  for seed in SEEDS:
    key, jkey = keys(seed)
    expected = call(jr, jkey)
    assert_same(call(rr, key), expected)
  assert_same(call(rr, rr.key(SEEDS[0])), call(jr, jr.key(SEEDS[0])))  # typed keys


CLOSE = [
    ("gamma", lambda r, k: r.gamma(k, np.array([0.1, 0.5, 1.0, 3.0, 10.0], np.float32))),
    # beta and dirichlet draw through loggamma (log-space samples, a < 1 boosted in log space)
    ("beta", lambda r, k: r.beta(k, np.array([0.3, 1.0, 4.0], np.float32), 2.0)),
    ("dirichlet",
     lambda r, k: r.dirichlet(k, np.array([[0.5, 1.0, 2.0], [3.0, 0.2, 1.0]], np.float32))),
]


@pytest.mark.parametrize("name, call", CLOSE, ids=[c[0] for c in CLOSE])
def test_gamma_family_close_to_jax(name, call):
  """The eager gamma sampler (NumPy) follows JAX's algorithm step by step; only the last bits of
  its transcendental functions differ from XLA's."""
  for seed in SEEDS[:2]:
    key, jkey = keys(seed)
    actual, expected = np.asarray(call(rr, key)), np.asarray(call(jr, jkey))
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=1e-30)


def test_default_dtypes_and_shapes():
  key = rr.PRNGKey(0)
  assert rr.uniform(key).shape == () and rr.uniform(key).dtype == np.float32
  assert rr.uniform(key, 3).shape == (3,)
  assert rr.normal(key, (2,)).dtype == np.float32
  assert rr.randint(key, (2,), 0, 3).dtype == np.int32
  assert rr.bits(key).dtype == np.uint32
  assert rr.bernoulli(key).dtype == np.bool_ and rr.bernoulli(key).shape == ()
  assert rr.categorical(key, np.zeros((2, 5))).shape == (2,)
  assert rr.gamma(key, np.ones((2, 3))).shape == (2, 3)
  assert rr.gamma(key, 2, (4,)).dtype == np.float32  # integer a is converted
  assert rr.beta(key, np.ones(3), np.ones((2, 1))).shape == (2, 3)
  assert rr.dirichlet(key, np.ones(4), (2, 3)).shape == (2, 3, 4)
  assert rr.truncated_normal(key, -np.ones(3), 1.0).shape == (3,)
  assert rr.uniform(key, (2,), np.float64).dtype == np.float32  # canonicalized without x64
  assert rr.choice(key, 5, (0,)).shape == (0,)
  np.testing.assert_allclose(np.asarray(rr.dirichlet(key, np.ones(4), (3,))).sum(-1), 1, rtol=1e-6)
  a = np.array([0.05, 0.7, 3.0], np.float32)  # exp(loggamma) is gamma (JAX's contract)
  np.testing.assert_allclose(np.exp(np.asarray(rr.loggamma(key, a, (4, 3)))),
                             np.asarray(rr.gamma(key, a, (4, 3))), rtol=1e-5)


@pytest.mark.parametrize("call, exc, match", [
    (lambda k: rr.uniform(k, (2,), np.int32), ValueError, "must be a float dtype, got int32"),
    (lambda k: rr.normal(k, (2,), np.int32), ValueError, "float or complex dtype"),
    (lambda k: rr.gamma(k, 1.0, dtype=np.int32), ValueError, "must be a float dtype"),
    (lambda k: rr.truncated_normal(k, 0.0, 1.0, dtype=np.int32), ValueError, "float dtype"),
    (lambda k: rr.randint(k, (2,), 0, 5, np.float32), TypeError, "integer dtypes"),
    (lambda k: rr.uniform(k, (-1,)), ValueError, "negative dimension"),
    (lambda k: rr.uniform(k, (2,), minval=np.zeros(3)), TypeError, "incompatible shapes"),
    (lambda k: rr.randint(k, (2,), np.zeros(3, np.int32), 5), ValueError, "Incompatible shapes"),
    (lambda k: rr.gamma(k, np.ones(3), (2,)), ValueError, "Incompatible shapes"),
    (lambda k: rr.gamma(k, np.ones(3), (2, 1)), ValueError, "must equal the shape argument"),
    (lambda k: rr.beta(k, 1.0, np.ones(3), (2,)), ValueError, "Incompatible shapes"),
    (lambda k: rr.bernoulli(k, np.full(3, 0.5), (2,)), ValueError, "Incompatible shapes"),
    (lambda k: rr.bernoulli(k, 1), TypeError, "must have a floating dtype"),
    (lambda k: rr.bernoulli(k, 0.5, mode="x"), ValueError, "expected 'high' or 'low'"),
    (lambda k: rr.dirichlet(k, 1.0), ValueError, "alpha.ndim >= 1"),
    (lambda k: rr.categorical(k, np.zeros((3, 4)), shape=(2,)), ValueError, "Incompatible shapes"),
    (lambda k: rr.categorical(k, np.zeros((3, 4)), shape=(5, 3), replace=False), ValueError,
     "cannot exceed number of categories"),
    (lambda k: rr.categorical(k, np.zeros(3), mode="highest"), NotImplementedError, "highest"),
    (lambda k: rr.permutation(k, 3.0), TypeError, "integer or at least 1-dimensional"),
    (lambda k: rr.permutation(k, np.arange(3), axis=1), ValueError, "out of bounds"),
    (lambda k: rr.choice(k, 3, (5,), replace=False), ValueError, "Cannot take a larger sample"),
    (lambda k: rr.choice(k, 3, 5), TypeError, "must be a sequence"),
    (lambda k: rr.choice(k, 3, (5,), p=np.array([0.2, 0.8])), ValueError, "p must be None or a 1D"),
    (lambda k: rr.choice(k, 0, (5,)), ValueError, "greater than 0"),
    (lambda k: rr.gamma(k, [1.0, 2.0]), TypeError, "list"),
])
def test_sampler_errors(call, exc, match):
  with pytest.raises(exc, match=match):
    call(rr.PRNGKey(0))


def test_traced_permutation_size_is_an_error():
  with pytest.raises(TypeError, match="concrete integer"):
    revax.jit(lambda n: rr.permutation(rr.PRNGKey(0), n))(5)
