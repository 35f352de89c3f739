"""Op records for the linear-algebra primitives (revax.lax.linalg) against NumPy and SciPy.

Eager calls run NumPy (LAPACK) and jit runs revax's own algorithms (blocked LU, Householder QR,
Jacobi eigh/svd), so the jit-vs-eager suite compares two independent implementations. Factors
defined only up to sign (eigenvectors, singular vectors) are returned with each vector's sign
fixed by its first entry, so both implementations (and the references) agree. Inputs are kept
well conditioned (spectra with gaps, dominant diagonals) so finite differences are meaningful;
the JVPs of cholesky and eigh take the tangent to be Hermitian, as JAX's do, so records that
read one triangle only are not finite-differenced; complex records check values, jit and vmap (their derivatives are compared with JAX in
tests/lax/test_linalg.py). Triangular and tridiagonal solves take b first: they are linear in it
(transposition suite).
"""
import numpy as np
import scipy.linalg

import revax.lax as lax
import revax.lax.linalg as lin
from revax._src.lax import linalg_util as U
from revax._src.lax.linalg import cholesky_p
from revax._src.lax.linalg import geqrf as lin_geqrf  # (internal, as jax's: qr(mode="raw"))
from tests.lax.op_db import OpRecord

_TOL = dict(rtol=2e-4, atol=2e-4)


def _mat(shape, dtype=np.float32, diag=0.0):
  def make(rng):
    a = rng.uniform(-1, 1, shape)
    if np.dtype(dtype).kind == "c":
      a = a + 1j * rng.uniform(-1, 1, shape)
    if diag:
      a = a + diag * np.eye(shape[-2], shape[-1])
    return a.astype(dtype)
  return make


def _spd(shape, dtype=np.float32):
  """Hermitian positive definite, eigenvalues spread apart."""
  def make(rng):
    n = shape[-1]
    q, _ = np.linalg.qr(_mat(shape, np.complex128 if np.dtype(dtype).kind == "c" else np.float64)(rng))
    w = np.linspace(1.0, 1.0 + 0.7 * n, n) * rng.uniform(0.9, 1.1, shape[:-1])
    a = (q * w[..., None, :]) @ np.conj(np.swapaxes(q, -1, -2))
    return a.astype(dtype)
  return make


def _sym(shape, dtype=np.float32):
  """Hermitian with well-separated eigenvalues of both signs."""
  def make(rng):
    a = _spd(shape, np.complex128 if np.dtype(dtype).kind == "c" else np.float64)(rng)
    n = shape[-1]
    return (a - (0.4 * n) * np.eye(n)).astype(dtype)
  return make


def _fix_cols(v):
  """revax: columns of v with the sign (phase) of their first entry removed."""
  first = v[..., :1, :]
  mag = lax.abs(first)
  phase = first / lax.convert_element_type(mag, v.dtype)
  return v * lax.conj(phase) if np.dtype(v.dtype).kind == "c" else v * lax.sign(first)


def _np_fix_cols(v):
  first = v[..., :1, :]
  if v.dtype.kind == "c":
    return v * np.conj(first / np.abs(first))
  return v * np.sign(first)


def _eigh_fun(lower=True, symmetrize=True):
  def f(x):
    v, w = lin.eigh(x, lower=lower, symmetrize_input=symmetrize)
    return _fix_cols(v), w
  return f


def _eigh_ref(lower=True):
  def f(x):
    w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    return _np_fix_cols(v).astype(x.dtype), w.astype(np.finfo(x.dtype).dtype)
  return f


def _svd_fun(full_matrices=False):
  def f(x):
    u, s, vh = lin.svd(x, full_matrices=full_matrices)
    k = s.shape[-1]
    uk = u[..., :, :k]
    first = uk[..., :1, :]
    if np.dtype(x.dtype).kind == "c":
      phase = first / lax.convert_element_type(lax.abs(first), x.dtype)
      return s, uk * lax.conj(phase), vh[..., :k, :] * U.swap_last(phase)
    sign = lax.sign(first)
    return s, uk * sign, vh[..., :k, :] * U.swap_last(sign)
  return f


