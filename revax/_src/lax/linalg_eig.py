"""Eigen-decomposition of general (non-Hermitian) matrices: `eig` and `eig_p`, as jax.lax.linalg.

JAX computes it on CPU with LAPACK's ?geev, called from jaxlib. The XLA CPU plugin revax runs on
has no LAPACK, and revax has no lax algorithm for it, so revax calls the same ?geev: the LAPACKE
function of the ILP64 OpenBLAS NumPy bundles (the library revax's other LAPACK handlers use,
found by runtime/lapack.py), on the host. Eager calls run it through ctypes; compiled programs
call revax's C FFI handler (`revax_lapack_geev`, runtime/_lapack.c), as JAX calls jaxlib's, or,
where that handler is unavailable (REVAX_LAPACK=0, no C extension), a host callback
(`revax_python_callback`, as pure_callback); so eig works under jit, vmap, scan and
differentiation alike. Where that library is missing, right
eigenvectors and eigenvalues come from numpy.linalg.eig (the same ?geev) and left eigenvectors
raise NotImplementedError.

Results follow LAPACK (and so JAX): eigenvalues in ?geev's order, complex (complex64 for
float32/complex64 input); each eigenvector has unit 2-norm and a real largest component; a
real matrix's conjugate pair (w_j, w_j+1 = conj(w_j)) has eigenvectors v_j = vr_j + i vr_j+1
and v_j+1 = conj(v_j); left eigenvectors u satisfy u^H a = w u^H. Where ?geev fails to converge
the results are NaN (real and imaginary parts), as in JAX.

The block: wrapper, abstract eval, host computation, JVP (eigenvalues, and eigenvectors with
`enable_eigvec_derivs=True`, JAX's perturbation rule), batching (leading axes are batch axes),
lowering, the reason it is not invertible, registration.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import binary, comparison, linalg, reductions, shapes, slicing, unary
from revax._src.lax import linalg_util as U

__all__ = ["eig", "eig_p"]


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
  """Eigen-decomposition of general square matrices (LAPACK ?geev).

  Args:
    x: array (..., n, n), float or complex.
    compute_left_eigenvectors, compute_right_eigenvectors: also return them.
    enable_eigvec_derivs: allow derivatives of the eigenvectors (valid only for distinct
      eigenvalues; off by default, as in JAX).
    implementation, use_magma: accepted for JAX compatibility (revax always uses LAPACK).

  Returns:
    [w] + [vl] + [vr]: complex eigenvalues (..., n) and, as asked, left and right eigenvectors
    as columns (..., n, n).

  Example:
    >>> w, vr = lax.linalg.eig(jnp.array([[2., 1.], [0., 3.]]), compute_left_eigenvectors=False)
    >>> w
    Array([2.+0.j, 3.+0.j], dtype=complex64)
  """
  del use_magma
  return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors),
                    enable_eigvec_derivs=bool(enable_eigvec_derivs),
                    implementation=implementation)


def _complex_dtype(dtype):
  return np.dtype(np.complex128 if dtype in (np.float64, np.complex128) else np.complex64)


def _eig_abstract_eval(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
                       enable_eigvec_derivs, implementation):
  linalg._check_matrix("eig", x)
  ct = _complex_dtype(x.dtype)
  batch, n = x.shape[:-2], x.shape[-1]
  outs = [ShapedArray(batch + (n,), ct)]
  outs += [ShapedArray(x.shape, ct)] * (compute_left_eigenvectors + compute_right_eigenvectors)
  return outs


# --- ?geev on the host -------------------------------------------------------------------------
_COL_MAJOR = 102


def _geev_functions() -> dict:
  """{dtype: the LAPACKE ?geev function} of NumPy's bundled ILP64 OpenBLAS ({} when missing)."""
  from revax._src.runtime import lapack
  return lapack.lapacke_functions("geev")


def _unpack_real_pairs(w, v):
  """?geev's real storage of a real matrix's eigenvectors, made complex: a conjugate pair's
  columns (re, im) become re + i im and its conjugate re - i im (imaginary parts negated, so a
  zero one is -0.0, as JAX prints it)."""
  out = v.astype(w.dtype)
  n = w.shape[0]
  j = 0
  while j < n:
    if w[j].imag != 0 and j + 1 < n:
      re, im = v[:, j], v[:, j + 1]
      out.real[:, j], out.imag[:, j] = re, im
      out.real[:, j + 1], out.imag[:, j + 1] = re, -im
      j += 2
    else:
      j += 1
  return out


