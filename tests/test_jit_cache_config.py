"""jit's trace cache keys (static-argument types, config options, the function itself) and the
config options revax takes under JAX's names (issue 14 items 8, 9, 10, 12b; issue 16 item 6)."""
import functools
import gc
import logging
import os
import subprocess
import sys
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.child_env import child_env


def _counting(counter):
  def f(x, s):
    counter[0] += 1
    return x * s
  return f


# --- item 8: static arguments are keyed by type too ----------------------------------------------
STATICS = [2, 2.0, True, 1, np.int32(2), np.float32(2.0), 2, 2.0]


@pytest.mark.parametrize("make_x", [lambda m: m.int32(1), lambda m: m.float32(1.5)],
                         ids=["int32", "float32"])
def test_static_args_equal_values_of_different_types_retrace_like_jax(make_x):
  counts = {"revax": [0], "jax": [0]}
  fr = revax.jit(_counting(counts["revax"]), static_argnums=1)
  fj = jax.jit(_counting(counts["jax"]), static_argnums=1)
  for s in STATICS:
    r, j = fr(make_x(rnp), s), fj(make_x(jnp), s)
    assert r.dtype == j.dtype, (s, r.dtype, j.dtype)
    assert r.weak_type == j.weak_type, s
    np.testing.assert_array_equal(np.asarray(r), np.asarray(j))
    assert counts["revax"][0] == counts["jax"][0], s
  assert counts["revax"][0] == 6  # the last two repeat earlier signatures


def test_static_argnames_keyed_by_type():
  f = revax.jit(lambda x, s: x * s, static_argnames="s")
  assert f(rnp.int32(3), s=2).dtype == np.int32
  assert f(rnp.int32(3), s=2.0).dtype == np.float32


def test_unhashable_static_argument_is_a_value_error_like_jax():
  fr = revax.jit(lambda x, s: x, static_argnums=1)
  fj = jax.jit(lambda x, s: x, static_argnums=1)
  with pytest.raises(ValueError, match="Non-hashable static arguments"):
    fj(1.0, [1])
  with pytest.raises(ValueError, match="Non-hashable static arguments"):
    fr(1.0, [1])
  with pytest.raises(ValueError, match="Non-hashable static arguments"):
    fr(1.0, (1, [2]))


# --- item 9: config options that change tracing are part of the key ------------------------------
def test_toggling_x64_retraces():
  f = revax.jit(lambda x: x + 1)
  assert f(1.0).dtype == np.float32
  with revax.enable_x64(True):
    assert f(1.0).dtype == np.float64
    assert rnp.asarray(f(np.arange(3))).dtype == np.int64
  assert f(1.0).dtype == np.float32  # the first trace again, not the x64 one
  assert f(np.arange(3)).dtype == np.int32


def test_toggling_x64_retraces_with_static_args_and_pytrees():
  f = revax.jit(lambda d, s: d["a"] * s, static_argnums=1)
  assert f({"a": 1.0}, 2).dtype == np.float32
  revax.config.update("jax_enable_x64", True)
  try:
    assert f({"a": 1.0}, 2).dtype == np.float64
  finally:
    revax.config.update("jax_enable_x64", False)
  assert f({"a": 1.0}, 2).dtype == np.float32


def test_enable_checks_retraces_and_type_checks():
  calls = [0]

  def f(x):
    calls[0] += 1
    return rnp.sin(x)

  g = revax.jit(f)
  g(1.0)
  with revax.enable_checks(True):
    g(1.0)
  assert calls[0] == 2


# --- item 12b: the cache is shared per function ------------------------------------------------
def test_jit_built_twice_for_one_function_traces_once_like_jax():
  def run(jit, m, counter):
    def f(x):
      counter[0] += 1
      return m.sin(x) * 2
    x = m.ones(3)
    jit(f)(x)
    jit(f)(x)  # the inline `jax.jit(f)(x)` idiom: same function, cached
    for _ in range(3):
      jit(f)(x)
    for _ in range(3):  # a new lambda each time: a new function, a new trace (in JAX too)
      jit(lambda y: m.cos(y))(x)
    for i in range(2):  # jit of a new partial each time retraces too
      jit(functools.partial(lambda y, k: y * k, k=i))(x)
    return counter[0]

  r, j = [0], [0]
  assert run(revax.jit, rnp, r) == run(jax.jit, jnp, j) == 1


def test_shared_cache_separates_jit_options():
  def f(x, n):
    return x * n
  a = revax.jit(f, static_argnums=1)
  b = revax.jit(f)
  assert a(rnp.ones(2), 3).dtype == np.float32
  assert b(rnp.ones(2), rnp.int32(3)).dtype == np.float32
  assert a._cache_size() == 1 and b._cache_size() == 1


