"""The rbg and unsafe_rbg PRNG implementations against jax.random, bit for bit: seeding,
splitting, folding in and every sampler of revax.random, with typed and raw keys (raw keys under
jax_default_prng_impl), eagerly, under jit and under vmap over keys; key dtypes, key_impl,
key_dtype, wrap_key_data's checks, the config option and its environment variable."""
import contextlib
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import jax.random as jr
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.random as rr
from tests import platform_tolerances
from tests.dtype_tables import records
from tests.random.test_keys import assert_same

IMPLS = ["rbg", "unsafe_rbg"]
SEEDS = [0, 17, 2**31 + 5]
LOGITS = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
COV = np.array([[2.0, 0.3], [0.3, 1.0]], np.float32)

# (name, call(random module, key)): every sampler of revax.random
SAMPLERS = [
    ("bits", lambda r, k: r.bits(k, (7, 3))),
    ("bits_u8", lambda r, k: r.bits(k, (9,), np.uint8)),
    ("bits_u16", lambda r, k: r.bits(k, (5,), np.uint16)),
    ("uniform", lambda r, k: r.uniform(k, (64,))),
    ("uniform_bounds", lambda r, k: r.uniform(k, (3, 5), minval=-2.0, maxval=np.arange(1.0, 6.0))),
    ("uniform_bf16", lambda r, k: r.uniform(k, (9,), ml_dtypes.bfloat16)),
    ("uniform_scalar", lambda r, k: r.uniform(k)),
    ("normal", lambda r, k: r.normal(k, (100,))),
    ("normal_c64", lambda r, k: r.normal(k, (6,), np.complex64)),
    ("exponential", lambda r, k: r.exponential(k, (50,))),
    ("truncated_normal", lambda r, k: r.truncated_normal(k, -1.0, 2.0, (40,))),
    ("bernoulli", lambda r, k: r.bernoulli(k, 0.3, (50,))),
    ("bernoulli_high", lambda r, k: r.bernoulli(k, np.float32(1e-3), (40,), mode="high")),
    ("randint", lambda r, k: r.randint(k, (2, 4), np.arange(4), np.array([[3], [9]]))),
    ("randint_uint8", lambda r, k: r.randint(k, (40,), 0, 256, np.uint8)),
    ("permutation_int", lambda r, k: r.permutation(k, 20)),
    ("permutation_two_rounds", lambda r, k: r.permutation(k, 2000)),
    ("permutation_independent",
     lambda r, k: r.permutation(k, np.arange(12).reshape(3, 4), axis=1, independent=True)),
    ("categorical", lambda r, k: r.categorical(k, LOGITS, shape=(2, 3))),
    ("categorical_no_replace", lambda r, k: r.categorical(k, LOGITS, shape=(2, 3), replace=False)),
    ("choice", lambda r, k: r.choice(k, 7, (5,))),
    ("choice_no_replace", lambda r, k: r.choice(k, 9, (4,), replace=False)),
    ("choice_p", lambda r, k: r.choice(k, 4, (20,), p=np.array([0.1, 0.2, 0.3, 0.4], np.float32))),
    ("gamma", lambda r, k: r.gamma(k, np.array([0.1, 0.5, 1.0, 3.0, 10.0], np.float32))),
    ("gamma_shape", lambda r, k: r.gamma(k, np.float32(2.5), (2, 3))),
    ("loggamma", lambda r, k: r.loggamma(k, np.array([0.01, 0.5, 4.0], np.float32))),
    ("beta", lambda r, k: r.beta(k, 2.0, np.array([0.5, 3.0], np.float32))),
    ("dirichlet", lambda r, k: r.dirichlet(k, np.array([0.5, 1.0, 2.0], np.float32), (2,))),
    ("ball", lambda r, k: r.ball(k, 3, 2.0, (4,))),
    ("cauchy", lambda r, k: r.cauchy(k, (8,))),
    ("chisquare", lambda r, k: r.chisquare(k, 3.0, (5,))),
    ("double_sided_maxwell", lambda r, k: r.double_sided_maxwell(k, 1.0, 2.0, (6,))),
    ("f", lambda r, k: r.f(k, 3.0, 5.0, (5,))),
    ("generalized_normal", lambda r, k: r.generalized_normal(k, 1.5, (6,))),
    ("geometric", lambda r, k: r.geometric(k, 0.3, (6,))),
    ("gumbel", lambda r, k: r.gumbel(k, (6,))),
    ("gumbel_high", lambda r, k: r.gumbel(k, (6,), mode="high")),
    ("laplace", lambda r, k: r.laplace(k, (6,))),
    ("logistic", lambda r, k: r.logistic(k, (6,))),
    ("lognormal", lambda r, k: r.lognormal(k, 0.5, (6,))),
    ("maxwell", lambda r, k: r.maxwell(k, (6,))),
    ("pareto", lambda r, k: r.pareto(k, 3.0, (6,))),
    ("rademacher", lambda r, k: r.rademacher(k, (10,))),
    ("rayleigh", lambda r, k: r.rayleigh(k, 2.0, (6,))),
    ("t", lambda r, k: r.t(k, 4.0, (6,))),
    ("triangular", lambda r, k: r.triangular(k, 0.0, 0.3, 1.0, (6,))),
    ("wald", lambda r, k: r.wald(k, 1.5, (6,))),
    ("weibull_min", lambda r, k: r.weibull_min(k, 1.0, 2.0, (6,))),
    ("binomial", lambda r, k: r.binomial(k, np.array([5.0, 50.0, 500.0]),
                                         np.array([0.2, 0.5, 0.9]))),
    ("multinomial", lambda r, k: r.multinomial(k, 10.0, np.array([0.2, 0.3, 0.5]))),
    ("multivariate_normal", lambda r, k: r.multivariate_normal(k, np.zeros(2, np.float32), COV,
                                                               (3,))),
    ("orthogonal", lambda r, k: r.orthogonal(k, 3)),
    ("split", lambda r, k: r.key_data(r.split(k, (2, 3)))),
    ("fold_in", lambda r, k: r.key_data(r.fold_in(k, 2**32 - 3))),
    ("clone", lambda r, k: r.key_data(r.clone(k))),
]
IDS = [s[0] for s in SAMPLERS]
# Values from the gamma sampler (and what draws through it) and the linear-algebra samplers:
# the random bits are the same, the float32 arithmetic after them differs from jaxlib's XLA in
# the last bit or two for some elements (as with threefry2x32 keys, tests/random/
# test_samplers.py::test_gamma_family_close_to_jax); everything else is bit-exact.
CLOSE = {"gamma", "gamma_shape", "loggamma", "beta", "dirichlet", "ball", "chisquare", "f",
         "generalized_normal", "pareto", "t", "orthogonal", "multivariate_normal"}


