"""Class 3 of issue 33: derivatives at degenerate points. Every public function of
jax.numpy.linalg, jax.scipy.linalg and jax.lax.linalg that takes a matrix, differentiated (jvp
along a fixed direction, and grad of a weighted sum of its floating outputs) at zero, identity,
rank-1, rank-2 (singular), repeated-eigenvalue and defective (nilpotent) matrices, against jax
0.10.2: finite where jax's derivative is finite and close to it, non-finite where jax's is, or the
same exception type where jax refuses (a derivative jax does not implement).

The derivatives of a singular matrix's determinant are its cofactors (jax differentiates through
the LU factors), an eigenvalue derivative at a repeated eigenvalue is finite while the
eigenvectors' is not, and so on: revax must adopt jax's formulation of each rule, not one that
happens to agree at generic points (those are covered by the op database's check_grads).

Functions of symmetric or positive semi-definite matrices (eigh, cholesky, ...) get the symmetric
inputs and a symmetric direction. Outputs that are not unique (eigenvectors' signs, singular
vectors) enter through sign-invariant combinations. Functions of constructor kind (hilbert,
pascal, dft, ...) and integer-valued ones are listed in NOT_DIFFERENTIATED with the reason.
"""
from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

import revax
import revax.lax.linalg as rlal
import revax.numpy as rnp
import revax.numpy.linalg as rla
import revax.scipy.linalg as rsl
from tests.edges.harness import LIVE, Raised, outcome, recorded
from tests.edges.recipes import public_callables
from tests.platform_tolerances import ON_TPU, XLA_LINALG

jax = pytest.importorskip("jax")
jnp = jax.numpy
import jax.lax.linalg as jlal  # noqa: E402
import jax.numpy.linalg as jla  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402

f32 = np.float32
SIDES = {
    "jax": types.SimpleNamespace(np=jnp, la=jla, sl=jsl, lax=jlal, jvp=jax.jvp, grad=jax.grad),
    "revax": types.SimpleNamespace(np=rnp, la=rla, sl=rsl, lax=rlal, jvp=revax.jvp,
                                   grad=revax.grad),
}
MODULES = {"numpy.linalg": jla, "scipy.linalg": jsl, "lax.linalg": jlal}

_H = (np.eye(3) - 2. / 3. * np.ones((3, 3)))  # a symmetric orthogonal (Householder) matrix
GENERAL = {
    "zero": np.zeros((3, 3), f32),
    "identity": np.eye(3, dtype=f32),
    "rank 1": np.outer([1., 2., 3.], [1., -1., 2.]).astype(f32),
    "rank 2": (np.arange(9.) + 1).reshape(3, 3).astype(f32),
    "repeated eigenvalue": np.diag([2., 2., 5.]).astype(f32),
    "nilpotent": np.eye(3, k=1, dtype=f32),
}
SYMMETRIC = {
    "zero": GENERAL["zero"],
    "identity": GENERAL["identity"],
    "rank 1 psd": np.outer([1., 2., 3.], [1., 2., 3.]).astype(f32),
    "repeated eigenvalue": GENERAL["repeated eigenvalue"],
    "repeated eigenvalue dense": (_H @ np.diag([2., 2., 5.]) @ _H).astype(f32),
    "rank 2 psd": (lambda b: b @ b.T)(np.array([[1., 2.], [3., 4.], [5., 6.]])).astype(f32),
}
# 4x4: determinants beyond the explicit 3x3 expansion (jax's cofactor solve)
GENERAL4 = {
    "4x4 zero": np.zeros((4, 4), f32),
    "4x4 rank 3": np.diag([2., -1., 3., 0.]).astype(f32)[[1, 0, 3, 2]],
    "4x4 rank 2": np.outer([1., 2., 0., 1.], [1., 0., 1., 2.]).astype(f32)
    + np.outer([0., 1., 1., 0.], [2., 1., 0., 0.]).astype(f32),
    "4x4 dense rank 3": (lambda m: m @ np.diag([1., 2., 3., 0.]) @ m.T)(
        np.eye(4) + 0.25 * np.arange(16.).reshape(4, 4) / 16).astype(f32),
}
# an upper-triangular input (triangular solves, Schur forms, Cholesky factors)
TRIANGULAR = {k: np.triu(v) for k, v in GENERAL.items()}
DIRECTION = np.array([[0.3, -0.7, 0.2], [0.5, 0.1, -0.4], [-0.6, 0.8, 0.9]], f32)
DIRECTION4 = (np.arange(16.).reshape(4, 4) % 5 - 2).astype(f32) / 4
SYM_DIRECTION = (DIRECTION + DIRECTION.T) / 2
B = np.array([[1., 0.], [2., -1.], [0.5, 3.]], f32)  # a right-hand side
V3 = np.array([1., -2., 0.5], f32)


