"""Linear-algebra primitives, as in jax.lax.linalg: cholesky, triangular_solve, lu (with pivots
and permutation), lu_pivots_to_permutation, qr (Householder, optionally column-pivoted), eigh,
svd and tridiagonal_solve.

Every primitive acts on the last two axes (the matrix); leading axes are batch axes, and batching
rules move a mapped axis to the front. Eager calls on host values run NumPy (LAPACK through
numpy.linalg where it has the factorization, short loops of vectorized NumPy where it has not).
Lowering: XLA expands `stablehlo.cholesky` and `stablehlo.triangular_solve` itself. On CPU,
cholesky, lu, eigh and svd lower to `stablehlo.custom_call @revax_lapack_{potrf,getrf,syevd,
gesdd}` (column-major operands, batch dims looped in the handler), revax's own FFI handlers
calling the LAPACK NumPy bundles (revax/_src/runtime/lapack.py; the plugin has no LAPACK custom
calls of its own), as JAX calls jaxlib's. Where those are unavailable (REVAX_LAPACK=0, the C extension not built, no
library) and for the other factorizations, the lowering traces algorithms written in lax:
blocked right-looking LU with partial pivoting (unblocked panels in a fori_loop, triangular
solves and matrix products for the trailing update), Householder QR with LAPACK's sign
conventions, cyclic Jacobi with a round-robin (parallel) ordering for eigh, and one-sided Jacobi
(after a QR when the matrix is tall) for svd; tridiagonal_solve is the Thomas algorithm in two
scans. Each primitive is one block: wrapper, abstract eval, NumPy impl, JVP,
transpose (triangular_solve and tridiagonal_solve are linear in b), batching, lowering, inverse
or a reason, registration.
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, binary, comparison, shapes, slicing, unary
from revax._src.lax import linalg_util as U
from revax._src.lax.control_flow import fori_loop, scan, while_loop
from revax._src.lax.reductions import argmax, reduce_max, reduce_sum

__all__ = [
  "cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "eigh", "svd",
  "tridiagonal_solve", "symmetric_product", "SvdAlgorithm", "EighImplementation",
  "cholesky_p", "triangular_solve_p", "lu_p", "lu_pivots_to_permutation_p", "qr_p", "eigh_p",
  "svd_p", "tridiagonal_solve_p", "symmetric_product_p",
  "householder_product", "householder_product_p", "ormqr", "ormqr_p", "hessenberg",
  "hessenberg_p", "tridiagonal", "tridiagonal_p", "cholesky_update", "cholesky_update_p", "qdwh",
  "EigImplementation",
]


class SvdAlgorithm(enum.Enum):
  """Which SVD algorithm to use (accepted; revax uses LAPACK's gesdd on CPU where available,
  else one-sided Jacobi)."""
  DEFAULT = "default"
  QR = "QR"
  JACOBI = "Jacobi"
  POLAR = "polar"


class EigImplementation(enum.Enum):
  """Which non-symmetric eigensolver to use (accepted for JAX compatibility: revax has none)."""
  LAPACK = "lapack"
  MAGMA = "magma"
  CUSOLVER = "cusolver"


class EighImplementation(enum.Enum):
  """Which eigh algorithm to use (accepted; revax uses LAPACK's syevd/heevd on CPU where
  available, else Jacobi)."""
  QR = "qr"
  JACOBI = "jacobi"
  QDWH = "qdwh"


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
           np.dtype(np.complex128))
# Half-precision matrices: JAX on CPU has no LAPACK kernel for them (NotImplementedError
# "Unsupported dtype float16."); the operations XLA expands itself (triangular_solve) or that
# are written in lax (symmetric_product, cholesky_update) take them.
_HALF = (np.dtype(np.float16), dtypes.bfloat16)


def _check_half(name, dtype, allow_half=False):
  if np.dtype(dtype) in _HALF and not allow_half:
    raise NotImplementedError(f"Unsupported dtype {np.dtype(dtype).name}. ({name} has no "
                              f"{np.dtype(dtype).name} kernel, as in JAX on CPU: cast the "
                              "input to float32)")


def _fori(upper, body, init):
  """fori_loop over range(upper) whose body sees an int32 index (with x64 enabled the loop
  counter of a Python-int range is int64; the algorithms index int32 iotas with it)."""
  from revax._src.lax.conversion import convert_element_type
  return fori_loop(0, upper, lambda i, c: body(convert_element_type(i, np.int32), c), init)


def _check_matrix(name, x, square=True, allow_half=False):
  if x.ndim < 2:
    raise ValueError(f"{name} requires an input of rank >= 2 (a matrix or a batch of them), "
                     f"got shape {x.shape}")
  if square and x.shape[-1] != x.shape[-2]:
    raise ValueError(f"{name} requires square matrices, got shape {x.shape}")
  _check_half(name, x.dtype, allow_half)
  if x.dtype not in _FLOATS + (_HALF if allow_half else ()):
    raise TypeError(f"{name} requires float32, float64, complex64 or complex128 input, got "
                    f"{x.dtype.name}")


def _front_batcher(prim):
  """Batching for primitives whose leading axes are batch axes: every mapped axis goes to the
  front (unmapped operands are broadcast) and the outputs are mapped at 0."""
  def rule(size, vals, dims, **params):
    vals = [batch_util.bdim_to_front(v, d, size) for v, d in zip(vals, dims, strict=True)]
    out = prim.bind(*vals, **params)
    return out, ([0] * len(out) if prim.multiple_results else 0)
  batching.axis_size_batchers[prim] = rule
  return rule


def _sub_ctx(ctx, avals_in, avals_out):
  return mlir.LoweringRuleContext(ctx.fb, list(avals_in), list(avals_out), ctx.platform)


def _zero_tangent(x):
  return ad.Zero(ad.tangent_aval(get_aval(x)))


def _inst(t):
  return ad.instantiate_zeros(t)


def _symmetrize(x):
  """(x + x^H) / 2."""
  return binary.div(binary.add(x, U.adjoint(x)), U.const(2, U.dtype_of(x)))


def _hermitian_from_triangle(x, lower: bool):
  """The Hermitian matrix whose lower (upper) triangle is that of x; the diagonal's imaginary
  part is dropped as LAPACK does."""
  t = U.tril(x, -1) if lower else U.triu(x, 1)
  d = U.diag_part(x)
  if dtypes.is_complex(U.dtype_of(x)):
    d = U.to_dtype(unary.real(d), U.dtype_of(x))
  return binary.add(binary.add(t, U.adjoint(t)), U.vector_to_diag(d))


# --- LAPACK custom calls (CPU) -------------------------------------------------------------------
def _lapack_layout(aval, matrix: bool) -> str:
  """custom_call layout (minor-to-major dims) of `aval`: a batch of column-major matrices (the
  last two dims swapped in order, the batch dims major), or row-major (a batch of vectors)."""
  r = len(aval.shape)
  dims = list(range(r - 1, -1, -1))
  if matrix:
    dims = [r - 2, r - 1] + dims[2:]
  return f"dense<[{', '.join(map(str, dims))}]> : tensor<{r}xindex>" if r else \
      "dense<> : tensor<0xindex>"


def _lapack_call(ctx, target, x, result_avals, attrs=()):
  """`stablehlo.custom_call @target(x)` (typed FFI) whose matrices (the results of x's rank) are
  column-major, as LAPACK wants them (XLA transposes around the call where needed); vectors
  (eigenvalues, singular values, pivots) are row-major; the handler loops over the batch dims."""
  config = ", ".join(f"{name} = {int(v)} : i32" for name, v in attrs)
  props = {"api_version": "4 : i32", "backend_config": "{" + config + "}",
           "call_target_name": f'"{target}"', "has_side_effect": "false",
           "operand_layouts": f"[{_lapack_layout(ctx.avals_in[0], True)}]",
           "result_layouts": "[" + ", ".join(_lapack_layout(a, a.ndim == ctx.avals_in[0].ndim)
                                             for a in result_avals) + "]"}
  return ctx.fb.op("stablehlo.custom_call", [x], [mlir.ir_type(a) for a in result_avals],
                   props=props)


def _lapack_target(ctx, op, aval):
  """The LAPACK custom call target for `op` on `aval` where the program is lowered for the CPU,
  or None (lower the lax algorithm)."""
  from revax._src.runtime import lapack
  return lapack.target(op, aval.dtype, ctx.platform)


def lapack_or_host_call(ctx, op, x, attrs, host_fn):
  """Lower `op` on `x`: through revax's LAPACK handler (`_lapack.c`, as jaxlib's LAPACK kernel)
  where the program is lowered for the CPU and the handler is available, else as a host
  callback running `host_fn` (NumPy's, or LAPACKE's through NumPy's OpenBLAS), reaching the host
  as the platform's callbacks do (send/recv transfers on a TPU, which has no FFI: there revax
  computes eig and schur on the host where jax has no TPU rule)."""
  target = _lapack_target(ctx, op, ctx.avals_in[0])
  if target is not None:
    return _lapack_call(ctx, target, x, ctx.avals_out, attrs=attrs)
  from revax._src.lax.callbacks import lower_host_function
  return lower_host_function(ctx, [x], host_fn)


def _slice_last(ctx, outs, full_avals, axes, lo, hi):
  """outs[i][..., lo:hi, ...] along axes[i] (None: unsliced), lowered in place."""
  def fn(*ys):
    res = []
    for y, axis in zip(ys, axes, strict=True):
      if axis is not None:
        shape = get_aval(y).shape
        y = slicing.slice(y, tuple(lo if i == axis else 0 for i in range(len(shape))),
                          tuple(hi if i == axis else d for i, d in enumerate(shape)))
      res.append(y)
    return res
  return mlir.lower_fun(fn, multiple_results=True)(_sub_ctx(ctx, full_avals, ctx.avals_out),
                                                    *outs)


# --- empty inputs --------------------------------------------------------------------------------
# A factorization of an empty input (a zero matrix dimension, or an empty batch) has nothing to
# compute: its factors are empty, or identities (a full Q or U of an m x 0 matrix), or the
# identity permutation. The algorithms in lax (loops over columns, gathers with slices of 1)
# cannot run on empty axes, so their entry points answer these directly, as JAX's do.
def _empty_factors(avals_out, kinds):
  """The factors of an empty input in lax: per output aval, its kind: "zeros", "eye" (identity
  matrices, batched) or "iota" (the identity permutation along the last axis)."""
  outs = []
  for aval, kind in zip(avals_out, kinds, strict=True):
    if kind == "eye":
      outs.append(U.eye(aval.shape[-2], aval.shape[-1], aval.dtype, aval.shape[:-2]))
    elif kind == "iota":
      outs.append(shapes.broadcasted_iota(aval.dtype, aval.shape, aval.ndim - 1))
    else:
      outs.append(U.full(aval.shape, 0, aval.dtype))
  return outs


def _np_empty_factors(avals_out, kinds):
  """`_empty_factors` in NumPy (for the eager implementations)."""
  outs = []
  for aval, kind in zip(avals_out, kinds, strict=True):
    if kind == "eye":
      v = np.broadcast_to(np.eye(aval.shape[-2], aval.shape[-1], dtype=aval.dtype), aval.shape)
    elif kind == "iota":
      v = np.broadcast_to(np.arange(aval.shape[-1], dtype=aval.dtype), aval.shape)
    else:
      v = np.zeros(aval.shape, aval.dtype)
    outs.append(np.array(v))
  return outs


# --- cholesky ------------------------------------------------------------------------------------
def cholesky(x, *, symmetrize_input: bool = True):
  """The lower Cholesky factor L of Hermitian positive-definite matrices (x = L L^H).

  Args:
    x: array (..., n, n).
    symmetrize_input: use (x + x^H) / 2; otherwise only the lower triangle of x is read.

  Returns:
    L, lower triangular; NaN where a matrix is not positive definite.

  Example:
    >>> lax.linalg.cholesky(jnp.array([[4., 2.], [2., 3.]]))
    Array([[2.       , 0.       ],
           [1.       , 1.4142135]], dtype=float32)
  """
  if symmetrize_input:
    _check_matrix("cholesky", get_aval(x))
    x = _symmetrize(x)
  # the lower triangle, as jax's wrapper takes it: the tangent's upper triangle is then exactly
  # zero even where the factor is NaN (a matrix that is not positive definite)
  return U.tril(cholesky_p.bind(x))


def _cholesky_abstract_eval(x):
  _check_matrix("cholesky", x)
  return ShapedArray(x.shape, x.dtype)


def _cholesky_numpy(x):
  def one(a):
    try:
      return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:  # not positive definite: NaN, zeros above (as JAX)
      return np.tril(np.full(a.shape, np.nan, a.dtype))
  return U.np_batched(one, [x], x.ndim - 2, 1).astype(x.dtype)


def _cholesky_jvp(primals, tangents):
  """dL = L phi(L^-1 dA L^-H), phi = lower triangle with half the diagonal. As in JAX, the
  tangent dA is used as given: it is taken to be Hermitian (the wrapper's symmetrize_input
  makes it so), even though the primitive itself reads only the lower triangle."""
  (x,), (dx,) = primals, tangents
  L = U.tril(cholesky_p.bind(x))
  if type(dx) is ad.Zero:
    return L, dx
  dA = dx
  tmp = triangular_solve(L, dA, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
  tmp = triangular_solve(L, tmp, left_side=True, lower=True)
  half = U.vector_to_diag(binary.mul(U.diag_part(tmp), U.const(0.5, U.dtype_of(x))))
  phi = binary.add(U.tril(tmp, -1), half)
  return L, U.matmul(L, phi)


_CHOLESKY_BLOCK = 32


def _cholesky_blocked(x):
  """Right-looking blocked Cholesky of matrices larger than a block (leading batch axes
  allowed): per diagonal block, XLA's own cholesky of the block, a triangular solve for the
  panel below it and one matrix product for the trailing update. XLA's expansion of a whole
  large matrix runs a loop over single columns, several times slower than this."""
  aval = get_aval(x)
  n = aval.shape[-1]
  batch = aval.shape[:-2]
  nb = len(batch)
  sl = lambda y, r0, r1, c0, c1: slicing.slice(y, (0,) * nb + (r0, c0), batch + (r1, c1))
  cols = []
  a = x
  for j0 in range(0, n, _CHOLESKY_BLOCK):
    j1 = min(n, j0 + _CHOLESKY_BLOCK)
    l11 = cholesky_p.bind(sl(a, j0, j1, j0, j1))
    pieces = [l11]
    if j1 < n:
      l21 = triangular_solve(l11, sl(a, j1, n, j0, j1), left_side=False, lower=True,
                             transpose_a=True, conjugate_a=True)
      pieces.append(l21)
      trailing = binary.sub(sl(a, j1, n, j1, n), U.matmul(l21, U.adjoint(l21)))
      a = shapes.pad(trailing, U.const(0, aval.dtype),
                     tuple([(0, 0, 0)] * nb + [(j1, 0, 0), (j1, 0, 0)]))
    col = shapes.concatenate(pieces, nb) if len(pieces) > 1 else pieces[0]
    cols.append(shapes.pad(col, U.const(0, aval.dtype),
                           tuple([(0, 0, 0)] * nb + [(j0, 0, 0), (0, 0, 0)])))
  return shapes.concatenate(cols, nb + 1)


def _cholesky_lower(ctx, x):
  aval = ctx.avals_out[0]
  if aval.shape[-1] > _CHOLESKY_BLOCK:
    return mlir.lower_fun(_cholesky_blocked, multiple_results=False)(ctx, x)
  raw = ctx.op1("stablehlo.cholesky", [x], aval, props={"lower": "true"})
  return mlir.lower_fun(U.tril, multiple_results=False)(_sub_ctx(ctx, [aval], [aval]), raw)


def _cholesky_inverse(L):
  """x = L L^H (the Hermitian matrix the factor came from)."""
  return U.matmul(L, U.adjoint(L))


cholesky_p = Primitive("cholesky")
cholesky_p.def_abstract_eval(_cholesky_abstract_eval)
dispatch.def_numpy_impl(cholesky_p, _cholesky_numpy)
ad.primitive_jvps[cholesky_p] = _cholesky_jvp
_front_batcher(cholesky_p)
def _cholesky_lower_cpu(ctx, x):
  """LAPACK ?potrf where available (NaN where a matrix is not positive definite, zeros above
  the diagonal), else the blocked algorithm above."""
  target = _lapack_target(ctx, "potrf", ctx.avals_in[0])
  if target is None:
    return _cholesky_lower(ctx, x)
  return _lapack_call(ctx, target, x, ctx.avals_out)[0]


mlir.register_lowering(cholesky_p, _cholesky_lower)
mlir.register_lowering(cholesky_p, _cholesky_lower_cpu, platform="cpu")
inv.definverse_unary(cholesky_p, _cholesky_inverse)


# --- triangular_solve ----------------------------------------------------------------------------
def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
  """Solve op(a) x = b (left_side) or x op(a) = b for x, with a triangular.

  Args:
    a: triangular matrices (..., k, k); only the triangle named by `lower` is read.
    b: right-hand sides (..., m, n), or (..., k) vectors (one less axis than a).
    left_side: solve op(a) x = b instead of x op(a) = b.
    lower: a is lower (else upper) triangular.
    transpose_a, conjugate_a: op(a) is a, a^T, conj(a) or a^H.
    unit_diagonal: assume ones on the diagonal (it is not read).

  Returns:
    x, shaped like b.

  Example:
    >>> L = jnp.array([[2., 0.], [1., 4.]])
    >>> b = jnp.array([[2.], [9.]])
    >>> lax.linalg.triangular_solve(L, b, left_side=True, lower=True)
    Array([[1.],
           [2.]], dtype=float32)
  """
  conjugate_a = bool(conjugate_a) and dtypes.is_complex(get_aval(a).dtype)
  singleton = get_aval(b).ndim == get_aval(a).ndim - 1
  if singleton:
    b = shapes.expand_dims(b, (get_aval(b).ndim if left_side else get_aval(b).ndim - 1,))
  out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                unit_diagonal=bool(unit_diagonal))
  if singleton:
    out = shapes.squeeze(out, (get_aval(out).ndim - 1 if left_side else get_aval(out).ndim - 2,))
  return out


def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a,
                                    unit_diagonal):
  _check_matrix("triangular_solve", a, allow_half=True)
  if b.ndim != a.ndim:
    raise TypeError(f"triangular_solve requires a and b of equal rank (or b one less), got "
                    f"shapes {a.shape} and {b.shape}")
  if a.shape[:-2] != b.shape[:-2]:
    raise TypeError(f"triangular_solve requires equal batch dimensions, got shapes {a.shape} "
                    f"and {b.shape}")
  if a.dtype != b.dtype:
    raise TypeError(f"triangular_solve requires a and b of one dtype, got {a.dtype.name} and "
                    f"{b.dtype.name}")
  common = b.shape[-2] if left_side else b.shape[-1]
  if a.shape[-1] != common:
    side = "left" if left_side else "right"
    raise TypeError(f"triangular_solve with {side}_side requires a's size {a.shape[-1]} to "
                    f"match b's shape {b.shape}")
  return ShapedArray(b.shape, b.dtype)


def _np_tri_op(a, lower, transpose_a, conjugate_a, unit_diagonal):
  t = np.tril(a) if lower else np.triu(a)
  if unit_diagonal:
    n = a.shape[-1]
    t = t.copy()
    t[..., np.arange(n), np.arange(n)] = 1
  if conjugate_a:
    t = np.conj(t)
  if transpose_a:
    t = np.swapaxes(t, -1, -2)
  return t


def _np_substitute(t, b, lower):
  """Solve t x = b by forward (lower) or back substitution; inf/NaN where t is singular."""
  x = np.zeros_like(b)
  n = t.shape[-1]
  with np.errstate(all="ignore"):
    for i in (range(n) if lower else reversed(range(n))):
      s = b[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, :], x)
      x[..., i, :] = s / t[..., i, i][..., None]
  return x


def _triangular_solve_numpy(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
  if b.dtype in _HALF:  # (NumPy's einsum has no bfloat16 loop: solve in float32, round once)
    return _triangular_solve_numpy(
        a.astype(np.float32), b.astype(np.float32), left_side=left_side, lower=lower,
        transpose_a=transpose_a, conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal).astype(b.dtype)
  t = _np_tri_op(a, lower, transpose_a, conjugate_a, unit_diagonal)
  eff_lower = lower != transpose_a
  if left_side:
    return _np_substitute(t, b, eff_lower).astype(b.dtype)
  x = _np_substitute(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not eff_lower)
  return np.swapaxes(x, -1, -2).astype(b.dtype)


def _tri_op(a, lower, transpose_a, conjugate_a, unit_diagonal):
  """op(a) of the triangle of a the solve reads (strict triangle under unit_diagonal)."""
  t = U.tril(a, -1 if unit_diagonal else 0) if lower else U.triu(a, 1 if unit_diagonal else 0)
  if conjugate_a:
    t = U.conj(t)
  if transpose_a:
    t = U.swap_last(t)
  return t


def _triangular_solve_jvp(primals, tangents, **params):
  """Linear in b; for a: d(op(a)^-1 b) = -op(a)^-1 op(da) x (left), -x op(da) op(a)^-1 (right)."""
  a, b = primals
  da, db = tangents
  x = triangular_solve_p.bind(a, b, **params)
  dx = _zero_tangent(x)
  if type(db) is not ad.Zero:
    dx = ad.add_tangents(dx, triangular_solve_p.bind(a, db, **params))
  if type(da) is not ad.Zero:
    p = dict(params)
    dop = _tri_op(da, p["lower"], p["transpose_a"], p["conjugate_a"], p["unit_diagonal"])
    g = U.matmul(dop, x) if p["left_side"] else U.matmul(x, dop)
    dx = ad.add_tangents(dx, unary.neg(triangular_solve_p.bind(a, g, **params)))
  return x, dx


def _triangular_solve_transpose(ct, a, b, **params):
  if ad.is_undefined_primal(a):
    raise NotImplementedError("triangular_solve is linear in b only; its transpose with respect "
                              "to a is not defined")
  if type(ct) is ad.Zero:
    return [None, ad.Zero(b.aval)]
  p = dict(params, transpose_a=not params["transpose_a"])
  return [None, triangular_solve_p.bind(a, ct, **p)]


_TRANSPOSE_ATTR = {(False, False): "NO_TRANSPOSE", (False, True): "NO_TRANSPOSE",
                   (True, False): "TRANSPOSE", (True, True): "ADJOINT"}


def _triangular_solve_lower(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
  a_aval = ctx.avals_in[0]
  if conjugate_a and not transpose_a:
    a = mlir.lower_fun(unary.conj, multiple_results=False)(_sub_ctx(ctx, [a_aval], [a_aval]), a)
  tr = _TRANSPOSE_ATTR[(transpose_a, conjugate_a)]
  b_ = lambda v: "true" if v else "false"
  return ctx.op1("stablehlo.triangular_solve", [a, b], ctx.avals_out[0], props={
      "left_side": b_(left_side), "lower": b_(lower), "unit_diagonal": b_(unit_diagonal),
      "transpose_a": f"#stablehlo<transpose {tr}>"})


def _triangular_solve_rebuild(outs, ins, avals_in, **params):
  """b = op(a) x (left) or x op(a), with a known."""
  a, x = ins[0], outs[0]
  t = _tri_op(a, params["lower"], params["transpose_a"], params["conjugate_a"],
              params["unit_diagonal"])
  if params["unit_diagonal"]:
    n = get_aval(a).shape[-1]
    t = binary.add(t, U.eye(n, n, U.dtype_of(a), get_aval(a).shape[:-2]))
  return [a, U.matmul(t, x) if params["left_side"] else U.matmul(x, t)]


triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.def_abstract_eval(_triangular_solve_abstract_eval)
dispatch.def_numpy_impl(triangular_solve_p, _triangular_solve_numpy)
ad.primitive_jvps[triangular_solve_p] = _triangular_solve_jvp
ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose
_front_batcher(triangular_solve_p)
mlir.register_lowering(triangular_solve_p, _triangular_solve_lower)
inv.definverse(triangular_solve_p, _triangular_solve_rebuild,
               solves=lambda known, eqn, facts: known[0] and not known[1])


# --- lu ------------------------------------------------------------------------------------------
def lu(x):
  """LU decomposition with partial pivoting: P x = L U.

  Args:
    x: array (..., m, n).

  Returns:
    (lu, pivots, permutation): L (unit diagonal, below it) and U packed in one (..., m, n)
    array; int32 pivots (..., min(m, n)) (row i was swapped with row pivots[i]); the int32
    row permutation (..., m) (x[permutation] = L U).

  Example:
    >>> lu, pivots, perm = lax.linalg.lu(jnp.array([[1., 2.], [3., 4.]]))
    >>> lu
    Array([[3.        , 4.        ],
           [0.33333334, 0.6666666 ]], dtype=float32)
    >>> pivots, perm
    (Array([1, 1], dtype=int32), Array([1, 0], dtype=int32))
  """
  lu_, pivots, permutation = lu_p.bind(x)
  return [lu_, pivots, permutation]  # a list, as JAX's (the primitive's outputs)


def _lu_abstract_eval(x):
  _check_matrix("lu", x, square=False)
  batch, (m, n) = x.shape[:-2], x.shape[-2:]
  return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), np.dtype(np.int32)),
          ShapedArray(batch + (m,), np.dtype(np.int32))]


def _lu_numpy(x):
  if x.size == 0:
    return _np_empty_factors(_lu_abstract_eval(get_aval(x)), _LU_EMPTY)
  batch, (m, n) = x.shape[:-2], x.shape[-2:]
  k = min(m, n)
  a = np.array(x).reshape((int(np.prod(batch)), m, n))
  B = a.shape[0]
  piv = np.zeros((B, k), np.int32)
  perm = np.tile(np.arange(m, dtype=np.int32), (B, 1))
  rows = np.arange(B)
  with np.errstate(all="ignore"):
    for j in range(k):
      p = j + np.argmax(np.abs(a[:, j:, j]), axis=1)
      piv[:, j] = p
      aj, ap = a[rows, j].copy(), a[rows, p].copy()
      a[rows, j], a[rows, p] = ap, aj
      qj, qp = perm[rows, j].copy(), perm[rows, p].copy()
      perm[rows, j], perm[rows, p] = qp, qj
      d = a[:, j, j]
      d = np.where(d == 0, np.ones_like(d), d)
      l = a[:, j + 1:, j] / d[:, None]
      a[:, j + 1:, j] = l
      a[:, j + 1:, j + 1:] -= l[:, :, None] * a[:, j, None, j + 1:]
  return [a.reshape(x.shape), piv.reshape(batch + (k,)), perm.reshape(batch + (m,))]


def _lu_jvp(primals, tangents):
  """P dA = dL U + L dU: with X = L^-1 P dA U^-1 (L, U padded to square with identities),
  dL = L tril(X, -1) and dU = triu(X) U."""
  (a,), (da,) = primals, tangents
  lu_, pivots, perm = lu_p.bind(a)
  outs = [lu_, pivots, perm]
  zeros = [_zero_tangent(pivots), _zero_tangent(perm)]
  if type(da) is ad.Zero:
    return outs, [_zero_tangent(lu_)] + zeros
  aval = get_aval(a)
  batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
  k = min(m, n)
  dtype = aval.dtype
  pda = _permute_rows(da, perm)
  nd = aval.ndim
  l = slicing.slice(lu_, (0,) * nd, batch + (m, k))
  l = U.tril(l, -1)
  l = shapes.pad(l, U.const(0, dtype), tuple([(0, 0, 0)] * (nd - 1) + [(0, m - k, 0)]))
  l = binary.add(l, U.eye(m, m, dtype, batch))
  u = U.triu(slicing.slice(lu_, (0,) * nd, batch + (k, n)))
  u = shapes.pad(u, U.const(0, dtype), tuple([(0, 0, 0)] * (nd - 2) + [(0, n - k, 0), (0, 0, 0)]))
  u_eye = shapes.pad(U.eye(n - k, n - k, dtype, batch), U.const(0, dtype),
                     tuple([(0, 0, 0)] * (nd - 2) + [(k, 0, 0), (k, 0, 0)]))
  u = binary.add(u, u_eye)
  la = triangular_solve(l, pda, left_side=True, lower=True, unit_diagonal=True)
  lau = triangular_solve(u, la, left_side=False, lower=False)
  dl = U.matmul(l, U.tril(lau, -1))
  du = U.matmul(U.triu(lau), u)
  dlu = binary.add(dl, du)
  dlu = slicing.slice(dlu, (0,) * nd, batch + (m, n))
  return outs, [dlu] + zeros


def _permute_rows(x, perm):
  """x[..., perm, :] (perm (..., m) int32)."""
  xa = get_aval(x)
  idx = shapes.broadcast_in_dim(perm, xa.shape, tuple(range(xa.ndim - 1)))
  return slicing.gather_along_axis(x, idx, xa.ndim - 2)


def _take_cols(x, idx):
  """x[..., :, idx] (idx (..., k) int32, k at most x's column count)."""
  xa = get_aval(x)
  shape = xa.shape[:-1] + get_aval(idx).shape[-1:]
  ib = shapes.broadcast_in_dim(idx, shape, tuple(range(xa.ndim - 2)) + (xa.ndim - 1,))
  return slicing.gather_along_axis(x, ib, xa.ndim - 1)


_LU_BLOCK = 64


def _lu_unblocked(a):
  """LU with partial pivoting of one (r, c) matrix, a fori_loop over min(r, c) columns.
  Returns (lu, pivots (min(r, c),), permutation (r,))."""
  r, c = U.shape_of(a)
  steps = min(r, c)
  dtype = U.dtype_of(a)
  rows = shapes.iota(np.int32, r)
  cols = shapes.iota(np.int32, c)
  one = U.const(1, dtype)
  zero_r, zero_c = U.full((r,), 0, dtype), U.full((c,), 0, dtype)

  def body(j, carry):
    a, piv, perm = carry
    col = shapes.reshape(slicing.dynamic_slice(a, (np.int32(0), j), (r, 1)), (r,))
    mag = unary.abs(col)
    mag = U.select(comparison.ge(rows, j), U.full((r,), -1, U.real_dtype(dtype)), mag)
    p = argmax(mag, 0, np.int32)
    row_j = slicing.dynamic_slice(a, (j, np.int32(0)), (1, c))
    row_p = slicing.dynamic_slice(a, (p, np.int32(0)), (1, c))
    a = slicing.dynamic_update_slice(a, row_j, (p, np.int32(0)))
    a = slicing.dynamic_update_slice(a, row_p, (j, np.int32(0)))
    pj = slicing.dynamic_slice(perm, (j,), (1,))
    pp = slicing.dynamic_slice(perm, (p,), (1,))
    perm = slicing.dynamic_update_slice(perm, pj, (p,))
    perm = slicing.dynamic_update_slice(perm, pp, (j,))
    piv = slicing.dynamic_update_slice(piv, shapes.reshape(p, (1,)), (j,))
    d = shapes.reshape(slicing.dynamic_slice(a, (j, j), (1, 1)), ())
    d = U.select(comparison.eq(d, U.const(0, dtype)), d, one)
    col = shapes.reshape(slicing.dynamic_slice(a, (np.int32(0), j), (r, 1)), (r,))
    below = comparison.gt(rows, j)
    l = U.select(below, zero_r, binary.div(col, d))
    urow = shapes.reshape(slicing.dynamic_slice(a, (j, np.int32(0)), (1, c)), (c,))
    u = U.select(comparison.gt(cols, j), zero_c, urow)
    outer = binary.mul(shapes.broadcast_in_dim(l, (r, c), (0,)),
                       shapes.broadcast_in_dim(u, (r, c), (1,)))
    a = binary.sub(a, outer)
    newcol = U.select(below, col, l)
    a = slicing.dynamic_update_slice(a, shapes.reshape(newcol, (r, 1)), (np.int32(0), j))
    return a, piv, perm

  init = (a, U.full((steps,), 0, np.int32), rows)
  return _fori(steps, body, init)


def _set_block(a, block, row: int, col: int):
  return slicing.dynamic_update_slice(a, block, (np.int32(row), np.int32(col)))


def _lu_blocked(a):
  """Right-looking blocked LU of one (m, n) matrix: per panel of _LU_BLOCK columns, an unblocked
  pivoted LU of the panel, its row swaps applied to the rest, a triangular solve for the block
  row of U and one matrix product for the trailing update."""
  m, n = U.shape_of(a)
  k = min(m, n)
  perm = shapes.iota(np.int32, m)
  pivots = []
  for j0 in range(0, k, _LU_BLOCK):
    b = min(_LU_BLOCK, k - j0)
    panel = slicing.slice(a, (j0, j0), (m, j0 + b))
    p_lu, p_piv, p_perm = _lu_unblocked(panel)
    pivots.append(binary.add(p_piv, np.int32(j0)))
    rest = slicing.slice(a, (j0, 0), (m, n))
    rest = slicing.gather_along_axis(rest, shapes.broadcast_in_dim(p_perm, (m - j0, n), (0,)), 0)
    a = _set_block(a, rest, j0, 0)
    a = _set_block(a, p_lu, j0, j0)
    tail = slicing.slice(perm, (j0,), (m,))
    perm = slicing.dynamic_update_slice(perm, slicing.gather_along_axis(tail, p_perm, 0),
                                        (np.int32(j0),))
    if j0 + b < n:
      l11 = slicing.slice(p_lu, (0, 0), (b, b))
      a12 = slicing.slice(a, (j0, j0 + b), (j0 + b, n))
      u12 = triangular_solve(l11, a12, left_side=True, lower=True, unit_diagonal=True)
      a = _set_block(a, u12, j0, j0 + b)
      if j0 + b < m:
        l21 = slicing.slice(p_lu, (b, 0), (m - j0, b))
        a22 = slicing.slice(a, (j0 + b, j0 + b), (m, n))
        a = _set_block(a, binary.sub(a22, U.matmul(l21, u12)), j0 + b, j0 + b)
  piv = shapes.concatenate(pivots, 0) if pivots else U.full((0,), 0, np.int32)
  return a, piv, perm


def _lu_lax(x):
  aval = get_aval(x)
  if aval.size == 0:
    return _empty_factors(_lu_abstract_eval(aval), _LU_EMPTY)
  return U.map_batch(_lu_blocked, [x], aval.ndim - 2)


_LU_EMPTY = ("zeros", "zeros", "iota")  # (lu, pivots, permutation) of an empty input


def _lu_rebuild(outs, ins, avals_in):
  """x = P^T L U: the product of the factors with its rows put back in place."""
  lu_, _, perm = outs
  aval = get_aval(lu_)
  batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
  k = min(m, n)
  nd = aval.ndim
  l = binary.add(U.tril(slicing.slice(lu_, (0,) * nd, batch + (m, k)), -1),
                 U.eye(m, k, aval.dtype, batch))
  u = U.triu(slicing.slice(lu_, (0,) * nd, batch + (k, n)))
  prod = U.matmul(l, u)
  # inverse permutation: inv[perm[i]] = i, by sorting the permutation with an iota
  from revax._src.lax.sorting import sort
  _, inv_perm = sort((perm, shapes.broadcasted_iota(np.int32, get_aval(perm).shape, nd - 2)),
                     nd - 2, num_keys=1)
  return [_permute_rows(prod, inv_perm)]


lu_p = Primitive("lu", multiple_results=True)
lu_p.def_abstract_eval(_lu_abstract_eval)
dispatch.def_numpy_impl(lu_p, _lu_numpy)
ad.primitive_jvps[lu_p] = _lu_jvp
_front_batcher(lu_p)
_lu_lower_lax = mlir.lower_fun(_lu_lax, multiple_results=True)


def _lu_lower_cpu(ctx, x):
  """LAPACK ?getrf where available (the handler also makes pivots zero-based int32 and the
  permutation), else the blocked LU in lax."""
  target = _lapack_target(ctx, "getrf", ctx.avals_in[0])
  if target is None:
    return _lu_lower_lax(ctx, x)
  return _lapack_call(ctx, target, x, ctx.avals_out)


mlir.register_lowering(lu_p, _lu_lower_lax)
mlir.register_lowering(lu_p, _lu_lower_cpu, platform="cpu")
inv.definverse(lu_p, _lu_rebuild, solves=inv.all_unknown_ok)


# --- lu_pivots_to_permutation --------------------------------------------------------------------
def lu_pivots_to_permutation(pivots, permutation_size: int):
  """The permutation that applying the row swaps i <-> pivots[i] in order makes of arange.

  Args:
    pivots: int32 array (..., k).
    permutation_size: m >= k, the permutation's length.

  Returns:
    int32 array (..., m).

  Example:
    >>> lax.linalg.lu_pivots_to_permutation(jnp.array([2, 2, 2], jnp.int32), 3)
    Array([2, 0, 1], dtype=int32)
  """
  return lu_pivots_to_permutation_p.bind(pivots, permutation_size=operator.index(permutation_size))


def _lu_pivots_to_permutation_abstract_eval(pivots, *, permutation_size):
  if pivots.ndim < 1 or pivots.dtype != np.int32:
    raise TypeError(f"lu_pivots_to_permutation requires an int32 array of rank >= 1, got "
                    f"{pivots.dtype.name}{list(pivots.shape)}")
  if permutation_size < pivots.shape[-1]:
    raise ValueError(f"Output permutation size {permutation_size} has to exceed the trailing "
                     f"dimension of the pivots {pivots.shape[-1]}")
  return ShapedArray(pivots.shape[:-1] + (permutation_size,), np.dtype(np.int32))


def _lu_pivots_to_permutation_numpy(pivots, *, permutation_size):
  batch, k = pivots.shape[:-1], pivots.shape[-1]
  piv = pivots.reshape((int(np.prod(batch)), k))  # (not -1: an empty batch or k = 0)
  perm = np.tile(np.arange(permutation_size, dtype=np.int32), (piv.shape[0], 1))
  rows = np.arange(piv.shape[0])
  for j in range(k):
    p = np.clip(piv[:, j], 0, permutation_size - 1)
    a, b = perm[rows, j].copy(), perm[rows, p].copy()
    perm[rows, j], perm[rows, p] = b, a
  return perm.reshape(batch + (permutation_size,))


def _pivots_to_permutation_one(pivots, *, permutation_size):
  k = U.shape_of(pivots)[0]

  def body(j, perm):
    p = shapes.reshape(slicing.dynamic_slice(pivots, (j,), (1,)), ())
    pj = slicing.dynamic_slice(perm, (j,), (1,))
    pp = slicing.dynamic_slice(perm, (p,), (1,))
    perm = slicing.dynamic_update_slice(perm, pj, (p,))
    return slicing.dynamic_update_slice(perm, pp, (j,))

  return _fori(k, body, shapes.iota(np.int32, permutation_size))


def _lu_pivots_to_permutation_lax(pivots, *, permutation_size):
  return U.map_batch(lambda p: _pivots_to_permutation_one(p, permutation_size=permutation_size),
                     [pivots], get_aval(pivots).ndim - 1, multiple_results=False)


lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")
lu_pivots_to_permutation_p.def_abstract_eval(_lu_pivots_to_permutation_abstract_eval)
dispatch.def_numpy_impl(lu_pivots_to_permutation_p, _lu_pivots_to_permutation_numpy)
ad.not_differentiable(lu_pivots_to_permutation_p, "integer input and output")
_front_batcher(lu_pivots_to_permutation_p)
mlir.register_lowering(lu_pivots_to_permutation_p,
                       mlir.lower_fun(_lu_pivots_to_permutation_lax, multiple_results=False))
inv.not_invertible(lu_pivots_to_permutation_p, "many-to-one: different swap sequences give one "
                   "permutation")


# --- qr ------------------------------------------------------------------------------------------
def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
  """QR decomposition x = Q R (x P = Q R with column pivoting).

  Args:
    x: array (..., m, n).
    pivoting: choose columns by largest remaining norm (LAPACK geqp3); also return P.
    full_matrices: Q is (..., m, m) and R (..., m, n); else (..., m, k) and (..., k, n),
      k = min(m, n).
    use_magma: accepted for JAX compatibility (GPU only); ignored.

  Returns:
    (q, r), or (q, r, p) with int32 column permutation p when pivoting.

  Example:
    >>> a = jnp.array([[3., 1.], [4., 2.], [0., 2.]])
    >>> q, r = lax.linalg.qr(a, full_matrices=False)
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    >>> jnp.allclose(q @ r, a, atol=1e-5)
    Array(True, dtype=bool)
  """
  del use_magma
  outs = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices))
  return tuple(outs)


