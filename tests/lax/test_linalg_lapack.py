"""Jitted eigh, svd, lu and cholesky through LAPACK (revax's FFI handlers,
revax/_src/runtime/_lapack.c) on CPU: the custom call is in the lowered program, values match
NumPy and JAX for batches of every supported dtype (up to the signs/phases of singular and
eigenvectors), failures give NaN as in JAX, derivatives through jit match JAX's, and the lax algorithms still serve when LAPACK is off
(in this process, by emptying the handler table, and in a child process with REVAX_LAPACK=0).
A child process with 4 devices runs the custom calls in partitioned programs, and a deserialized
exported program that calls LAPACK (the handlers are registered when the backend starts)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import revax
import revax.lax.linalg as lin
import revax.numpy as rnp
from tests import platform_tolerances
from revax._src.runtime import lapack

jax = pytest.importorskip("jax")
# the CPU's LAPACK handlers (and 64-bit decompositions, which XLA:TPU aborts on compiling)
pytestmark = platform_tolerances.skip_on_tpu(platform_tolerances.NO_FFI)
jlin = jax.lax.linalg
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

try:
  from revax._src.runtime import _lapack  # noqa: F401
  BUILT = True
except ImportError:
  BUILT = False
needs_lapack = pytest.mark.skipif(not BUILT, reason="the _lapack C extension is not built")

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 1e-4, np.float64: 1e-10, np.complex64: 1e-4, np.complex128: 1e-10}


def _rand(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(shape)
  if np.issubdtype(dtype, np.complexfloating):
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


def _herm(shape, dtype, seed=0):
  a = _rand(shape, dtype, seed)
  return (a + np.swapaxes(a, -1, -2).conj()) / 2


def _close(got, want, dtype, scale=1.0):
  tol = TOL[dtype] * scale
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def _same_columns(got, want, dtype):
  """Column j of got is column j of want times a unit phase (eigen/singular vectors)."""
  got, want = np.asarray(got), np.asarray(want)
  phase = np.sum(want.conj() * got, axis=-2, keepdims=True)
  phase = phase / np.abs(phase)
  _close(got, want * phase, dtype, scale=10)


@needs_lapack
def test_lowered_program_calls_lapack():
  x = _herm((2, 4, 4), np.float32)
  assert "revax_lapack_syevd" in revax.jit(lin.eigh).lower(x).as_text()
  assert "revax_lapack_gesdd" in revax.jit(lin.svd).lower(x).as_text()
  assert "revax_lapack_getrf" in revax.jit(lin.lu).lower(x).as_text()
  # empty matrices, as JAX: full U and V^H are identities
  for shape in [(3, 0), (0, 2), (2, 0, 0)]:
    z = np.zeros(shape, np.float32)
    for f, g in [(lin.svd, jlin.svd), (lin.lu, jlin.lu)] + (
        [(lin.eigh, jlin.eigh)] if shape[-1] == shape[-2] else []):
      for got, want in zip(revax.jit(f)(z), jax.jit(g)(z), strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@needs_lapack
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_values_match_numpy_and_jax(x64, dtype):
  assert lapack.target("syevd", dtype) == "revax_lapack_syevd"
  h = _herm((3, 5, 5), dtype)
  for lower in (True, False):
    # symmetrize_input=False: only the named triangle is read (the other is garbage)
    garbage = h + (np.triu(_rand((5, 5), dtype, 9), 1) if lower else
                   np.tril(_rand((5, 5), dtype, 9), -1))
    v, w = revax.jit(lambda x: lin.eigh(x, lower=lower, symmetrize_input=False))(garbage)
    wn, vn = np.linalg.eigh(h)
    assert v.dtype == dtype and w.dtype == np.real(np.zeros((), dtype)).dtype
    _close(w, wn, dtype)
    _same_columns(v, vn, dtype)
  v, w = revax.jit(lambda x: lin.eigh(x, subset_by_index=(1, 3)))(h)
  _close(w, np.linalg.eigh(h)[0][..., 1:3], dtype)
  _same_columns(v, np.linalg.eigh(h)[1][..., 1:3], dtype)

  for shape in [(2, 6, 4), (2, 4, 6), (5, 5)]:  # tall, wide, square
    a = _rand(shape, dtype, 1)
    for full in (True, False):
      u, s, vh = revax.jit(lambda x: lin.svd(x, full_matrices=full))(a)
      ju, js, jvh = jax.jit(lambda x: jlin.svd(x, full_matrices=full))(a)
      un, sn, vhn = np.linalg.svd(a, full_matrices=full)
      assert (u.shape, s.shape, vh.shape) == (ju.shape, js.shape, jvh.shape)
      assert (u.dtype, s.dtype, vh.dtype) == (ju.dtype, js.dtype, jvh.dtype)
      _close(s, sn, dtype)
      k = min(shape[-2:])
      _same_columns(np.asarray(u)[..., :k], un[..., :k], dtype)
      _same_columns(np.swapaxes(np.asarray(vh), -1, -2)[..., :k],
                    np.swapaxes(vhn, -1, -2)[..., :k], dtype)
      uu = np.asarray(u)
      _close(np.swapaxes(uu, -1, -2).conj() @ uu,
             np.broadcast_to(np.eye(uu.shape[-1]), uu.shape[:-2] + (uu.shape[-1],) * 2), dtype,
             10)
    _close(revax.jit(lambda x: lin.svd(x, compute_uv=False))(a), sn, dtype)
    u, s, vh = revax.jit(lambda x: lin.svd(x, subset_by_index=(0, 2)))(a)
    _close(s, sn[..., :2], dtype)
    _same_columns(u, un[..., :, :2], dtype)

    lu, piv, perm = revax.jit(lin.lu)(a)
    jl, jp, jq = jax.jit(jlin.lu)(a)
    assert piv.dtype == perm.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(piv), np.asarray(jp))
    np.testing.assert_array_equal(np.asarray(perm), np.asarray(jq))
    _close(lu, jl, dtype, scale=10)
    _close(lu, lin.lu(a)[0], dtype, scale=10)  # the eager (NumPy) path agrees


@needs_lapack
def test_singular_and_nan_inputs_match_jax():
  singular = np.array([[[1, 2, 3], [2, 4, 6]], [[0, 0, 0], [0, 0, 0]],
                       [[np.nan, 1, 2], [3, 4, 5]]], np.float32)
  for got, want in zip(revax.jit(lin.lu)(singular), jax.jit(jlin.lu)(singular), strict=True):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  s = revax.jit(lambda x: lin.svd(x, compute_uv=False))(singular[:2])
  np.testing.assert_allclose(np.asarray(s), np.linalg.svd(singular[:2], compute_uv=False),
                             atol=1e-5)
  # a NaN anywhere in one matrix of the batch: that matrix's outputs are all NaN (as JAX), the
  # other matrix's are computed
  h = _herm((2, 3, 3), np.float32)
  h[1, 0, 1] = h[1, 1, 0] = np.nan
  v, w = revax.jit(lin.eigh)(h)
  assert np.isnan(np.asarray(v)[1]).all() and np.isnan(np.asarray(w)[1]).all()
  _close(w[0], np.linalg.eigh(h[0])[0], np.float32)
  jv, jw = jax.jit(jlin.eigh)(h)
  assert np.isnan(np.asarray(jw)[1]).all()
  for fm in (True, False):
    outs = revax.jit(lambda x: lin.svd(x, full_matrices=fm))(h)
    assert all(np.isnan(np.asarray(o)[1]).all() and not np.isnan(np.asarray(o)[0]).any()
               for o in outs)
    jouts = jax.jit(lambda x: jlin.svd(x, full_matrices=fm))(h)
    assert all(np.isnan(np.asarray(o)[1]).all() for o in jouts)
  c = np.array([[1, np.nan], [np.nan, 2]], np.complex64)
  v, w = revax.jit(lin.eigh)(c)
  assert np.isnan(np.asarray(w)).all() and np.isnan(np.asarray(v).real).all()


@needs_lapack
def test_derivatives_through_jit_match_jax():
  h, th = _herm((2, 4, 4), np.float32, 3), _herm((2, 4, 4), np.float32, 4)
  a, ta = _rand((2, 5, 3), np.float32, 5), _rand((2, 5, 3), np.float32, 6)
  cases = [(lambda m, x: m.eigh(x)[1], h, th),
           (lambda m, x: m.svd(x, compute_uv=False), a, ta),
           (lambda m, x: m.lu(x)[0], a, ta)]
  for f, x, t in cases:
    got = revax.jit(lambda y, s: revax.jvp(lambda z: f(lin, z), (y,), (s,)))(x, t)
    want = jax.jit(lambda y, s: jax.jvp(lambda z: f(jlin, z), (y,), (s,)))(x, t)
    for g, w in zip(got, want, strict=True):
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-3, atol=2e-3)
  # a gradient of a sign-free function of the vectors
  loss = lambda m, y: (m.svd(y, full_matrices=False)[0][..., 0] ** 2).sum()
  np.testing.assert_allclose(np.asarray(revax.jit(revax.grad(lambda y: loss(lin, y)))(a)),
                             np.asarray(jax.jit(jax.grad(lambda y: loss(jlin, y)))(a)),
                             rtol=2e-3, atol=2e-3)


def test_fallback_in_process(monkeypatch):
  """With no handler available (as without the C extension or the library) the lowering is the
  lax algorithm, and its results are right."""
  monkeypatch.setattr(lapack, "_state", {})
  h = _herm((2, 4, 4), np.float32, 7)
  f = revax.jit(lambda x: lin.eigh(x))
  assert "custom_call" not in f.lower(h).as_text()
  _close(f(h)[1], np.linalg.eigh(h)[0], np.float32)


def _child(env, *args):
  env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT, **env)
  out = subprocess.run([sys.executable, os.path.join(HERE, "linalg_lapack_child.py"), *args],
                       env=env, capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
  assert "CHILD OK" in out.stdout, out.stdout[-2000:]
  return out.stdout


def test_fallback_with_revax_lapack_0():
  out = _child({"REVAX_LAPACK": "0"}, "fallback")
  assert "lapack: False" in out


@needs_lapack
def test_four_device_mesh_and_export(tmp_path):
  from revax import export
  exp = export.export(revax.jit(lambda x: tuple(lin.eigh(x))))(np.eye(3, dtype=np.float32))
  assert "revax_lapack_syevd" in exp.mlir_module()
  path = tmp_path / "eigh.bin"
  path.write_bytes(exp.serialize())
  out = _child({"REVAX_CPU_DEVICE_COUNT": "4",
                "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}, "mesh", str(path))
  assert "lapack: True" in out


# --- cholesky (?potrf): lower triangle only, NaN where jax gives NaN, zeros above ----------
def _spd(shape, dtype, seed=0):
  """Hermitian positive-definite matrices of `shape` (..., n, n)."""
  rng = np.random.default_rng(seed)
  a = rng.standard_normal(shape)
  if np.issubdtype(dtype, np.complexfloating):
    a = a + 1j * rng.standard_normal(shape)
  a = a.astype(dtype)
  n = shape[-1]
  return (a @ np.swapaxes(a, -1, -2).conj() + n * np.eye(n)).astype(dtype)


@needs_lapack
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_cholesky_values_match_numpy_and_jax(x64, dtype):
  assert lapack.target("potrf", dtype) == "revax_lapack_potrf"
  a = _spd((3, 6, 6), dtype)
  f = revax.jit(lambda x: lin.cholesky(x))
  assert "revax_lapack_potrf" in f.lower(a).as_text()
  got = np.asarray(f(a))
  assert got.dtype == dtype
  tol = TOL[dtype]
  np.testing.assert_allclose(got, np.linalg.cholesky(a), rtol=tol, atol=tol)
  np.testing.assert_allclose(got, np.asarray(jax.jit(jlin.cholesky)(a)), rtol=tol, atol=tol)
  assert not np.triu(got, 1).any()
  # symmetrize_input=False reads only the lower triangle: garbage above changes nothing
  garbage = a + np.triu(np.full(a.shape, 7, dtype), 1)
  got = revax.jit(lambda x: lin.cholesky(x, symmetrize_input=False))(garbage)
  np.testing.assert_allclose(np.asarray(got), np.linalg.cholesky(a), rtol=tol, atol=tol)


@needs_lapack
def test_cholesky_failures_and_empty_matrices_match_jax():
  a = _spd((3, 4, 4), np.float32, 1)
  a[1] = -a[1]  # not positive definite
  a[2, 0, 0] = np.nan
  got = np.asarray(revax.jit(rnp.linalg.cholesky)(a))
  want = np.asarray(jax.jit(jax.numpy.linalg.cholesky)(a))
  assert np.isnan(got[1][np.tril_indices(4)]).all()  # not positive definite: NaN, zeros above
  # a NaN spreads through the lower triangle only, zeros stay above (no NaN check, as jaxlib)
  np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # (NaNs compare equal here)
  eager = np.asarray(rnp.linalg.cholesky(a))  # NumPy's LAPACK: the same NaNs
  np.testing.assert_array_equal(np.isnan(eager), np.isnan(want))
  for shape in [(0, 0), (2, 0, 0)]:
    z = np.zeros(shape, np.float32)
    got, want = revax.jit(lin.cholesky)(z), jax.jit(jlin.cholesky)(z)
    assert got.shape == want.shape and got.dtype == want.dtype


@needs_lapack
def test_cholesky_derivatives_through_jit_match_jax():
  a, t = _spd((2, 5, 5), np.float32, 2), _spd((2, 5, 5), np.float32, 3)
  got = revax.jit(lambda x, s: revax.jvp(lin.cholesky, (x,), (s,)))(a, t)
  want = jax.jit(lambda x, s: jax.jvp(jlin.cholesky, (x,), (s,)))(a, t)
  for g, w in zip(got, want, strict=True):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-3, atol=1e-4)
  loss = lambda m, x: (m.cholesky(x) ** 2).sum()
  np.testing.assert_allclose(np.asarray(revax.jit(revax.grad(lambda x: loss(lin, x)))(a)),
                             np.asarray(jax.jit(jax.grad(lambda x: loss(jlin, x)))(a)),
                             rtol=1e-3, atol=1e-4)
  solve = lambda m, x: m.cho_solve(m.cho_factor(x), np.ones((5,), np.float32))
  np.testing.assert_allclose(
      np.asarray(revax.jit(lambda x: solve(revax.scipy.linalg, x))(a[0])),
      np.asarray(jax.jit(lambda x: solve(jax.scipy.linalg, x))(a[0])), rtol=1e-4, atol=1e-5)


def test_cholesky_fallback_in_process(monkeypatch):
  """With no handler available the lowering is the blocked lax algorithm (XLA's own cholesky of
  each block), and its results are right, large and small."""
  monkeypatch.setattr(lapack, "_state", {})
  for n in (5, 70):
    a = _spd((2, n, n), np.float32, 4)
    f = revax.jit(lin.cholesky)
    assert "custom_call" not in f.lower(a).as_text()
    np.testing.assert_allclose(np.asarray(f(a)), np.linalg.cholesky(a), rtol=1e-4, atol=1e-4)


# --- eig (?geev) and schur (?gees) -------------------------------------------------------------
def _bits(got, want):
  for g, w in zip(got, want, strict=True):
    g, w = np.asarray(g), np.asarray(w)
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_array_equal(g, w)


@needs_lapack
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eig_and_schur_handlers_bit_exact_with_jax(x64, dtype):
  """Compiled eig and schur call revax's C handlers (?geev, ?gees), as JAX calls jaxlib's: the
  same LAPACK, so the same bits as jax and as revax's eager (ctypes) path; a batch, a conjugate
  pair's unpacked vectors, empty matrices and NaN (failed) inputs included."""
  assert lapack.target("geev", dtype) == "revax_lapack_geev"
  assert lapack.target("gees", dtype) == "revax_lapack_gees"
  rot = np.array([[0., -2., 1.], [2., 0., 3.], [0., 0., 1.]])  # eigenvalues 1, +-2i
  inputs = [_rand((3, 5, 5), dtype), rot.astype(dtype), np.zeros((2, 0, 0), dtype),
            np.full((2, 3, 3), np.nan, dtype)]
  for x in inputs:
    for left, right in ((True, True), (False, True), (True, False), (False, False)):
      f = lambda v, l=left, r=right: lin.eig(v, compute_left_eigenvectors=l,
                                             compute_right_eigenvectors=r)
      want = jlin.eig(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right)
      _bits(revax.jit(f)(x), want)
      _bits(f(x), want)
    for vectors in (True, False):
      g = lambda v, q=vectors: lin.schur(v, compute_schur_vectors=q)
      want = jlin.schur(x, compute_schur_vectors=vectors)
      _bits(revax.jit(g)(x), want)
      _bits(g(x), want)
  x = inputs[0]
  assert "revax_lapack_geev" in revax.jit(lin.eig).lower(x).as_text()
  assert "revax_lapack_gees" in revax.jit(lin.schur).lower(x).as_text()
  _bits(revax.vmap(revax.jit(lin.eig))(x), jax.vmap(jlin.eig)(x))


