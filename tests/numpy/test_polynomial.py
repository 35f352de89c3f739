"""revax.numpy.roots and poly against jax.numpy's, in JAX's order (the eigenvalues of the
companion matrix as LAPACK's ?geev returns them, not sorted), with leading and trailing zeros,
under jit with strip_zeros=False (NaN for the roots leading zeros leave undefined), and poly of a
square matrix (its characteristic polynomial)."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

POLYS = [[1.0, -6.0, 11.0, -6.0], [1.0, 0.0, 1.0], [2.0, 3.0, -1.0, 5.0, 0.5], [0.0, 1.0, 2.0, 0.0],
         [0.0, 0.0, 1.0, 2.0], [0.0, 0.0, 0.0], [3.0], [0.0, 1.0], [1 + 1j, 2.0, 0.0], [1, 2, 3]]


def _same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("p", POLYS, ids=str)
def test_roots_match_jax_in_order(p):
  p = np.array(p)
  _same(rnp.roots(p), jnp.roots(p))
  _same(revax.jit(lambda t: rnp.roots(t, strip_zeros=False))(p),
        jax.jit(lambda t: jnp.roots(t, strip_zeros=False))(p))


def test_roots_errors():
  with pytest.raises(revax.errors.ConcretizationTypeError):
    revax.jit(rnp.roots)(np.ones(3, np.float32))
  with pytest.raises(ValueError, match="rank-1"):
    rnp.roots(np.ones((2, 2)))


def test_poly_of_a_square_matrix():
  m = np.array([[1.0, 2.0, 0.5], [3.0, 4.0, -1.0], [0.0, 1.0, 2.0]], np.float32)
  _same(rnp.poly(m), jnp.poly(m))
  _same(rnp.poly(np.array([1.0, 2.0, -3.0], np.float32)), jnp.poly(np.array([1.0, 2.0, -3.0])))


@pytest.mark.parametrize("p,x", [(np.ones((3, 2)), np.arange(2.0)), (np.ones((3, 2)), 2.0),
                                 (np.ones(3), 2), (np.array([1, 2]), 2),
                                 (np.array([1.0, 2.0, 3.0]), np.arange(4.0).reshape(2, 2))])
def test_polyval_broadcasts_a_multi_axis_p(p, x):
  """p's leading axis holds the coefficients, the others broadcast with x (as JAX's)."""
  _same(rnp.polyval(p, x), jnp.polyval(p, x))
  _same(revax.jit(rnp.polyval)(p, x), jnp.polyval(p, x))