def _qr_abstract_eval(x, *, pivoting, full_matrices):
  _check_matrix("qr", x, square=False)
  batch, (m, n) = x.shape[:-2], x.shape[-2:]
  k = m if full_matrices else min(m, n)
  outs = [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]
  if pivoting:
    outs.append(ShapedArray(batch + (n,), np.dtype(np.int32)))
  return outs


def _np_householder_qr(a, pivoting):
  """Householder QR of one matrix with LAPACK's conventions (geqrf/geqp3): returns the full
  Q (m, m), R (m, n) and the column permutation."""
  m, n = a.shape
  r = np.array(a, dtype=a.dtype)
  q = np.eye(m, dtype=a.dtype)
  p = np.arange(n, dtype=np.int32)
  for k in range(min(m, n)):
    if pivoting:
      norms = np.sum(np.abs(r[k:, k:]) ** 2, axis=0)
      j = k + int(np.argmax(norms))
      r[:, [k, j]] = r[:, [j, k]]
      p[[k, j]] = p[[j, k]]
    alpha = r[k, k]
    xnorm = np.linalg.norm(r[k + 1:, k])
    if xnorm == 0 and np.imag(alpha) == 0:
      continue
    beta = -np.copysign(1.0, np.real(alpha)) * np.sqrt(np.abs(alpha) ** 2 + xnorm ** 2)
    tau = (beta - alpha) / beta
    v = np.zeros(m, a.dtype)
    v[k] = 1
    v[k + 1:] = r[k + 1:, k] / (alpha - beta)
    r = r - np.conj(tau) * np.outer(v, np.conj(v) @ r)
    q = q - tau * np.outer(q @ v, np.conj(v))
  return q, np.triu(r), p