def _geev_one(a, left: bool, right: bool, fn):
  """(w, vl, vr) of one (n, n) matrix by LAPACKE ?geev (vl/vr None unless asked)."""
  n = a.shape[-1]
  ct = _complex_dtype(a.dtype)
  work = np.array(a, dtype=a.dtype, order="F", copy=True)
  vl = np.zeros((n, n), a.dtype, order="F")
  vr = np.zeros((n, n), a.dtype, order="F")
  i64, ptr = ctypes.c_int64, (lambda arr: arr.ctypes.data_as(ctypes.c_void_p))
  jobvl, jobvr = ctypes.c_char(b"V" if left else b"N"), ctypes.c_char(b"V" if right else b"N")
  ld = i64(max(n, 1))
  if dtypes.is_complex(a.dtype):
    w = np.zeros(n, a.dtype)
    info = fn(ctypes.c_int(_COL_MAJOR), jobvl, jobvr, i64(n), ptr(work), ld, ptr(w), ptr(vl), ld,
              ptr(vr), ld)
  else:
    wr, wi = np.zeros(n, a.dtype), np.zeros(n, a.dtype)
    info = fn(ctypes.c_int(_COL_MAJOR), jobvl, jobvr, i64(n), ptr(work), ld, ptr(wr), ptr(wi),
              ptr(vl), ld, ptr(vr), ld)
    w = (wr + 1j * wi).astype(ct)
    vl, vr = _unpack_real_pairs(w, vl), _unpack_real_pairs(w, vr)
  if info != 0:  # no convergence (info > 0) or a bad argument: NaN, as JAX
    nan = np.array(complex(np.nan, np.nan), ct)  # NaN real and imaginary parts, as JAX
    w, vl, vr = np.full_like(w, nan), np.full(vl.shape, nan, ct), np.full(vr.shape, nan, ct)
  return w.astype(ct), np.asarray(vl, ct), np.asarray(vr, ct)


def _numpy_one(a, left: bool, right: bool):
  """The fallback without LAPACKE: numpy.linalg.eig (the same ?geev), right vectors only."""
  if left:
    raise NotImplementedError(
        "eig: left eigenvectors need LAPACK's ?geev from NumPy's bundled OpenBLAS, which was "
        "not found; pass compute_left_eigenvectors=False")
  ct = _complex_dtype(a.dtype)
  try:
    w, vr = np.linalg.eig(a)
  except np.linalg.LinAlgError:
    n = a.shape[-1]
    return np.full(n, np.nan, ct), None, np.full((n, n), np.nan, ct)
  return w.astype(ct), None, vr.astype(ct)


def _eig_host(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
              enable_eigvec_derivs=False, implementation=None):
  """The outputs of eig_p for a NumPy value (leading axes are batch axes)."""
  x = np.asarray(x)
  left, right = compute_left_eigenvectors, compute_right_eigenvectors
  fn = _geev_functions().get(x.dtype)
  batch, n = x.shape[:-2], x.shape[-1]
  ct = _complex_dtype(x.dtype)
  w = np.zeros(batch + (n,), ct)
  vl = np.zeros(x.shape, ct)
  vr = np.zeros(x.shape, ct)
  for idx in np.ndindex(*batch):
    a = x[idx]
    if n == 0:
      continue
    one = _geev_one(a, left, right, fn) if fn is not None else _numpy_one(a, left, right)
    w[idx] = one[0]
    if left:
      vl[idx] = one[1]
    if right:
      vr[idx] = one[2]
  return [w] + ([vl] if left else []) + ([vr] if right else [])


# --- JVP ----------------------------------------------------------------------------------------
def _solve(a, b):
  """a^-1 b for square a (..., n, n) and b (..., n, m), by LU with partial pivoting."""
  lu_, _, perm = linalg.lu(a)
  ba = get_aval(b)
  idx = shapes.broadcast_in_dim(perm, ba.shape, tuple(range(ba.ndim - 2)) + (ba.ndim - 2,))
  pb = slicing.gather_along_axis(b, idx, ba.ndim - 2)
  y = linalg.triangular_solve(lu_, pb, left_side=True, lower=True, unit_diagonal=True)
  return linalg.triangular_solve(lu_, y, left_side=True, lower=False)