def _svd_ref(x):
  u, s, vh = np.linalg.svd(x, full_matrices=False)
  first = u[..., :1, :]
  phase = first / np.abs(first) if x.dtype.kind == "c" else np.sign(first)
  vh = vh * np.swapaxes(phase, -1, -2)
  return s.astype(np.finfo(x.dtype).dtype), (u * np.conj(phase)).astype(x.dtype), vh.astype(x.dtype)


def _svd_values_ref(x):
  return np.linalg.svd(x, compute_uv=False).astype(np.finfo(x.dtype).dtype)


def _chol_ref(x):
  return np.linalg.cholesky(x).astype(x.dtype)


def _tri_solve_ref(left_side, lower, transpose_a, conjugate_a, unit_diagonal):
  def f(b, a):
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
      t = t - np.diag(np.diag(t)) + np.eye(a.shape[-1])
    if conjugate_a:
      t = np.conj(t)
    if transpose_a:
      t = t.T
    x = np.linalg.solve(t, b) if left_side else np.linalg.solve(t.T, b.T).T
    return x.astype(b.dtype)
  return f


def _lu_ref(x):
  lu_, piv = scipy.linalg.lu_factor(x)
  perm = np.arange(x.shape[0])
  for i, p in enumerate(piv):
    perm[[i, p]] = perm[[p, i]]
  return lu_.astype(x.dtype), piv.astype(np.int32), perm.astype(np.int32)


def _pivots(shape, m):
  def make(rng):
    k = shape[-1]
    return np.stack([rng.integers(np.arange(k), m) for _ in range(int(np.prod(shape[:-1])))]
                    ).reshape(shape).astype(np.int32)
  return make


def _pivots_ref(m):
  def f(p):
    flat = p.reshape(-1, p.shape[-1])
    out = np.tile(np.arange(m, dtype=np.int32), (flat.shape[0], 1))
    for row, piv in zip(out, flat):
      for i, q in enumerate(piv):
        row[[i, q]] = row[[q, i]]
    return out.reshape(p.shape[:-1] + (m,))
  return f


def _tridiag(m, n, dtype=np.float32, batch=()):
  def make(rng):
    dl = rng.uniform(-1, 1, batch + (m,))
    du = rng.uniform(-1, 1, batch + (m,))
    dl[..., 0] = 0
    du[..., -1] = 0
    d = rng.uniform(3, 4, batch + (m,))
    b = rng.uniform(-1, 1, batch + (m, n))
    return tuple(v.astype(dtype) for v in (b, dl, d, du))
  return make


def _tridiag_ref(b, dl, d, du):
  t = np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)
  return np.linalg.solve(t, b).astype(b.dtype)


def _qr_ref(full_matrices, pivoting=False):
  def f(x):
    mode = "full" if full_matrices else "economic"
    out = scipy.linalg.qr(x, mode=mode, pivoting=pivoting)
    if pivoting:
      return out[0].astype(x.dtype), out[1].astype(x.dtype), out[2].astype(np.int32)
    return out[0].astype(x.dtype), out[1].astype(x.dtype)
  return f


def _parts(name, prim, fun, args, ref, parts, **kw):
  """One record per output of a multiple-output function (the suites compare single arrays);
  `parts` maps an output index to that record's extra options (e.g. grad_order=0 for ints)."""
  names = {0: "a", 1: "b", 2: "c", 3: "d"}
  return [OpRecord(f"{name}_{names[i]}", prim, (lambda i: lambda *xs: fun(*xs)[i])(i), args,
                   (lambda i: lambda *xs: ref(*xs)[i])(i), **{**kw, **extra})
          for i, extra in parts.items()]


def _args(*makers):
  return lambda rng: tuple(m(rng) for m in makers)