def _qr_numpy(x, *, pivoting, full_matrices):
  if x.size == 0:
    avals = _qr_abstract_eval(get_aval(x), pivoting=pivoting, full_matrices=full_matrices)
    return _np_empty_factors(avals, _qr_empty_kinds(full_matrices, pivoting))
  m, n = x.shape[-2:]
  k = m if full_matrices else min(m, n)
  if not pivoting:
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q.astype(x.dtype), r.astype(x.dtype)]
  q, r, p = U.np_batched(lambda a: _np_householder_qr(a, True), [x], x.ndim - 2, 3)
  return [q[..., :, :k].astype(x.dtype), r[..., :k, :].astype(x.dtype), p]


def _householder_qr_one(a, pivoting):
  """Householder QR of one (m, n) matrix in lax (the same steps as _np_householder_qr): a
  fori_loop over min(m, n) columns. Returns full Q, R and the column permutation."""
  m, n = U.shape_of(a)
  dtype = U.dtype_of(a)
  rdt = U.real_dtype(dtype)
  rows = shapes.iota(np.int32, m)
  cols = shapes.iota(np.int32, n)
  cplx = dtypes.is_complex(dtype)

  def body(k, carry):
    r, q, p = carry
    if pivoting:
      below_k = shapes.broadcast_in_dim(comparison.ge(rows, k), (m, n), (0,))
      sq = U.select(below_k, U.full((m, n), 0, rdt), U.abs_sq(r))
      norms = reduce_sum(sq, (0,))
      norms = U.select(comparison.ge(cols, k), U.full((n,), -1, rdt), norms)
      j = argmax(norms, 0, np.int32)
      ck = slicing.dynamic_slice(r, (np.int32(0), k), (m, 1))
      cj = slicing.dynamic_slice(r, (np.int32(0), j), (m, 1))
      r = slicing.dynamic_update_slice(r, ck, (np.int32(0), j))
      r = slicing.dynamic_update_slice(r, cj, (np.int32(0), k))
      pk, pj = slicing.dynamic_slice(p, (k,), (1,)), slicing.dynamic_slice(p, (j,), (1,))
      p = slicing.dynamic_update_slice(p, pk, (j,))
      p = slicing.dynamic_update_slice(p, pj, (k,))
    col = shapes.reshape(slicing.dynamic_slice(r, (np.int32(0), k), (m, 1)), (m,))
    alpha = shapes.reshape(slicing.dynamic_slice(r, (k, np.int32(0)), (1, n)), (n,))
    alpha = shapes.reshape(slicing.dynamic_slice(alpha, (k,), (1,)), ())
    below = comparison.gt(rows, k)
    tail = U.select(below, U.full((m,), 0, dtype), col)
    xnorm2 = reduce_sum(U.abs_sq(tail), (0,))
    a_re = unary.real(alpha) if cplx else alpha
    a_im2 = unary.square(unary.imag(alpha)) if cplx else U.const(0, rdt)
    skip = binary.bitwise_and(comparison.eq(xnorm2, U.const(0, rdt)),
                              comparison.eq(a_im2, U.const(0, rdt)))
    norm = unary.sqrt(binary.add(binary.add(unary.square(a_re), a_im2), xnorm2))
    sign = U.select(comparison.lt(a_re, U.const(0, rdt)), U.const(1, rdt),
                               U.const(-1, rdt))
    beta = binary.mul(unary.neg(sign), norm)
    beta_c = U.to_dtype(beta, dtype)
    safe_beta = U.select(skip, beta_c, U.const(1, dtype))
    tau = binary.div(binary.sub(beta_c, alpha), safe_beta)
    tau = U.select(skip, tau, U.const(0, dtype))
    denom = binary.sub(alpha, beta_c)
    denom = U.select(skip, denom, U.const(1, dtype))
    v = binary.div(tail, denom)
    v = U.select(comparison.eq(rows, k), v, U.full((m,), 1, dtype))
    vc = U.conj(v)
    # r <- r - conj(tau) v (v^H r); q <- q - tau (q v) v^H
    vhr = U.matmul(shapes.reshape(vc, (1, m)), r)
    r = binary.sub(r, binary.mul(U.conj(tau), U.matmul(shapes.reshape(v, (m, 1)), vhr)))
    qv = U.matmul(q, shapes.reshape(v, (m, 1)))
    q = binary.sub(q, binary.mul(tau, U.matmul(qv, shapes.reshape(vc, (1, m)))))
    return r, q, p

  init = (a, U.eye(m, m, dtype), cols)
  r, q, p = _fori(min(m, n), body, init)
  return q, U.triu(r), p


