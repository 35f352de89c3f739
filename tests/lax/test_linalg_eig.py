"""revax.lax.linalg.eig (LAPACK ?geev on the host) and jnp.linalg.eig/eigvals against jax's
(which call the same ?geev): values eager, under jit and vmap, for real matrices with real and
complex-conjugate eigenvalues and for complex ones; left eigenvectors; derivatives with JAX's
rules; the errors."""
import numpy as np
import pytest

import revax
import revax.lax.linalg as lin
import revax.numpy as rnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

_RNG = np.random.default_rng(0)
MATRICES = {
  "rotation": np.array([[0.0, -1.0], [1.0, 0.0]], np.float32),
  "triangular": np.array([[2.0, 1.0], [0.0, 3.0]], np.float32),
  "general": _RNG.standard_normal((5, 5)).astype(np.float32),
  "complex": (_RNG.standard_normal((3, 3))
              + 1j * _RNG.standard_normal((3, 3))).astype(np.complex64),
}


def _close(got, want, tol=2e-5):
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", MATRICES)
@pytest.mark.parametrize("left,right", [(True, True), (False, True), (False, False)])
def test_eig_matches_jax(name, left, right):
  a = MATRICES[name]
  want = jax.lax.linalg.eig(a, compute_left_eigenvectors=left, compute_right_eigenvectors=right)
  fn = lambda x: lin.eig(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right)
  for got in (fn(a), revax.jit(fn)(a), fn(rnp.asarray(a) + 0)):
    assert len(got) == len(want)
    for g, w in zip(got, want):
      _close(g, w)


def test_numpy_eig_and_eigvals():
  a = MATRICES["general"]
  w, v = rnp.linalg.eig(a)
  jw, jv = jnp.linalg.eig(a)
  _close(w, jw)
  _close(v, jv)
  assert type(rnp.linalg.eig(a)).__name__ == "EigResult"
  _close(rnp.linalg.eigvals(a), jnp.linalg.eigvals(a))
  _close(revax.jit(rnp.linalg.eigvals)(a), jnp.linalg.eigvals(a))
  ints = np.array([[1, 2], [3, 4]])
  _close(rnp.linalg.eigvals(ints), jnp.linalg.eigvals(ints))  # promoted to float32
  np.testing.assert_allclose(np.asarray(a @ np.asarray(v)), np.asarray(v) * np.asarray(w),
                             atol=1e-4)


def test_eig_batched_and_vmapped():
  stack = np.stack([MATRICES["general"][:3, :3], MATRICES["rotation"][[0, 1, 1]][:, [0, 1, 1]],
                    np.eye(3, dtype=np.float32)])
  want = jnp.linalg.eig(stack)
  for got in (rnp.linalg.eig(stack), revax.vmap(rnp.linalg.eig)(stack),
              revax.jit(revax.vmap(rnp.linalg.eig))(stack)):
    _close(got[0], want[0])
    _close(got[1], want[1])
  empty = np.zeros((2, 0, 0), np.float32)
  _close(rnp.linalg.eigvals(empty), jnp.linalg.eigvals(empty))


def test_eig_float64(x64):
  a = MATRICES["general"].astype(np.float64)
  for g, w in zip(lin.eig(a), jax.lax.linalg.eig(a)):
    _close(g, w, tol=1e-12)


def test_eig_derivatives_match_jax():
  a = MATRICES["general"][:4, :4]
  da = _RNG.standard_normal((4, 4)).astype(np.float32)
  want = jax.jvp(jnp.linalg.eigvals, (a,), (da,))
  for got in (revax.jvp(rnp.linalg.eigvals, (a,), (da,)),
              revax.jit(lambda x, t: revax.jvp(rnp.linalg.eigvals, (x,), (t,)))(a, da)):
    _close(got[0], want[0])
    _close(got[1], want[1], tol=1e-4)
  _close(revax.grad(lambda m: rnp.abs(rnp.linalg.eigvals(m)).sum())(a),
         jax.grad(lambda m: jnp.abs(jnp.linalg.eigvals(m)).sum())(a), tol=1e-4)
  vecs = lambda x: lin.eig(x, enable_eigvec_derivs=True)
  jvecs = lambda x: jax.lax.linalg.eig(x, enable_eigvec_derivs=True)
  for g, w in zip(revax.jvp(vecs, (a,), (da,))[1], jax.jvp(jvecs, (a,), (da,))[1]):
    _close(g, w, tol=1e-3)


def test_eig_errors():
  with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
    revax.jvp(rnp.linalg.eig, (MATRICES["general"],), (MATRICES["general"],))
  with pytest.raises(ValueError):
    lin.eig(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError):
    rnp.linalg.eig(np.ones(3, np.float32))
  with pytest.raises(TypeError):
    lin.eig(np.ones((2, 2), np.int32))


def test_eig_without_lapacke_uses_numpy(monkeypatch):
  """Without NumPy's bundled LAPACKE, eigenvalues and right eigenvectors come from
  numpy.linalg.eig (the same ?geev); left eigenvectors raise."""
  from revax._src.lax import linalg_eig
  monkeypatch.setattr(linalg_eig, "_geev_functions", dict)
  a = MATRICES["general"]
  w, vr = lin.eig(a, compute_left_eigenvectors=False)
  _close(w, jax.lax.linalg.eig(a, compute_left_eigenvectors=False)[0])
  vr = np.asarray(vr)  # numpy's may differ from LAPACKE's by a sign: check a v = w v, |v| = 1
  np.testing.assert_allclose(a @ vr, vr * np.asarray(w), atol=1e-4)
  np.testing.assert_allclose(np.linalg.norm(vr, axis=0), 1, rtol=1e-5)
  with pytest.raises(NotImplementedError, match="left eigenvectors"):
    lin.eig(a)


def test_conjugate_pair_vectors_have_jaxs_signed_zeros():
  """The second vector of a conjugate pair is the conjugate of the first: a zero imaginary part
  becomes -0.0 (printed `-0.j`), as in JAX's results."""
  a = MATRICES["rotation"]
  got = np.asarray(rnp.linalg.eig(a)[1])
  want = np.asarray(jnp.linalg.eig(a)[1])
  np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))
  assert str(got) == str(want)


def test_eig_and_schur_reach_the_host_by_send_recv_where_there_is_no_ffi(monkeypatch):
  """On a platform without LAPACK handlers or an FFI (libtpu), eig and schur lower to a host
  call through send/recv transfers, as every host callback there (emulated here on the CPU)."""
  from revax._src.lax import linalg as linalg_module
  monkeypatch.setattr(linalg_module, "_lapack_target", lambda *a: None)
  monkeypatch.setenv("REVAX_CALLBACK_MECHANISM", "sendrecv")
  x = np.random.default_rng(0).standard_normal((2, 4, 4)).astype(np.float32)
  eigvals = revax.jit(lambda a: revax.numpy.linalg.eigvals(a))
  text = eigvals.lower(x).as_text()
  assert "stablehlo.send" in text and "custom_call" not in text
  np.testing.assert_allclose(np.sort_complex(np.asarray(eigvals(x))),
                             np.sort_complex(np.linalg.eigvals(x)), rtol=1e-4, atol=1e-5)
  t, z = revax.jit(lambda a: revax.lax.linalg.schur(a))(x)
  t, z = np.asarray(t), np.asarray(z)
  np.testing.assert_allclose(z @ t @ np.swapaxes(z, -1, -2), x, rtol=1e-4, atol=1e-5)
  assert np.allclose(np.tril(t, -2), 0)
