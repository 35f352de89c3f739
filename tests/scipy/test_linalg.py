"""revax.scipy.linalg against jax.scipy.linalg (the oracle): values eager and under jit, and
gradients and vmap for the factorization-based functions. Small float32 matrices."""
import numpy as np
import pytest

import revax
import revax.scipy.linalg as rsl

jax = pytest.importorskip("jax")
jsl = jax.scipy.linalg


def _general(shape, seed=0):
  a = np.random.default_rng(seed).standard_normal(shape)
  if shape[-1] == shape[-2]:
    a = a + 2 * np.eye(shape[-1])
  return a.astype(np.float32)


def _spd(shape, seed=0):
  a = np.random.default_rng(seed).standard_normal(shape)
  return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(np.float32)


def _close(a, b, rtol=2e-4, atol=2e-4):
  np.testing.assert_allclose(np.asarray(a, np.complex128), np.asarray(b, np.complex128),
                             rtol=rtol, atol=atol)


A = _general((4, 4))
AB = _general((2, 3, 3), 1)
S = _spd((4, 4))
B = _general((4, 2), 2)
RECT = _general((5, 3), 3)
V = np.array([1.0, -2.0, 0.5, 3.0], np.float32)

CASES = [
  ("cholesky", (S,), {}), ("cholesky", (S,), {"lower": True}),
  ("cho_solve", ((np.linalg.cholesky(S).T.copy(), False), B), {}),
  ("cho_solve", ((np.linalg.cholesky(S), True), B[:, 0]), {}),
  ("solve_triangular", (np.tril(A), B), {"lower": True}),
  ("solve_triangular", (np.triu(A), B[:, 0]), {"trans": "T"}),
  ("solve_triangular", (np.triu(A), B), {"trans": 2, "unit_diagonal": True}),
  ("lu", (A,), {}), ("lu", (RECT,), {}), ("lu", (RECT.T.copy(),), {"permute_l": True}),
  ("lu_factor", (A,), {}),
  ("lu_solve", (tuple(map(np.asarray, jsl.lu_factor(A))), B), {}),
  ("lu_solve", (tuple(map(np.asarray, jsl.lu_factor(A))), B[:, 0]), {"trans": 1}),
  ("qr", (RECT,), {}), ("qr", (RECT,), {"mode": "economic"}), ("qr", (RECT,), {"mode": "r"}),
  ("qr", (RECT,), {"mode": "economic", "pivoting": True}),
  ("qr_multiply", (RECT, _general((2, 5), 5)), {}),
  ("qr_multiply", (RECT, _general((3, 2), 6)), {"mode": "left"}),
  ("det", (AB,), {}), ("inv", (AB,), {}), ("solve", (A, B), {}), ("solve", (S, B), {"assume_a": "pos"}),
  ("solve", (S, B[:, 0]), {"assume_a": "sym"}),
  ("svd", (RECT,), {"compute_uv": False}), ("eigh", (S,), {"eigvals_only": True}),
  ("expm", (A * 0.3,), {}), ("expm", (A * 3,), {}), ("expm", (AB,), {}),
  ("expm", (np.triu(A),), {"upper_triangular": True}),
  ("expm_frechet", (A * 0.5, B[:, :1] @ B[:, 1:].T), {}),
  ("polar", (A,), {}), ("polar", (RECT,), {}), ("polar", (RECT.T.copy(),), {"side": "left"}),
  ("polar", (RECT,), {"method": "svd"}), ("hessenberg", (A,), {}),
  ("hessenberg", (A,), {"calc_q": True}), ("polar", (A,), {"side": "left", "method": "svd"}),
  ("solve_sylvester", (A, _general((2, 2), 7), _general((4, 2), 8)), {}),
  ("eigh_tridiagonal", (V, V[:3]), {"eigvals_only": True}),
  ("block_diag", (A, V, np.ones((2, 1), np.float32)), {}),
  ("toeplitz", (V,), {}), ("toeplitz", (V, V[:3] * 2), {}), ("hankel", (V,), {}),
  ("hankel", (V, V[::-1]), {}), ("circulant", (V,), {}), ("companion", (V,), {}),
  ("fiedler", (V,), {}), ("fiedler_companion", (V,), {}),
  ("fiedler_companion", (np.arange(1, 7, dtype=np.float32),), {}),
  ("leslie", (V, V[:3]), {}), ("convolution_matrix", (V[:3], 4), {}),
  ("convolution_matrix", (V, 3, "same"), {}), ("convolution_matrix", (V, 3, "valid"), {}),
  ("hadamard", (4,), {}), ("helmert", (4,), {}), ("helmert", (3, True), {}), ("hilbert", (4,), {}),
  ("invhilbert", (4,), {}), ("pascal", (4,), {}), ("pascal", (4, "lower"), {}),
  ("invpascal", (4,), {}), ("invpascal", (4, "upper"), {}), ("dft", (4,), {}),
  ("dft", (3, "sqrtn"), {}),
]