def _qr_empty_kinds(full_matrices, pivoting):
  """(q, r[, p]) of an empty input: a full Q is the identity (m x m), the permutation iota."""
  return ("eye" if full_matrices else "zeros", "zeros") + (("iota",) if pivoting else ())


def _qr_lax(x, *, pivoting, full_matrices):
  aval = get_aval(x)
  if aval.size == 0:
    avals = _qr_abstract_eval(aval, pivoting=pivoting, full_matrices=full_matrices)
    return _empty_factors(avals, _qr_empty_kinds(full_matrices, pivoting))
  m, n = aval.shape[-2:]
  k = m if full_matrices else min(m, n)
  q, r, p = U.map_batch(lambda a: _householder_qr_one(a, pivoting), [x], aval.ndim - 2)
  nd = aval.ndim
  q = slicing.slice(q, (0,) * nd, aval.shape[:-2] + (m, k))
  r = slicing.slice(r, (0,) * nd, aval.shape[:-2] + (k, n))
  return [q, r, p] if pivoting else [q, r]


def _qr_jvp(primals, tangents, *, pivoting, full_matrices):
  """With C = Q^H dx R^-1 and Omega = tril(C, -1) - tril(C, -1)^H + i Im diag(C) (skew-
  Hermitian): dQ = dx R^-1 + Q (Omega - C), dR = (C - Omega) R. Defined for m >= n with reduced
  (or square) factors, as in JAX."""
  (x,), (dx,) = primals, tangents
  outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices)
  q, r = outs[0], outs[1]
  m, n = get_aval(x).shape[-2:]
  if type(dx) is ad.Zero:
    return outs, [_zero_tangent(o) for o in outs]
  if m < n or (full_matrices and m != n):
    raise NotImplementedError("Unimplemented case of QR decomposition derivative: it is "
                              "defined for m >= n with full_matrices=False (or square input)")
  if pivoting:
    dx = _take_cols(dx, outs[2])
  dx_rinv = triangular_solve(r, dx, left_side=False, lower=False)
  c = U.matmul(U.adjoint(q), dx_rinv)
  low = U.tril(c, -1)
  omega = binary.sub(low, U.adjoint(low))
  if dtypes.is_complex(U.dtype_of(x)):
    d = U.diag_part(c)
    im = binary.sub(d, U.to_dtype(unary.real(d), U.dtype_of(x)))
    omega = binary.add(omega, U.vector_to_diag(im))
  dq = binary.add(U.matmul(q, binary.sub(omega, c)), dx_rinv)
  dr = U.matmul(binary.sub(c, omega), r)
  tangents_out = [dq, dr] + ([_zero_tangent(outs[2])] if pivoting else [])
  return outs, tangents_out


def _qr_rebuild(outs, ins, avals_in, *, pivoting, full_matrices):
  """x = Q R (columns put back in place when pivoted)."""
  q, r = outs[0], outs[1]
  prod = U.matmul(q, r)
  if pivoting:
    from revax._src.lax.sorting import sort
    p = outs[2]
    nd = get_aval(p).ndim
    _, inv_p = sort((p, shapes.broadcasted_iota(np.int32, get_aval(p).shape, nd - 1)), nd - 1)
    prod = _take_cols(prod, inv_p)
  return [prod]


qr_p = Primitive("qr", multiple_results=True)
qr_p.def_abstract_eval(_qr_abstract_eval)
dispatch.def_numpy_impl(qr_p, _qr_numpy)
ad.primitive_jvps[qr_p] = _qr_jvp
_front_batcher(qr_p)
mlir.register_lowering(qr_p, mlir.lower_fun(_qr_lax, multiple_results=True))
inv.definverse(qr_p, _qr_rebuild, solves=inv.all_unknown_ok)


# --- Jacobi machinery shared by eigh and svd -----------------------------------------------------
def _jacobi_rotation(app, aqq, apq, dtype):
  """The 2x2 rotations (one per pair) that zero apq: (c, s, phase); phase is None for real
  dtypes, else apq / |apq| (the rotation is applied with that phase)."""
  rdt = U.real_dtype(dtype)
  mag = unary.abs(apq)
  zero = comparison.eq(mag, U.const(0, rdt))
  safe = U.select(zero, mag, U.const(1, rdt))
  # the real case keeps apq's sign; the complex case rotates by apq's phase (below)
  signed = safe if dtypes.is_complex(dtype) else U.select(zero, apq, U.const(1, rdt))
  tau = binary.div(binary.sub(aqq, app), binary.mul(U.const(2, rdt), signed))
  sgn = U.select(comparison.lt(tau, U.const(0, rdt)), U.const(1, rdt), U.const(-1, rdt))
  t = binary.div(sgn, binary.add(unary.abs(tau),
                                 unary.sqrt(binary.add(U.const(1, rdt), unary.square(tau)))))
  t = U.select(zero, t, U.const(0, rdt))
  c = unary.rsqrt(binary.add(U.const(1, rdt), unary.square(t)))
  s = binary.mul(t, c)
  if dtypes.is_complex(dtype):
    phase = binary.div(apq, U.to_dtype(safe, dtype))
    phase = U.select(zero, phase, U.const(1, dtype))
    return c, U.to_dtype(s, dtype), phase
  return c, s, None


def _row_coefficients(c, s, phase, dtype):
  """Coefficients of the row update x_i' = C_i x_i + R_i x_partner(i) over the pair layout
  (first halves, then second halves): R = -s e^{i phi} for the first of a pair, s e^{-i phi}
  for the second. The column update uses conj(R)."""
  cc = U.to_dtype(c, dtype)
  if phase is None:
    r_first, r_second = unary.neg(s), s
  else:
    r_first, r_second = unary.neg(binary.mul(s, phase)), binary.mul(s, U.conj(phase))
  return shapes.concatenate([cc, cc], 0), shapes.concatenate([r_first, r_second], 0)


def _slice_axis(x, lo: int, hi: int, axis: int):
  shape = U.shape_of(x)
  return slicing.slice(x, tuple(lo if d == axis else 0 for d in range(len(shape))),
                       tuple(hi if d == axis else size for d, size in enumerate(shape)))


def _halves_swapped(x, axis):
  """x with the two halves of `axis` exchanged: each index faces its pair partner."""
  k = U.shape_of(x)[axis] // 2
  lo = _slice_axis(x, 0, k, axis)
  hi = _slice_axis(x, k, 2 * k, axis)
  return shapes.concatenate([hi, lo], axis)


def _tournament_step(x, axis):
  """The round-robin ("circle") move along `axis` in the pair layout (first halves t, second
  halves b, pairs (t_i, b_i)): t_0 stays, b_0 moves up, the t's shift right, the b's left, and
  t_{k-1} comes down. N - 1 moves pair every two indices exactly once."""
  k = U.shape_of(x)[axis] // 2
  if k < 2:
    return x
  sl = lambda lo, hi: _slice_axis(x, lo, hi, axis)
  return shapes.concatenate([sl(0, 1), sl(k, k + 1), sl(1, k - 1), sl(k + 1, 2 * k),
                             sl(k - 1, k)], axis)


_MAX_SWEEPS = 30


def _jacobi_continues(tol):
  """Whether another sweep is needed: the off-diagonal measure is above `tol`, the last sweep
  still reduced it markedly (once rounding dominates, sweeps stop helping), and the sweep
  budget is not spent. The carry ends with (sweeps, previous measure, current measure)."""
  def cond(carry):
    k, prev, cur = carry[-3:]
    above = comparison.gt(cur, tol)
    progress = comparison.lt(cur, binary.mul(prev, U.const(0.9, U.dtype_of(prev))))
    budget = comparison.lt(k, np.int32(_MAX_SWEEPS))
    return binary.bitwise_and(binary.bitwise_and(above, progress), budget)
  return cond


def _jacobi_eigh_one(a):
  """Eigen-decomposition of one Hermitian (n, n) matrix by cyclic Jacobi in the round-robin
  (parallel) order: each round applies n/2 disjoint rotations at once, as row and column
  updates against the halves-swapped matrix, then moves the indices one step of the circle
  (slices and concatenations: no gathers). Sweeps of n - 1 rounds repeat until the off-diagonal
  norm is below eps * ||a|| or stops shrinking. An odd n gets a decoupled dummy index whose
  eigenvalue exceeds every other, so that it sorts last. Returns (vectors, values) unsorted,
  the dummy included."""
  n = U.shape_of(a)[0]
  dtype = U.dtype_of(a)
  rdt = U.real_dtype(dtype)
  frob = unary.sqrt(reduce_sum(U.abs_sq(a), (0, 1)))
  N = n + (n % 2)
  if N != n:
    a = shapes.pad(a, U.const(0, dtype), ((0, 1, 0), (0, 1, 0)))
    big = U.to_dtype(binary.add(binary.mul(frob, U.const(2, rdt)), U.const(1, rdt)), dtype)
    corner = U.vector_to_diag(shapes.pad(shapes.reshape(big, (1,)), U.const(0, dtype),
                                         ((N - 1, 0, 0),)))
    a = binary.add(a, corner)
  k = N // 2
  eps = float(dtypes.finfo(rdt).eps)
  tol = binary.mul(frob, U.const(eps, rdt))
  offmask = comparison.ne(shapes.broadcasted_iota(np.int32, (N, N), 0),
                          shapes.broadcasted_iota(np.int32, (N, N), 1))

  def off_norm(a):
    sq = U.select(offmask, U.full((N, N), 0, rdt), U.abs_sq(a))
    return unary.sqrt(reduce_sum(sq, (0, 1)))

  def one_round(_, carry):
    a, v = carry
    diag = U.diag_part(a)
    if dtypes.is_complex(dtype):
      diag = unary.real(diag)
    app, aqq = slicing.slice(diag, (0,), (k,)), slicing.slice(diag, (k,), (N,))
    apq = U.diag_part(slicing.slice(a, (0, k), (k, N)))
    c, s, phase = _jacobi_rotation(app, aqq, apq, dtype)
    cc, r = _row_coefficients(c, s, phase, dtype)
    a = binary.add(U.scale_rows(a, cc), U.scale_rows(_halves_swapped(a, 0), r))
    rc = U.conj(r)
    a = binary.add(U.scale_cols(a, cc), U.scale_cols(_halves_swapped(a, 1), rc))
    v = binary.add(U.scale_cols(v, cc), U.scale_cols(_halves_swapped(v, 1), rc))
    return _tournament_step(_tournament_step(a, 0), 1), _tournament_step(v, 1)

  def sweep(carry):
    a, v, sweeps, _, off = carry
    a, v = _fori(N - 1, one_round, (a, v))
    return a, v, binary.add(sweeps, np.int32(1)), off, off_norm(a)

  init = (a, U.eye(N, N, dtype), np.int32(0), U.const(np.inf, rdt), off_norm(a))
  a, v, _, _, _ = while_loop(_jacobi_continues(tol), sweep, init)
  w = U.diag_part(a)
  if dtypes.is_complex(dtype):
    w = unary.real(w)
  return v, w


def _sort_eig(v, w, descending=False):
  """Eigenvalues sorted (ascending), eigenvector columns alike."""
  from revax._src.lax.sorting import sort
  nd = get_aval(w).ndim
  key = unary.neg(w) if descending else w
  idx = shapes.broadcasted_iota(np.int32, get_aval(w).shape, nd - 1)
  _, idx = sort((key, idx), nd - 1, num_keys=1)
  return _take_cols(v, idx), slicing.gather_along_axis(w, idx, nd - 1)


# --- eigh ----------------------------------------------------------------------------------------
def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None):
  """Eigen-decomposition of Hermitian matrices: x = V diag(w) V^H.

  Args:
    x: array (..., n, n).
    lower: read the lower (else upper) triangle when not symmetrizing.
    symmetrize_input: use (x + x^H) / 2.
    sort_eigenvalues: eigenvalues ascending (always true of revax's results).
    subset_by_index: optional (lo, hi): only eigenvalues lo..hi-1 (ascending) and their vectors.

  Returns:
    (v, w): eigenvectors as columns (..., n, k) and real eigenvalues (..., k).

  Example:
    >>> v, w = lax.linalg.eigh(jnp.array([[2., 1.], [1., 2.]]))
    >>> w  # eigenvalues second, ascending
    Array([1., 3.], dtype=float32)
  """
  if symmetrize_input:
    _check_matrix("eigh", get_aval(x))
    x = _symmetrize(x)
  if subset_by_index is not None:
    subset_by_index = tuple(operator.index(i) for i in subset_by_index)
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                     subset_by_index=subset_by_index)
  return v, w


def _subset(n, subset_by_index):
  if subset_by_index is None:
    return 0, n
  lo, hi = subset_by_index
  if not 0 <= lo <= hi <= n:
    raise ValueError(f"subset_by_index {subset_by_index} must satisfy 0 <= lo <= hi <= n = {n}")
  return lo, hi


def _eigh_abstract_eval(x, *, lower, sort_eigenvalues, subset_by_index):
  _check_matrix("eigh", x)
  n = x.shape[-1]
  lo, hi = _subset(n, subset_by_index)
  batch = x.shape[:-2]
  return [ShapedArray(batch + (n, hi - lo), x.dtype),
          ShapedArray(batch + (hi - lo,), U.real_dtype(x.dtype))]


def _eigh_numpy(x, *, lower, sort_eigenvalues, subset_by_index):
  if x.size == 0:
    return _np_empty_factors(_eigh_abstract_eval(get_aval(x), lower=lower, sort_eigenvalues=
                                                 sort_eigenvalues, subset_by_index=
                                                 subset_by_index), ("zeros", "zeros"))
  w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
  lo, hi = _subset(x.shape[-1], subset_by_index)
  return [v[..., lo:hi].astype(x.dtype), w[..., lo:hi].astype(U.real_dtype(x.dtype))]


