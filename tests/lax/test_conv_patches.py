"""conv_general_dilated_patches and conv_general_dilated_local against jax 0.10.2: layouts,
strides, paddings, dilations and 1-3 spatial dims; values eagerly and under jit, grads, vmap."""
import numpy as np
import pytest

import revax
import revax.lax as rlax

jax = pytest.importorskip("jax")
jlax = jax.lax

rng = np.random.default_rng(11)

PATCH_CASES = {  # name -> (lhs shape, filter_shape, strides, padding, kwargs)
    "nchw_same": ((2, 3, 6, 5), (3, 2), (1, 2), "SAME", {}),
    "nhwc_dilated": ((1, 7, 6, 2), (2, 3), (1, 1), ((1, 0), (2, 1)),
                     dict(rhs_dilation=(2, 1), lhs_dilation=(1, 2),
                          dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "conv1d_odd_layout": ((5, 2, 3), (3,), (2,), "VALID",
                          dict(dimension_numbers=("WCN", "OWI", "CWN"))),
    "conv3d": ((1, 2, 4, 3, 4), (2, 2, 2), (1, 1, 2), "SAME", {}),
}


def _patches(lax, name):
  shape, filt, strides, padding, kw = PATCH_CASES[name]
  return lambda x: lax.conv_general_dilated_patches(x, filt, strides, padding, **kw)


def _close(got, want, tol=1e-5):
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(PATCH_CASES))
def test_patches_match_jax(name):
  x = rng.standard_normal(PATCH_CASES[name][0]).astype(np.float32)
  want = _patches(jlax, name)(x)
  _close(_patches(rlax, name)(x), want)
  _close(revax.jit(_patches(rlax, name))(x), want)
  w = rng.standard_normal(np.shape(want)).astype(np.float32)
  loss = lambda lib, lax: lambda x: lib.numpy.sum(_patches(lax, name)(x) * w)
  _close(revax.grad(loss(revax, rlax))(x), jax.jit(jax.grad(loss(jax, jlax)))(x))


def test_patches_vmap_and_dtype():
  xs = rng.standard_normal((3, 1, 2, 5, 4)).astype(np.float32)
  f = lambda lax: lambda x: lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID")
  _close(revax.vmap(f(rlax))(xs), jax.vmap(f(jlax))(xs))
  out = rlax.conv_general_dilated_patches(xs[0].astype(np.float16), (2, 2), (1, 1), "VALID",
                                          preferred_element_type=np.float32)
  assert out.dtype == np.float32


LOCAL_CASES = {  # name -> (lhs shape, rhs shape, strides, padding, filter_shape, dimension_numbers)
    "nchw": ((2, 3, 5, 4), (18, 3, 3, 7), (1, 1), "VALID", (3, 2), ("NCHW", "IHWO", "NCHW")),
    "nhwc_strided": ((1, 6, 5, 2), (3, 3, 8, 4), (2, 2), "SAME", (2, 2),
                     ("NHWC", "HWIO", "NHWC")),
}


def _local(lax, name):
  _, _, strides, padding, filt, dn = LOCAL_CASES[name]
  return lambda x, w: lax.conv_general_dilated_local(x, w, strides, padding, filt,
                                                     dimension_numbers=dn)


@pytest.mark.parametrize("name", sorted(LOCAL_CASES))
def test_local_matches_jax(name):
  x = rng.standard_normal(LOCAL_CASES[name][0]).astype(np.float32)
  w = rng.standard_normal(LOCAL_CASES[name][1]).astype(np.float32)
  want = _local(jlax, name)(x, w)
  _close(_local(rlax, name)(x, w), want, 1e-4)
  _close(revax.jit(_local(rlax, name))(x, w), want, 1e-4)
  loss = lambda lib, lax: lambda x, w: lib.numpy.sum(_local(lax, name)(x, w) ** 2)
  got = revax.grad(loss(revax, rlax), argnums=(0, 1))(x, w)
  for g, e in zip(got, jax.jit(jax.grad(loss(jax, jlax), argnums=(0, 1)))(x, w), strict=True):
    _close(g, e, 1e-3)