def _sq(u):
  """Sign-invariant stand-in for a factor whose columns are defined up to sign."""
  return u * u.conj()


RECIPES = {
    "numpy.linalg": {
        "cholesky": (lambda S, a: S.la.cholesky(a), SYMMETRIC),
        "cond": (lambda S, a: S.la.cond(a), GENERAL),
        "cross": (lambda S, a: S.la.cross(a, a[::-1]), GENERAL),
        "det": (lambda S, a: S.la.det(a), GENERAL | GENERAL4),
        "diagonal": (lambda S, a: S.la.diagonal(a), GENERAL),
        "eig": (lambda S, a: (lambda w, v: (w, _sq(v)))(*S.la.eig(a)), GENERAL),
        "eigh": (lambda S, a: (lambda w, v: (w, _sq(v)))(*S.la.eigh(a)), SYMMETRIC),
        "eigvals": (lambda S, a: S.la.eigvals(a), GENERAL),
        "eigvalsh": (lambda S, a: S.la.eigvalsh(a), SYMMETRIC),
        "inv": (lambda S, a: S.la.inv(a), GENERAL),
        "lstsq": (lambda S, a: S.la.lstsq(a, B)[0], GENERAL),
        "matmul": (lambda S, a: S.la.matmul(a, a), GENERAL),
        "matrix_norm": (lambda S, a: [S.la.matrix_norm(a, ord=o)
                                      for o in ("fro", "nuc", 1, -1, 2, -2, np.inf)], GENERAL),
        "matrix_power": (lambda S, a: [S.la.matrix_power(a, n) for n in (0, 1, 3)], GENERAL),
        "matrix_transpose": (lambda S, a: S.la.matrix_transpose(a), GENERAL),
        "multi_dot": (lambda S, a: S.la.multi_dot([a, a, a]), GENERAL),
        "norm": (lambda S, a: [S.la.norm(a), S.la.norm(a, 2), S.la.norm(a, "nuc"),
                               S.la.norm(a, axis=0), S.la.norm(a[0])], GENERAL),
        "outer": (lambda S, a: S.la.outer(a[0], a[1]), GENERAL),
        "pinv": (lambda S, a: S.la.pinv(a), GENERAL | GENERAL4),
        "qr": (lambda S, a: S.np.abs(S.la.qr(a, mode="r")), GENERAL),
        "slogdet": (lambda S, a: S.la.slogdet(a), GENERAL | GENERAL4),
        "solve": (lambda S, a: S.la.solve(a, B), GENERAL),
        "svd": (lambda S, a: (lambda u, s, vh: (s, _sq(u), _sq(vh)))(*S.la.svd(a)), GENERAL),
        "svdvals": (lambda S, a: S.la.svdvals(a), GENERAL),
        "tensordot": (lambda S, a: S.la.tensordot(a, a, axes=1), GENERAL),
        "tensorinv": (lambda S, a: S.la.tensorinv(a, 1), GENERAL),
        "tensorsolve": (lambda S, a: S.la.tensorsolve(a, V3), GENERAL),
        "trace": (lambda S, a: S.la.trace(a), GENERAL),
        "vecdot": (lambda S, a: S.la.vecdot(a, a[::-1]), GENERAL),
        "vector_norm": (lambda S, a: [S.la.vector_norm(a, ord=o)
                                      for o in (2, 1, np.inf, -np.inf, 0.5)], GENERAL),
    },
    "scipy.linalg": {
        "block_diag": (lambda S, a: S.sl.block_diag(a, a[:2]), GENERAL),
        "cho_factor": (lambda S, a: S.sl.cho_factor(a)[0], SYMMETRIC),
        "cho_solve": (lambda S, a: S.sl.cho_solve((a, False), B), TRIANGULAR),
        "cholesky": (lambda S, a: S.sl.cholesky(a), SYMMETRIC),
        "circulant": (lambda S, a: S.sl.circulant(a[0]), GENERAL),
        "companion": (lambda S, a: S.sl.companion(a[0] + 1), GENERAL),
        "convolution_matrix": (lambda S, a: S.sl.convolution_matrix(a[0], 4), GENERAL),
        "det": (lambda S, a: S.sl.det(a), GENERAL | GENERAL4),
        "eigh": (lambda S, a: S.sl.eigh(a, eigvals_only=True), SYMMETRIC),
        "eigh_tridiagonal": (lambda S, a: S.sl.eigh_tridiagonal(
            S.np.diagonal(a), S.np.diagonal(a, 1), eigvals_only=True), SYMMETRIC),
        "expm": (lambda S, a: S.sl.expm(a), GENERAL),
        "expm_frechet": (lambda S, a: S.sl.expm_frechet(a, DIRECTION), GENERAL),
        "fiedler": (lambda S, a: S.sl.fiedler(a[0]), GENERAL),
        "fiedler_companion": (lambda S, a: S.sl.fiedler_companion(a[0] + 1), GENERAL),
        "funm": (lambda S, a: S.sl.funm(a, S.np.sin), GENERAL),
        "hankel": (lambda S, a: S.sl.hankel(a[0], a[1]), GENERAL),
        "hessenberg": (lambda S, a: S.np.abs(S.sl.hessenberg(a)), GENERAL),
        "inv": (lambda S, a: S.sl.inv(a), GENERAL),
        "leslie": (lambda S, a: S.sl.leslie(a[0], a[1, :2]), GENERAL),
        "lu": (lambda S, a: S.sl.lu(a), GENERAL),
        "lu_factor": (lambda S, a: S.sl.lu_factor(a)[0], GENERAL),
        "lu_solve": (lambda S, a: S.sl.lu_solve((a, np.arange(3, dtype=np.int32)), B),
                     TRIANGULAR),
        "polar": (lambda S, a: S.sl.polar(a), GENERAL),
        "qr": (lambda S, a: S.np.abs(S.sl.qr(a, mode="r")[0]), GENERAL),
        "qr_multiply": (lambda S, a: S.np.abs(S.sl.qr_multiply(a, B.T)[1]), GENERAL),
        "rsf2csf": (lambda S, a: S.sl.rsf2csf(a, S.np.eye(3)), TRIANGULAR),
        "schur": (lambda S, a: S.sl.schur(a), GENERAL),
        "solve": (lambda S, a: S.sl.solve(a, B), GENERAL),
        "solve_sylvester": (lambda S, a: S.sl.solve_sylvester(a, -a.T, DIRECTION), GENERAL),
        "solve_triangular": (lambda S, a: S.sl.solve_triangular(a, B), TRIANGULAR),
        "sqrtm": (lambda S, a: S.sl.sqrtm(a), GENERAL),
        "svd": (lambda S, a: S.sl.svd(a, compute_uv=False), GENERAL),
        "toeplitz": (lambda S, a: S.sl.toeplitz(a[0], a[1]), GENERAL),
    },
    "lax.linalg": {
        "cholesky": (lambda S, a: S.lax.cholesky(a), SYMMETRIC),
        "cholesky_update": (lambda S, a: S.lax.cholesky_update(a, V3), TRIANGULAR),
        "eig": (lambda S, a: S.lax.eig(a, compute_left_eigenvectors=False,
                                       compute_right_eigenvectors=False), GENERAL),
        "eigh": (lambda S, a: (lambda v, w: (_sq(v), w))(*S.lax.eigh(a)), SYMMETRIC),
        "hessenberg": (lambda S, a: S.np.abs(S.lax.hessenberg(a)[0]), GENERAL),
        "householder_product": (lambda S, a: S.lax.householder_product(a, a[0]), GENERAL),
        "lu": (lambda S, a: S.lax.lu(a)[0], GENERAL),
        "ormqr": (lambda S, a: S.lax.ormqr(a, a[0], B), GENERAL),
        "qdwh": (lambda S, a: S.lax.qdwh(a)[:2], GENERAL),
        "qr": (lambda S, a: S.np.abs(S.lax.qr(a, full_matrices=False)[1]), GENERAL),
        "schur": (lambda S, a: S.lax.schur(a), GENERAL),
        "svd": (lambda S, a: S.lax.svd(a, compute_uv=False), GENERAL),
        "symmetric_product": (lambda S, a: S.lax.symmetric_product(a, S.np.eye(3)), GENERAL),
        "triangular_solve": (lambda S, a: S.lax.triangular_solve(a, B.T), TRIANGULAR),
        "tridiagonal": (lambda S, a: S.lax.tridiagonal(a)[1:3], SYMMETRIC),
        "tridiagonal_solve": (lambda S, a: S.lax.tridiagonal_solve(
            a[0], a[1], a[2], B), GENERAL),
    },
}