def _eigh_lax(x, *, lower, sort_eigenvalues, subset_by_index):
  aval = get_aval(x)
  if aval.size == 0:  # (v, w): both empty
    return _empty_factors(_eigh_abstract_eval(aval, lower=lower, sort_eigenvalues=
                                              sort_eigenvalues, subset_by_index=subset_by_index),
                          ("zeros", "zeros"))
  h = _hermitian_from_triangle(x, lower)
  v, w = U.map_batch(_jacobi_eigh_one, [h], aval.ndim - 2)
  v, w = _sort_eig(v, w)
  n = aval.shape[-1]
  if get_aval(w).shape[-1] != n:  # an odd size: the dummy sorted last
    nd = aval.ndim
    v = slicing.slice(v, (0,) * nd, aval.shape[:-2] + (n, n))
    w = slicing.slice(w, (0,) * (nd - 1), aval.shape[:-2] + (n,))
  lo, hi = _subset(aval.shape[-1], subset_by_index)
  if (lo, hi) != (0, aval.shape[-1]):
    nd = aval.ndim
    v = slicing.slice(v, (0,) * nd, aval.shape[:-1] + (hi,))
    v = slicing.slice(v, (0,) * (nd - 1) + (lo,), get_aval(v).shape)
    w = slicing.slice(w, (0,) * (nd - 2) + (lo,), aval.shape[:-2] + (hi,))
  return [v, w]


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index):
  """dw = real diag(V^H dA V); dV = V (F o (V^H dA V)) with F_ij = 1 / (w_j - w_i) off the
  diagonal. As in JAX, the tangent dA is used as given (taken to be Hermitian)."""
  (x,), (dx,) = primals, tangents
  v, w = eigh_p.bind(x, lower=lower, sort_eigenvalues=sort_eigenvalues,
                     subset_by_index=subset_by_index)
  if type(dx) is ad.Zero:
    return [v, w], [_zero_tangent(v), _zero_tangent(w)]
  if subset_by_index is not None and tuple(subset_by_index) != (0, get_aval(x).shape[-1]):
    raise NotImplementedError("the derivative of eigh with subset_by_index is not implemented")
  dtype = U.dtype_of(x)
  vdv = U.matmul(U.adjoint(v), U.matmul(dx, v))
  dw = U.diag_part(vdv)
  dw = unary.real(dw) if dtypes.is_complex(dtype) else dw
  n = get_aval(w).shape[-1]
  wa = get_aval(w)
  shape = wa.shape + (n,)
  nd = len(shape)
  wi = shapes.broadcast_in_dim(w, shape, tuple(range(nd - 2)) + (nd - 2,))
  wj = shapes.broadcast_in_dim(w, shape, tuple(range(nd - 2)) + (nd - 1,))
  diff = binary.sub(wj, wi)
  eyeb = U.eye(n, n, wa.dtype, wa.shape[:-1])
  f = binary.sub(binary.div(U.const(1, wa.dtype), binary.add(diff, eyeb)), eyeb)
  dv = U.matmul(v, binary.mul(U.to_dtype(f, dtype), vdv))
  return [v, w], [dv, dw]


eigh_p = Primitive("eigh", multiple_results=True)
eigh_p.def_abstract_eval(_eigh_abstract_eval)
dispatch.def_numpy_impl(eigh_p, _eigh_numpy)
ad.primitive_jvps[eigh_p] = _eigh_jvp
_front_batcher(eigh_p)
_eigh_lower_lax = mlir.lower_fun(_eigh_lax, multiple_results=True)


def _eigh_lower_cpu(ctx, x, *, lower, sort_eigenvalues, subset_by_index):
  """LAPACK ?syevd/?heevd where available (eigenvalues ascending, NaN where LAPACK fails, as
  JAX), a subset sliced from the full result; else the Jacobi algorithm in lax."""
  aval = ctx.avals_in[0]
  target = _lapack_target(ctx, "syevd", aval)
  if target is None:
    return _eigh_lower_lax(ctx, x, lower=lower, sort_eigenvalues=sort_eigenvalues,
                           subset_by_index=subset_by_index)
  n = aval.shape[-1]
  full = [ShapedArray(aval.shape, aval.dtype),
          ShapedArray(aval.shape[:-1], U.real_dtype(aval.dtype))]
  outs = _lapack_call(ctx, target, x, full, attrs=[("lower", lower)])
  lo, hi = _subset(n, subset_by_index)
  if (lo, hi) == (0, n):
    return outs
  return _slice_last(ctx, outs, full, [aval.ndim - 1, aval.ndim - 2], lo, hi)


mlir.register_lowering(eigh_p, _eigh_lower_lax)
mlir.register_lowering(eigh_p, _eigh_lower_cpu, platform="cpu")
inv.definverse(eigh_p, lambda outs, ins, avals_in, **p: [U.matmul(
    U.scale_cols(outs[0], U.to_dtype(outs[1], U.dtype_of(outs[0]))), U.adjoint(outs[0]))],
    solves=lambda known, eqn, facts: eqn.params["subset_by_index"] is None)


# --- svd -----------------------------------------------------------------------------------------
def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
  """Singular value decomposition x = U diag(s) V^H.

  Args:
    x: array (..., m, n).
    full_matrices: U (..., m, m) and V^H (..., n, n); else (..., m, k), (..., k, n).
    compute_uv: also return U and V^H.
    subset_by_index: optional (lo, hi): singular values lo..hi-1 (descending order) only.
    algorithm: a SvdAlgorithm (accepted; revax uses LAPACK's gesdd on CPU where available,
      else one-sided Jacobi).

  Returns:
    (u, s, vh) if compute_uv, else s (descending, real).

  Example:
    >>> u, s, vh = lax.linalg.svd(jnp.array([[3., 0.], [0., -2.], [0., 0.]]), full_matrices=False)
    >>> s
    Array([3., 2.], dtype=float32)
  """
  del algorithm
  if subset_by_index is not None:
    subset_by_index = tuple(operator.index(i) for i in subset_by_index)
  outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                    subset_by_index=subset_by_index)
  if compute_uv:
    s, u, vh = outs
    return u, s, vh
  return outs[0]


def _svd_abstract_eval(x, *, full_matrices, compute_uv, subset_by_index):
  _check_matrix("svd", x, square=False)
  batch, (m, n) = x.shape[:-2], x.shape[-2:]
  k = min(m, n)
  lo, hi = _subset(k, subset_by_index)
  s = ShapedArray(batch + (hi - lo,), U.real_dtype(x.dtype))
  if not compute_uv:
    return [s]
  if subset_by_index is not None and (lo, hi) != (0, k):
    return [s, ShapedArray(batch + (m, hi - lo), x.dtype), ShapedArray(batch + (hi - lo, n), x.dtype)]
  if full_matrices:
    return [s, ShapedArray(batch + (m, m), x.dtype), ShapedArray(batch + (n, n), x.dtype)]
  return [s, ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]


def _svd_numpy(x, *, full_matrices, compute_uv, subset_by_index):
  if x.size == 0:
    params = dict(full_matrices=full_matrices, compute_uv=compute_uv,
                  subset_by_index=subset_by_index)
    return _np_empty_factors(_svd_abstract_eval(get_aval(x), **params),
                             _svd_empty_kinds(**params))
  k = min(x.shape[-2:])
  lo, hi = _subset(k, subset_by_index)
  rdt = U.real_dtype(x.dtype)
  if not compute_uv:
    return [np.linalg.svd(x, compute_uv=False)[..., lo:hi].astype(rdt)]
  full = full_matrices and subset_by_index is None
  u, s, vh = np.linalg.svd(x, full_matrices=full)
  if subset_by_index is not None:
    u, s, vh = u[..., :, lo:hi], s[..., lo:hi], vh[..., lo:hi, :]
  return [s.astype(rdt), u.astype(x.dtype), vh.astype(x.dtype)]


def _one_sided_jacobi(w):
  """One-sided Jacobi on one square (n, n) matrix: rotations V from the right, in the round-robin
  order of _jacobi_eigh_one (column updates only), until the columns of W = A V are orthogonal:
  every |w_i^H w_j| below 4 eps |w_i| |w_j|, or neither that largest ratio nor the
  off-diagonal Gram norm shrinks any more.
  An odd n gets a dummy column (zero but for a large entry in a new row) that couples to
  nothing and has the largest norm. Returns (W, V) with columns in tournament order."""
  n = U.shape_of(w)[0]
  dtype = U.dtype_of(w)
  rdt = U.real_dtype(dtype)
  N = n + (n % 2)
  if N != n:
    frob = unary.sqrt(reduce_sum(U.abs_sq(w), (0, 1)))
    w = shapes.pad(w, U.const(0, dtype), ((0, 1, 0), (0, 1, 0)))
    big = U.to_dtype(binary.add(binary.mul(frob, U.const(2, rdt)), U.const(1, rdt)), dtype)
    w = binary.add(w, U.vector_to_diag(shapes.pad(shapes.reshape(big, (1,)), U.const(0, dtype),
                                                  ((N - 1, 0, 0),))))
  k = N // 2
  eps = float(dtypes.finfo(rdt).eps)
  offmask = comparison.ne(shapes.broadcasted_iota(np.int32, (N, N), 0),
                          shapes.broadcasted_iota(np.int32, (N, N), 1))

  def measures(w):
    """(max relative |g_ij|, off-diagonal Frobenius norm of the Gram matrix g = W^H W)."""
    g = U.matmul(U.adjoint(w), w)
    gabs = unary.abs(g)
    d = unary.sqrt(unary.abs(U.diag_part(g)))
    d = U.select(comparison.eq(d, U.const(0, rdt)), d, U.const(1, rdt))
    rel = binary.div(gabs, binary.mul(shapes.broadcast_in_dim(d, (N, N), (0,)),
                                      shapes.broadcast_in_dim(d, (N, N), (1,))))
    zeros = U.full((N, N), 0, rdt)
    off_rel = reduce_max(U.select(offmask, zeros, rel), (0, 1))
    off_fro = unary.sqrt(reduce_sum(U.select(offmask, zeros, unary.square(gabs)), (0, 1)))
    return off_rel, off_fro

  def one_round(_, carry):
    w, v = carry
    wp = _halves_swapped(w, 1)
    norms = reduce_sum(U.abs_sq(w), (0,))
    gam = reduce_sum(binary.mul(U.conj(slicing.slice(w, (0, 0), (N, k))),
                                slicing.slice(wp, (0, 0), (N, k))), (0,))  # w_p^H w_q
    app, aqq = slicing.slice(norms, (0,), (k,)), slicing.slice(norms, (k,), (N,))
    c, s, phase = _jacobi_rotation(app, aqq, gam, dtype)
    cc, r = _row_coefficients(c, s, phase, dtype)
    rc = U.conj(r)
    w = binary.add(U.scale_cols(w, cc), U.scale_cols(wp, rc))
    v = binary.add(U.scale_cols(v, cc), U.scale_cols(_halves_swapped(v, 1), rc))
    return _tournament_step(w, 1), _tournament_step(v, 1)

  def sweep(carry):
    w, v, sweeps, _, rel, _, fro = carry
    w, v = _fori(N - 1, one_round, (w, v))
    new_rel, new_fro = measures(w)
    return w, v, binary.add(sweeps, np.int32(1)), rel, new_rel, fro, new_fro

  def cond(carry):
    _, _, sweeps, prev_rel, rel, prev_fro, fro = carry
    by_rel = _jacobi_continues(U.const(4 * eps, rdt))((sweeps, prev_rel, rel))
    by_fro = _jacobi_continues(U.const(4 * eps, rdt))((sweeps, prev_fro, fro))
    return binary.bitwise_and(binary.bitwise_or(by_rel, by_fro),
                              comparison.gt(rel, U.const(4 * eps, rdt)))

  rel0, fro0 = measures(w)
  inf = U.const(np.inf, rdt)
  init = (w, U.eye(N, N, dtype), np.int32(0), inf, rel0, inf, fro0)
  w, v, _, _, _, _, _ = while_loop(cond, sweep, init)
  return w, v


def _svd_square(a, compute_uv):
  """SVD of one square matrix: (s descending, U, V)."""
  n = U.shape_of(a)[0]
  dtype = U.dtype_of(a)
  rdt = U.real_dtype(dtype)
  w, v = _one_sided_jacobi(a)
  N = U.shape_of(w)[1]
  s = unary.sqrt(reduce_sum(U.abs_sq(w), (0,)))
  from revax._src.lax.sorting import sort
  _, idx = sort((unary.neg(s), shapes.iota(np.int32, N)), 0, num_keys=1)
  if N != n:  # an odd size: the dummy column has the largest norm; drop it
    idx = slicing.slice(idx, (1,), (N,))
  s = slicing.gather_along_axis(s, idx, 0)
  if not compute_uv:
    return s, None, None
  if N != n:
    w, v = slicing.slice(w, (0, 0), (n, N)), slicing.slice(v, (0, 0), (n, N))
  w, v = _take_cols(w, idx), _take_cols(v, idx)
  zero = comparison.eq(s, U.const(0, rdt))
  inv_s = binary.div(U.const(1, rdt), U.select(zero, s, U.const(1, rdt)))
  inv_s = U.select(zero, inv_s, U.const(0, rdt))
  wn = U.scale_cols(w, U.to_dtype(inv_s, dtype))
  # an orthonormal basis whose leading columns are those of wn (up to sign): its Householder QR
  q, r, _ = _householder_qr_one(wn, False)
  d = U.diag_part(r)
  d_re = unary.real(d) if dtypes.is_complex(dtype) else d
  sign = U.select(comparison.lt(d_re, U.const(0, rdt)), U.const(1, rdt),
                             U.const(-1, rdt))
  u = U.scale_cols(q, U.to_dtype(sign, dtype))
  return s, u, v


def _svd_one(a, *, full_matrices, compute_uv):
  """SVD of one (m, n) matrix: tall ones are reduced to square by a QR first, wide ones are
  transposed."""
  m, n = U.shape_of(a)
  dtype = U.dtype_of(a)
  if m < n:
    s, u, v = _svd_one(U.adjoint(a), full_matrices=full_matrices, compute_uv=compute_uv)
    return (s, None, None) if not compute_uv else (s, U.adjoint(v), U.adjoint(u))  # a = (u s v^H)^H
  if m == n:
    s, u, v = _svd_square(a, compute_uv)
    return (s, None, None) if not compute_uv else (s, u, U.adjoint(v))
  q, r, _ = _householder_qr_one(a, False)
  r = slicing.slice(r, (0, 0), (n, n))
  s, ur, v = _svd_square(r, compute_uv)
  if not compute_uv:
    return s, None, None
  left = U.matmul(slicing.slice(q, (0, 0), (m, n)), ur)
  if full_matrices:
    left = shapes.concatenate([left, slicing.slice(q, (0, n), (m, m))], 1)
  return s, left, U.adjoint(v)


