"""Child of tests/lax/test_linalg_lapack.py: jitted eigh, svd and lu checked against NumPy in a
fresh process, either with REVAX_LAPACK=0 (`fallback`: the lax algorithms) or over a 4-device
mesh (`mesh`: the LAPACK custom calls inside a partitioned program, on replicated and on
batch-sharded operands; first, an exported program that calls LAPACK, deserialized). Prints
whether the lowered programs call LAPACK, then CHILD OK."""
import sys

import numpy as np

import revax
import revax.numpy as jnp
from revax.sharding import NamedSharding, PartitionSpec as P


def check(x):
  a = np.asarray(x)
  w, v = revax.jit(jnp.linalg.eigh)(x)
  wn = np.linalg.eigh(a)[0]
  np.testing.assert_allclose(np.asarray(w), wn, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(np.asarray(v) * np.asarray(w)[..., None, :],
                             a @ np.asarray(v), rtol=1e-3, atol=1e-3)
  u, s, vh = revax.jit(jnp.linalg.svd)(x)
  np.testing.assert_allclose(np.asarray(s), np.linalg.svd(a)[1], rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose((np.asarray(u) * np.asarray(s)[..., None, :]) @ np.asarray(vh), a,
                             rtol=1e-3, atol=1e-3)
  sol = revax.jit(jnp.linalg.solve)(x, x)
  np.testing.assert_allclose(np.asarray(sol), np.broadcast_to(np.eye(a.shape[-1]), a.shape),
                             rtol=1e-3, atol=1e-3)
  text = revax.jit(jnp.linalg.eigh).lower(x).as_text()
  return "revax_lapack_syevd" in text


def call_exported(path):
  """Run an exported program that calls LAPACK: this process has lowered nothing, so the
  handlers must have been registered when the backend started."""
  from revax import export
  with open(path, "rb") as f:
    exp = export.deserialize(f.read())
  v, w = exp.call(np.diag(np.array([3., 1., 2.], np.float32)))
  np.testing.assert_allclose(np.asarray(w), [1., 2., 3.])


def main(mode, exported=None):
  if exported:
    call_exported(exported)
  rng = np.random.default_rng(0)
  a = rng.standard_normal((8, 6, 6)).astype(np.float32)
  a = a + np.swapaxes(a, -1, -2) + 12 * np.eye(6, dtype=np.float32)
  if mode == "fallback":
    calls = check(a)
  else:
    assert len(revax.devices()) == 4
    mesh = revax.make_mesh((4,), ("x",))
    calls = check(revax.device_put(a, NamedSharding(mesh, P())))
    assert check(revax.device_put(a, NamedSharding(mesh, P("x")))) == calls
  print(f"lapack: {calls}")
  print("CHILD OK")


if __name__ == "__main__":
  main(*sys.argv[1:])