NOT_DIFFERENTIATED = {
    "numpy.linalg": {"matrix_rank": "integer output"},
    "scipy.linalg": {n: "constructor of a constant matrix from sizes" for n in (
        "dft", "hadamard", "helmert", "hilbert", "invhilbert", "invpascal", "pascal")},
    "lax.linalg": {"lu_pivots_to_permutation": "integer input and output"},
}


def _float_leaves(tree):
  return [x for x in jax.tree.leaves(tree)
          if hasattr(x, "dtype") and np.dtype(x.dtype).kind in "fc"]


def _weights(x, salt):
  n = int(np.prod(x.shape))
  return (1. + 0.1 * ((np.arange(n) * 7 + salt) % 11)).reshape(x.shape).astype(f32)


def _scalar(S, out):
  total = 0.
  for i, x in enumerate(_float_leaves(out)):
    w = _weights(x, i)
    total = total + S.np.sum(S.np.real(x) * w) + S.np.sum(S.np.imag(x) * w[::-1])
  return total


def _jvp(side, call, a, direction):
  S = SIDES[side]
  primal, tangent = S.jvp(lambda a: _float_leaves(call(S, a)), (S.np.asarray(a),),
                          (S.np.asarray(direction),))
  return primal, tangent


def _grad(side, call, a):
  S = SIDES[side]
  return S.grad(lambda a: _scalar(S, call(S, a)))(S.np.asarray(a))


