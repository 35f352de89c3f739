"""revax.numpy.linalg against jax.numpy.linalg (the oracle): values eager and under jit, and
gradients and vmap where JAX defines them. Small float32 matrices; sign-ambiguous factors
(eigenvectors, singular vectors) are compared after fixing each vector's sign."""
from functools import partial

import numpy as np
import pytest

import revax
import revax.numpy as rnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

RTOL = 2e-4


def _general(shape, seed=0):
  rng = np.random.default_rng(seed)
  a = rng.standard_normal(shape)
  if shape[-1] == shape[-2]:
    a = a + 2 * np.eye(shape[-1])
  return a.astype(np.float32)


def _spd(shape, seed=0):
  rng = np.random.default_rng(seed)
  a = rng.standard_normal(shape)
  return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(np.float32)


def _canon(v, axis=-2):
  """Columns (axis=-2) or rows (axis=-1) of v with their largest entry made positive."""
  v = np.asarray(v, np.float64)
  idx = np.argmax(np.abs(v), axis=axis)
  pick = np.take_along_axis(v, np.expand_dims(idx, axis), axis)
  return v * np.sign(pick)


def _close(a, b, rtol=RTOL, atol=1e-4):
  np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol,
                             atol=atol)


def _both(fn_name, *args, **kw):
  """fn(*args) through revax eagerly, revax under jit and jax."""
  r = getattr(rnp.linalg, fn_name)
  j = getattr(jnp.linalg, fn_name)
  eager = r(*args, **kw)
  dyn = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

  def with_dyn(*xs):
    full = list(args)
    for i, x in zip(dyn, xs, strict=True):
      full[i] = x
    return r(*full, **kw)
  jitted = revax.jit(with_dyn)(*(args[i] for i in dyn))
  expected = j(*args, **kw)
  return eager, jitted, expected


A = _general((4, 4))
AB = _general((2, 4, 4), 1)
S = _spd((4, 4))
B = _general((4, 3), 2)
RECT = _general((5, 3), 3)
WIDE = _general((3, 5), 4)

VALUE_CASES = [
  ("solve", (A, B[:, 0]), {}), ("solve", (AB, _general((2, 4, 2), 5)), {}),
  ("inv", (AB,), {}), ("det", (AB,), {}), ("slogdet", (AB,), {}),
  ("slogdet", (A,), {"method": "qr"}),
  ("cholesky", (S,), {}), ("cholesky", (S,), {"upper": True}),
  ("eigvalsh", (S,), {}), ("svdvals", (RECT,), {}), ("svdvals", (WIDE,), {}),
  ("pinv", (RECT,), {}), ("pinv", (WIDE,), {}), ("matrix_rank", (RECT,), {}),
  ("matrix_rank", (np.outer(B[:, 0], B[:, 1]),), {}),
  ("matrix_power", (A, 3), {}), ("matrix_power", (A, -2), {}), ("matrix_power", (A, 0), {}),
  ("norm", (A,), {}), ("norm", (A,), {"ord": 1}), ("norm", (A,), {"ord": -1}),
  ("norm", (A,), {"ord": np.inf}), ("norm", (A,), {"ord": 2}), ("norm", (A,), {"ord": -2}),
  ("norm", (A,), {"ord": "nuc"}), ("norm", (AB,), {"ord": 1, "axis": (0, 2), "keepdims": True}),
  ("norm", (B[:, 0],), {"ord": 3}), ("norm", (B[:, 0],), {"ord": 0}), ("norm", (AB,), {"axis": 1}),
  ("vector_norm", (AB,), {}), ("vector_norm", (AB,), {"axis": (0, 2), "ord": 1}),
  ("matrix_norm", (AB,), {}), ("matrix_norm", (AB,), {"ord": 2, "keepdims": True}),
  ("cond", (A,), {}), ("cond", (A,), {"p": 1}), ("cond", (A,), {"p": "fro"}),
  ("multi_dot", ([B[:, 0], A, A, B],), {}),
  ("tensorinv", (_general((4, 4)).reshape(4, 2, 2), 1), {}),
  ("tensorsolve", (_general((6, 6)).reshape(6, 2, 3), B[:, :3].ravel()[:6]), {}),
  ("cross", (B[:3, 0], B[:3, 1]), {}), ("cross", (AB[..., :3], AB[..., 1:]), {}),
  ("outer", (B[:, 0], B[:, 1]), {}), ("trace", (AB,), {}), ("trace", (AB,), {"offset": 1}),
  ("diagonal", (AB,), {"offset": -1}), ("vecdot", (AB, AB[::-1]), {}),
  ("vecdot", (AB, AB), {"axis": 0}), ("matmul", (AB, B), {}), ("tensordot", (A, A), {}),
  ("matrix_transpose", (AB,), {}),
]


