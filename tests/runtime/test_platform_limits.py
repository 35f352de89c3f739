"""Programs a platform's compiler aborts on are refused before compiling (platform_limits.py)."""
import numpy as np
import pytest

import revax
import revax.numpy as jnp
from revax._src.interpreters import dispatch
from revax._src.runtime import platform_limits
from revax._src.runtime.client import get_backend

C128_PROGRAM = """
func.func public @main(%x: tensor<3xcomplex<f64>>) -> tensor<3xcomplex<f64>> {
  %0 = stablehlo.multiply %x, %x : tensor<3xcomplex<f64>>
  return %0 : tensor<3xcomplex<f64>>
}
"""
F64_PROGRAM = C128_PROGRAM.replace("complex<f64>", "f64")


def test_complex128_is_refused_for_a_tpu_only():
  with pytest.raises(TypeError, match="complex128.*complex64"):
    platform_limits.check_program("tpu", C128_PROGRAM.encode())
  platform_limits.check_program("cpu", C128_PROGRAM.encode())
  platform_limits.check_program("tpu", F64_PROGRAM.encode())  # float64 compiles on a TPU


def test_backend_compile_asks_before_compiling(monkeypatch):
  """The check sits in Backend.compile: a backend of platform 'tpu' refuses the program (the
  CPU backend stands in for one here) and nothing reaches the compiler."""
  backend = get_backend("cpu")
  compiled = []
  monkeypatch.setattr(type(backend), "_compile_or_load",
                      lambda self, *a, **k: compiled.append(a) or pytest.fail("compiled"))
  monkeypatch.setattr(backend, "platform", "tpu")
  with pytest.raises(TypeError, match="complex128"):
    backend.compile(C128_PROGRAM)
  assert not compiled


def test_complex128_computes_on_the_cpu():
  with revax.enable_x64(True):
    x = jnp.asarray(np.array([1 + 2j, 3j, -1.0]), device=revax.devices("cpu")[0])
    assert x.dtype == np.complex128
    np.testing.assert_allclose(np.asarray(revax.jit(lambda v: v * v)(x)),
                               np.array([1 + 2j, 3j, -1.0]) ** 2)


def test_jit_compiles_first_for_the_backend_of_its_operands(monkeypatch):
  """A jit program is compiled first for the backend its operands are on (the committed ones',
  or jax_default_device's), not the default backend's: a program only that backend compiles
  (complex128 on the CPU device beside a TPU, an FFI target of the CPU plugin) runs there."""
  seen = []
  compile_jaxpr = dispatch.compile_jaxpr

  def recording(closed, name="main", aliases=(), backend=None, option_overrides=()):
    program = compile_jaxpr(closed, name, aliases, backend, option_overrides)
    seen.append((name, backend, program.executable._backend))
    return program

  monkeypatch.setattr(dispatch, "compile_jaxpr", recording)
  cpu = revax.devices("cpu")[0]
  x = revax.device_put(np.arange(3, dtype=np.float32), cpu)
  np.testing.assert_array_equal(revax.jit(lambda v: v * 3)(x), np.arange(3) * 3)
  assert seen == [("<lambda>", cpu.client, cpu.client)]
  seen.clear()
  with revax.default_device(cpu):  # no operand on a device: jax_default_device's backend
    np.testing.assert_array_equal(revax.jit(lambda: jnp.arange(3) + 1)(), np.arange(3) + 1)
  assert seen == [("<lambda>", None, cpu.client)]