def _svd_empty_kinds(full_matrices, compute_uv, subset_by_index):
  """(s[, u, vh]) of an empty input: full U and V^H are identities (m x m and n x n)."""
  if not compute_uv:
    return ("zeros",)
  uv = "eye" if full_matrices and subset_by_index is None else "zeros"
  return ("zeros", uv, uv)


def _svd_lax(x, *, full_matrices, compute_uv, subset_by_index):
  aval = get_aval(x)
  if aval.size == 0:
    params = dict(full_matrices=full_matrices, compute_uv=compute_uv,
                  subset_by_index=subset_by_index)
    return _empty_factors(_svd_abstract_eval(aval, **params), _svd_empty_kinds(**params))
  m, n = aval.shape[-2:]
  k = min(m, n)
  full = full_matrices and subset_by_index is None

  def one(a):
    s, u, vh = _svd_one(a, full_matrices=full, compute_uv=compute_uv)
    return [s] if not compute_uv else [s, u, vh]

  outs = U.map_batch(one, [x], aval.ndim - 2)
  lo, hi = _subset(k, subset_by_index)
  if (lo, hi) != (0, k):
    nd = aval.ndim
    sl = lambda y, axis: slicing.slice(
        y, tuple(lo if i == axis else 0 for i in range(get_aval(y).ndim)),
        tuple(hi if i == axis else d for i, d in enumerate(get_aval(y).shape)))
    outs = [sl(outs[0], nd - 2)] + ([sl(outs[1], nd - 1), sl(outs[2], nd - 2)]
                                    if compute_uv else [])
  return outs


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index):
  """ds = real diag(U^H dA V); dU, dV from the antisymmetric parts of U^H dA V scaled by
  F_ij = 1 / (s_j^2 - s_i^2), with the corrections for non-square inputs (JAX's rule)."""
  (x,), (dx,) = primals, tangents
  params = dict(full_matrices=full_matrices, compute_uv=compute_uv, subset_by_index=subset_by_index)
  outs = svd_p.bind(x, **params)
  if type(dx) is ad.Zero:
    return outs, [_zero_tangent(o) for o in outs]
  if compute_uv and full_matrices and get_aval(x).shape[-1] != get_aval(x).shape[-2]:
    raise NotImplementedError("Singular value decomposition JVP not implemented for full "
                              "matrices")
  if subset_by_index is not None:
    raise NotImplementedError("the derivative of svd with subset_by_index is not implemented")
  s, u, vh = svd_p.bind(x, full_matrices=False, compute_uv=True, subset_by_index=None)
  dtype = U.dtype_of(x)
  rdt = U.real_dtype(dtype)
  v, ut = U.adjoint(vh), U.adjoint(u)
  ds_mat = U.matmul(ut, U.matmul(dx, v))
  ds = U.diag_part(ds_mat)
  ds = unary.real(ds) if dtypes.is_complex(dtype) else ds
  if not compute_uv:
    return outs, [ds]
  sa = get_aval(s)
  k = sa.shape[-1]
  shape = sa.shape + (k,)
  nd = len(shape)
  s_col = shapes.broadcast_in_dim(s, shape, tuple(range(nd - 2)) + (nd - 1,))  # s_j
  s_row = shapes.broadcast_in_dim(s, shape, tuple(range(nd - 2)) + (nd - 2,))  # s_i
  diffs = binary.mul(binary.add(s_col, s_row), binary.sub(s_col, s_row))
  eyeb = U.eye(k, k, rdt, sa.shape[:-1])
  f = binary.sub(binary.div(U.const(1, rdt), binary.add(diffs, eyeb)), eyeb)
  fc = U.to_dtype(f, dtype)
  dss = binary.mul(U.to_dtype(s_col, dtype), ds_mat)  # dS diag(s)
  sds = binary.mul(U.to_dtype(s_row, dtype), ds_mat)  # diag(s) dS
  zero = comparison.eq(s, U.const(0, rdt))
  s_inv = U.select(zero, binary.div(U.const(1, rdt), U.select(
      zero, s, U.const(1, rdt))), U.const(0, rdt))
  du_diag = binary.mul(binary.mul(U.const(0.5, dtype), binary.sub(ds_mat, U.adjoint(ds_mat))),
                       U.to_dtype(U.vector_to_diag(s_inv), dtype))
  du = U.matmul(u, binary.add(binary.mul(fc, binary.add(dss, U.adjoint(dss))), du_diag))
  dv = U.matmul(v, binary.mul(fc, binary.add(sds, U.adjoint(sds))))
  m, n = get_aval(x).shape[-2:]
  s_inv_c = U.to_dtype(s_inv, dtype)
  if m > n:
    dav = U.matmul(dx, v)
    du = binary.add(du, U.scale_cols(binary.sub(dav, U.matmul(u, U.matmul(ut, dav))), s_inv_c))
  if n > m:
    dahu = U.matmul(U.adjoint(dx), u)
    dv = binary.add(dv, U.scale_cols(binary.sub(dahu, U.matmul(v, U.matmul(vh, dahu))), s_inv_c))
  return outs, [ds, du, U.adjoint(dv)]


def _svd_rebuild(outs, ins, avals_in, *, full_matrices, compute_uv, subset_by_index):
  """x = U[:, :k] diag(s) V^H[:k, :]."""
  s, u, vh = outs
  ua, va = get_aval(u), get_aval(vh)
  k = get_aval(s).shape[-1]
  u = slicing.slice(u, (0,) * ua.ndim, ua.shape[:-1] + (k,))
  vh = slicing.slice(vh, (0,) * va.ndim, va.shape[:-2] + (k, va.shape[-1]))
  return [U.matmul(U.scale_cols(u, U.to_dtype(s, ua.dtype)), vh)]


svd_p = Primitive("svd", multiple_results=True)
svd_p.def_abstract_eval(_svd_abstract_eval)
dispatch.def_numpy_impl(svd_p, _svd_numpy)
ad.primitive_jvps[svd_p] = _svd_jvp
_front_batcher(svd_p)
_svd_lower_lax = mlir.lower_fun(_svd_lax, multiple_results=True)


def _svd_lower_cpu(ctx, x, *, full_matrices, compute_uv, subset_by_index):
  """LAPACK ?gesdd where available (jobz 'A', 'S' or 'N' from the result shapes; NaN where
  LAPACK fails, as JAX), a subset sliced from the reduced result; else one-sided Jacobi in lax."""
  aval = ctx.avals_in[0]
  target = _lapack_target(ctx, "gesdd", aval)
  if target is None:
    return _svd_lower_lax(ctx, x, full_matrices=full_matrices, compute_uv=compute_uv,
                          subset_by_index=subset_by_index)
  batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
  k = min(m, n)
  lo, hi = _subset(k, subset_by_index)
  if (lo, hi) == (0, k):
    return _lapack_call(ctx, target, x, ctx.avals_out)
  full = [ShapedArray(batch + (k,), U.real_dtype(aval.dtype))]
  if compute_uv:
    full += [ShapedArray(batch + (m, k), aval.dtype), ShapedArray(batch + (k, n), aval.dtype)]
  outs = _lapack_call(ctx, target, x, full)
  nd = aval.ndim
  return _slice_last(ctx, outs, full, [nd - 2, nd - 1, nd - 2][:len(full)], lo, hi)


mlir.register_lowering(svd_p, _svd_lower_lax)
mlir.register_lowering(svd_p, _svd_lower_cpu, platform="cpu")
inv.definverse(svd_p, _svd_rebuild, solves=lambda known, eqn, facts: (
    eqn.params["compute_uv"] and eqn.params["subset_by_index"] is None))


# --- tridiagonal_solve ---------------------------------------------------------------------------
def tridiagonal_solve(dl, d, du, b):
  """Solve T x = b for tridiagonal T given by its three diagonals.

  Args:
    dl: sub-diagonal (..., m), dl[..., 0] unused (zero).
    d: diagonal (..., m).
    du: super-diagonal (..., m), du[..., m-1] unused (zero).
    b: right-hand sides (..., m, n).

  Returns:
    x (..., m, n).

  Example:
    >>> dl = jnp.array([0., 1., 1.])  # dl[0] and du[-1] are ignored
    >>> d = jnp.array([2., 2., 2.])
    >>> du = jnp.array([1., 1., 0.])
    >>> b = jnp.array([[3.], [4.], [3.]])
    >>> lax.linalg.tridiagonal_solve(dl, d, du, b)
    Array([[1.],
           [1.],
           [1.]], dtype=float32)
  """
  return tridiagonal_solve_p.bind(dl, d, du, b)


def _tridiagonal_solve_abstract_eval(dl, d, du, b):
  if not (dl.shape == d.shape == du.shape):
    raise ValueError(f"tridiagonal_solve requires dl, d and du of one shape, got {dl.shape}, "
                     f"{d.shape} and {du.shape}")
  if b.ndim != d.ndim + 1 or b.shape[:-1] != d.shape:
    raise ValueError(f"tridiagonal_solve requires b of shape (..., m, n) with (..., m) the "
                     f"diagonals' shape {d.shape}, got {b.shape}")
  _check_half("tridiagonal_solve", b.dtype)
  if not (dl.dtype == d.dtype == du.dtype == b.dtype) or b.dtype not in _FLOATS:
    raise TypeError(f"tridiagonal_solve requires dl, d, du and b of one floating dtype, got "
                    f"{dl.dtype.name}, {d.dtype.name}, {du.dtype.name} and {b.dtype.name}")
  return ShapedArray(b.shape, b.dtype)


def _tridiagonal_solve_numpy(dl, d, du, b):
  m = d.shape[-1]
  cp = np.zeros(d.shape, d.dtype)
  dp = np.zeros(b.shape, b.dtype)
  x = np.zeros(b.shape, b.dtype)
  with np.errstate(all="ignore"):
    for i in range(m):
      if i == 0:
        den = d[..., 0]
        dp[..., 0, :] = b[..., 0, :] / den[..., None]
      else:
        den = d[..., i] - dl[..., i] * cp[..., i - 1]
        dp[..., i, :] = (b[..., i, :] - dl[..., i, None] * dp[..., i - 1, :]) / den[..., None]
      cp[..., i] = du[..., i] / den
    for i in reversed(range(m)):
      x[..., i, :] = dp[..., i, :] - (cp[..., i, None] * x[..., i + 1, :] if i < m - 1 else 0)
  return x.astype(b.dtype)


def _tridiagonal_solve_lax(dl, d, du, b):
  """The Thomas algorithm: a forward scan eliminating the sub-diagonal, a reverse scan
  substituting back (the diagonals' last axis and b's row axis moved to the front)."""
  nd = get_aval(d).ndim
  front = lambda x, ax: batch_util.moveaxis(x, ax, 0)
  dl_t, d_t, du_t, b_t = front(dl, nd - 1), front(d, nd - 1), front(du, nd - 1), front(b, nd - 1)
  dtype = U.dtype_of(b)
  c0 = U.full(U.shape_of(d_t)[1:], 0, dtype)
  p0 = U.full(U.shape_of(b_t)[1:], 0, dtype)

  def fwd(carry, row):
    c_prev, p_prev = carry
    l_i, d_i, u_i, b_i = row
    den = binary.sub(d_i, binary.mul(l_i, c_prev))
    c = binary.div(u_i, den)
    p = binary.div(binary.sub(b_i, binary.mul(shapes.expand_dims(l_i, (get_aval(l_i).ndim,)),
                                              p_prev)),
                   shapes.expand_dims(den, (get_aval(den).ndim,)))
    return (c, p), (c, p)

  _, (cs, ps) = scan(fwd, (c0, p0), (dl_t, d_t, du_t, b_t))

  def bwd(x_next, row):
    c_i, p_i = row
    x = binary.sub(p_i, binary.mul(shapes.expand_dims(c_i, (get_aval(c_i).ndim,)), x_next))
    return x, x

  _, xs = scan(bwd, p0, (cs, ps), reverse=True)
  return batch_util.moveaxis(xs, 0, nd - 1)


def _tri_matvec(dl, d, du, x):
  """T x for the tridiagonal T of (dl, d, du), x (..., m, n). As jax's, dl[0] and du[m-1] (outside
  T) are never read, so their derivatives are exactly zero even where x is not finite."""
  nd = get_aval(x).ndim
  zero = U.const(0, U.dtype_of(x))
  rows = lambda lo, hi: tuple([(0, 0, 0)] * (nd - 2) + [(lo, hi, 0), (0, 0, 0)])
  batch, (m, n) = get_aval(x).shape[:-2], get_aval(x).shape[-2:]
  vec = lambda v, lo, hi: slicing.slice(v, (0,) * (nd - 2) + (lo,), batch + (hi,))
  x_head = slicing.slice(x, (0,) * nd, batch + (m - 1, n))
  x_tail = slicing.slice(x, (0,) * (nd - 2) + (1, 0), batch + (m, n))
  below = shapes.pad(U.scale_rows(x_head, vec(dl, 1, m)), zero, rows(1, 0))
  above = shapes.pad(U.scale_rows(x_tail, vec(du, 0, m - 1)), zero, rows(0, 1))
  return binary.add(binary.add(U.scale_rows(x, d), below), above)


def _tridiagonal_solve_jvp(primals, tangents):
  """dx = T^-1 (db - dT x)."""
  dl, d, du, b = primals
  x = tridiagonal_solve_p.bind(dl, d, du, b)
  tdl, td, tdu, tb = tangents
  if all(type(t) is ad.Zero for t in tangents):
    return x, _zero_tangent(x)
  rhs = _inst(tb) if type(tb) is not ad.Zero else U.full(U.shape_of(b), 0, U.dtype_of(b))
  if not all(type(t) is ad.Zero for t in (tdl, td, tdu)):
    rhs = binary.sub(rhs, _tri_matvec(_inst(tdl), _inst(td), _inst(tdu), x))
  return x, tridiagonal_solve_p.bind(dl, d, du, rhs)


def _transposed_diagonals(dl, du):
  """(dl', du') of T^T: T^T[i, i-1] = du[i-1], T^T[i, i+1] = dl[i+1]."""
  nd = get_aval(dl).ndim
  m = get_aval(dl).shape[-1]
  zero = U.const(0, U.dtype_of(dl))
  batch = get_aval(dl).shape[:-1]
  cfg = lambda lo, hi: tuple([(0, 0, 0)] * (nd - 1) + [(lo, hi, 0)])
  new_dl = shapes.pad(slicing.slice(du, (0,) * nd, batch + (m - 1,)), zero, cfg(1, 0))
  new_du = shapes.pad(slicing.slice(dl, (0,) * (nd - 1) + (1,), batch + (m,)), zero, cfg(0, 1))
  return new_dl, new_du


def _tridiagonal_solve_transpose(ct, dl, d, du, b):
  if any(ad.is_undefined_primal(v) for v in (dl, d, du)):
    raise NotImplementedError("tridiagonal_solve is linear in b only")
  if type(ct) is ad.Zero:
    return [None, None, None, ad.Zero(b.aval)]
  tdl, tdu = _transposed_diagonals(dl, du)
  return [None, None, None, tridiagonal_solve_p.bind(tdl, d, tdu, ct)]