def test_shared_cache_is_held_weakly():
  from revax._src import trace_cache

  def f(x):
    return x + 1
  revax.jit(f)(1.0)
  assert f in trace_cache._trace_caches
  ref = weakref.ref(f)
  del f
  gc.collect()
  assert ref() is None  # the cache did not keep the function (or its traces) alive


def test_unhashable_callable_gets_a_private_cache():
  class F:
    __hash__ = None

    def __call__(self, x):
      return x * 2

  assert float(revax.jit(F())(2.0)) == 4.0


# --- item 10: debug_nans / debug_infs, eager and jit -------------------------------------------
@pytest.fixture
def debug_flag():
  flags = []

  def set_(name):
    revax.config.update(name, True)
    jax.config.update(name, True)
    flags.append(name)
  yield set_
  for name in flags:
    revax.config.update(name, False)
    jax.config.update(name, False)


def _fpe_message(fn):
  with pytest.raises(FloatingPointError) as info:
    fn()
  return str(info.value)


# The debug_nans/debug_infs tests flip process-wide flags of both libraries; in a shared xdist
# worker, after a few thousand other tests, single checks of one library or the other did not
# fire (different ones in different full runs; never in isolation or in this file alone, cause
# not found). They run together in a fresh process instead (test_debug_checks_in_a_fresh_process).
_FRESH = os.environ.get("REVAX_FRESH_PROCESS_TESTS") == "1"
fresh_process_only = pytest.mark.skipif(
    not _FRESH, reason="runs in a fresh process: test_debug_checks_in_a_fresh_process")


def test_debug_checks_in_a_fresh_process():
  if _FRESH:
    pytest.skip("this is the fresh process")
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  out = subprocess.run(
      [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
       "-o", "addopts=", os.path.abspath(__file__), "-k", "debug_nans or debug_infs"],
      cwd=root, env=child_env(REVAX_FRESH_PROCESS_TESTS="1"), capture_output=True,
      text=True, timeout=600)
  assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
  assert "5 passed" in out.stdout, out.stdout[-2000:]