def _cases():
  out = []
  for family, recipes in RECIPES.items():
    for name, (call, inputs) in recipes.items():
      direction = SYM_DIRECTION if inputs is SYMMETRIC else DIRECTION
      for label, a in inputs.items():
        d = DIRECTION4 if a.shape == (4, 4) else direction
        key = f"{family}.{name} [{label}]"
        out.append((f"{key} jvp", lambda side, c=call, a=a, d=d: _jvp(side, c, a, d)))
        out.append((f"{key} grad", lambda side, c=call, a=a: _grad(side, c, a)))
  return out


CASES = _cases()
KEYS = [k for k, _ in CASES]


def oracle_cases():
  return [(key, lambda thunk=thunk: outcome(thunk, "jax")) for key, thunk in CASES]


RTOL = 2e-3  # float32 derivatives through different factorizations of ill-conditioned matrices


def degenerate_difference(expected, actual):
  """None when revax's outcome agrees with jax's: the same exception type, or the same leaves
  (dtype, shape), non-finite exactly where jax's are, and finite values close (relative to the
  leaf's largest magnitude)."""
  if isinstance(expected, Raised) or isinstance(actual, Raised):
    if isinstance(expected, Raised) and isinstance(actual, Raised):
      from tests.edges.harness import builtin_base
      if issubclass(actual.kind, builtin_base(expected.kind)):
        return None
    what = lambda o: (f"raises {o.kind.__name__} ({o.message})"  # noqa: E731
                      if isinstance(o, Raised) else "returns")
    return f"revax {what(actual)}; jax {what(expected)}"
  if len(expected) != len(actual):
    return f"{len(actual)} outputs, jax has {len(expected)}"
  for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
    if (e.dtype, e.shape) != (a.dtype, a.shape):
      return f"output {i}: {a.dtype}{a.shape}, jax {e.dtype}{e.shape}"
    ev, av = e.value.astype(np.complex128), a.value.astype(np.complex128)
    efin, afin = np.isfinite(ev), np.isfinite(av)
    if not np.array_equal(efin, afin):
      return (f"output {i}: non-finite at {np.argwhere(~afin).ravel()[:6].tolist()}, jax at "
              f"{np.argwhere(~efin).ravel()[:6].tolist()} (revax {av.ravel()[:4]}, "
              f"jax {ev.ravel()[:4]})")
    scale = max(1., float(np.max(np.abs(ev[efin]), initial=0.)))
    if not np.allclose(av[efin], ev[efin], rtol=RTOL, atol=RTOL * scale):
      return f"output {i}: values {av.ravel()[:4]}, jax {ev.ravel()[:4]}"
  return None


