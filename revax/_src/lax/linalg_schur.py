"""Schur decomposition of general square matrices: `schur` and `schur_p`, as jax.lax.linalg.

A = Q T Q^H with Q unitary and T upper triangular (complex input) or quasi upper triangular
with 1x1 and 2x2 diagonal blocks (real input: the real Schur form). JAX computes it on CPU with
LAPACK's ?gees (no eigenvalue sorting); revax calls the same ?gees, the LAPACKE function of the
ILP64 OpenBLAS NumPy bundles (as eig calls ?geev, see linalg_eig.py), on the host: eagerly
through ctypes, in compiled programs through revax's C FFI handler (`revax_lapack_gees`,
runtime/_lapack.c) or, where that is unavailable, a host callback. Where ?gees fails the outputs are NaN,
as in JAX. Leading axes are batch axes.

As in JAX, schur has no derivative rule (differentiating it raises NotImplementedError) and
`sort_eig_vals=True` raises NotImplementedError (JAX: when lowered; revax: when bound).
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
from revax._src.lax import linalg

__all__ = ["schur", "schur_p"]


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
  """Schur decomposition A = Q T Q^H of square matrices (LAPACK ?gees).

  Args:
    x: array (..., n, n), float or complex.
    compute_schur_vectors: also return Q.
    sort_eig_vals: must be False (LAPACK's sorting is not implemented, as in JAX).
    select_callable: unused (as in JAX).

  Returns:
    The tuple of T and Q when `compute_schur_vectors` is True, else the 1-tuple of T. T is upper
    triangular (complex) or quasi upper triangular (real), Q is unitary; both have x's shape
    and dtype.

  Example:
    >>> t, q = lax.linalg.schur(jnp.array([[1., 2.], [0., 3.]]))
    >>> t
    Array([[1., 2.],
           [0., 3.]], dtype=float32)
  """
  if sort_eig_vals:
    raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
  return schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                      sort_eig_vals=False, select_callable=None)


def _schur_abstract_eval(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  if x.ndim < 2:
    raise ValueError(f"Input to schur must have rank >= 2, got shape {x.shape}")
  if x.shape[-1] != x.shape[-2]:
    raise ValueError(f"The input to schur must be a square matrix. Got shape {x.shape[-2:]}.")
  if x.dtype in (np.float16, dtypes.bfloat16):
    raise NotImplementedError(f"Unsupported dtype {x.dtype.name}. (schur has no {x.dtype.name} "
                              "kernel, as in JAX on CPU: cast the input to float32)")
  if x.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
    raise TypeError(f"schur does not accept dtype {x.dtype.name}. Accepted dtypes are subtypes "
                    f"of floating or complexfloating (float32, float64, complex64, complex128).")
  aval = ShapedArray(x.shape, x.dtype)
  return [aval, aval] if compute_schur_vectors else [aval]


# --- ?gees on the host ---------------------------------------------------------------------------
_COL_MAJOR = 102


def _gees_functions() -> dict:
  """{dtype: the LAPACKE ?gees function} of NumPy's bundled ILP64 OpenBLAS ({} when missing)."""
  from revax._src.runtime import lapack
  return lapack.lapacke_functions("gees")


def _gees_one(a, vectors: bool, fn):
  """(T, Q, info) of one (n, n) matrix by LAPACKE ?gees (no sorting)."""
  n = a.shape[-1]
  t = np.array(a, dtype=a.dtype, order="F", copy=True)
  q = np.zeros((n, n), a.dtype, order="F")
  i64, ptr = ctypes.c_int64, (lambda arr: arr.ctypes.data_as(ctypes.c_void_p))
  sdim = i64(0)
  ld = i64(max(n, 1))
  jobvs, sort = ctypes.c_char(b"V" if vectors else b"N"), ctypes.c_char(b"N")
  if dtypes.is_complex(a.dtype):
    w = np.zeros(n, a.dtype)
    info = fn(ctypes.c_int(_COL_MAJOR), jobvs, sort, None, i64(n), ptr(t), ld,
              ctypes.byref(sdim), ptr(w), ptr(q), ld)
  else:
    wr, wi = np.zeros(n, a.dtype), np.zeros(n, a.dtype)
    info = fn(ctypes.c_int(_COL_MAJOR), jobvs, sort, None, i64(n), ptr(t), ld,
              ctypes.byref(sdim), ptr(wr), ptr(wi), ptr(q), ld)
  return np.ascontiguousarray(t), np.ascontiguousarray(q), int(info)


def _schur_host(x, *, compute_schur_vectors, sort_eig_vals=False, select_callable=None):
  """The outputs of schur_p for a NumPy value (leading axes are batch axes)."""
  x = np.asarray(x)
  fn = _gees_functions().get(x.dtype)
  if fn is None:
    raise NotImplementedError("schur needs LAPACK's ?gees from NumPy's bundled OpenBLAS, which "
                              "was not found")
  t_out, q_out = np.zeros_like(x), np.zeros_like(x)
  if x.shape[-1]:
    for idx in np.ndindex(*x.shape[:-2]):
      t, q, info = _gees_one(x[idx], compute_schur_vectors, fn)
      if info != 0:  # no convergence or a bad argument: NaN (both parts if complex), as JAX
        nan = complex(np.nan, np.nan) if dtypes.is_complex(x.dtype) else np.nan
        t, q = np.full_like(t, nan), np.full_like(q, nan)
      t_out[idx], q_out[idx] = t, q
  return [t_out, q_out] if compute_schur_vectors else [t_out]


def _schur_jvp(primals, tangents, **params):
  """JAX has no derivative of schur: NotImplementedError for a non-zero tangent, as its."""
  if any(type(t) is not ad.Zero for t in tangents):
    raise NotImplementedError("Differentiation rule for 'schur' not implemented")
  out = schur_p.bind(*primals, **params)
  return out, [ad.Zero(ad.tangent_aval(get_aval(o))) for o in out]


@functools.lru_cache(maxsize=None)
def _host_callable(vectors: bool):
  """One callable per output kind, registered once with the FFI callback handler."""
  def run(x):
    return _schur_host(x, compute_schur_vectors=vectors)
  run.__name__ = "schur_gees"
  return run


def _schur_lower(ctx, x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  return linalg.lapack_or_host_call(ctx, "gees", x, [("vectors", compute_schur_vectors)],
                                    _host_callable(compute_schur_vectors))

schur_p = Primitive("schur", multiple_results=True)
schur_p.def_abstract_eval(_schur_abstract_eval)
dispatch.def_numpy_impl(schur_p, _schur_host)
ad.primitive_jvps[schur_p] = _schur_jvp
linalg._front_batcher(schur_p)
mlir.register_lowering(schur_p, _schur_lower)
inv.not_invertible(schur_p, "a factorization: Q T Q^H rebuilds the matrix only from both "
                            "outputs, and T alone does not determine it")
