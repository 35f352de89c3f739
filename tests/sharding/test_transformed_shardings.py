"""A jitted function's own in_shardings/out_shardings under grad/jvp/vjp/linearize/vmap and
inside an outer jit: checked against jax with 4 CPU devices in a subprocess
(transformed_child.py); here, in the suite's single-device process, the same transformations of
a jit with 1-device shardings."""

import numpy as np

import revax
import revax.numpy as rnp
from revax import P
from revax.sharding import NamedSharding

from tests.sharding.children import run_child


def test_four_devices_against_jax():
  run_child("transformed_child.py", "TRANSFORMED_OK")


def test_one_device_shardings_under_transformations():
  mesh = revax.make_mesh((1,), ("x",))
  s = NamedSharding(mesh, P("x"))
  f = revax.jit(lambda v: rnp.sin(v) * 2, in_shardings=s, out_shardings=s)
  x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
  np.testing.assert_allclose(revax.grad(lambda v: f(v).sum())(x), 2 * np.cos(x), rtol=1e-6)
  np.testing.assert_allclose(revax.vmap(f)(np.stack([x, x])), 2 * np.sin(np.stack([x, x])),
                             rtol=1e-6)
  np.testing.assert_allclose(revax.jvp(f, (x,), (x,))[1], 2 * np.cos(x) * x, rtol=1e-6)
  assert "sdy" not in revax.jit(lambda v: f(v) + 1).lower(x).as_text()  # one device: no mesh