RECORDS = [
  # cholesky
  OpRecord("cholesky_f32", "cholesky", lin.cholesky, _args(_spd((4, 4))), _chol_ref, **_TOL),
  OpRecord("cholesky_f32_batch", "cholesky", lin.cholesky, _args(_spd((2, 3, 3))), _chol_ref,
           **_TOL),
  OpRecord("cholesky_f32_lower_only", "cholesky",
           lambda x: lin.cholesky(x, symmetrize_input=False), _args(_spd((3, 3))), _chol_ref,
           invertible=True, grad_order=0, **_TOL),  # JVP assumes a Hermitian tangent (as JAX)
  OpRecord("cholesky_c64", "cholesky", lin.cholesky, _args(_spd((3, 3), np.complex64)),
           _chol_ref, grad_order=0, **_TOL),
  # the primitive itself (lin.cholesky masks its result's upper triangle after it, so that the
  # tangent is exactly lower triangular): the record whose one equation is cholesky, for the
  # inverse rule's round trip
  OpRecord("cholesky_f32_primitive", "cholesky", lambda x: cholesky_p.bind(x),
           _args(_spd((3, 3))), _chol_ref, invertible=True, grad_order=0, **_TOL),
  # triangular_solve (b first: linear in it)
  *[OpRecord(f"triangular_solve_f32_{tag}", "triangular_solve",
             (lambda kw: lambda b, a: lin.triangular_solve(a, b, **kw))(kw),
             _args(_mat(bshape), _mat((4, 4), diag=3.0)), _tri_solve_ref(**kw), linear=True,
             invertible=True, **_TOL)
    for tag, bshape, kw in [
        ("left_lower", (4, 3), dict(left_side=True, lower=True, transpose_a=False,
                                    conjugate_a=False, unit_diagonal=False)),
        ("left_upper_trans", (4, 2), dict(left_side=True, lower=False, transpose_a=True,
                                          conjugate_a=False, unit_diagonal=False)),
        ("right_lower_unit", (2, 4), dict(left_side=False, lower=True, transpose_a=False,
                                          conjugate_a=False, unit_diagonal=True)),
        ("right_upper_trans", (3, 4), dict(left_side=False, lower=False, transpose_a=True,
                                           conjugate_a=False, unit_diagonal=False)),
    ]],
  OpRecord("triangular_solve_f32_batch", "triangular_solve",
           lambda b, a: lin.triangular_solve(a, b, left_side=True, lower=True),
           _args(_mat((2, 3, 2)), _mat((2, 3, 3), diag=3.0)),
           lambda b, a: np.stack([_tri_solve_ref(True, True, False, False, False)(bi, ai)
                                  for bi, ai in zip(b, a)]), linear=True, **_TOL),
  *[OpRecord(f"triangular_solve_c64_{tag}", "triangular_solve",
             (lambda kw: lambda b, a: lin.triangular_solve(a, b, **kw))(kw),
             _args(_mat((3, 2), np.complex64), _mat((3, 3), np.complex64, diag=3.0)),
             _tri_solve_ref(**kw), grad_order=0, **_TOL)
    for tag, kw in [("adjoint", dict(left_side=True, lower=True, transpose_a=True,
                                     conjugate_a=True, unit_diagonal=False)),
                    ("conj", dict(left_side=True, lower=False, transpose_a=False,
                                  conjugate_a=True, unit_diagonal=False))]],
  # lu
  *_parts("lu_f32_square", "lu", lin.lu, _args(_mat((5, 5))), _lu_ref, {1: {}, 2: {}}, grad_order=0),
  OpRecord("lu_f32_factors", "lu", lambda x: lin.lu(x)[0], _args(_mat((4, 4))),
           lambda x: _lu_ref(x)[0], invertible=True, **_TOL),
  OpRecord("lu_f32_tall", "lu", lambda x: lin.lu(x)[0], _args(_mat((5, 3))),
           lambda x: _lu_ref(x)[0], **_TOL),
  OpRecord("lu_f32_wide", "lu", lambda x: lin.lu(x)[0], _args(_mat((3, 5))),
           lambda x: _lu_ref(x)[0], **_TOL),
  *_parts("lu_c64", "lu", lin.lu, _args(_mat((4, 4), np.complex64)), _lu_ref, {0: {}, 1: {}},
           grad_order=0, **_TOL),
  # lu_pivots_to_permutation
  OpRecord("lu_pivots_to_permutation_i32", "lu_pivots_to_permutation",
           lambda p: lin.lu_pivots_to_permutation(p, 6), _args(_pivots((4,), 6)), _pivots_ref(6),
           grad_order=0),
  OpRecord("lu_pivots_to_permutation_i32_batch", "lu_pivots_to_permutation",
           lambda p: lin.lu_pivots_to_permutation(p, 5), _args(_pivots((2, 3, 5), 5)),
           _pivots_ref(5), grad_order=0),
  # qr
  *_parts("qr_f32_square", "qr", lin.qr, _args(_mat((4, 4))), _qr_ref(True), {0: {}, 1: {}}, **_TOL),
  *_parts("qr_f32_tall_reduced", "qr", lambda x: lin.qr(x, full_matrices=False),
           _args(_mat((5, 3))), _qr_ref(False), {0: {}, 1: {}}, **_TOL),
  *_parts("qr_f32_tall_full", "qr", lin.qr, _args(_mat((5, 3))), _qr_ref(True), {0: {}},
           grad_order=0, **_TOL),
  *_parts("qr_f32_wide", "qr", lambda x: lin.qr(x, full_matrices=False), _args(_mat((3, 5))),
           _qr_ref(False), {1: {}}, grad_order=0, **_TOL),
  *_parts("qr_f32_pivoting", "qr", lambda x: lin.qr(x, pivoting=True, full_matrices=False),
           _args(_mat((5, 4))), _qr_ref(False, True), {0: {}, 2: {}}, grad_order=0, **_TOL),
  *_parts("qr_c64", "qr", lambda x: lin.qr(x, full_matrices=False),
           _args(_mat((4, 3), np.complex64)), _qr_ref(False), {0: {}, 1: {}}, grad_order=0, **_TOL),
  # eigh
  *_parts("eigh_f32", "eigh", _eigh_fun(), _args(_sym((4, 4))), _eigh_ref(), {0: {}, 1: {}}, **_TOL),
  *_parts("eigh_f32_odd_batch", "eigh", _eigh_fun(), _args(_sym((2, 5, 5))), _eigh_ref(),
           {0: {}}, **_TOL),
  *_parts("eigh_f32_upper", "eigh", _eigh_fun(lower=False, symmetrize=False),
           _args(_sym((3, 3))), _eigh_ref(lower=False), {0: {}}, grad_order=0, **_TOL),
  OpRecord("eigh_f32_subset", "eigh", lambda x: lin.eigh(x, subset_by_index=(1, 3))[1],
           _args(_sym((4, 4))), lambda x: np.linalg.eigvalsh(x)[1:3].astype(x.dtype),
           grad_order=0, **_TOL),
  OpRecord("eigh_f32_values", "eigh", lambda x: lin.eigh(x, symmetrize_input=False)[1],
           _args(_sym((4, 4))), lambda x: np.linalg.eigvalsh(x).astype(x.dtype), grad_order=0,
           **_TOL),
  *_parts("eigh_c64", "eigh", _eigh_fun(), _args(_sym((3, 3), np.complex64)), _eigh_ref(),
           {0: {}, 1: {}}, grad_order=0, **_TOL),
  # svd
  *_parts("svd_f32_square", "svd", _svd_fun(), _args(_mat((4, 4), diag=2.0)), _svd_ref,
           {0: {}, 1: {}, 2: {}}, **_TOL),
  *_parts("svd_f32_tall", "svd", _svd_fun(), _args(_mat((5, 3))), _svd_ref, {1: {}, 2: {}}, **_TOL),
  *_parts("svd_f32_wide_batch", "svd", _svd_fun(), _args(_mat((2, 3, 4))), _svd_ref,
           {0: {}, 2: {}}, **_TOL),
  *_parts("svd_f32_full_square", "svd", _svd_fun(True), _args(_mat((3, 3), diag=2.0)),
           _svd_ref, {1: {}}, **_TOL),
  OpRecord("svd_f32_values", "svd", lambda x: lin.svd(x, compute_uv=False),
           _args(_mat((4, 3))), _svd_values_ref, **_TOL),
  *_parts("svd_c64", "svd", _svd_fun(), _args(_mat((4, 3), np.complex64)), _svd_ref,
           {0: {}, 1: {}}, grad_order=0, **_TOL),
  # tridiagonal_solve (b first: linear in it)
  OpRecord("tridiagonal_solve_f32", "tridiagonal_solve",
           lambda b, dl, d, du: lin.tridiagonal_solve(dl, d, du, b), _tridiag(5, 2),
           _tridiag_ref, linear=True, invertible=True, **_TOL),
  OpRecord("tridiagonal_solve_f32_batch", "tridiagonal_solve",
           lambda b, dl, d, du: lin.tridiagonal_solve(dl, d, du, b), _tridiag(4, 1, batch=(2,)),
           lambda b, dl, d, du: np.stack([_tridiag_ref(*xs) for xs in zip(b, dl, d, du)]),
           linear=True, **_TOL),
  # symmetric_product
  OpRecord("symmetric_product_f32", "symmetric_product",
           lambda a, c: lin.symmetric_product(a, c, alpha=2.0, beta=0.5),
           _args(_mat((3, 2)), _mat((3, 3))),
           lambda a, c: (2 * a @ a.T + 0.5 * c).astype(c.dtype),  # (the whole, as jax on CPU)
           **_TOL),
]


