"""jit(f, compiler_options={...}): XLA options handed to XLA when the jit's program compiles, as
JAX does. Each case runs on revax and on jax and must behave alike. That the options reach XLA
is seen through XLA's own dump options (`xla_dump_to`: XLA writes the module's HLO into the
directory when, and only when, it compiles with that option)."""
import glob
import os

import numpy as np
import pytest

import jax
import revax

x = np.ones(3, np.float32)


def f(x):
  return x * 2.0 + 1.0


def _dump(directory):
  return {"xla_dump_to": str(directory), "xla_dump_hlo_as_text": True}


def _dumped(directory) -> int:
  return len(glob.glob(os.path.join(str(directory), "*before_optimizations.txt")))


@pytest.mark.parametrize("lib", [revax, jax], ids=["revax", "jax"])
def test_the_options_reach_xla_and_key_the_caches(lib, tmp_path):
  """The options reach XLA at the first call (it dumps), a second call compiles nothing; a jit
  of the same function without options, or with other options, is another program (the jit
  caches key on the options), and neither takes the other's."""
  fun = lambda x: x * 3.0 - 1.0  # noqa: E731  (a function of this test only: fresh caches)
  np.testing.assert_array_equal(lib.jit(fun)(x), x * 3.0 - 1.0)  # compiled without options
  a, b = tmp_path / "a", tmp_path / "b"
  out = lib.jit(fun, compiler_options=_dump(a))(x)
  np.testing.assert_array_equal(out, x * 3.0 - 1.0)
  assert _dumped(a) == 1
  lib.jit(fun, compiler_options=_dump(a))(x)  # the same options: cached, no compile
  assert _dumped(a) == 1
  lib.jit(fun, compiler_options=_dump(b))(x)
  assert _dumped(a) == 1 and _dumped(b) == 1
  lib.jit(fun)(x)
  assert _dumped(a) == 1 and _dumped(b) == 1


@pytest.mark.parametrize("lib", [revax, jax], ids=["revax", "jax"])
def test_an_unknown_option_is_xlas_error_at_the_first_call(lib):
  jitted = lib.jit(f, compiler_options={"xla_nope": True})  # nothing checked yet
  jitted.lower(x).as_text()  # nor when lowering
  assert jitted.eval_shape(x).shape == (3,) and lib.eval_shape(jitted, x).shape == (3,)
  for call in (lambda: jitted(x), lambda: jitted.lower(x).compile(),
               lambda: lib.vmap(jitted)(x), lambda: lib.jvp(jitted, (x,), (x,))):
    with pytest.raises(lib.errors.JaxRuntimeError, match="No such compile option: 'xla_nope'"):
      call()
  # a valid option of another backend is accepted and ignored, as XLA does
  np.testing.assert_array_equal(lib.jit(f, compiler_options={"xla_gpu_autotune_level": "0"})(x),
                                f(x))


NESTED = {  # a jit with options staged into another program: refused (only top-level jits)
    "jit": lambda lib, g: lib.jit(lambda y: g(y))(x),
    "make_jaxpr": lambda lib, g: lib.make_jaxpr(g)(x),
    "grad": lambda lib, g: lib.grad(lambda y: g(y).sum())(x),
    "checkpoint": lambda lib, g: lib.grad(lib.checkpoint(lambda y: g(y).sum()))(x),
    "cond": lambda lib, g: lib.lax.cond(True, g, f, x),
    "scan": lambda lib, g: lib.lax.scan(lambda c, y: (c, g(y)), 0.0, x[:, None]),
}


@pytest.mark.parametrize("name", sorted(NESTED))
@pytest.mark.parametrize("lib", [revax, jax], ids=["revax", "jax"])
def test_a_staged_jit_with_options_is_refused(lib, name):
  g = lib.jit(f, compiler_options={"xla_cpu_enable_fast_math": True})
  with pytest.raises(ValueError, match=r"`compiler_options` can only be passed to top-level "
                     r"`jax.jit`. Got compiler_options=\{'xla_cpu_enable_fast_math': True\} "
                     r"specified on a nested jit with name: (jvp_)?f"):
    NESTED[name](lib, g)


@pytest.mark.parametrize("lib", [revax, jax], ids=["revax", "jax"])
def test_vmap_and_jvp_run_with_the_options(lib, tmp_path):
  g = lib.jit(f, compiler_options=_dump(tmp_path))
  np.testing.assert_array_equal(lib.vmap(g)(np.ones((2, 3), np.float32)), np.full((2, 3), 3.0))
  assert _dumped(tmp_path) == 1
  primal, tangent = lib.jvp(g, (x,), (x,))
  np.testing.assert_array_equal(tangent, 2 * x)
  assert _dumped(tmp_path) == 2


@pytest.mark.parametrize("lib", [revax, jax], ids=["revax", "jax"])
def test_compile_adds_its_options_to_the_jits(lib, tmp_path):
  """Lowered.compile() compiles with the jit's options, and compile(options) with both."""
  a, b = tmp_path / "a", tmp_path / "b"
  lowered = lib.jit(f, compiler_options=_dump(a)).lower(x)
  np.testing.assert_array_equal(lowered.compile()(x), f(x))
  assert _dumped(a) == 1
  np.testing.assert_array_equal(lowered.compile({"xla_dump_to": str(b)})(x), f(x))
  assert _dumped(b) == 1
  with pytest.raises(lib.errors.JaxRuntimeError, match="No such compile option"):
    lib.jit(f, compiler_options={"xla_nope": 1}).lower(x).compile({"xla_dump_to": str(b)})


@pytest.mark.parametrize("lib", [revax, jax], ids=["revax", "jax"])
def test_bad_options(lib):
  """Not a dict: AttributeError from `.items()`; an unhashable value: ValueError (the caches
  are keyed by the options); both at jit()."""
  with pytest.raises(AttributeError, match="items"):
    lib.jit(f, compiler_options=[("xla_cpu_enable_fast_math", True)])
  with pytest.raises(ValueError, match="Hashing global cache key lead to an exception"):
    lib.jit(f, compiler_options={"xla_backend_optimization_level": [1]})
  np.testing.assert_array_equal(lib.jit(f, compiler_options=None)(x), f(x))
  np.testing.assert_array_equal(lib.jit(f, compiler_options={})(x), f(x))


def test_disable_jit_ignores_the_options():
  for lib in (revax, jax):
    with lib.disable_jit():
      np.testing.assert_array_equal(lib.jit(f, compiler_options={"xla_nope": 1})(x), f(x))


def test_options_with_shardings_are_refused_by_name():
  """revax hands XLA options to one-device programs only (JAX also to programs over a mesh)."""
  sharding = revax.sharding.SingleDeviceSharding(revax.devices()[0])
  with pytest.raises(NotImplementedError, match="one-device programs only"):
    revax.jit(f, in_shardings=sharding, compiler_options={"xla_cpu_enable_fast_math": True})
