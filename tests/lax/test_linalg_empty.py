"""Factorizations and the linear algebra built on them, on empty inputs (a zero matrix dimension,
an empty batch of matrices): eagerly (the NumPy implementations) and under jit, lowered both to
LAPACK and to the algorithms in lax (LAPACK switched off in this process), against jax: the same
output shapes, dtypes and values (the identity Q, U, V^H of an empty full factorization, the
identity permutation of an m x 0 LU, det 1, norms 0)."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
import revax.scipy.linalg as rsl
from revax._src.runtime import lapack

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402

RECT = [(0, 3), (3, 0), (0, 0), (2, 0, 0), (2, 3, 0)]
SQUARE = [(0, 0), (2, 0, 0)]


def _cases():
  """(name, shapes, fn(library, its numpy, its scipy.linalg, a))."""
  out = []
  for fm in (True, False):
    for uv in (True, False):
      out.append((f"lax.svd fm={fm} uv={uv}", RECT, lambda J, N, S, a, fm=fm, uv=uv:
                  J.lax.linalg.svd(a, full_matrices=fm, compute_uv=uv)))
    out.append((f"lax.qr fm={fm}", RECT, lambda J, N, S, a, fm=fm:
                J.lax.linalg.qr(a, full_matrices=fm)))
  out += [
      ("svd", RECT, lambda J, N, S, a: N.linalg.svd(a)),
      ("qr complete", RECT, lambda J, N, S, a: N.linalg.qr(a, mode="complete")),
      ("qr raw", RECT, lambda J, N, S, a: N.linalg.qr(a, mode="raw")),
      ("lax.lu", RECT, lambda J, N, S, a: J.lax.linalg.lu(a)),
      ("pinv", RECT, lambda J, N, S, a: N.linalg.pinv(a)),
      ("matrix_rank", RECT, lambda J, N, S, a: N.linalg.matrix_rank(a)),
      ("norm 2", RECT, lambda J, N, S, a: N.linalg.norm(a, ord=2, axis=(-2, -1))),
      ("norm inf", RECT, lambda J, N, S, a: N.linalg.norm(a, ord=np.inf, axis=(-2, -1))),
      ("norm nuc", RECT, lambda J, N, S, a: N.linalg.norm(a, ord="nuc", axis=(-2, -1))),
      ("lax.eigh", SQUARE, lambda J, N, S, a: J.lax.linalg.eigh(a)),
      ("eigvalsh", SQUARE, lambda J, N, S, a: N.linalg.eigvalsh(a)),
      ("cholesky", SQUARE, lambda J, N, S, a: N.linalg.cholesky(a)),
      ("det", SQUARE, lambda J, N, S, a: N.linalg.det(a)),
      ("slogdet", SQUARE, lambda J, N, S, a: tuple(N.linalg.slogdet(a))),
      ("inv", SQUARE, lambda J, N, S, a: N.linalg.inv(a)),
      ("solve", SQUARE, lambda J, N, S, a: N.linalg.solve(a, a)),
      ("lu_solve", SQUARE, lambda J, N, S, a: S.lu_solve(S.lu_factor(a), a)),
      ("expm", SQUARE, lambda J, N, S, a: S.expm(a)),
      ("grad slogdet", SQUARE,
       lambda J, N, S, a: J.grad(lambda b: N.linalg.slogdet(b)[1].sum())(a)),
  ]
  return out


def _flat(v):
  return [v] if hasattr(v, "shape") else [x for item in v for x in _flat(item)]


@pytest.mark.parametrize("path", ["lapack", "lax"])
def test_empty_inputs_match_jax(monkeypatch, path):
  if path == "lax":
    monkeypatch.setattr(lapack, "_state", {})  # no handler: lowered to the lax algorithms
  bad = []
  for name, shapes, fn in _cases():
    for shape in shapes:
      try:
        want = _flat(fn(jax, jnp, jsl, jnp.zeros(shape)))
      except Exception as e:  # noqa: BLE001 - then revax must raise the same type
        want = type(e)
      for mode in ("eager", "jit"):
        a = rnp.zeros(shape)
        call = (lambda a: fn(revax, rnp, rsl, a))
        try:
          got = _flat(call(a) if mode == "eager" else revax.jit(call)(a))
        except Exception as e:  # noqa: BLE001 - reported with the case below
          if type(e) is not want:
            bad.append(f"{name}{shape} {mode}: {type(e).__name__}: {e}")
          continue
        if isinstance(want, type):
          bad.append(f"{name}{shape} {mode}: no {want.__name__} raised (jax raises it)")
          continue
        for g, w in zip(got, want, strict=True):
          if (g.shape, g.dtype) != (w.shape, w.dtype) or not np.array_equal(np.asarray(g),
                                                                            np.asarray(w)):
            bad.append(f"{name}{shape} {mode}: {g.dtype}{list(g.shape)} {np.asarray(g)} != "
                       f"{w.dtype}{list(w.shape)} {np.asarray(w)}")
  assert not bad, "\n".join(bad)


def test_lstsq_residuals_keep_their_axis_for_a_vector():
  """lstsq of a vector b gives residuals of shape (1,), as JAX and NumPy do (also for empty a)."""
  for a_shape, b_shape in [((3, 2), (3,)), ((0, 3), (0,)), ((3, 0), (3,))]:
    a, b = np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)
    got, want = rnp.linalg.lstsq(a, b), jnp.linalg.lstsq(a, b)
    assert [x.shape for x in got] == [x.shape for x in want]
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), atol=1e-5)