@pytest.mark.parametrize("name,args,kw", VALUE_CASES,
                         ids=[f"{c[0]}_{i}" for i, c in enumerate(VALUE_CASES)])
def test_values_match_jax(name, args, kw):
  eager, jitted, expected = _both(name, *args, **kw)
  flat = lambda t: t if isinstance(t, tuple) else (t,)
  for e, j, x in zip(flat(eager), flat(jitted), flat(expected), strict=True):
    assert np.shape(e) == np.shape(x), (np.shape(e), np.shape(x))
    _close(e, x)
    _close(j, x)


def test_factorizations_match_jax_up_to_sign():
  for a in (A, AB, RECT, WIDE):
    for full in (True, False):
      u, s, vh = rnp.linalg.svd(a, full_matrices=full)
      ju, js, jvh = jnp.linalg.svd(a, full_matrices=full)
      assert u.shape == ju.shape and vh.shape == jvh.shape
      _close(s, js)
      k = s.shape[-1]
      _close(_canon(np.asarray(u)[..., :k]), _canon(np.asarray(ju)[..., :k]))
      _close(np.swapaxes(np.asarray(u), -1, -2) @ np.asarray(u), np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2))
  w, v = rnp.linalg.eigh(S)
  jw, jv = jnp.linalg.eigh(S)
  _close(w, jw)
  _close(_canon(v), _canon(jv))
  w, v = revax.jit(lambda x: rnp.linalg.eigh(x, UPLO="U", symmetrize_input=False))(S)
  _close(w, jnp.linalg.eigh(S, UPLO="U", symmetrize_input=False)[0])
  for mode in ("reduced", "complete"):
    q, r = revax.jit(lambda x: rnp.linalg.qr(x, mode=mode))(RECT)
    jq, jr = jnp.linalg.qr(RECT, mode=mode)
    _close(q, jq)
    _close(r, jr)
  _close(rnp.linalg.qr(RECT, mode="r"), jnp.linalg.qr(RECT, mode="r"))
  u, s, vh = rnp.linalg.svd(S, hermitian=True)
  _close(s, jnp.linalg.svd(S, hermitian=True)[1])
  _close((np.asarray(u) * np.asarray(s)[None]) @ np.asarray(vh), S, atol=1e-3)


def test_lstsq_matches_jax():
  b = _general((5, 2), 7)
  for args in ((RECT, b), (RECT, b[:, 0]), (WIDE, b[:3])):
    for got in (rnp.linalg.lstsq(*args), revax.jit(rnp.linalg.lstsq)(*args)):
      want = jnp.linalg.lstsq(*args)
      for g, w in zip(got, want, strict=True):
        _close(g, w)


def test_lstsq_result_shapes_match_jax():
  """A 1-d b gives residuals of shape (1,) (not a scalar), as NumPy's and JAX's."""
  b = _general((5, 2), 7)
  for args in ((RECT, b), (RECT, b[:, 0]), (WIDE, b[:3, 0])):
    for kw in ({}, {"numpy_resid": True}):
      want = jnp.linalg.lstsq(*args, **kw)
      for got in (rnp.linalg.lstsq(*args, **kw), revax.jit(partial(rnp.linalg.lstsq, **kw))(*args)):
        assert [np.shape(g) for g in got] == [np.shape(w) for w in want]


GRAD_CASES = [
  ("solve", (A, B)), ("inv", (A,)), ("det", (A,)), ("slogdet", (A,)), ("cholesky", (S,)),
  ("eigvalsh", (S,)), ("svdvals", (RECT,)), ("pinv", (RECT,)), ("norm", (A,)),
  ("matrix_power", (A, 3)),
]


def _scalarize(f, n_diff):
  def g(*xs):
    out = f(*xs)
    leaves = out if isinstance(out, tuple) else (out,)
    total = 0.0
    for i, leaf in enumerate(leaves):
      if np.issubdtype(leaf.dtype, np.floating):
        w = np.linspace(0.5, 1.5, int(np.prod(leaf.shape)) or 1)[:int(np.prod(leaf.shape))]
        total = total + (leaf.ravel() * w.astype(np.float32)).sum() * (i + 1)
    return total
  return g


