"""Top-level names beyond the transformations (jacobian, named scopes, ensure_compile_time_eval,
caches, live arrays, typeof, custom_gradient) and revax.dtypes / revax.typing, against jax."""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax._src.runtime import backends


def test_jacobian_matches_jax():
  f = lambda x: rnp.sin(x) * x[::-1]
  g = lambda x: jnp.sin(x) * x[::-1]
  x = np.linspace(0.1, 1.0, 4, dtype=np.float32)
  np.testing.assert_allclose(revax.jacobian(f)(x), jax.jacobian(g)(x), rtol=1e-6)


def test_named_scope_and_named_call():
  with revax.named_scope("outer"):
    assert revax.named_call(lambda x: x * 2, name="inner")(3) == 6
  with pytest.raises(TypeError, match="must be a string"):
    with revax.named_scope(3):
      pass
  f = revax.jit(revax.named_call(lambda x: rnp.sin(x)))
  np.testing.assert_allclose(f(1.0), np.sin(1.0), rtol=1e-6)


def test_ensure_compile_time_eval_computes_concrete_values_while_tracing():
  @revax.jit
  def f(x):
    with revax.ensure_compile_time_eval():
      n = int(rnp.sum(rnp.arange(4)))  # concrete inside jit
      y = x * 2  # traced: still traced
    return y * n

  assert float(f(1.0)) == 12.0
  with revax.ensure_compile_time_eval():  # outside any trace: nothing changes
    assert float(rnp.sin(0.0)) == 0.0
  g = revax.grad(lambda x: f(x))
  assert float(g(1.0)) == 12.0


def test_clear_caches_and_live_arrays():
  calls = []

  @revax.jit
  def f(x):
    calls.append(1)
    return x + 1

  f(1.0)
  f(2.0)
  assert len(calls) == 1
  revax.clear_caches()
  f(3.0)
  assert len(calls) == 2
  x = rnp.arange(5.0)
  assert any(a is x for a in revax.live_arrays())
  assert revax.live_arrays(platform="gpu-that-is-not-here") == []


def test_typeof_default_backend_float0_device():
  assert revax.typeof(rnp.ones((2, 3))).shape == (2, 3)
  assert revax.typeof(1.0).weak_type and revax.typeof(1.0).dtype == np.float32
  assert revax.default_backend() == backends.platform_order()[0]  # "cpu" unless a TPU is there
  assert revax.float0 == jax.float0
  assert isinstance(revax.devices()[0], revax.Device)
  assert "revax" in revax.print_environment_info(return_string=True)


def test_types_print_as_jax_prints_them():
  """str and repr of `typeof` (full dtype names, '~' for weak types), inside jit too."""
  values = [lambda m: m.numpy.ones((2, 3)), lambda m: 2.0, lambda m: m.numpy.int8(3),
            lambda m: m.numpy.zeros((0, 4), m.numpy.bfloat16), lambda m: m.numpy.array(True),
            lambda m: m.numpy.arange(3) * 1j]
  for make in values:
    want, got = jax.typeof(make(jax)), revax.typeof(make(revax))
    assert (str(got), repr(got)) == (str(want), repr(want))
    traced = {}

    def record(lib, key):
      def f(a):
        traced[key] = (str(lib.typeof(a)), repr(lib.typeof(a)))
        return a
      return f
    revax.jit(record(revax, "revax"))(make(revax))
    jax.jit(record(jax, "jax"))(make(jax))
    assert traced["revax"] == traced["jax"]


def test_custom_gradient_matches_jax():
  @revax.custom_gradient
  def f(x):
    return rnp.sin(x), lambda g: (g * 10.0 * x,)

  @jax.custom_gradient
  def fj(x):
    return jnp.sin(x), lambda g: (g * 10.0 * x,)

  np.testing.assert_allclose(revax.grad(f)(0.7), jax.grad(fj)(0.7), rtol=1e-6)
  np.testing.assert_allclose(f(0.7), fj(0.7), rtol=1e-6)


def test_dtypes_module_matches_jax():
  for a, b in [(np.float32, np.floating), (np.int8, np.signedinteger), (ml_dtypes.bfloat16, np.floating),
               (np.uint8, np.signedinteger), (np.float32, jax.dtypes.extended)]:
    b_r = revax.dtypes.extended if b is jax.dtypes.extended else b
    assert revax.dtypes.issubdtype(a, b_r) == jax.dtypes.issubdtype(a, b)
  kd = revax.random.key(0).dtype
  assert revax.dtypes.issubdtype(kd, revax.dtypes.prng_key)
  assert revax.dtypes.issubdtype(kd, revax.dtypes.extended)
  assert not revax.dtypes.issubdtype(kd, np.floating)
  assert revax.dtypes.canonicalize_dtype(kd, allow_extended_dtype=True) == kd
  for args in [(1, 2.0), (np.int8, 1), (np.float16, 1.0), (np.int32, np.float32)]:
    assert revax.dtypes.result_type(*args) == jax.dtypes.result_type(*args)
    assert (revax.dtypes.result_type(*args, return_weak_type_flag=True)
            == jax.dtypes.result_type(*args, return_weak_type_flag=True))
  for x in [1, 1.0, True, 1j, np.ones(2, np.int8), np.float16(1)]:
    assert revax.dtypes.scalar_type_of(x) is jax.dtypes.scalar_type_of(x)
  for d in [ml_dtypes.int4, ml_dtypes.bfloat16, np.bool_, np.complex64, np.uint16]:
    assert revax.dtypes.itemsize_bits(d) == jax.dtypes.itemsize_bits(d)
  assert revax.dtypes.canonicalize_dtype(np.float64) == jax.dtypes.canonicalize_dtype(np.float64)
  assert issubclass(revax.dtypes.TypePromotionError, ValueError)


def test_typing_annotations():
  import typing
  from revax.typing import ArrayLike, DTypeLike
  assert revax.Array in typing.get_args(ArrayLike) and float in typing.get_args(ArrayLike)
  assert np.dtype in typing.get_args(DTypeLike)


def test_py_typed_is_shipped():
  import pathlib
  import tomllib
  root = pathlib.Path(revax.__file__).parent
  assert (root / "py.typed").exists()
  meta = tomllib.loads((root.parent / "pyproject.toml").read_text())
  assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["revax"]


def test_array_type_is_abstract_as_jax_array():
  """isinstance(x, revax.Array) holds for arrays, sharded or not, tracers and typed keys, as
  isinstance(x, jax.Array) does; NumPy arrays and Python scalars are not Arrays."""
  for lib in (jax, revax):
    seen = []

    def probe(x, lib=lib, seen=seen):
      seen.append(isinstance(x, lib.Array) and isinstance(x, lib.numpy.ndarray))
      return x
    lib.jit(probe)(1.0)
    lib.grad(probe)(1.0)
    lib.vmap(probe)(lib.numpy.ones(2))
    lib.jvp(probe, (1.0,), (1.0,))
    assert seen == [True] * 4, lib
    assert isinstance(lib.numpy.ones(2), lib.Array)
    assert isinstance(lib.random.key(0), lib.Array)
    assert not isinstance(np.ones(2), lib.Array) and not isinstance(1.0, lib.Array)
    assert issubclass(type(lib.numpy.ones(2)), lib.Array)
  with pytest.raises(TypeError, match="abstract"):
    revax.Array()