tridiagonal_solve_p = Primitive("tridiagonal_solve")
tridiagonal_solve_p.def_abstract_eval(_tridiagonal_solve_abstract_eval)
dispatch.def_numpy_impl(tridiagonal_solve_p, _tridiagonal_solve_numpy)
ad.primitive_jvps[tridiagonal_solve_p] = _tridiagonal_solve_jvp
ad.primitive_transposes[tridiagonal_solve_p] = _tridiagonal_solve_transpose
_front_batcher(tridiagonal_solve_p)
mlir.register_lowering(tridiagonal_solve_p,
                       mlir.lower_fun(_tridiagonal_solve_lax, multiple_results=False))
inv.definverse(tridiagonal_solve_p,
               lambda outs, ins, avals_in: [ins[0], ins[1], ins[2],
                                            _tri_matvec(ins[0], ins[1], ins[2], outs[0])],
               solves=lambda known, eqn, facts: all(known[:3]) and not known[3])


# --- symmetric_product ---------------------------------------------------------------------------
def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):
  """alpha * a a^T + beta * c.

  Only the lower triangle is guaranteed on every platform (as in JAX); on CPU the whole product
  is computed, as JAX's CPU lowering does.

  Args:
    a_matrix: (..., n, k).
    c_matrix: (..., n, n).
    alpha, beta: scalars.
    symmetrize_output: fill the upper triangle from the lower.

  Returns:
    (..., n, n).

  Example:
    >>> a = jnp.array([[1., 2.], [3., 4.]])
    >>> lax.linalg.symmetric_product(a, jnp.eye(2), alpha=2.0, beta=1.0)  # 2 a a^T + I
    Array([[11., 22.],
           [22., 51.]], dtype=float32)
  """
  out = symmetric_product_p.bind(a_matrix, c_matrix, alpha=float(alpha), beta=float(beta))
  if symmetrize_output:
    lower = U.tril(out)
    out = binary.add(lower, U.swap_last(U.tril(out, -1)))
  return out


def _symmetric_product_abstract_eval(a, c, *, alpha, beta):
  if a.ndim < 2 or c.ndim != a.ndim or c.shape[-1] != c.shape[-2] or \
      c.shape[-1] != a.shape[-2] or a.shape[:-2] != c.shape[:-2]:
    raise ValueError(f"symmetric_product requires a (..., n, k) and c (..., n, n), got "
                     f"{a.shape} and {c.shape}")
  if a.dtype != c.dtype or a.dtype not in _FLOATS + _HALF:
    raise TypeError(f"symmetric_product requires a and c of one floating dtype, got "
                    f"{a.dtype.name} and {c.dtype.name}")
  return ShapedArray(c.shape, c.dtype)


def _symmetric_product_numpy(a, c, *, alpha, beta):
  if c.dtype in _HALF:  # (NumPy's matmul has no bfloat16 loop: compute in float32, round once)
    return _symmetric_product_numpy(a.astype(np.float32), c.astype(np.float32), alpha=alpha,
                                    beta=beta).astype(c.dtype)
  return (alpha * (a @ np.swapaxes(a, -1, -2)) + beta * c).astype(c.dtype)


def _symmetric_product_lax(a, c, *, alpha, beta):
  dtype = U.dtype_of(c)
  return binary.add(binary.mul(U.const(alpha, dtype), U.matmul(a, U.swap_last(a))),
                    binary.mul(U.const(beta, dtype), c))


def _symmetric_product_jvp(primals, tangents, *, alpha, beta):
  a, c = primals
  da, dc = tangents
  out = symmetric_product_p.bind(a, c, alpha=alpha, beta=beta)
  dtype = U.dtype_of(c)
  t = U.full(U.shape_of(c), 0, dtype)
  if type(da) is not ad.Zero:
    prod = U.matmul(da, U.swap_last(a))
    t = binary.add(t, binary.mul(U.const(alpha, dtype), binary.add(prod, U.swap_last(prod))))
  if type(dc) is not ad.Zero:
    t = binary.add(t, binary.mul(U.const(beta, dtype), dc))
  return out, t


symmetric_product_p = Primitive("symmetric_product")
symmetric_product_p.def_abstract_eval(_symmetric_product_abstract_eval)
dispatch.def_numpy_impl(symmetric_product_p, _symmetric_product_numpy)
ad.primitive_jvps[symmetric_product_p] = _symmetric_product_jvp
_front_batcher(symmetric_product_p)
mlir.register_lowering(symmetric_product_p,
                       mlir.lower_fun(_symmetric_product_lax, multiple_results=False))
inv.not_invertible(symmetric_product_p, "many-to-one: a a^T does not determine a")


# --- primitives whose rules come from their lax algorithm ----------------------------------------
def _algorithmic_primitive(name, lax_fn, abstract_eval, reason, numpy_fn=None):
  """A primitive computed by the lax function `lax_fn(*args, **params) -> list of outputs`: it
  lowers by tracing that function, differentiates by differentiating it (forward mode through
  the algorithm), batches with its batch axes in front, and runs eagerly in NumPy when
  `numpy_fn` is given (else XLA compiles it)."""
  prim = Primitive(name, multiple_results=True)
  prim.def_abstract_eval(abstract_eval)
  if numpy_fn is not None:
    dispatch.def_numpy_impl(prim, numpy_fn)

  def jvp(primals, tangents, **params):
    if all(type(t) is ad.Zero for t in tangents):
      outs = prim.bind(*primals, **params)
      return outs, [_zero_tangent(o) for o in outs]
    tangents = [_inst(t) if dtypes.is_inexact(get_aval(p).dtype) else t
                for p, t in zip(primals, tangents, strict=True)]
    outs, touts = ad.jvp_flat(lambda *xs: list(lax_fn(*xs, **params)), list(primals), tangents)
    outs = prim.bind(*primals, **params)
    return outs, [ad.Zero(ad.tangent_aval(get_aval(o))) if type(t) is ad.Zero else t
                  for o, t in zip(outs, touts, strict=True)]

  ad.primitive_jvps[prim] = jvp
  _front_batcher(prim)
  mlir.register_lowering(prim, mlir.lower_fun(lambda *xs, **p: list(lax_fn(*xs, **p)),
                                              multiple_results=True))
  inv.not_invertible(prim, reason)
  return prim


def _reflector(col, k, rows, dtype):
  """LAPACK's larfg on entries k.. of `col` (m,): (v, tau, beta) with v[k] = 1, v[:k] = 0, and
  (I - tau v v^H)^H col = beta e_k; tau = 0 (identity) when nothing is to be annihilated."""
  m = U.shape_of(col)[0]
  rdt = U.real_dtype(dtype)
  cplx = dtypes.is_complex(dtype)
  alpha = shapes.reshape(slicing.dynamic_slice(col, (k,), (1,)), ())
  tail = U.select(comparison.gt(rows, k), U.full((m,), 0, dtype), col)
  xnorm2 = reduce_sum(U.abs_sq(tail), (0,))
  a_re = unary.real(alpha) if cplx else alpha
  a_im2 = unary.square(unary.imag(alpha)) if cplx else U.const(0, rdt)
  skip = binary.bitwise_and(comparison.eq(xnorm2, U.const(0, rdt)),
                            comparison.eq(a_im2, U.const(0, rdt)))
  norm = unary.sqrt(binary.add(binary.add(unary.square(a_re), a_im2), xnorm2))
  sign = U.select(comparison.lt(a_re, U.const(0, rdt)), U.const(1, rdt), U.const(-1, rdt))
  beta = U.to_dtype(binary.mul(unary.neg(sign), norm), dtype)
  tau = binary.div(binary.sub(beta, alpha), U.select(skip, beta, U.const(1, dtype)))
  tau = U.select(skip, tau, U.const(0, dtype))
  denom = U.select(skip, binary.sub(alpha, beta), U.const(1, dtype))
  v = U.select(comparison.eq(rows, k), binary.div(tail, denom), U.full((m,), 1, dtype))
  beta = U.select(skip, beta, alpha)
  return v, tau, beta


def _outer(x, y):
  m, n = U.shape_of(x)[0], U.shape_of(y)[0]
  return binary.mul(shapes.broadcast_in_dim(x, (m, n), (0,)), shapes.broadcast_in_dim(y, (m, n), (1,)))


def _vec_mat(v, a):
  """v^H a for v (m,), a (m, n): (n,)."""
  return shapes.reshape(U.matmul(shapes.reshape(U.conj(v), (1, U.shape_of(v)[0])), a),
                        (U.shape_of(a)[1],))


def _mat_vec(a, v):
  return shapes.reshape(U.matmul(a, shapes.reshape(v, (U.shape_of(v)[0], 1))), (U.shape_of(a)[0],))


# --- householder_product and ormqr --------------------------------------------------------------
def householder_product(a, taus):
  """The first n columns of Q = H_0 ... H_{k-1}, H_i = I - taus[i] v_i v_i^H, with v_i[i] = 1
  and v_i[i+1:] = a[i+1:, i] (LAPACK's orgqr/ungqr).

  Args:
    a: (..., m, n) reflectors below the diagonal, m >= n.
    taus: (..., k), k <= n.

  Returns:
    (..., m, n).

  Example:
    >>> v = jnp.array([[1.], [1.]])  # one reflector I - tau v v^T (v's leading 1 implicit)
    >>> lax.linalg.householder_product(v, jnp.array([1.]))
    Array([[ 0.],
           [-1.]], dtype=float32)
  """
  return householder_product_p.bind(a, taus)[0]


def _householder_product_abstract_eval(a, taus):
  _check_matrix("householder_product", a, square=False)
  m, n = a.shape[-2:]
  if taus.ndim != a.ndim - 1 or taus.shape[:-1] != a.shape[:-2] or taus.shape[-1] > n or m < n:
    raise ValueError(f"householder_product requires a (..., m, n) with m >= n and taus "
                     f"(..., k) with k <= n and the same batch shape, got {a.shape} and "
                     f"{taus.shape}")
  if taus.dtype != a.dtype:
    raise TypeError(f"householder_product requires a and taus of one dtype, got "
                    f"{a.dtype.name} and {taus.dtype.name}")
  return [ShapedArray(a.shape, a.dtype)]


def _householder_q_one(a, taus):
  m, n = U.shape_of(a)
  k = U.shape_of(taus)[0]
  dtype = U.dtype_of(a)
  rows = shapes.iota(np.int32, m)

  def body(step, q):
    i = binary.sub(np.int32(k - 1), step)
    col = shapes.reshape(slicing.dynamic_slice(a, (np.int32(0), i), (m, 1)), (m,))
    v = U.select(comparison.gt(rows, i), U.full((m,), 0, dtype), col)
    v = U.select(comparison.eq(rows, i), v, U.full((m,), 1, dtype))
    tau = shapes.reshape(slicing.dynamic_slice(taus, (i,), (1,)), ())
    return binary.sub(q, binary.mul(tau, _outer(v, _vec_mat(v, q))))

  return _fori(k, body, U.eye(m, n, dtype))


def _householder_product_lax(a, taus):
  return [U.map_batch(_householder_q_one, [a, taus], get_aval(a).ndim - 2,
                      multiple_results=False)]


householder_product_p = _algorithmic_primitive(
    "householder_product", _householder_product_lax, _householder_product_abstract_eval,
    "many-to-one: only the reflectors below the diagonal are read")


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
  """Q c, Q^H c (left) or c Q, c Q^H with Q = H_0 ... H_{k-1} from (a, taus) as in
  householder_product (full m x m; LAPACK's ormqr/unmqr).

  Example:
    >>> v = jnp.array([[1.], [1.]])  # Q = I - v v^T swaps and negates the two rows
    >>> lax.linalg.ormqr(v, jnp.array([1.]), jnp.array([[1., 2.], [3., 4.]]), left=True,
    ...                  transpose=False)
    Array([[-3., -4.],
           [-1., -2.]], dtype=float32)
  """
  return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))[0]


def _ormqr_abstract_eval(a, taus, c, *, left, transpose):
  _check_matrix("ormqr", a, square=False)
  m = a.shape[-2]
  if c.ndim != a.ndim or c.shape[:-2] != a.shape[:-2] or (c.shape[-2] if left else c.shape[-1]) != m:
    raise ValueError(f"ormqr: c's shape {c.shape} does not fit a's {a.shape} (left={left})")
  if not (a.dtype == taus.dtype == c.dtype):
    raise TypeError(f"ormqr requires one dtype, got {a.dtype.name}, {taus.dtype.name} and "
                    f"{c.dtype.name}")
  return [ShapedArray(c.shape, c.dtype)]


def _ormqr_lax(a, taus, c, *, left, transpose):
  aval = get_aval(a)
  m, n = aval.shape[-2:]
  nd = aval.ndim
  if n < m:
    a = shapes.pad(a, U.const(0, aval.dtype), tuple([(0, 0, 0)] * (nd - 1) + [(0, m - n, 0)]))
  elif n > m:
    a = slicing.slice(a, (0,) * nd, aval.shape[:-1] + (m,))
  q = _householder_product_lax(a, taus)[0]
  if transpose:
    q = U.adjoint(q)
  return [U.matmul(q, c) if left else U.matmul(c, q)]


ormqr_p = _algorithmic_primitive("ormqr", _ormqr_lax, _ormqr_abstract_eval,
                                 "many-to-one in the reflectors (only their lower part is read)")


# --- hessenberg and tridiagonal ------------------------------------------------------------------
def _hessenberg_one(a):
  """Householder reduction of one (n, n) matrix to upper Hessenberg form, packed as LAPACK's
  gehrd: (a with H on and above the first subdiagonal and the reflectors below it, taus)."""
  n = U.shape_of(a)[0]
  dtype = U.dtype_of(a)
  rows = shapes.iota(np.int32, n)
  cols = shapes.iota(np.int32, n)

  def body(i, carry):
    a, taus = carry
    col = shapes.reshape(slicing.dynamic_slice(a, (np.int32(0), i), (n, 1)), (n,))
    k = binary.add(i, np.int32(1))
    v, tau, beta = _reflector(col, k, rows, dtype)
    # left update on the columns after i only (column i keeps the stored reflector)
    vha = U.select(comparison.gt(cols, i), U.full((n,), 0, dtype), _vec_mat(v, a))
    a = binary.sub(a, binary.mul(U.conj(tau), _outer(v, vha)))
    a = binary.sub(a, binary.mul(tau, _outer(_mat_vec(a, v), U.conj(v))))
    stored = U.select(comparison.gt(rows, k), col, v)
    stored = U.select(comparison.eq(rows, k), stored, shapes.broadcast_in_dim(beta, (n,), ()))
    newcol = U.select(comparison.ge(rows, k), col, stored)
    a = slicing.dynamic_update_slice(a, shapes.reshape(newcol, (n, 1)), (np.int32(0), i))
    taus = slicing.dynamic_update_slice(taus, shapes.reshape(tau, (1,)), (i,))
    return a, taus

  steps = max(n - 1, 0)
  return _fori(steps, body, (a, U.full((steps,), 0, dtype)))