def test_eig_and_schur_fallback_in_process(monkeypatch):
  """Without the handlers, compiled eig and schur call ?geev/?gees through a host callback:
  the same values."""
  monkeypatch.setattr(lapack, "_state", {})
  x = _rand((2, 4, 4), np.float32, 3)
  f, g = revax.jit(lin.eig), revax.jit(lin.schur)
  assert "revax_lapack" not in f.lower(x).as_text() + g.lower(x).as_text()
  _bits(f(x), jlin.eig(x))
  _bits(g(x), jlin.schur(x))


@needs_lapack
def test_only_programs_lowered_for_the_cpu_name_lapack():
  """The handlers read host memory: a program lowered for another platform (the TPU, where it
  is the default and the CPU backend runs beside it) lowers the lax algorithms; the same
  jaxpr lowered for the CPU calls LAPACK. The choice follows the program's platform, not the
  process's default backend."""
  from revax._src.interpreters import mlir
  x = _herm((4, 4), np.float32)
  for fn, op in [(lin.eigh, "syevd"), (lin.svd, "gesdd"), (lin.lu, "getrf"),
                 (lin.cholesky, "potrf"), (lin.eig, "geev"), (lin.schur, "gees")]:
    closed = revax.make_jaxpr(fn)(x)
    assert f"revax_lapack_{op}" in mlir.lower_jaxpr_to_module(closed, platform="cpu")
    tpu_text = mlir.lower_jaxpr_to_module(closed, platform="tpu")
    assert "revax_lapack" not in tpu_text
    assert lapack.target(op, np.float32, "tpu") is None
    if op in ("geev", "gees"):  # no lax algorithm: the host, by libtpu's send/recv transfers
      assert "stablehlo.send" in tpu_text and "custom_call" not in tpu_text


def test_ffi_registrations_go_to_the_named_platforms_plugin(monkeypatch):
  """A handler registered for "cpu" goes into the CPU backend's plugin even where another
  backend is the default; a platform absent from the process (e.g. "cuda") is kept by the
  default plugin's registry under its name, as jax keeps it."""
  from revax._src.runtime import client, ffi
  asked = []
  real = client.get_backend

  def get_backend(platform=None):
    asked.append(platform)
    return real(platform)

  monkeypatch.setattr(client, "get_backend", get_backend)
  assert ffi._api_for("cpu") is real("cpu")._api
  assert asked == ["cpu"]
  asked.clear()
  assert ffi._api_for("cuda") is real()._api
  assert asked == ["cuda", None]
