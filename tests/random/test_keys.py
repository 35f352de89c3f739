"""PRNG keys against jax.random: seeds (Python, NumPy and 64-bit), split, fold_in and bits bit for
bit, raw and typed keys (key_data, wrap_key_data), keys under jit and vmap, and the errors."""
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

import revax
import revax.random as rr
from tests import platform_tolerances

SEEDS = [0, 1, 42, -1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40 + 5, -2**40, 2**63 - 1]


def assert_same(actual, expected):
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  platform_tolerances.assert_same_values(actual, expected)  # bits exact; floats: a TPU's own


@pytest.mark.parametrize("seed", SEEDS + [np.int64(2**40 + 5), np.uint32(7), np.int8(-3),
                                          np.uint64(2**64 - 1), True], ids=repr)
def test_prng_key_matches_jax(seed):
  key = rr.PRNGKey(seed)
  assert_same(key, jr.PRNGKey(seed))
  assert_same(rr.key_data(rr.key(seed)), jr.key_data(jr.key(seed)))


def test_64_bit_seeds_bits_and_floats(x64):
  for seed in SEEDS + [-2**63]:
    assert_same(rr.PRNGKey(seed), jr.PRNGKey(seed))
  key, jkey = rr.PRNGKey(2**40 + 5), jr.PRNGKey(2**40 + 5)
  assert_same(rr.bits(key, (5,)), jr.bits(jkey, (5,)))  # uint64 by default
  assert_same(rr.uniform(key, (7,)), jr.uniform(jkey, (7,)))  # float64 by default
  assert_same(rr.randint(key, (6,), -2**40, 2**40), jr.randint(jkey, (6,), -2**40, 2**40))


@pytest.mark.parametrize("seed", [0, 7, 12345])
def test_split_fold_in_and_bits_match_jax(seed):
  key, jkey = rr.PRNGKey(seed), jr.PRNGKey(seed)
  for num in (2, 3, 0, (2, 3)):
    assert_same(rr.split(key, num), jr.split(jkey, num))
  for data in (0, 123, 2**32 - 1, np.int32(-1), 2.5):
    assert_same(rr.fold_in(key, data), jr.fold_in(jkey, data))
  for shape in ((), (2, 3), (0, 4)):
    assert_same(rr.bits(key, shape), jr.bits(jkey, shape))
  for dtype in (np.uint8, np.uint16, np.uint32):
    assert_same(rr.bits(key, (3, 5), dtype), jr.bits(jkey, (3, 5), dtype))


def test_key_chains_stay_equal():
  """Keys derived repeatedly (split, fold_in, split of a split) stay equal to JAX's."""
  key, jkey = rr.PRNGKey(3), jr.PRNGKey(3)
  for i in range(5):
    key, sub = rr.split(key)
    jkey, jsub = jr.split(jkey)
    key = rr.fold_in(key, i)
    jkey = jr.fold_in(jkey, i)
    assert_same(sub, jsub)
    assert_same(key, jkey)


def test_typed_keys():
  k = rr.key(5)
  assert k.shape == () and k.ndim == 0 and str(k.dtype) == "key<fry>"
  assert "key<fry>" in repr(k)
  keys = rr.split(k, 4)
  assert isinstance(keys, rr.PRNGKeyArray) and keys.shape == (4,) and len(keys) == 4
  assert_same(rr.key_data(keys), jr.key_data(jr.split(jr.key(5), 4)))
  assert_same(rr.key_data(keys[1:3]), jr.key_data(jr.split(jr.key(5), 4)[1:3]))
  assert_same(rr.key_data(rr.fold_in(keys[2], 9)),
              jr.key_data(jr.fold_in(jr.split(jr.key(5), 4)[2], 9)))
  assert [kk.shape for kk in keys] == [()] * 4
  # raw and typed keys draw the same values; wrap_key_data / key_data convert
  raw = rr.key_data(k)
  assert_same(rr.uniform(k, (3,)), rr.uniform(raw, (3,)))
  assert_same(rr.key_data(rr.wrap_key_data(raw)), raw)
  assert rr.key_impl(k) == rr.key_impl(raw) == "threefry2x32"
  assert isinstance(rr.split(raw), revax.Array)  # raw in, raw out


