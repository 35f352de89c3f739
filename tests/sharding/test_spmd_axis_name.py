"""vmap's `spmd_axis_name` and `sum_match` (JAX 0.10.2's keywords).

With 4 CPU devices in a subprocess (spmd_axis_name_child.py), against jax: the batch dimension
is split over the named mesh axes where the function states a layout (with_sharding_constraint,
a jit's in/out shardings, shard_map's specs; under grad, scan, cond and nested vmaps), the
results' values are those without any layout, and jax's errors are raised. Here, in the suite's
single-device process: the signature, the jaxprs the rules build, and sum_match against jax.
"""
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax.sharding import NamedSharding, PartitionSpec as P

from tests.sharding.children import run_child


def test_four_devices_against_jax():
  run_child("spmd_axis_name_child.py", "SPMD_AXIS_NAME_OK")


def test_signature_is_jaxs():
  params = lambda fn: [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]
  assert params(revax.vmap) == params(jax.vmap)


def test_jaxprs_put_the_batch_on_the_spmd_axes():
  mesh = revax.make_mesh((1, 1), ("a", "b"))
  x = np.ones((2, 3, 4), np.float32)
  f = lambda v: revax.lax.with_sharding_constraint(v, NamedSharding(mesh, P(None, "b")))
  for spmd, want in (("a", P(None, "a", "b")), (("a",), P(None, "a", "b")),
                     (None, P(None, None, "b"))):
    (eqn,) = revax.make_jaxpr(revax.vmap(f, in_axes=1, out_axes=1, spmd_axis_name=spmd))(x).eqns
    assert eqn.params["sharding"].spec == want, (spmd, eqn.params)
  g = revax.jit(lambda v: v * 2, in_shardings=NamedSharding(mesh, P("b")),
                out_shardings=NamedSharding(mesh, P("b")))
  (eqn,) = revax.make_jaxpr(revax.vmap(g, spmd_axis_name=("a",)))(x[0]).eqns
  assert eqn.params["in_shardings"] == (NamedSharding(mesh, P("a", "b")),)
  # without a layout in the function the name changes nothing
  out = revax.vmap(lambda v: rnp.sin(v) * 2, spmd_axis_name="a")(x)
  np.testing.assert_allclose(out, np.sin(x) * 2, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.int32,
                                   np.bool_])
def test_sum_match_sums_like_jax(dtype):
  x = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
  f = lambda v: (v, v[:2])
  for lib, np_ in ((revax, rnp), (jax, jnp)):
    out = lib.vmap(f, in_axes=1, out_axes=(None, 0), sum_match=True)(np_.asarray(x))
    if lib is revax:
      got = out
    else:
      want = out
  for g, w in zip(got, want, strict=True):
    assert g.dtype == w.dtype and g.shape == w.shape and g.weak_type == w.weak_type
    np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(w, np.float32), rtol=1e-3)


def test_sum_match_leaves_unmapped_outputs_and_transforms():
  xs = rnp.arange(6.0).reshape(3, 2)
  y, k = revax.vmap(lambda v: (v * 2.0, 3), out_axes=None, sum_match=True)(xs)
  np.testing.assert_allclose(y, [12.0, 18.0])
  assert k == 3
  grad = revax.grad(lambda v: revax.vmap(lambda u: u ** 2, out_axes=None, sum_match=True)(v))
  np.testing.assert_allclose(grad(rnp.arange(3.0)), [0.0, 2.0, 4.0])
  jitted = revax.jit(revax.vmap(lambda u: rnp.sin(u), out_axes=None, sum_match=True))
  np.testing.assert_allclose(jitted(xs), np.sin(np.asarray(xs)).sum(0), rtol=1e-5)


def test_without_sum_match_a_mapped_output_needs_an_axis():
  for lib in (revax, jax):
    with pytest.raises(ValueError, match="out_axes"):
      lib.vmap(lambda v: v, out_axes=None)(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="unhashable"):
      lib.vmap(lambda v: v, spmd_axis_name=["x"])(np.ones(3, np.float32))