@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@fresh_process_only
def test_debug_nans_eager_names_the_primitive(debug_flag):
  debug_flag("jax_debug_nans")
  for m in (rnp, jnp):
    assert "invalid value (nan) encountered in log" in _fpe_message(lambda: m.log(-1.0))
    assert "encountered in div" in _fpe_message(lambda: m.zeros(2) / 0.0)
  # infs are not checked by debug_nans; values without NaN pass
  assert float(rnp.log(0.0)) == -np.inf
  np.testing.assert_allclose(rnp.sqrt(rnp.arange(3.0)), np.sqrt(np.arange(3.0)), rtol=1e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@fresh_process_only
def test_debug_nans_jit_reruns_op_by_op(debug_flag):
  debug_flag("jax_debug_nans")
  for jit, m in ((revax.jit, rnp), (jax.jit, jnp)):
    f = jit(lambda x: m.sqrt(x) * 2)
    # revax names the primitive that made the NaN; jax's de-optimized re-run does too in a fresh
    # process, but names `mul` in some process states (seen in a full parallel run), so for jax
    # only the kind of error is checked
    want = "invalid value (nan) encountered in " + ("sqrt" if jit is revax.jit else "")
    assert want in _fpe_message(lambda: f(-1.0))
    # a NaN inside the program that does not reach an output is not reported (as in JAX)
    g = jit(lambda x: m.where(x < 0, 0.0, m.log(x)))
    assert float(g(-1.0)) == 0.0
    assert float(f(4.0)) == 4.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@fresh_process_only
def test_debug_infs(debug_flag):
  debug_flag("jax_debug_infs")
  for jit, m in ((revax.jit, rnp), (jax.jit, jnp)):
    assert "invalid value (inf) encountered in log" in _fpe_message(lambda: m.log(0.0))
    assert "(inf) encountered in log" in _fpe_message(lambda: jit(m.log)(0.0))
  assert np.isnan(float(rnp.log(-1.0)))  # NaNs are debug_nans' business


@fresh_process_only
def test_debug_nans_context_manager_and_retrace():
  f = revax.jit(lambda x: rnp.log(x))
  assert np.isnan(float(f(-1.0)))
  with revax.debug_nans(True):
    with pytest.raises(FloatingPointError, match="nan"):
      f(-1.0)
  assert np.isnan(float(f(-1.0)))


# --- disable_jit ---------------------------------------------------------------------------------
def test_disable_jit_runs_python_like_jax():
  for jit, dj, m in ((revax.jit, revax.disable_jit, rnp), (jax.jit, jax.disable_jit, jnp)):
    seen = []

    @jit
    def f(x):
      seen.append(type(x).__name__)
      if x > 0:  # Python control flow works without jit
        return x * 2
      return -x
    with dj():
      assert float(f(m.float32(3.0))) == 6.0
      assert float(f(m.float32(-3.0))) == 3.0
    assert "Tracer" not in "".join(seen)
  assert revax.config.jax_disable_jit is False
  revax.config.update("jax_disable_jit", True)
  try:
    assert revax.config.disable_jit is True
    assert float(revax.jit(lambda x: x if x > 0 else -x)(-2.0)) == 2.0
  finally:
    revax.config.update("jax_disable_jit", False)


# --- option names and values ---------------------------------------------------------------------
def test_jax_prefixed_names_and_reads():
  assert revax.config.jax_enable_x64 is False
  assert revax.config.read("jax_enable_x64") is False
  assert revax.config.read("jax_enable_x64") == jax.config.read("jax_enable_x64")
  for name in ("jax_traceback_filtering", "jax_default_matmul_precision",
               "jax_numpy_rank_promotion", "jax_numpy_dtype_promotion", "jax_default_prng_impl",
               "jax_debug_nans", "jax_debug_infs", "jax_disable_jit", "jax_enable_checks",
               "jax_log_compiles", "jax_threefry_partitionable"):
    assert getattr(revax.config, name) == getattr(jax.config, name), name
  assert revax.enable_x64.value is False and revax.debug_nans.value is False


def test_unknown_option_is_an_attribute_error_like_jax():
  for cfg in (revax.config, jax.config):
    with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such_flag"):
      cfg.update("jax_no_such_flag", True)
  with pytest.raises(AttributeError):
    revax.config.read("jax_no_such_flag")


@pytest.mark.parametrize("name,value", [
    ("jax_numpy_rank_promotion", "bad"), ("jax_default_matmul_precision", "bad"),
    ("jax_traceback_filtering", "bad")])
def test_invalid_values_are_value_errors_like_jax(name, value):
  with pytest.raises(ValueError):
    jax.config.update(name, value)
  with pytest.raises(ValueError, match=name):
    revax.config.update(name, value)
  assert revax.config.read(name) == getattr(jax.config, name)


def test_bool_options_take_bools():
  with pytest.raises(ValueError, match="jax_enable_x64 takes a bool"):
    revax.config.update("jax_enable_x64", "maybe")
  with pytest.raises(ValueError, match="jax_debug_nans takes a bool"):
    revax.config.update("jax_debug_nans", 2)
  assert revax.config.enable_x64 is False


@pytest.mark.parametrize("name,value", [
    ("jax_default_prng_impl", "philox4x32"), ("jax_platforms", "cuda"),
    ("jax_platform_name", "rocm"),
    ("jax_debug_key_reuse", True),
    ("jax_threefry_partitionable", False)])
def test_values_revax_cannot_honour_are_refused(name, value):
  before = revax.config.read(name)
  with pytest.raises(ValueError, match="not supported by revax"):
    revax.config.update(name, value)
  assert revax.config.read(name) == before


@pytest.mark.parametrize("name,value", [
    ("jax_platforms", "cpu"), ("jax_platform_name", "cpu"), ("jax_platforms", "cuda,cpu"),
    ("jax_default_matmul_precision", "highest"), ("jax_default_matmul_precision", "float32"),
    ("jax_numpy_rank_promotion", "allow"), ("jax_default_prng_impl", "threefry2x32"),
    ("jax_check_tracer_leaks", False), ("jax_check_tracer_leaks", True),
    ("jax_traceback_filtering", "off")])
def test_values_that_change_nothing_here_are_accepted(name, value):
  before = revax.config.read(name)
  revax.config.update(name, value)
  try:
    assert revax.config.read(name) == value
    np.testing.assert_allclose(revax.jit(lambda a, b: a @ b)(np.eye(2, dtype=np.float32),
                                                             np.ones(2, np.float32)), [1, 1])
  finally:
    revax.config.update(name, before)


def test_log_compiles(caplog):
  with revax.log_compiles(True), caplog.at_level(logging.WARNING, logger="revax"):
    revax.jit(lambda x: x * 3 + 1)(np.ones(5, np.float32))
  assert any("Compiling" in r.message and "f32[5]" in r.message for r in caplog.records)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@fresh_process_only
def test_debug_nans_checks_operators_whose_host_plan_was_cached_before(debug_flag):
  """`x * y` on host Arrays runs a cached single-primitive plan; one cached before debug_nans
  was turned on must not skip the check afterwards."""
  inf, zero = rnp.asarray(np.float32(np.inf)), rnp.asarray(np.float32(0.0))
  assert np.isnan(float(inf * zero))  # caches the plan for f32[] * f32[]
  debug_flag("jax_debug_nans")
  assert "invalid value (nan) encountered in mul" in _fpe_message(lambda: inf * zero)