def assert_like_jax(name, actual, expected):
  if name not in CLOSE:
    return assert_same(actual, expected)
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.dtype == expected.dtype and actual.shape == expected.shape
  np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=1e-5)


@pytest.fixture(params=IMPLS)
def impl(request):
  if platform_tolerances.ON_TPU:
    pytest.skip(f"TPU: {platform_tolerances.RNG_BIT_GENERATOR}")
  return request.param


# jax's draws of the two tests below (440 eager jax calls, each compiling its primitives: about
# 85% of their time) are recorded in expected/test_prng_impls.json.xz under this file's SHA-256;
# re-record with `python -m tests.random.test_prng_impls`, run jax live with REVAX_LIVE_ORACLE=1.
JAX_DRAWS = records.RecordedArrays(__file__, "python -m tests.random.test_prng_impls")


def _jax_typed(impl, call, seed):
  return call(jr, jr.key(seed, impl=impl))


def _jax_raw(impl, call):
  with jax.default_prng_impl(impl):
    jkey = jr.PRNGKey(SEEDS[1])
    return [jkey, call(jr, jkey)]


def oracle_cases():
  """(key, thunk) of every jax draw the two tests compare with."""
  for impl_name in IMPLS:
    for name, call in SAMPLERS:
      for seed in SEEDS:
        yield (f"typed {impl_name} {name} {seed}",
               lambda i=impl_name, c=call, s=seed: [_jax_typed(i, c, s)])
      yield f"raw {impl_name} {name}", lambda i=impl_name, c=call: _jax_raw(i, c)


@pytest.mark.parametrize("name, call", SAMPLERS, ids=IDS)
def test_typed_keys_bit_exact(impl, name, call):
  for seed in SEEDS:
    (expected,) = JAX_DRAWS.get(f"typed {impl} {name} {seed}",
                                lambda: [_jax_typed(impl, call, seed)])
    assert_like_jax(name, revax.jit(lambda k: call(rr, k))(rr.key(seed, impl=impl)), expected)
    assert_like_jax(name, call(rr, rr.key(seed, impl=impl)), expected)