def hessenberg(a):
  """Reduction to upper Hessenberg form, a = Q H Q^H, packed as LAPACK's gehrd.

  Args:
    a: (..., n, n).

  Returns:
    (packed, taus): H on and above the first subdiagonal, the reflectors of Q below it;
    taus (..., n - 1) (Q = householder_product of the reflectors shifted down one row).

  Example:
    >>> a = jnp.array([[1., 2., 3.], [4., 5., 6.], [7., 8., 10.]])
    >>> packed, taus = lax.linalg.hessenberg(a)
    >>> packed.shape, taus.shape
    ((3, 3), (2,))
  """
  packed, taus = hessenberg_p.bind(a)
  return [packed, taus]  # a list, as JAX's


def _hessenberg_abstract_eval(a):
  _check_matrix("hessenberg", a)
  n = a.shape[-1]
  return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (max(n - 1, 0),), a.dtype)]


def _hessenberg_lax(a):
  return U.map_batch(_hessenberg_one, [a], get_aval(a).ndim - 2)


hessenberg_p = _algorithmic_primitive("hessenberg", _hessenberg_lax, _hessenberg_abstract_eval,
                                      "not implemented: rebuilding a needs Q from the packed "
                                      "reflectors")


# --- geqrf ---------------------------------------------------------------------------------------
def _geqrf_one(a):
  """Householder QR of one (m, n) matrix packed as LAPACK's geqrf: (R on and above the diagonal
  with the reflectors' tails below it, taus (min(m, n),)); Q = H_0 H_1 ... with
  H_i = I - tau_i v_i v_i^H."""
  m, n = U.shape_of(a)
  dtype = U.dtype_of(a)
  rows = shapes.iota(np.int32, m)
  cols = shapes.iota(np.int32, n)

  def body(i, carry):
    a, taus = carry
    col = shapes.reshape(slicing.dynamic_slice(a, (np.int32(0), i), (m, 1)), (m,))
    v, tau, beta = _reflector(col, i, rows, dtype)
    # H_i^H from the left on the columns after i (column i keeps the stored reflector)
    vha = U.select(comparison.gt(cols, i), U.full((n,), 0, dtype), _vec_mat(v, a))
    a = binary.sub(a, binary.mul(U.conj(tau), _outer(v, vha)))
    stored = U.select(comparison.gt(rows, i), col, v)
    stored = U.select(comparison.eq(rows, i), stored, shapes.broadcast_in_dim(beta, (m,), ()))
    newcol = U.select(comparison.ge(rows, i), col, stored)
    a = slicing.dynamic_update_slice(a, shapes.reshape(newcol, (m, 1)), (np.int32(0), i))
    taus = slicing.dynamic_update_slice(taus, shapes.reshape(tau, (1,)), (i,))
    return a, taus

  steps = min(m, n)
  return _fori(steps, body, (a, U.full((steps,), 0, dtype)))


def geqrf(a):
  """QR decomposition packed as LAPACK's geqrf (what `jnp.linalg.qr(mode="raw")` returns,
  transposed): (a with R on and above the diagonal and the Householder reflectors below it,
  taus (..., min(m, n))). `jnp.linalg.qr(mode="raw")` returns it transposed.

  Example:
    >>> h, taus = jnp.linalg.qr(jnp.array([[3., 1.], [4., 2.]]), mode="raw")
    >>> h[:, 0]
    Array([-5. , -2.2], dtype=float32)
  """
  return geqrf_p.bind(a)


def _geqrf_abstract_eval(a):
  _check_matrix("geqrf", a, square=False)
  return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (min(a.shape[-2:]),),
                                                     a.dtype)]


def _geqrf_lax(a):
  aval = get_aval(a)
  if aval.size == 0:
    return _empty_factors(_geqrf_abstract_eval(aval), ("zeros", "zeros"))
  return U.map_batch(_geqrf_one, [a], aval.ndim - 2)


geqrf_p = _algorithmic_primitive("geqrf", _geqrf_lax, _geqrf_abstract_eval,
                                 "not implemented: rebuilding a needs Q from the packed "
                                 "reflectors")


def tridiagonal(a, *, lower: bool = True):
  """Reduction of Hermitian matrices to real symmetric tridiagonal form, a = Q T Q^H, packed
  as LAPACK's sytrd/hetrd.

  Args:
    a: (..., n, n); its lower (else upper) triangle is read.
    lower: which triangle holds the input and receives the reflectors.

  Returns:
    (arr, d, e, taus): arr with the reflectors in the chosen triangle (the other one as given),
    the diagonal d (..., n), the off-diagonal e (..., n - 1), and taus (..., n - 1).

  Example:
    >>> a = jnp.array([[4., 1., 2.], [1., 3., 0.], [2., 0., 1.]])
    >>> arr, d, e, taus = lax.linalg.tridiagonal(a)
    >>> d.shape, e.shape, taus.shape
    ((3,), (2,), (2,))
    >>> jnp.allclose(jnp.sort(jnp.linalg.eigvalsh(jnp.diag(d) + jnp.diag(e, 1) + jnp.diag(e, -1))),
    ...              jnp.linalg.eigvalsh(a), atol=1e-4)
    Array(True, dtype=bool)
  """
  arr, d, e, taus = tridiagonal_p.bind(a, lower=bool(lower))
  return [arr, d, e, taus]  # a list, as JAX's


def _tridiagonal_abstract_eval(a, *, lower):
  _check_matrix("tridiagonal", a)
  batch, n = a.shape[:-2], a.shape[-1]
  rdt = U.real_dtype(a.dtype)
  return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (n,), rdt),
          ShapedArray(batch + (max(n - 1, 0),), rdt),
          ShapedArray(batch + (max(n - 1, 0),), a.dtype)]


def _tridiagonal_lower_one(a):
  n = U.shape_of(a)[0]
  h = _hermitian_from_triangle(a, True)
  packed, taus = _hessenberg_one(h)
  d = U.diag_part(packed)
  e = U.diag_part(slicing.slice(packed, (1, 0), (n, n))) if n > 1 else U.full((0,), 0, U.dtype_of(a))
  if dtypes.is_complex(U.dtype_of(a)):
    d, e = unary.real(d), unary.real(e)
  arr = U.select(U.tri_mask((n, n), 0, True), a, packed)
  return arr, d, e, taus


def _tridiagonal_lax(a, *, lower):
  nd = get_aval(a).ndim
  if lower:
    return U.map_batch(_tridiagonal_lower_one, [a], nd - 2)
  # the upper reduction is the lower one of the matrix with rows and columns reversed
  rev = lambda x, dims: shapes.rev(x, dims)
  arr, d, e, taus = U.map_batch(_tridiagonal_lower_one, [rev(a, (nd - 2, nd - 1))], nd - 2)
  return [rev(arr, (nd - 2, nd - 1)), rev(d, (nd - 2,)), rev(e, (nd - 2,)), rev(taus, (nd - 2,))]


tridiagonal_p = _algorithmic_primitive("tridiagonal", _tridiagonal_lax,
                                       _tridiagonal_abstract_eval,
                                       "not implemented: rebuilding a needs Q from the packed "
                                       "reflectors")


# --- cholesky_update -----------------------------------------------------------------------------
def cholesky_update(r_matrix, w_vector):
  """The upper Cholesky factor R' of R^T R + w w^T, given the upper factor R (a rank-one
  update by plane rotations).

  Args:
    r_matrix: (n, n) upper triangular.
    w_vector: (n,).

  Returns:
    (n, n) upper triangular.

  Example:
    >>> r = jnp.array([[2., 1.], [0., 1.]])  # a = r^T r
    >>> w = jnp.array([1., 1.])
    >>> r2 = lax.linalg.cholesky_update(r, w)  # the factor of a + w w^T
    >>> jnp.allclose(r2.T @ r2, r.T @ r + jnp.outer(w, w), atol=1e-5)
    Array(True, dtype=bool)
  """
  return cholesky_update_p.bind(r_matrix, w_vector)[0]


def _cholesky_update_abstract_eval(r, w):
  _check_matrix("cholesky_update", r, allow_half=True)
  if w.shape != r.shape[:-1] or w.dtype != r.dtype or dtypes.is_complex(r.dtype):
    raise TypeError(f"cholesky_update requires a real (n, n) r and (n,) w of one dtype, got "
                    f"{r.dtype.name}{list(r.shape)} and {w.dtype.name}{list(w.shape)}")
  return [ShapedArray(r.shape, r.dtype)]


def _cholesky_update_one(r, w):
  n = U.shape_of(r)[0]
  dtype = U.dtype_of(r)
  cols = shapes.iota(np.int32, n)

  def body(k, carry):
    r, w = carry
    row = shapes.reshape(slicing.dynamic_slice(r, (k, np.int32(0)), (1, n)), (n,))
    rkk = shapes.reshape(slicing.dynamic_slice(row, (k,), (1,)), ())
    wk = shapes.reshape(slicing.dynamic_slice(w, (k,), (1,)), ())
    rad = unary.sqrt(binary.add(unary.square(rkk), unary.square(wk)))
    c = binary.div(rad, rkk)
    s = binary.div(wk, rkk)
    after = comparison.gt(cols, k)
    new_row = binary.div(binary.add(row, binary.mul(s, w)), c)
    new_row = U.select(after, U.select(comparison.eq(cols, k), row, shapes.broadcast_in_dim(
        rad, (n,), ())), new_row)
    new_w = U.select(after, w, binary.sub(binary.mul(c, w), binary.mul(s, new_row)))
    r = slicing.dynamic_update_slice(r, shapes.reshape(new_row, (1, n)), (k, np.int32(0)))
    return r, new_w

  r, _ = _fori(n, body, (r, w))
  return r


def _cholesky_update_lax(r, w):
  return [U.map_batch(_cholesky_update_one, [r, w], get_aval(r).ndim - 2,
                      multiple_results=False)]


def _cholesky_update_numpy(r, w):
  def one(r, w):
    r, w = np.array(r), np.array(w)
    n = r.shape[-1]
    with np.errstate(all="ignore"):
      for k in range(n):
        rad = np.hypot(r[k, k], w[k])
        c, s = rad / r[k, k], w[k] / r[k, k]
        r[k, k] = rad
        r[k, k + 1:] = (r[k, k + 1:] + s * w[k + 1:]) / c
        w[k + 1:] = c * w[k + 1:] - s * r[k, k + 1:]
    return r
  return [U.np_batched(one, [r, w], r.ndim - 2, 1)]


cholesky_update_p = _algorithmic_primitive(
    "cholesky_update", _cholesky_update_lax, _cholesky_update_abstract_eval,
    "many-to-one: R^T R + w w^T does not determine w", numpy_fn=_cholesky_update_numpy)


# --- qdwh ----------------------------------------------------------------------------------------
def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None, eps=None,
         dynamic_shape=None):
  """Polar decomposition x = U H by the QR-based dynamically weighted Halley iteration
  (Nakatsukasa, Bai and Gygi), for m >= n.

  Args:
    x: (m, n) with m >= n.
    is_hermitian: x is Hermitian (accepted; the iteration is the same).
    max_iterations: iteration cap (default 10).
    eps: the convergence tolerance's unit (default: the dtype's epsilon).
    dynamic_shape: not supported (must be None).

  Returns:
    (u, h, num_iters, is_converged).

  Example:
    >>> u, h, iters, ok = lax.linalg.qdwh(jnp.array([[2., 0.], [0., -3.]]))
    >>> u
    Array([[ 1.,  0.],
           [ 0., -1.]], dtype=float32)
    >>> bool(ok)
    True
  """
  del is_hermitian
  if dynamic_shape is not None:
    raise NotImplementedError("qdwh: dynamic_shape is not supported")
  aval = get_aval(x)
  if aval.ndim != 2 or aval.shape[0] < aval.shape[1]:
    raise ValueError(f"qdwh requires a matrix with m >= n, got shape {aval.shape}")
  m, n = aval.shape
  dtype = aval.dtype
  rdt = U.real_dtype(dtype)
  eps = float(dtypes.finfo(rdt).eps) if eps is None else float(eps)
  max_iterations = 10 if max_iterations is None else int(max_iterations)
  one_norm = reduce_max(reduce_sum(unary.abs(x), (0,)), (0,))
  inf_norm = reduce_max(reduce_sum(unary.abs(x), (1,)), (0,))
  alpha = unary.sqrt(binary.mul(one_norm, inf_norm))
  alpha = U.select(comparison.eq(alpha, U.const(0, rdt)), alpha, U.const(1, rdt))
  u = binary.div(x, U.to_dtype(alpha, dtype))
  tol_l = U.const(eps, rdt)
  tol_norm = U.const(float(np.cbrt(4 * eps)), rdt)
  eye_n = U.eye(n, n, dtype)

  def qr_step(u, a, b, c):
    stacked = shapes.concatenate([binary.mul(U.to_dtype(unary.sqrt(c), dtype), u), eye_n], 0)
    q, _ = qr(stacked, full_matrices=False)
    q1, q2 = slicing.slice(q, (0, 0), (m, n)), slicing.slice(q, (m, 0), (m + n, n))
    e = binary.div(b, c)
    coef = U.to_dtype(binary.div(binary.sub(a, e), unary.sqrt(c)), dtype)
    return binary.add(binary.mul(U.to_dtype(e, dtype), u),
                      binary.mul(coef, U.matmul(q1, U.adjoint(q2))))

  def body(carry):
    u, l, k, _ = carry
    l2 = unary.square(l)
    dd = unary.cbrt(binary.div(binary.mul(U.const(4, rdt), binary.sub(U.const(1, rdt), l2)),
                               unary.square(l2)))
    sqd = unary.sqrt(binary.add(U.const(1, rdt), dd))
    a = binary.add(sqd, binary.mul(U.const(0.5, rdt), unary.sqrt(binary.add(
        binary.sub(U.const(8, rdt), binary.mul(U.const(4, rdt), dd)),
        binary.div(binary.mul(U.const(8, rdt), binary.sub(U.const(2, rdt), l2)),
                   binary.mul(l2, sqd))))))
    b = binary.div(unary.square(binary.sub(a, U.const(1, rdt))), U.const(4, rdt))
    c = binary.sub(binary.add(a, b), U.const(1, rdt))
    new_u = qr_step(u, a, b, c)
    new_l = binary.div(binary.mul(l, binary.add(a, binary.mul(b, l2))),
                       binary.add(U.const(1, rdt), binary.mul(c, l2)))
    new_l = U.select(comparison.gt(new_l, U.const(1, rdt)), new_l, U.const(1, rdt))
    change = unary.sqrt(reduce_sum(U.abs_sq(binary.sub(new_u, u)), (0, 1)))
    return new_u, new_l, binary.add(k, np.int32(1)), change

  def cond(carry):
    _, l, k, change = carry
    going = binary.bitwise_or(comparison.gt(binary.sub(U.const(1, rdt), l), tol_l),
                              comparison.gt(change, tol_norm))
    return binary.bitwise_and(going, comparison.lt(k, np.int32(max_iterations)))

  init = (u, U.const(eps, rdt), np.int32(0),
          U.const(np.inf, rdt))
  u, l, k, change = while_loop(cond, body, init)
  h = U.matmul(U.adjoint(u), x)
  h = binary.div(binary.add(h, U.adjoint(h)), U.const(2, dtype))
  converged = comparison.le(change, tol_norm)
  return u, h, k, converged