def test_keys_under_jit_and_vmap():
  assert_same(revax.jit(rr.PRNGKey)(9), jr.PRNGKey(9))
  assert_same(revax.vmap(rr.PRNGKey)(np.arange(4)), jax.vmap(jr.PRNGKey)(jnp.arange(4)))
  key = rr.PRNGKey(1)
  assert_same(revax.jit(rr.split, static_argnums=1)(key, 3), jr.split(jr.PRNGKey(1), 3))
  keys, jkeys = rr.split(key, 3), jr.split(jr.PRNGKey(1), 3)
  assert_same(revax.vmap(rr.split)(keys), jax.vmap(jr.split)(jkeys))
  assert_same(revax.vmap(rr.fold_in)(keys, np.arange(3, dtype=np.uint32)),
              jax.vmap(jr.fold_in)(jkeys, jnp.arange(3, dtype=jnp.uint32)))
  assert_same(revax.vmap(lambda k: rr.bits(k, (2,)))(keys),
              jax.vmap(lambda k: jr.bits(k, (2,)))(jkeys))
  typed = revax.vmap(rr.wrap_key_data)(keys)  # typed keys are pytrees: through vmap and jit
  assert typed.shape == (3,)
  out = revax.jit(lambda k: rr.split(k, 2))(rr.key(4))
  assert isinstance(out, rr.PRNGKeyArray)
  assert_same(rr.key_data(out), jr.key_data(jr.split(jr.key(4))))


@pytest.mark.parametrize("bad, exc, match", [
    (np.zeros(3, np.uint32), TypeError, "shape to end with"),
    (np.zeros(2, np.int32), TypeError, "dtype = uint32"),
    (np.zeros((), np.uint32), TypeError, "ndim >= 1"),
    (3, TypeError, "ndim, shape, and dtype"),
    ([0, 0], TypeError, "unexpected PRNG key type"),
    (np.zeros((2, 2), np.uint32), ValueError,
     r"accepts a single key, but was given a key array of shape \(2, 2\)"),
])
def test_bad_keys(bad, exc, match):
  for fun in (rr.split, lambda k: rr.fold_in(k, 1), rr.bits, rr.uniform, rr.normal,
              lambda k: rr.gamma(k, 1.0)):
    with pytest.raises(exc, match=match):
      fun(bad)


def test_seed_and_argument_errors():
  with pytest.raises(TypeError, match="seed must be an integer"):
    rr.PRNGKey(1.5)
  with pytest.raises(TypeError, match=r"scalar seed, but was given an array of shape \(2,\)"):
    rr.PRNGKey(np.arange(2))
  with pytest.raises(TypeError, match="was given a PRNG key"):
    rr.key(rr.key(0))
  with pytest.raises(OverflowError):
    rr.PRNGKey(2**64)
  with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
    rr.PRNGKey(0, impl="philox")
  key = rr.PRNGKey(0)
  with pytest.raises(OverflowError, match="out of bounds for uint32"):
    rr.fold_in(key, -1)
  with pytest.raises(TypeError, match="fold_in accepts a scalar"):
    rr.fold_in(key, np.arange(2))
  with pytest.raises(ValueError, match="negative dimension"):
    rr.split(key, -1)
  with pytest.raises(TypeError, match="concrete integers"):
    rr.split(key, 2.0)
  with pytest.raises(ValueError, match="unsigned int dtype"):
    rr.bits(key, (2,), np.int32)
  with pytest.raises(TypeError, match="shape to end with"):
    rr.wrap_key_data(np.zeros(3, np.uint32))
  with pytest.raises(ValueError, match="Cannot specify both"):
    rr.key(0, impl="threefry2x32", dtype=rr.key(0).dtype)


def test_typed_keys_compare_elementwise_like_jax():
  # `key(3) == key(3)` was object identity (False) before; jax compares the keys' data
  import jax
  for mod in (revax, jax):
    k = mod.random.key(3)
    ks = mod.random.split(k, 3)
    assert bool(mod.random.key(3) == mod.random.key(3)) and not bool(k != mod.random.key(3))
    np.testing.assert_array_equal(np.asarray(ks != ks[0]), [False, True, True])
    assert np.asarray(ks == k).shape == (3,)
    assert bool(mod.jit(lambda a, b: a == b)(k, k))
    for other in (1, mod.random.PRNGKey(0)):
      with pytest.raises(TypeError, match="equal does not accept dtypes key<fry>"):
        k == other  # noqa: B015
    with pytest.raises(TypeError, match="unhashable"):
      hash(k)