# --- the Householder family and cholesky_update, against LAPACK through scipy.linalg.lapack ------
def _geqrf_args(shape):
  def make(rng):
    qr_, tau = scipy.linalg.lapack.sgeqrf(rng.uniform(-1, 1, shape).astype(np.float32))[:2]
    return qr_.astype(np.float32), tau.astype(np.float32)
  return make


def _orgqr_ref(a, taus):
  return scipy.linalg.lapack.sorgqr(a, taus)[0].astype(np.float32)


def _ormqr_args(shape, c_shape):
  def make(rng):
    a, taus = _geqrf_args(shape)(rng)
    return a, taus, rng.uniform(-1, 1, c_shape).astype(np.float32)
  return make


def _ormqr_ref(a, taus, c):
  m, n = a.shape
  q = scipy.linalg.lapack.sorgqr(np.pad(a, ((0, 0), (0, m - n))), np.pad(taus, (0, m - len(taus))))[0]
  return (q.T @ c).astype(np.float32)


def _gehrd_ref(a):
  h, tau = scipy.linalg.lapack.sgehrd(a)[:2]
  return h.astype(np.float32), tau[:a.shape[0] - 1].astype(np.float32)


def _geqrf_ref(a):
  qr, tau = scipy.linalg.lapack.sgeqrf(a)[:2]
  return qr.astype(np.float32), tau.astype(np.float32)