@pytest.mark.parametrize("name, call", SAMPLERS, ids=IDS)
def test_raw_keys_under_the_default_impl(impl, name, call):
  """Raw uint32[4] keys are read as keys of jax_default_prng_impl, in revax as in JAX."""
  jkey, expected = JAX_DRAWS.get(f"raw {impl} {name}", lambda: _jax_raw(impl, call))
  with revax.default_prng_impl(impl):
    key = rr.PRNGKey(SEEDS[1])
    assert_same(key, jkey)
    assert_like_jax(name, revax.jit(lambda k: call(rr, k))(key), expected)


VMAPPED = [
    ("bits", lambda r, k: r.bits(k, (3,))),  # rng_bit_generator's batching: the first key draws
    ("uniform", lambda r, k: r.uniform(k, (2, 2))),
    ("normal_c64", lambda r, k: r.normal(k, (3,), np.complex64)),
    ("randint", lambda r, k: r.randint(k, (4,), 0, 10)),
    ("gamma", lambda r, k: r.gamma(k, np.float32(0.7), (3,))),
    ("permutation", lambda r, k: r.permutation(k, 6)),
    ("split", lambda r, k: r.key_data(r.split(k, 3))),
    ("fold_in", lambda r, k: r.key_data(r.fold_in(k, 5))),
]


@pytest.mark.parametrize("name, call", VMAPPED, ids=[v[0] for v in VMAPPED])
def test_vmap_over_keys(impl, name, call):
  keys, jkeys = rr.split(rr.key(3, impl=impl), 4), jr.split(jr.key(3, impl=impl), 4)
  expected = jax.vmap(lambda k: call(jr, k))(jkeys)
  assert_like_jax(name, revax.vmap(lambda k: call(rr, k))(keys), expected)
  assert_like_jax(name, revax.jit(revax.vmap(lambda k: call(rr, k)))(keys), expected)


def test_vmap_over_seeds_and_fold_in_data(impl):
  seeds = np.arange(5)
  assert_same(rr.key_data(revax.vmap(lambda s: rr.key(s, impl=impl))(seeds)),
              jr.key_data(jax.vmap(lambda s: jr.key(s, impl=impl))(jnp.arange(5))))
  data = np.arange(4, dtype=np.uint32)
  assert_same(rr.key_data(revax.vmap(lambda d: rr.fold_in(rr.key(1, impl=impl), d))(data)),
              jr.key_data(jax.vmap(lambda d: jr.fold_in(jr.key(1, impl=impl), d))(data)))


def test_seeds_64_bit_and_negative(impl):
  for seed in (-1, -(2**31), 2**31 - 1, 123456789):
    assert_same(rr.key_data(rr.key(seed, impl=impl)), jr.key_data(jr.key(seed, impl=impl)))
  with revax.enable_x64(True), jax.enable_x64(True):
    for seed in (2**40 + 3, -(2**40)):
      assert_same(rr.key_data(rr.key(seed, impl=impl)), jr.key_data(jr.key(seed, impl=impl)))
      assert_same(rr.bits(rr.key(seed, impl=impl), (3,), np.uint64),
                  jr.bits(jr.key(seed, impl=impl), (3,), jnp.uint64))
      assert_same(rr.uniform(rr.key(seed, impl=impl), (3,), np.float64),
                  jr.uniform(jr.key(seed, impl=impl), (3,), jnp.float64))


def test_key_dtypes_names_and_reprs(impl):
  k, jk = rr.key(0, impl=impl), jr.key(0, impl=impl)
  assert str(k.dtype) == str(jk.dtype) and repr(k.dtype) == repr(jk.dtype)
  assert k.shape == jk.shape == () and rr.split(k, 3).shape == (3,)
  assert rr.key_impl(k) == jr.key_impl(jk) == impl
  assert str(rr.key_dtype(impl)) == str(jr.key_dtype(impl))
  assert rr.key_dtype(impl) == k.dtype and rr.key_dtype(impl) != rr.key_dtype("threefry2x32")
  assert revax.dtypes.issubdtype(k.dtype, revax.dtypes.prng_key)
  assert str(revax.typeof(rr.split(k, 2))) == str(jax.typeof(jr.split(jk, 2)))
  assert repr(k).splitlines()[0] == repr(jk).splitlines()[0]
  assert rr.key(0, dtype=rr.key_dtype(impl)).dtype == k.dtype
  assert rr.key(0, impl=rr.key_dtype(impl)).dtype == k.dtype
  assert rr.PRNGKey(5, impl=impl).shape == jr.PRNGKey(5, impl=impl).shape == (4,)
  data = rr.key_data(rr.split(k, 2))
  wrapped = rr.wrap_key_data(data, impl=impl)
  assert wrapped.dtype == k.dtype and wrapped.shape == (2,)
  assert_same(rr.key_data(wrapped), data)


