"""Programs a platform's compiler aborts on are refused before compiling (platform_limits.py)."""
import numpy as np
import pytest

import revax
import revax.numpy as jnp
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