def _sytrd_ref(lower):
  def f(a):
    c, d, e, t, _ = scipy.linalg.lapack.ssytrd(a, lower=int(lower))
    return c, d, e, t
  return f


def _chol_update_args(n):
  def make(rng):
    a = _spd((n, n), np.float64)(rng)
    return np.linalg.cholesky(a).T.astype(np.float32), rng.uniform(-1, 1, n).astype(np.float32)
  return make


def _chol_update_ref(r, w):
  r64, w64 = r.astype(np.float64), w.astype(np.float64)
  return np.linalg.cholesky(r64.T @ r64 + np.outer(w64, w64)).T.astype(np.float32)


RECORDS += [
  OpRecord("householder_product_f32", "householder_product", lin.householder_product,
           _geqrf_args((5, 3)), _orgqr_ref, grad_order=1, **_TOL),
  OpRecord("ormqr_f32_left_transpose", "ormqr",
           lambda a, t, c: lin.ormqr(a, t, c, left=True, transpose=True),
           _ormqr_args((4, 3), (4, 2)), _ormqr_ref, grad_order=1, **_TOL),
  *_parts("hessenberg_f32", "hessenberg", lin.hessenberg, _args(_mat((5, 5))), _gehrd_ref,
          {0: {}, 1: {}}, grad_order=1, **_TOL),
  *_parts("geqrf_f32_tall", "geqrf", lin_geqrf, _args(_mat((5, 3))), _geqrf_ref,
          {0: {}, 1: {}}, grad_order=1, **_TOL),
  *_parts("geqrf_f32_wide", "geqrf", lin_geqrf, _args(_mat((3, 4))), _geqrf_ref,
          {0: {}, 1: {}}, grad_order=1, **_TOL),
  *_parts("tridiagonal_f32_lower", "tridiagonal", lin.tridiagonal, _args(_sym((4, 4))),
          _sytrd_ref(True), {0: {}, 1: {}, 2: {}, 3: {}}, grad_order=1, **_TOL),
  *_parts("tridiagonal_f32_upper", "tridiagonal", lambda x: lin.tridiagonal(x, lower=False),
          _args(_sym((5, 5))), _sytrd_ref(False), {0: {}, 2: {}}, grad_order=1, **_TOL),
  OpRecord("cholesky_update_f32", "cholesky_update", lin.cholesky_update, _chol_update_args(4),
           _chol_update_ref, grad_order=1, **_TOL),
  # eig (LAPACK ?geev on the host, eager and jitted: the jit suite checks the host call); a
  # symmetric input has real, separated eigenvalues (sorted here: finite differences apply)
  OpRecord("eig_f32_eigenvalues", "eig", lambda x: lax.sort(lax.real(lin.eig(
      x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0])),
           _args(_sym((4, 4))), lambda x: np.sort(np.linalg.eigvals(x).real).astype(x.dtype),
           grad_order=1, **_TOL),
  OpRecord("eig_f32_vectors", "eig", lambda x: _fix_cols(lin.eig(
      x, compute_left_eigenvectors=False)[1]), _args(_mat((2, 4, 4))),
           lambda x: _np_fix_cols(np.linalg.eig(x)[1].astype(np.complex64)), grad_order=0,
           **_TOL),
  OpRecord("eig_c64_eigenvalues", "eig", lambda x: lin.eig(
      x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0],
           _args(_mat((3, 3), np.complex64)), lambda x: np.linalg.eigvals(x).astype(x.dtype),
           grad_order=0, **_TOL),
  # schur (LAPACK ?gees on the host, eager and jitted); it has no derivative (as in JAX)
  OpRecord("schur_f32_batched", "schur", lin.schur, _args(_mat((2, 4, 4))),
           lambda x: _np_schur(x, "real"), grad_order=0, **_TOL),
  OpRecord("schur_c64", "schur", lin.schur, _args(_mat((3, 3), np.complex64)),
           lambda x: _np_schur(x, "complex"), grad_order=0, **_TOL),
  OpRecord("schur_f32_no_vectors", "schur",
           lambda x: lin.schur(x, compute_schur_vectors=False)[0], _args(_mat((5, 5))),
           lambda x: _np_schur(x, "real")[0], grad_order=0, **_TOL),
]


def _np_schur(x, output):
  """scipy's Schur factors (its ?gees) of each matrix of a batch."""
  flat = x.reshape((-1,) + x.shape[-2:])
  t, z = zip(*(scipy.linalg.schur(m, output=output) for m in flat))
  return (np.stack(t).reshape(x.shape).astype(x.dtype),
          np.stack(z).reshape(x.shape).astype(x.dtype))