@pytest.mark.parametrize("name,args", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad_matches_jax(name, args):
  diff = [a for a in args if isinstance(a, np.ndarray)]
  static = args[len(diff):]
  r = _scalarize(lambda *xs: getattr(rnp.linalg, name)(*xs, *static), len(diff))
  j = _scalarize(lambda *xs: getattr(jnp.linalg, name)(*xs, *static), len(diff))
  argnums = tuple(range(len(diff)))
  got = revax.grad(r, argnums)(*diff)
  got_jit = revax.jit(revax.grad(r, argnums))(*diff)
  want = jax.grad(j, argnums)(*diff)
  for g, gj, w in zip(got, got_jit, want, strict=True):
    _close(g, w, rtol=2e-3, atol=2e-3)
    _close(gj, w, rtol=2e-3, atol=2e-3)


def test_eigh_and_svd_grads_match_jax():
  def eig_f(lib):
    def f(x):
      w, v = lib.linalg.eigh(x)
      return (w * np.arange(1, 5)).sum() + (v[0] ** 2).sum() + (v[:, 1] * v[:, 2]).sum()
    return f
  _close(revax.grad(eig_f(rnp))(S), jax.grad(eig_f(jnp))(S), rtol=2e-3, atol=2e-3)

  def svd_f(lib):
    def f(x):
      u, s, vh = lib.linalg.svd(x, full_matrices=False)
      return (s * np.arange(1, 4)).sum() + (u ** 2 * np.arange(3)).sum() + (vh[:, 0] ** 2).sum()
    return f
  _close(revax.grad(svd_f(rnp))(RECT), jax.grad(svd_f(jnp))(RECT), rtol=2e-3, atol=2e-3)

  def qr_f(lib):
    def f(x):
      q, r = lib.linalg.qr(x)
      return (q * np.arange(3)).sum() + (r ** 2).sum()
    return f
  _close(revax.grad(qr_f(rnp))(RECT), jax.grad(qr_f(jnp))(RECT), rtol=2e-3, atol=2e-3)


def test_vmap_matches_jax():
  bb = _general((2, 4, 3), 8)
  for name, args, axes in (("solve", (AB, bb), (0, 0)), ("det", (AB,), (0,)),
                           ("inv", (AB,), (0,)), ("solve", (A, bb), (None, 0)),
                           ("slogdet", (AB,), (0,)), ("pinv", (AB,), (0,))):
    got = revax.vmap(getattr(rnp.linalg, name), in_axes=axes)(*args)
    want = jax.vmap(getattr(jnp.linalg, name), in_axes=axes)(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want, strict=True):
      _close(g, w)


def test_solve_broadcasts_like_jax():
  for a, b in ((AB, B), (A, _general((2, 4, 3), 9)), (AB[:, None], _general((3, 4, 1), 9))):
    got = rnp.linalg.solve(a, b)
    want = jnp.linalg.solve(a, b)
    assert got.shape == want.shape
    _close(got, want)


def test_singular_inputs():
  sing = np.array([[1., 2.], [2., 4.]], np.float32)
  assert float(rnp.linalg.det(sing)) == 0.0
  sign, logdet = rnp.linalg.slogdet(sing)
  assert float(sign) == 0 and float(logdet) == -np.inf
  assert int(rnp.linalg.matrix_rank(sing)) == 1
  np.testing.assert_array_equal(  # jax's: NaN, zeros above
      np.asarray(rnp.linalg.cholesky(-np.eye(2, dtype=np.float32))),
      np.tril(np.full((2, 2), np.nan, np.float32)))


def test_errors():
  with pytest.raises(ValueError, match="square"):
    rnp.linalg.inv(RECT)
  with pytest.raises(ValueError, match="rank >= 2"):
    rnp.linalg.det(B[:, 0])
  with pytest.raises(ValueError):
    rnp.linalg.solve(A, np.ones(3, np.float32))
  with pytest.raises(ValueError, match="QR decomposition mode"):
    rnp.linalg.qr(A, mode="bogus")
  with pytest.raises(ValueError, match="3-dimensional"):
    rnp.linalg.cross(B[:, 0], B[:, 1])
  with pytest.raises(ValueError, match="one-dimensional"):
    rnp.linalg.outer(A, A)
  with pytest.raises(TypeError):
    rnp.linalg.matrix_power(A, 1.5)
  with pytest.raises(ValueError, match="UPLO"):
    rnp.linalg.eigh(S, UPLO="X")


def test_qr_raw_mode_matches_jax():
  """qr(mode="raw"): LAPACK's packed Householder form (h transposed, taus), as JAX and NumPy
  give it (it raised ValueError), eagerly and under jit, real and complex, batched."""
  rng = np.random.default_rng(3)
  for shape in [(4, 3), (3, 4), (2, 3, 3)]:
    for dtype in (np.float32, np.complex64):
      a = rng.standard_normal(shape).astype(dtype)
      if dtype == np.complex64:
        a = a + 1j * rng.standard_normal(shape).astype(np.float32)
      want = jnp.linalg.qr(a, mode="raw")
      for got in (rnp.linalg.qr(a, mode="raw"),
                  revax.jit(lambda a: rnp.linalg.qr(a, mode="raw"))(a)):
        for g, w in zip(got, want, strict=True):
          assert (g.shape, g.dtype) == (w.shape, w.dtype)
          np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-4)