def _differences(keys):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    expected = dict((k, t()) for k, t in oracle_cases() if k in keys) if LIVE \
        else recorded(__file__)
    found = []
    for key, thunk in CASES:
      if key in keys:
        d = degenerate_difference(expected[key], outcome(thunk, "revax"))
        if d:
          found.append(f"{key}: {d}")
  return found


# Functions jax does not differentiate (NotImplementedError for hessenberg, householder_product,
# ormqr, cholesky_update, symmetric_product, tridiagonal, and for schur / geqrf inside
# solve_sylvester / qr_multiply; eigh_tridiagonal's grad through a while_loop with dynamic
# bounds, ValueError): revax's are built from differentiable lax operations and it keeps them.
# The test checks that jax still refuses each of their cases and that revax answers at the zero
# matrix (jax's jvp of eigh_tridiagonal runs: see KNOWN).
JAX_HAS_NO_DERIVATIVE = {
    "scipy.linalg.hessenberg", "scipy.linalg.qr_multiply", "scipy.linalg.solve_sylvester",
    "scipy.linalg.eigh_tridiagonal", "lax.linalg.hessenberg", "lax.linalg.householder_product",
    "lax.linalg.ormqr", "lax.linalg.cholesky_update", "lax.linalg.symmetric_product",
    "lax.linalg.tridiagonal",
}
_BASIS = ("a repeated eigenvalue or singular value whose eigenspace is not spanned by unit "
          "vectors: jax's formula (diag(V^H dA V), F = 1 / (w_j - w_i)) depends on the basis "
          "the factorization picks, and on eigenvalues equal or apart by a rounding error")
_ROUNDOFF = ("the derivative divides by a pivot, diagonal or singular value that is zero up to "
             "rounding (rank-deficient input): its size is set by the factorization's rounding")
