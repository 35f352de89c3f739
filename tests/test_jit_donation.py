"""Buffer donation on one device (`jit(..., donate_argnums=...)`), against jax 0.10.2.

A donated argument whose buffer XLA reuses for a result is deleted by the call; one that no
result can take is named in JAX's warning and kept; the same array donated and passed again is
JAX's JaxRuntimeError before anything runs; and values never change.
"""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.platform_tolerances import ON_TPU

X4 = np.arange(4, dtype=np.float32)


def _both(fun, **jit_kwargs):
  return revax.jit(fun, **jit_kwargs), jax.jit(fun, **jit_kwargs)


def test_a_donated_argument_a_result_can_take_is_deleted():
  rf, jf = _both(lambda a, b: (a * 2 + b, b - 1), donate_argnums=0)
  ra, rb = revax.device_put(X4), revax.device_put(X4 + 1)
  ja, jb = jax.device_put(X4), jax.device_put(X4 + 1)
  rout, jout = rf(ra, rb), jf(ja, jb)
  for r, j in zip(rout, jout, strict=True):
    np.testing.assert_array_equal(r, j)
  assert ra.is_deleted() and ja.is_deleted()
  assert not rb.is_deleted() and not jb.is_deleted()
  with pytest.raises(RuntimeError, match="deleted"):
    np.asarray(ra)
  with pytest.raises(RuntimeError, match="deleted"):
    rf(ra, rb)
  # jax's jit call finds a donated buffer at Execute (ValueError); revax's, like any use of a
  # deleted Array, raises the RuntimeError that `np.asarray` of it raises in both
  with pytest.raises(ValueError, match="deleted or donated"):
    jf(ja, jb)
  # the program aliases the parameter to the result, as jax's does
  assert "tf.aliasing_output = 0" in rf.lower(X4, X4).as_text()
  assert "tf.aliasing_output = 0" in jf.lower(X4, X4).as_text()
  aliased = rf.lower(X4, X4).compile().memory_analysis().alias_size_in_bytes
  # (a TPU's buffers are padded to its tiles: 512 bytes for these 16)
  assert aliased >= X4.nbytes if ON_TPU else aliased == X4.nbytes


def test_a_donation_no_result_can_take_warns_and_keeps_the_argument():
  rf, jf = _both(lambda a: a.sum(), donate_argnums=0)
  ra, ja = revax.device_put(X4), jax.device_put(X4)
  with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: float32\[4\]"):
    r = rf(ra)
  with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: float32\[4\]"):
    j = jf(ja)
  assert float(r) == float(j)
  assert not ra.is_deleted() and not ja.is_deleted()


def test_donating_an_array_also_passed_again_is_an_error():
  rf, jf = _both(lambda a, b: a + b, donate_argnums=0)
  ra, ja = revax.device_put(X4), jax.device_put(X4)
  with pytest.raises(jax.errors.JaxRuntimeError, match="donated in the same call"):
    jf(ja, ja)
  with pytest.raises(revax.errors.JaxRuntimeError, match="donated in the same call"):
    rf(ra, ra)
  np.testing.assert_array_equal(ra, X4)  # nothing ran: the array is intact


def _step(lib):
  def step(p, x):
    def loss(q):
      return ((x @ q["w"] + q["b"]) ** 2).sum()
    g = lib.grad(loss)(p)
    return {k: p[k] - 0.1 * g[k] for k in p}, loss(p)
  return step


def test_a_training_loop_donating_its_parameters_matches_jax():
  rng = np.random.default_rng(0)
  p0 = {"w": rng.standard_normal((3, 3)).astype(np.float32), "b": np.zeros(3, np.float32)}
  x = rng.standard_normal((5, 3)).astype(np.float32)
  results = []
  for lib, np_mod in ((revax, rnp), (jax, jnp)):
    f = lib.jit(_step(lib), donate_argnums=0)
    p, xs = lib.device_put(p0), lib.device_put(x)
    first = p
    losses = []
    for _ in range(3):
      p, loss = f(p, xs)
      losses.append(float(loss))
    assert first["w"].is_deleted() and first["b"].is_deleted()
    results.append((losses, {k: np.asarray(v) for k, v in p.items()}))
  (rl, rp), (jl, jp) = results
  np.testing.assert_allclose(rl, jl, rtol=1e-6)
  for k in rp:
    np.testing.assert_allclose(rp[k], jp[k], rtol=1e-6)


def test_host_values_and_compiled_calls():
  # a NumPy argument is copied to the device: donating it leaves the host array alone
  host = X4.copy()
  f = revax.jit(lambda a: a + 1, donate_argnums=0)
  np.testing.assert_array_equal(f(host), X4 + 1)
  np.testing.assert_array_equal(host, X4)
  # `lower(...).compile()` donates too
  compiled = f.lower(X4).compile()
  a = revax.device_put(X4)
  np.testing.assert_array_equal(compiled(a), X4 + 1)
  assert a.is_deleted()


def test_no_donation_without_donate_argnums():
  f = revax.jit(lambda a: a * 3)
  a = revax.device_put(X4)
  for _ in range(3):
    np.testing.assert_array_equal(f(a), X4 * 3)
  assert not a.is_deleted()
  assert "aliasing_output" not in f.lower(X4).as_text()
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    revax.jit(lambda a: a * 3, donate_argnums=())(a)
