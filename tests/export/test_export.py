"""revax.export and serialized executables: round trips (in this process and a fresh one), calls
eagerly, under jit and under grad (through the serialized VJP), and the errors for bad bytes,
versions and arguments."""
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import revax
import revax.numpy as jnp
from revax import export
from revax.experimental import serialize_executable
from tests.child_env import child_env
from tests.platform_tolerances import allclose_tol

X = np.linspace(-1.0, 2.0, 6, dtype=np.float32).reshape(2, 3)


def f(x, y):
  return {"s": jnp.sin(x) * y, "m": (x @ y.T).sum()}


def _struct(a):
  return revax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype)


def test_round_trip_values_jit_and_grad():
  exp = export.export(revax.jit(f))(X, _struct(X))
  assert exp.in_avals[0].shape == (2, 3) and exp.fun_name == "f"
  assert exp.platforms == (revax.default_backend(),)  # (jax exports for its default backend)
  loaded = export.deserialize(exp.serialize(vjp_order=1))
  want = f(X, X + 1)
  for got in (loaded.call(X, X + 1), revax.jit(loaded.call)(X, X + 1)):
    np.testing.assert_allclose(got["s"], want["s"], rtol=1e-6)
    np.testing.assert_allclose(got["m"], want["m"], rtol=1e-6)
  g = revax.grad(lambda x: loaded.call(x, X)["m"] + loaded.call(x, X)["s"].sum())(X)
  g_want = revax.grad(lambda x: f(x, X)["m"] + f(x, X)["s"].sum())(X)
  np.testing.assert_allclose(g, g_want, rtol=1e-5)
  assert "func.func public @main" in loaded.mlir_module()


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_, ml_dtypes.bfloat16])
def test_dtypes_and_zero_size(dtype):
  x = np.ones((0, 3), dtype) if dtype is np.int32 else np.ones((2, 2), dtype)
  fn = revax.jit(lambda a: (a, a.shape[0]))
  with revax.enable_x64(dtype is np.float64):
    exp = export.export(fn)(x)
    loaded = export.deserialize(exp.serialize())
    out, n = loaded.call(x)
  assert np.asarray(out).dtype == np.dtype(dtype) and np.asarray(out).shape == x.shape
  assert int(n) == x.shape[0]


def test_closed_over_constants_are_embedded():
  c = np.arange(3.0, dtype=np.float32)
  loaded = export.deserialize(export.export(revax.jit(lambda x: x * c))(c).serialize())
  np.testing.assert_allclose(loaded.call(c), c * c)


def test_fresh_process_loads_and_calls(tmp_path):
  path = tmp_path / "f.revax"
  path.write_bytes(bytes(export.export(revax.jit(f))(X, X).serialize(vjp_order=1)))
  code = (f"import numpy as np, revax\nfrom revax import export\n"
          f"e = export.deserialize(open({str(path)!r}, 'rb').read())\n"
          f"x = np.linspace(-1.0, 2.0, 6, dtype=np.float32).reshape(2, 3)\n"
          f"print('OUT', float(e.call(x, x + 1)['m']), float(revax.grad(lambda v: e.call(v, x)['m'])(x).sum()))\n")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=child_env(), timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  m, gsum = map(float, out.stdout.split("OUT")[1].split())
  np.testing.assert_allclose(m, float(f(X, X + 1)["m"]), rtol=1e-5)
  np.testing.assert_allclose(gsum, float(revax.grad(lambda v: f(v, X)["m"])(X).sum()), rtol=1e-5)


def test_errors():
  exp = export.export(revax.jit(f))(X, X)
  with pytest.raises(ValueError, match="Shape mismatch"):
    exp.call(np.ones((3, 3), np.float32), X)
  with pytest.raises(ValueError, match="Dtype mismatch"):
    exp.call(X.astype(np.int32), X)
  with pytest.raises(ValueError, match="pytree structure"):
    exp.call(X)
  with pytest.raises(ValueError, match="must be the result of `jit`"):
    export.export(f)
  with pytest.raises(ValueError, match="bad magic"):
    export.deserialize(b"not an export at all")
  data = bytearray(exp.serialize())
  data[8] = 99  # the format version
  with pytest.raises(ValueError, match="format version 99 is not supported"):
    export.deserialize(bytes(data))
  with pytest.raises(ValueError, match="No VJP"):
    export.deserialize(exp.serialize()).vjp()
  with pytest.raises(NotImplementedError, match="vmap"):
    revax.vmap(export.deserialize(exp.serialize()).call)(np.stack([X, X]), np.stack([X, X]))


def test_serialize_executable_round_trip():
  c = np.float32(3.0)
  compiled = revax.jit(lambda x: jnp.tanh(x) * c).lower(X).compile()
  payload, in_tree, out_tree = serialize_executable.serialize(compiled)
  loaded = serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
  np.testing.assert_allclose(loaded(X), np.tanh(X) * 3, **allclose_tol(rtol=1e-6))
  again = serialize_executable.deserialize_and_load(compiled.serialize(), in_tree, out_tree)
  np.testing.assert_allclose(again(X), np.tanh(X) * 3, **allclose_tol(rtol=1e-6))
  with pytest.raises(ValueError, match="not a serialized revax executable"):
    serialize_executable.deserialize_and_load(b"junk", in_tree, out_tree)
  # arguments committed to a device (the placement rule reads which arguments the program uses:
  # a loaded program has no jaxpr to say, and every argument counts)
  committed = revax.device_put(X, revax.devices()[0])
  np.testing.assert_allclose(loaded(committed), np.tanh(X) * 3, **allclose_tol(rtol=1e-6))