def test_typeof_typed_keys_matches_jax():
  """revax.typeof of typed keys is their key aval, printing as JAX's (eagerly, under jit and
  vmap); raw keys stay uint32 arrays."""
  seen = {"revax": [], "jax": []}

  def record(lib, k):
    t = lib.typeof(k)
    seen[lib.__name__].append((repr(t), str(t), t.shape, str(t.dtype), t.weak_type, t.ndim,
                               t.size))
    return k

  for lib, rand in ((revax, rr), (jax, jr)):
    k = rand.key(0)
    record(lib, k)
    record(lib, rand.split(k, 3))
    record(lib, rand.split(k, 3)[1:])
    record(lib, rand.PRNGKey(0))
    lib.jit(lambda k: record(lib, k))(k)
    lib.vmap(lambda k: record(lib, k))(rand.split(k, 2))
    record(lib, rand.wrap_key_data(rand.key_data(k)))
    assert repr(k.aval) == "ShapedArray(key<fry>[])" and lib.typeof(k).str_short() == "key<fry>[]"
    assert lib.typeof(k) == lib.typeof(rand.key(1)) and lib.typeof(k) != lib.typeof(
        rand.split(k))
  assert seen["revax"] == seen["jax"]


KEY_CONVERSIONS = {  # name -> function of (lib, keys): dtype conversions of typed keys
    "astype_same": lambda lib, k: lib.numpy.astype(k, k.dtype),
    "astype_copy": lambda lib, k: lib.numpy.astype(k, k.dtype, copy=True),
    "astype_where": lambda lib, k: lib.numpy.astype(lib.numpy.where(True, k, k), k.dtype),
    "astype_jit": lambda lib, k: lib.jit(lambda k: lib.numpy.astype(k, k.dtype))(k),
    "convert_element_type": lambda lib, k: lib.lax.convert_element_type(k, k.dtype),
    "asarray": lambda lib, k: lib.numpy.asarray(k, dtype=k.dtype),
    "astype_float32": lambda lib, k: lib.numpy.astype(k, lib.numpy.float32),
    "astype_uint32": lambda lib, k: lib.numpy.astype(k, lib.numpy.uint32),
    "convert_float32": lambda lib, k: lib.lax.convert_element_type(k, lib.numpy.float32),
    "astype_other_key": lambda lib, k: lib.numpy.astype(k, lib.random.key(0, impl="rbg").dtype),
    "asarray_other_key": lambda lib, k: lib.numpy.asarray(k, lib.random.key(0, impl="rbg").dtype),
    "method": lambda lib, k: k.astype(k.dtype),
}


@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("name", sorted(KEY_CONVERSIONS))
def test_typed_key_dtype_conversions_match_jax(name, shape):
  """jnp.astype / lax.convert_element_type of typed keys: to their own dtype they are the keys
  (optax's MultiSteps casts its inner state, keys included, back to the dtypes it had); to
  anything else ValueError with JAX's message; the array method is NotImplementedError."""
  seen = []
  for lib in (revax, jax):
    keys = lib.random.key(0) if not shape else lib.random.split(lib.random.key(0), shape[0])
    try:
      out = KEY_CONVERSIONS[name](lib, keys)
      seen.append(("ok", str(out.dtype), out.shape,
                   np.asarray(lib.random.key_data(out)).tolist()))
    except Exception as e:  # noqa: BLE001  (the type and message are compared)
      seen.append((type(e).__name__, str(e).split(" e.g.")[0]))
  assert seen[0] == seen[1]


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg", "unsafe_rbg"])
def test_key_sizes_match_jax(impl):
  """itemsize / nbytes of typed keys and their dtype (flax's nnx repr sums parameter bytes)."""
  seen = []
  for lib in (revax, jax):
    k = lib.random.key(0, impl=impl)
    ks = lib.random.split(k, 3)
    seen.append((k.dtype.itemsize, k.itemsize, k.nbytes, ks.nbytes))
  assert seen[0] == seen[1]