def _leaves(x):
  return [x] if not isinstance(x, (tuple, list)) else [l for y in x for l in _leaves(y)]


@pytest.mark.parametrize("name,args,kw", CASES, ids=[f"{c[0]}_{i}" for i, c in enumerate(CASES)])
def test_values_match_jax(name, args, kw):
  got = getattr(rsl, name)(*args, **kw)
  want = getattr(jsl, name)(*args, **kw)
  got_l, want_l = _leaves(got), _leaves(want)
  assert len(got_l) == len(want_l)
  for g, w in zip(got_l, want_l, strict=True):
    if isinstance(w, bool):
      assert g == w
      continue
    assert np.shape(g) == np.shape(w), (np.shape(g), np.shape(w))
    assert np.asarray(g).dtype == np.asarray(w).dtype, (np.asarray(g).dtype, np.asarray(w).dtype)
    _close(g, w)


JIT_CASES = ["cho_solve", "lu_solve", "lu", "qr", "expm", "polar", "solve_triangular"]


@pytest.mark.parametrize("name", JIT_CASES)
def test_jit_matches_jax(name):
  name_, args, kw = next(c for c in CASES if c[0] == name)
  arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

  def f(*xs):
    full = list(args)
    for i, x in zip(arrays, xs, strict=True):
      full[i] = x
    return getattr(rsl, name_)(*full, **kw)
  got = revax.jit(f)(*(args[i] for i in arrays))
  for g, w in zip(_leaves(got), _leaves(getattr(jsl, name_)(*args, **kw)), strict=True):
    if not isinstance(w, bool):
      _close(g, w)


def test_grads_match_jax():
  # gradients with respect to the matrix argument
  def rf(x):
    return (rsl.expm(x * 0.3) * np.arange(16).reshape(4, 4)).sum()

  def jf(x):
    return (jsl.expm(x * 0.3) * np.arange(16).reshape(4, 4)).sum()
  _close(revax.grad(rf)(A), jax.grad(jf)(A), rtol=2e-3, atol=2e-3)
  for fn in ("cho_solve", "lu_solve"):
    def g(mod, x, fn=fn):
      fac = mod.cho_factor(x) if fn == "cho_solve" else mod.lu_factor(x)
      return (getattr(mod, fn)(fac, B) * np.arange(8).reshape(4, 2)).sum()
    mat = S if fn == "cho_solve" else A
    _close(revax.grad(lambda x: g(rsl, x))(mat), jax.grad(lambda x: g(jsl, x))(mat),
           rtol=2e-3, atol=2e-3)


def test_vmap_matches_jax():
  bb = _general((2, 3, 2), 9)
  got = revax.vmap(lambda a, b: rsl.lu_solve(rsl.lu_factor(a), b))(AB, bb)
  want = jax.vmap(lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b))(AB, bb)
  _close(got, want)
  _close(revax.vmap(rsl.expm)(AB), jax.vmap(jsl.expm)(AB))


def test_expm_overflow_gives_nan_like_jax():
  big = np.full((2, 2), 1e6, np.float32)
  got = np.asarray(rsl.expm(big, max_squarings=4))
  assert np.isnan(got).all() and np.isnan(np.asarray(jsl.expm(big, max_squarings=4))).all()


def test_errors():
  with pytest.raises(NotImplementedError):
    rsl.eigh(S, S)
  with pytest.raises(NotImplementedError):
    rsl.eigh_tridiagonal(V, V[:3])
  with pytest.raises(ValueError, match="trans"):
    rsl.solve_triangular(A, B, trans=5)
  with pytest.raises(ValueError, match="assume_a"):
    rsl.solve(A, B, assume_a="banana")
  with pytest.raises(ValueError, match="square"):
    rsl.expm(RECT)
  with pytest.raises(ValueError, match="power of 2"):
    rsl.hadamard(3)
  with pytest.raises(ValueError):
    rsl.qr(A, mode="raw")
