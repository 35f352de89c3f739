"""rng_bit_generator and rng_uniform against jax 0.10.2 (both run XLA's own ops on the same
XLA:CPU, so the bits agree exactly): every algorithm and bit width, eagerly and under jit, the
advanced key, vmap over keys (JAX's rule), the jaxpr; rng_uniform's range and distribution (a
KS test), fresh numbers per run, batched bounds, and JAX's errors."""
import numpy as np
import pytest
import scipy.stats

import revax
import revax.lax as rlax
from tests.platform_tolerances import ON_TPU, RNG_BIT_GENERATOR

jax = pytest.importorskip("jax")
jlax = jax.lax

KEY = np.array([7, 11, 2024, 3], np.uint32)
ALGS = list(rlax.RandomAlgorithm)


@pytest.mark.parametrize("alg,dtype", [(ALGS[0], np.uint32), (ALGS[1], np.uint32),
                                       (ALGS[2], np.uint32), (ALGS[1], np.uint8),
                                       (ALGS[2], np.uint16)], ids=str)
def test_bits_and_keys_equal_jax(alg, dtype):
  if ON_TPU and alg == rlax.RandomAlgorithm.RNG_DEFAULT:
    pytest.skip(f"TPU: {RNG_BIT_GENERATOR}")
  want = jlax.rng_bit_generator(KEY, (3, 4), dtype, jlax.RandomAlgorithm(int(alg)))
  f = lambda k: rlax.rng_bit_generator(k, (3, 4), dtype, alg)
  for got in (f(KEY), revax.jit(f)(KEY)):
    for g, w in zip(got, want, strict=True):
      assert np.asarray(g).dtype == np.asarray(w).dtype
      np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_vmap_over_keys_follows_jax_and_jaxpr_params():
  keys = np.stack([KEY, KEY + 1, KEY * 3])
  f = lambda lax: lambda k: lax.rng_bit_generator(k, (5,), algorithm=lax.RandomAlgorithm.RNG_PHILOX)
  for g, w in zip(revax.vmap(f(rlax))(keys), jax.vmap(f(jlax))(keys), strict=True):
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  (eqn,) = revax.make_jaxpr(f(rlax))(KEY).eqns
  assert eqn.primitive.name == "rng_bit_generator"
  assert eqn.params["algorithm"] is rlax.RandomAlgorithm.RNG_PHILOX and eqn.params["shape"] == (5,)
  assert str(rlax.RandomAlgorithm.RNG_PHILOX) == str(jlax.RandomAlgorithm.RNG_PHILOX)


def test_bits_look_uniform():
  _, bits = rlax.rng_bit_generator(KEY, (20000,), np.uint32)
  u = np.asarray(bits).astype(np.float64) / 2 ** 32
  assert scipy.stats.kstest(u, "uniform").pvalue > 1e-3


def test_rng_uniform_range_distribution_and_freshness():
  for f in (rlax.rng_uniform, revax.jit(rlax.rng_uniform, static_argnums=2)):
    x, y = np.asarray(f(-2.0, 3.0, (5000,))), np.asarray(f(-2.0, 3.0, (5000,)))
    assert x.dtype == np.float32 and ((x >= -2) & (x < 3)).all()
    assert not np.array_equal(x, y)
    assert scipy.stats.kstest(x, scipy.stats.uniform(-2, 5).cdf).pvalue > 1e-3
  ints = np.asarray(rlax.rng_uniform(np.int32(3), np.int32(9), (4000,)))
  assert ints.dtype == np.int32 and set(np.unique(ints)) == set(range(3, 9))
  assert rlax.rng_uniform(0.0, 1.0, ()).aval.weak_type == jlax.rng_uniform(0.0, 1.0, ()).weak_type


def test_rng_uniform_with_batched_bounds_draws_each_example():
  lo = np.array([0.0, 10.0, -5.0], np.float32)
  out = np.asarray(revax.vmap(lambda a: rlax.rng_uniform(a, a + 1.0, (200,)))(lo))
  assert out.shape == (3, 200) and ((out >= lo[:, None]) & (out < lo[:, None] + 1)).all()
  assert len(np.unique(out - lo[:, None])) > 500  # not one draw repeated


def test_errors_of_jax():
  for lib, lax in ((revax, rlax), (jax, jlax)):
    with pytest.raises(TypeError, match="unsupported dtype int32"):
      lax.rng_bit_generator(KEY, (3,), dtype=np.int32)
    with pytest.raises(ValueError, match="identical dtypes"):
      lax.rng_uniform(np.float32(0), np.int32(1), (3,))
    with pytest.raises(ValueError, match="must be scalars"):
      lax.rng_uniform(np.zeros(2, np.float32), np.float32(1), (3,))
    with pytest.raises(NotImplementedError):
      lib.grad(lambda a: lax.rng_uniform(a, 1.0, ()))(0.0)
  with pytest.raises(TypeError, match=r"uint32\[4\] key, got u32\[3\]"):
    rlax.rng_bit_generator(KEY[:3], (3,))  # jax: an AssertionError in its lowering