def test_key_equality_and_mixing_impls(impl):
  a, b = rr.key(1, impl=impl), rr.key(1, impl=impl)
  assert bool(a == b) and not bool(a != b)
  assert bool((rr.split(a, 3) == rr.split(b, 3)).all())
  other = rr.key(1)
  with pytest.raises(TypeError):
    jr.key(1, impl=impl) == jr.key(1)  # noqa: B015
  with pytest.raises(TypeError, match="does not accept dtypes"):
    a == other  # noqa: B015


def test_errors_match_jax(impl):
  threefry_data = np.zeros(2, np.uint32)
  for r in (rr, jr):
    with pytest.raises(TypeError):
      r.wrap_key_data(threefry_data, impl=impl)  # rbg keys are 4 words
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
      r.key(0, impl="nope")
    with pytest.raises(TypeError, match="unrecognized type"):
      r.key(0, impl=3)
    with pytest.raises(ValueError, match="Cannot specify both"):
      r.key(0, impl=impl, dtype=r.key_dtype(impl))
    with pytest.raises(NotImplementedError, match="only implemented for the threefry2x32"):
      r.poisson(r.key(0, impl=impl), 3.0)
  with jax.default_prng_impl(impl), revax.default_prng_impl(impl):
    for r in (rr, jr):  # a threefry raw key is not a key of the default implementation
      with pytest.raises(TypeError, match="shape to end with"):
        r.uniform(threefry_data)


def test_config_option():
  assert revax.config.jax_default_prng_impl == "threefry2x32"
  for impl in IMPLS + ["threefry2x32"]:
    revax.config.update("jax_default_prng_impl", impl)
    try:
      assert revax.config.jax_default_prng_impl == impl
      assert rr.key(0).dtype == rr.key_dtype(impl) == rr.key_dtype()
      assert rr.key_impl(rr.PRNGKey(0)) == impl
    finally:
      revax.config.update("jax_default_prng_impl", "threefry2x32")
  for bad in ("philox4x32", "nope"):
    with pytest.raises(ValueError):
      revax.config.update("jax_default_prng_impl", bad)
  # jit retraces when the default changes: raw keys mean another implementation
  f = revax.jit(lambda: rr.PRNGKey(3))
  assert f().shape == (2,)
  with revax.default_prng_impl("rbg"):
    assert f().shape == (4,)


@platform_tolerances.skip_on_tpu(platform_tolerances.HOLDS_THE_CHIP)
def test_environment_variable():
  code = ("import revax, revax.random as rr; print(revax.config.jax_default_prng_impl, "
          "rr.key(0).dtype, rr.PRNGKey(7).tolist())")
  env = dict(os.environ, REVAX_DEFAULT_PRNG_IMPL="unsafe_rbg")
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120, check=True).stdout.split(maxsplit=2)
  assert out[:2] == ["unsafe_rbg", "key<urbg>"] and out[2].strip() == "[0, 7, 0, 7]"
  env["REVAX_DEFAULT_PRNG_IMPL"] = "bogus"
  bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
  assert bad.returncode != 0 and "default_prng_impl" in bad.stderr


def test_rng_bit_generator_matches_jaxlib():
  """rbg draws with XLA's RngBitGenerator: the CPU plugin's bits equal jaxlib's for every
  algorithm, dtype and shape (Philox is the CPU default). The default algorithm is the
  platform's: on a TPU machine it is drawn on the CPU device (RNG_BIT_GENERATOR), the explicit
  ones on the TPU."""
  key = np.array([1, 2, 3, 4], np.uint32)
  for alg in range(3):
    for dtype, shape in ((np.uint32, (5, 3)), (np.uint8, (7,)), (np.uint16, (4,)),
                         (np.uint32, ()), (np.uint32, (0,))):
      jk, jb = jax.lax.rng_bit_generator(key, shape, dtype, jax.lax.RandomAlgorithm(alg))
      with platform_tolerances.on_the_cpu_device() if alg == 0 else contextlib.nullcontext():
        rk, rb = revax.lax.rng_bit_generator(key, shape, dtype, revax.lax.RandomAlgorithm(alg))
      assert_same(rb, jb)
      assert_same(rk, jk)


if __name__ == "__main__":
  print(f"recorded {JAX_DRAWS.record(oracle_cases())} draws in {JAX_DRAWS.path}")