_POLAR = "the polar factor of a singular matrix is not unique (U is any isometry on the kernel)"
# (function [input]) -> why revax's derivative there is not jax's; both jvp and grad are run, and
# an entry whose two cases both agree is stale.
KNOWN = {
    **{f"{f} [{i}]": _BASIS for f in ("numpy.linalg.eigh", "numpy.linalg.eigvalsh",
                                      "scipy.linalg.eigh", "lax.linalg.eigh")
       for i in ("rank 1 psd", "repeated eigenvalue dense")},
    **{f"{f} [rank 1]": _BASIS for f in ("numpy.linalg.svd", "numpy.linalg.svdvals",
                                         "scipy.linalg.svd", "lax.linalg.svd",
                                         "numpy.linalg.norm", "numpy.linalg.matrix_norm")},
    **{f"{f} [rank 1]": _ROUNDOFF for f in ("numpy.linalg.qr", "scipy.linalg.qr",
                                            "lax.linalg.qr", "numpy.linalg.cond")},
    "numpy.linalg.cond [rank 2]": _ROUNDOFF,
    **{f"{f} [rank 2 psd]": _ROUNDOFF for f in ("numpy.linalg.cholesky", "scipy.linalg.cholesky",
                                                "scipy.linalg.cho_factor",
                                                "lax.linalg.cholesky")},
    **{f"{f} [{i}]": _POLAR for f in ("scipy.linalg.polar", "lax.linalg.qdwh")
       for i in ("zero", "rank 1", "rank 2", "nilpotent")},
    **{f"scipy.linalg.eigh_tridiagonal [{i}] jvp": (
        "jax's tangent flows through its bisection's arithmetic (all eigenvalues get the same "
        "tangent); revax's is the eigenvalues' derivative") for i in SYMMETRIC},
}
# On a TPU (measured 2026-12-06): eig at a rank-1 matrix (a repeated zero eigenvalue) is _BASIS's
# case, whose rounding there is the chip's matrix products' (XLA_LINALG).
KNOWN_TPU = {f"{f} [rank 1]": f"{_BASIS}; {XLA_LINALG}"
             for f in ("numpy.linalg.eigvals", "lax.linalg.eig")}
SHARDS = 4


def _function_input(key):
  return key.rsplit(" ", 1)[0]


def _known(key):
  """The KNOWN entry covering a case key (its own, or its function [input] for both modes)."""
  return key if key in KNOWN else _function_input(key) if _function_input(key) in KNOWN else None


def _refused_by_jax(key):
  return (key.split(" [")[0] in JAX_HAS_NO_DERIVATIVE
          and not (key.startswith("scipy.linalg.eigh_tridiagonal") and key.endswith("jvp")))


def test_every_linalg_function_has_a_recipe():
  for family, module in MODULES.items():
    missing = [n for n in public_callables(module)
               if n not in RECIPES[family] and n not in NOT_DIFFERENTIATED[family]]
    assert not missing, f"{family}: no degenerate-derivative recipe for {missing}"
  assert all(any(_known(k) == entry for k in KEYS) for entry in KNOWN)
  assert JAX_HAS_NO_DERIVATIVE <= {k.split(" [")[0] for k in KEYS}


@pytest.mark.parametrize("shard", range(SHARDS))
def test_derivatives_at_degenerate_points_match_jax(shard):
  groups = sorted({_function_input(k) for k in KEYS})[shard::SHARDS]  # jvp and grad together
  keys = {k for k in KEYS if _function_input(k) in set(groups)}
  thunks = dict(CASES)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    expected = recorded(__file__) if not LIVE else None
    for key in sorted(filter(_refused_by_jax, keys)):
      jax_out = expected[key] if expected else outcome(thunks[key], "jax")
      assert isinstance(jax_out, Raised), f"{key}: jax differentiates it now: compare it"
      if "[zero]" in key:  # (one input per function and mode: they cost seconds each)
        revax_out = outcome(thunks[key], "revax")
        assert not isinstance(revax_out, Raised), f"{key}: revax raises {revax_out}"
  compared = {k for k in keys if not _refused_by_jax(k)}
  diffs = _differences(compared)
  new = [d for d in diffs if _known(d.split(": ")[0]) is None
         and not (ON_TPU and _function_input(d.split(": ")[0]) in KNOWN_TPU)]
  assert not new, "\n".join(new)
  if ON_TPU:
    return  # (KNOWN is what the CPU computes: a case may agree with jax on a TPU)
  differing = {_known(d.split(": ")[0]) for d in diffs}
  covered = {_known(k) for k in compared} - {None}
  stale = covered - differing
  assert not stale, f"these now agree with jax: remove them from KNOWN: {sorted(stale)}"
