"""The jaxprs of revax.random's samplers against jax 0.10.2's, live: traced with typed keys, a
sampler's jit takes `key<fry>[]` and draws with the random_bits primitive (uniform, bernoulli),
normal nests jit[_normal] -> jit[_normal_real] -> jit[_uniform] and applies the erf_inv
primitive, both under make_jaxpr and under `jit(f).trace(key)`, whose jaxpr types key
arguments and results as keys. Every jaxpr is compared with jax's as text."""
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

import revax
import revax.numpy as rnp
import revax.random as rr
from revax._src.core.typecheck import check_jaxpr
from revax._src.lax import prng_keys
from revax.extend.core import jaxpr_as_fun
from tests.random.test_key_primitives import _text

def _lib(lib):
  return (lib.random, jnp if lib is jax else rnp)


# (name, sampler of (random module, numpy module, key), which key)
SAMPLERS = [
    ("bits", lambda r, n, k: r.bits(k, (2,)), "typed"),
    ("uniform", lambda r, n, k: r.uniform(k, (2,)), "typed"),
    ("uniform_raw", lambda r, n, k: r.uniform(k, (2,)), "raw"),
    ("uniform_bounds", lambda r, n, k: r.uniform(k, (2, 3), minval=n.arange(3.0), maxval=5.0),
     "typed"),
    ("uniform_f16", lambda r, n, k: r.uniform(k, (4,), n.float16), "typed"),
    ("normal", lambda r, n, k: r.normal(k, (3,)), "typed"),
    ("normal_raw", lambda r, n, k: r.normal(k, (3,)), "raw"),
    ("bernoulli", lambda r, n, k: r.bernoulli(k, 0.3, (3,)), "typed"),
    ("bernoulli_p", lambda r, n, k: r.bernoulli(k, n.full((3,), 0.25)), "typed"),
    ("normal_rbg", lambda r, n, k: r.normal(k, (3,)), "rbg"),
]


def _key(r, which):
  return {"typed": r.key(7), "raw": r.PRNGKey(7), "rbg": r.key(7, impl="rbg")}[which]


@pytest.mark.parametrize("name, fn, which", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_sampler_make_jaxpr_is_jax_s(name, fn, which):
  ours = revax.make_jaxpr(lambda k: fn(*_lib(revax), k))(_key(rr, which))
  theirs = jax.make_jaxpr(lambda k: fn(*_lib(jax), k))(_key(jr, which))
  check_jaxpr(ours.jaxpr)
  assert _text(ours) == _text(theirs)


@pytest.mark.parametrize("name, fn, which", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_sampler_jit_trace_is_jax_s(name, fn, which):
  """Under `jit(f).trace(key)` too: the key argument typed as a key, the sampler's jit taking
  it (revax compiles the same program over the key's data)."""
  ours = revax.jit(lambda k: fn(*_lib(revax), k)).trace(_key(rr, which)).jaxpr
  theirs = jax.jit(lambda k: fn(*_lib(jax), k)).trace(_key(jr, which)).jaxpr
  check_jaxpr(ours.jaxpr)
  assert _text(ours) == _text(theirs)


# key functions under jit().trace: the same text as jax's
KEY_FUNCTIONS = [
    ("split", lambda r: lambda k: r.split(k), "typed"),
    ("split_shape", lambda r: lambda k: r.split(k, (2, 3)), "typed"),
    ("fold_in", lambda r: lambda k: r.fold_in(k, 3), "typed"),
    ("bits", lambda r: lambda k: r.bits(k, (2,)), "typed"),
    ("identity", lambda r: lambda k: k, "typed"),
    ("key_data", lambda r: lambda k: r.key_data(k), "typed"),
    ("two_keys", lambda r: lambda k: (k, r.fold_in(k, 1)), "typed"),
    ("split_raw", lambda r: lambda k: r.split(k), "raw"),
    ("seed", lambda r: lambda s: r.key(s), "seed"),
    ("split_rbg", lambda r: lambda k: r.split(k), "rbg"),
]


@pytest.mark.parametrize("name, fn, which", KEY_FUNCTIONS, ids=[k[0] for k in KEY_FUNCTIONS])
def test_key_function_jit_trace_text_is_jax_s(name, fn, which):
  arg = (lambda r: 7) if which == "seed" else (lambda r: _key(r, which))
  traced = revax.jit(fn(rr)).trace(arg(rr))
  check_jaxpr(traced.jaxpr.jaxpr)
  theirs = jax.jit(fn(jr)).trace(arg(jr)).jaxpr
  assert _text(traced.jaxpr) == _text(theirs)
  assert _text(traced.lower().jaxpr) == _text(theirs)


def test_traced_key_jaxpr_compiles_to_the_same_values():
  """The jaxpr jit().trace reports (typed keys) computes what the jitted function does."""
  f = lambda k: (rr.split(k), rr.normal(rr.fold_in(k, 2), (3,)))
  traced = revax.jit(f).trace(rr.key(4))
  keys, draws = revax.jit(f)(rr.key(4))
  key = prng_keys.random_wrap(rr.key_data(rr.key(4)), impl=rr.key(4)._impl)  # (concrete keys)
  via_jaxpr = jaxpr_as_fun(traced.jaxpr)(key)
  assert str(via_jaxpr[0].aval) == "key<fry>[2]"
  np.testing.assert_array_equal(via_jaxpr[0].data, rr.key_data(keys))
  np.testing.assert_array_equal(via_jaxpr[1], draws)


def test_compiled_erf_inv_is_jaxlib_s():
  """float32 erf_inv compiled draws jaxlib's values bit for bit (normal's erf_inv primitive)."""
  x = np.random.RandomState(0).uniform(-1, 1, 20000).astype(np.float32)
  x = np.concatenate([x, np.float32([-1, 1, 0, np.nextafter(np.float32(-1), 0), 1e-30])])
  ours = np.asarray(revax.jit(revax.lax.erf_inv)(x))
  np.testing.assert_array_equal(ours.view(np.uint32),
                                np.asarray(jax.jit(jax.lax.erf_inv)(x)).view(np.uint32))


@pytest.mark.parametrize("impl", ["threefry2x32", "unsafe_rbg"])
def test_samplers_in_an_eager_scan_draw_jax_s_values(impl):
  """A scan evaluated eagerly runs the samplers' jit equations on concrete keys."""
  def f(lib):
    def body(c, k):
      return c, (lib.random.normal(k, (2,), np.complex64), lib.random.bernoulli(k, 0.5, (3,)),
                 lib.random.uniform(k, (2,)))
    return lambda ks: lib.lax.scan(body, 0, ks)[1]
  ours = f(revax)(rr.split(rr.key(3, impl=impl), 3))
  theirs = f(jax)(jr.split(jr.key(3, impl=impl), 3))
  for a, b in zip(ours, theirs, strict=True):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