def _eig_vec_jvp(w, v, da):
  """JAX's nondegenerate perturbation rule: dw = diag(P), P = v^-1 da v, dv = v (F o P) + v c
  with F_ij = 1 / (w_j - w_i) off the diagonal and c the multiples that keep LAPACK's
  normalization (unit 2-norm, real largest-magnitude component)."""
  wa, va = get_aval(w), get_aval(v)
  n, nd = wa.shape[-1], va.ndim
  eye = U.eye(n, n, wa.dtype, wa.shape[:-1])
  wi = shapes.broadcast_in_dim(w, va.shape, tuple(range(nd - 2)) + (nd - 2,))
  wj = shapes.broadcast_in_dim(w, va.shape, tuple(range(nd - 2)) + (nd - 1,))
  f = binary.sub(binary.div(U.const(1, wa.dtype), binary.add(binary.sub(wj, wi), eye)), eye)
  p = U.matmul(_solve(v, da), v)
  dw = U.diag_part(p)
  u = U.matmul(v, binary.mul(f, p))
  absv = unary.abs(v)
  k = reductions.argmax(absv, nd - 2, np.int32)
  iota = shapes.broadcasted_iota(np.int32, va.shape, nd - 2)
  kb = shapes.broadcast_in_dim(k, va.shape, tuple(range(nd - 2)) + (nd - 1,))
  mask = U.to_dtype(comparison.eq(iota, kb), va.dtype)
  re = unary.neg(unary.real(reductions.reduce_sum(binary.mul(U.conj(v), u), (nd - 2,))))
  im = binary.div(unary.neg(unary.imag(reductions.reduce_sum(binary.mul(mask, u), (nd - 2,)))),
                  unary.real(reductions.reduce_sum(binary.mul(mask, v), (nd - 2,))))
  c = binary.complex(re, im)
  cb = shapes.broadcast_in_dim(c, va.shape, tuple(range(nd - 2)) + (nd - 1,))
  return dw, binary.add(u, binary.mul(v, cb))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs, implementation):
  (x,), (dx,) = primals, tangents
  left, right = compute_left_eigenvectors, compute_right_eigenvectors
  if (left or right) and not enable_eigvec_derivs:
    raise NotImplementedError(
        "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
        "input that revax cannot check (see the enable_eigvec_derivs argument to "
        "revax.lax.linalg.eig). Pass enable_eigvec_derivs=True to revax.lax.linalg.eig to opt "
        "in. See https://github.com/jax-ml/jax/issues/2748 for discussion.")
  outs = eig_p.bind(x, compute_left_eigenvectors=left, compute_right_eigenvectors=True,
                    enable_eigvec_derivs=enable_eigvec_derivs, implementation=implementation)
  w, vr = outs[0], outs[-1]
  primal_out = [w] + ([outs[1]] if left else []) + ([vr] if right else [])
  if type(dx) is ad.Zero:
    return primal_out, [ad.Zero(ad.tangent_aval(get_aval(o))) for o in primal_out]
  da = U.to_dtype(ad.instantiate_zeros(dx), get_aval(vr).dtype)
  if not (left or right):
    dw = reductions.reduce_sum(binary.mul(_solve(vr, da), U.swap_last(vr)),
                               (get_aval(vr).ndim - 1,))
    return primal_out, [dw]
  dw, dvr = _eig_vec_jvp(w, vr, da)
  tangent_out = [dw]
  if left:
    _, dvl = _eig_vec_jvp(U.conj(w), outs[1], U.adjoint(da))
    tangent_out.append(dvl)
  if right:
    tangent_out.append(dvr)
  return primal_out, tangent_out


# --- lowering: a host call of ?geev --------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _host_callable(left: bool, right: bool):
  """One callable per output kind, registered once with the FFI callback handler."""
  def run(x):
    return _eig_host(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right)
  run.__name__ = "eig_geev"
  return run


def _eig_lower(ctx, x, *, compute_left_eigenvectors, compute_right_eigenvectors,
               enable_eigvec_derivs, implementation):
  return linalg.lapack_or_host_call(
      ctx, "geev", x, [("left", compute_left_eigenvectors), ("right", compute_right_eigenvectors)],
      _host_callable(compute_left_eigenvectors, compute_right_eigenvectors))

eig_p = Primitive("eig", multiple_results=True)
eig_p.def_abstract_eval(_eig_abstract_eval)
dispatch.def_numpy_impl(eig_p, _eig_host)
ad.primitive_jvps[eig_p] = _eig_jvp
linalg._front_batcher(eig_p)
mlir.register_lowering(eig_p, _eig_lower)
inv.not_invertible(eig_p, "the eigenvectors and eigenvalues determine the matrix only when the "
                          "right eigenvectors are computed and invertible; not recorded")
