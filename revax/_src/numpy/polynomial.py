"""Polynomials as 1-D coefficient arrays, highest power first: poly, polyadd, polysub, polymul,
polydiv, polyder, polyint, polyval and polyfit.

polyfit solves its least-squares problem with a Householder QR written in lax (columns scaled to
unit norm first, as NumPy's rcond handling does), so it needs no linear-algebra primitives; it
does not report the singular values (`full=True`), which would need an SVD.
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.trace import ConcretizationTypeError, Tracer
from revax._src.numpy import util
from revax._src.numpy.util import aval_of


def _len(a):
  return aval_of(a).shape[0]


def _check_1d(fun_name, *args):
  util.check_arraylike(fun_name, *args)
  for a in args:
    if aval_of(a).ndim != 1:
      raise ValueError(f"{fun_name}: polynomials must be 1-D coefficient arrays, got shape "
                       f"{aval_of(a).shape}")


def _trim_leading_zeros(a, fun_name):
  if isinstance(a, Tracer):
    raise ValueError(f"{fun_name} with trim_leading_zeros=True needs concrete coefficients")
  value = np.asarray(a)
  nz = np.flatnonzero(value)
  start = int(nz[0]) if nz.size else max(value.shape[0] - 1, 0)
  return util.as_array(a)[start:]


def poly(seq_of_zeros):
  """The coefficients of the monic polynomial with the given roots (1-D)."""
  from revax._src.numpy.numeric import convolve
  util.check_arraylike("poly", seq_of_zeros)
  (z,) = util.promote_args_inexact("poly", seq_of_zeros)
  z = util.as_array(z)
  if aval_of(z).ndim == 0:
    z = lax.reshape(z, (1,))
  if aval_of(z).ndim == 2 and aval_of(z).shape[0] == aval_of(z).shape[1] and aval_of(z).shape[0]:
    from revax._src.numpy.linalg import eigvals
    z = eigvals(z)
  if aval_of(z).ndim != 1:
    raise ValueError("input must be 1d or non-empty square 2d array.")
  if not _len(z):
    return util.full_of((), 1, aval_of(z).dtype)  # no roots: the constant 1, as NumPy's 0-d
  out = util.full_of((1,), 1, aval_of(z).dtype)
  for i in range(_len(z)):
    factor = lax.concatenate([util.full_of((1,), 1, aval_of(z).dtype),
                              lax.neg(lax.reshape(z[i], (1,)))], 0)
    out = convolve(out, factor)
  return out


def polyadd(a1, a2):
  """The sum of two polynomials: the shorter coefficient array added into the end of the
  longer along their first axis, as jax's (a 0-d one is an IndexError there).

  Example:
    >>> jnp.polyadd(jnp.array([1, 2, 3]), jnp.array([10, 20]))
    Array([ 1, 12, 23], dtype=int32)
  """
  util.check_arraylike("polyadd", a1, a2)
  a1, a2 = util.promote_dtypes(util.as_array(a1), util.as_array(a2))
  n1, n2 = aval_of(a1).shape[0], aval_of(a2).shape[0]  # (IndexError for a 0-d one, as jax)
  if not n1 or not n2:
    # an empty polynomial adds nothing, as in NumPy (jax fails broadcasting it into the other:
    # tests/edges/test_zero_size.py takes NumPy as the oracle there)
    return a2 if not n1 else a1
  if n2 <= n1:
    return a1.at[-n2:].add(a2)
  return a2.at[-n1:].add(a1)


def polysub(a1, a2):
  """The difference of two polynomials: polyadd(a1, -a2), as jax's."""
  from revax._src.numpy.ufuncs import negative
  util.check_arraylike("polysub", a1, a2)
  a1, a2 = util.promote_dtypes(util.as_array(a1), util.as_array(a2))
  return polyadd(a1, negative(a2))


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
  """The product of two polynomials (the convolution of their coefficients)."""
  from revax._src.numpy.numeric import convolve
  util.check_arraylike("polymul", a1, a2)
  a1, a2 = util.promote_args_inexact("polymul", a1, a2)
  a1, a2 = util.as_array(a1), util.as_array(a2)
  if not aval_of(a1).ndim or not aval_of(a2).ndim:  # (jax takes len() of each)
    raise TypeError("len() of unsized object")
  if trim_leading_zeros and aval_of(a1).ndim == 1 and aval_of(a2).ndim == 1:
    a1, a2 = _trim_leading_zeros(a1, "polymul"), _trim_leading_zeros(a2, "polymul")
  _check_1d("polymul", a1, a2)
  # an empty polynomial is the zero polynomial (as in NumPy and JAX)
  a1, a2 = (util.full_of((1,), 0, aval_of(a).dtype) if not _len(a) else a for a in (a1, a2))
  return convolve(a1, a2)


def polydiv(u, v, *, trim_leading_zeros: bool = False):
  """(quotient, remainder) of the polynomial division u / v (the remainder keeps u's length
  unless `trim_leading_zeros`)."""
  _check_1d("polydiv", u, v)
  u, v = util.promote_args_inexact("polydiv", u, v)
  u, v = util.as_array(u), util.as_array(v)
  m, n = _len(u) - 1, _len(v) - 1
  scale = lax.div(util.constant_like(v, 1), v[0])
  q = util.full_of((max(m - n + 1, 1),), 0, aval_of(u).dtype)
  r = u
  for k in range(0, m - n + 1):
    d = lax.mul(scale, r[k])
    q = q.at[k].set(d)
    r = r.at[k:k + n + 1].add(lax.neg(lax.mul(d, v)))
  if trim_leading_zeros:
    r = _trim_leading_zeros(r, "polydiv")
  return q, r


def polyder(p, m: int = 1):
  """The `m`-th derivative of a polynomial."""
  _check_1d("polyder", p)
  m = operator.index(m)
  if m < 0:
    raise ValueError("Order of derivative must be positive")
  (p,) = util.promote_args_inexact("polyder", p)
  p = util.as_array(p)
  for _ in range(m):
    k = _len(p)
    if k <= 1:
      return util.full_of((0,), 0, aval_of(p).dtype)
    powers = lax.convert_element_type(lax.rev(lax.iota(dtypes.int32, k - 1), (0,)),
                                      aval_of(p).dtype)
    p = lax.mul(p[:-1], lax.add(powers, util.constant_like(powers, 1)))
  return p


def polyint(p, m: int = 1, k=None):
  """The `m`-th antiderivative of a polynomial, with integration constants `k` (a scalar or m
  values, default 0)."""
  _check_1d("polyint", p)
  m = operator.index(m)
  if m < 0:
    raise ValueError(f"Order of integral must be positive (see polyder), got {m}")
  (p,) = util.promote_args_inexact("polyint", p)
  p = util.as_array(p)
  dt = aval_of(p).dtype
  if k is None:
    ks = util.full_of((m,), 0, dt)
  else:
    util.check_arraylike("polyint", k)
    ks = lax.convert_element_type(util.as_array(k), dt)
    if aval_of(ks).ndim == 0:
      ks = util.broadcast_to(ks, (m,))
    if _len(ks) != m:
      raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
  for i in range(m):
    n = _len(p)
    powers = lax.convert_element_type(lax.rev(lax.iota(dtypes.int32, n), (0,)), dt)
    p = lax.div(p, lax.add(powers, util.constant_like(powers, 1)))
    p = lax.concatenate([p, lax.reshape(ks[i], (1,))], 0)
  return p


def polyval(p, x, *, unroll: int = 16):
  """The polynomial `p` evaluated at `x` (Horner's rule in a scan over the coefficients).

  `p` holds the coefficients along its first axis, highest degree first; further axes of `p`
  broadcast against `x` (as in NumPy and JAX: `p` of shape (k, *s) gives the polynomials of
  each position of s)."""
  util.check_arraylike("polyval", p, x)
  if aval_of(p).ndim == 0:  # (jax fails indexing the shape here: the same type)
    raise IndexError("polyval: p must have an axis of coefficients, got a scalar")
  p, x = util.promote_dtypes(util.as_array(p), util.as_array(x))
  shape = util.broadcast_shapes(aval_of(p).shape[1:], aval_of(x).shape)
  x = util.broadcast_to(x, shape)

  from revax._src.numpy.ufuncs import add, multiply

  def step(y, c):  # (jnp's * and +, as jax's: bool polynomials are logical)
    return add(multiply(y, x), util.broadcast_to(c, shape)), None

  # jax starts from a strongly typed zero (full_like with a dtype): a strong result
  y, _ = lax.scan(step, util.full_of(shape, 0, aval_of(x).dtype), p, unroll=unroll)
  return y


def _householder_lstsq(A, b):
  """Least-squares solution of A c = b (A: (n, k) with n >= k, b: (n,) or (n, m)) and R."""
  n, k = aval_of(A).shape
  for j in range(k):
    col = A[j:, j]
    norm = lax.sqrt(lax.reduce_sum(lax.mul(col, col), (0,)))
    sign = lax.select_n(lax.lt(col[0], util.constant_like(col[0], 0)), util.constant_like(norm, 1),
                        util.constant_like(norm, -1))
    alpha = lax.mul(lax.neg(sign), norm)
    v = col.at[0].add(lax.neg(alpha))
    vnorm2 = lax.reduce_sum(lax.mul(v, v), (0,))
    safe = lax.select_n(lax.eq(vnorm2, util.constant_like(vnorm2, 0)), vnorm2,
                        util.constant_like(vnorm2, 1))
    # H = I - 2 v v^T / (v^T v), applied to the trailing rows of A and b
    sub_a = A[j:, :]
    proj = lax.div(lax.dot_general(v, sub_a, (((0,), (0,)), ((), ()))), safe)
    A = A.at[j:, :].add(lax.neg(lax.mul(util.constant_like(v, 2), lax.mul(
        lax.expand_dims(v, (1,)), lax.expand_dims(proj, (0,))))))
    sub_b = b[j:]
    pb = lax.div(lax.dot_general(v, sub_b, (((0,), (0,)), ((), ()))), safe)
    upd = lax.mul(v, pb) if aval_of(b).ndim == 1 else lax.mul(lax.expand_dims(v, (1,)),
                                                              lax.expand_dims(pb, (0,)))
    b = b.at[j:].add(lax.neg(lax.mul(util.constant_like(v, 2), upd)))
  R = A[:k, :]
  c = _back_substitute(R, b[:k])
  return c, R


def _back_substitute(R, y):
  k = aval_of(R).shape[0]
  c = lax.full_like(y, 0)
  for i in reversed(range(k)):
    acc = y[i]
    if i + 1 < k:
      acc = lax.sub(acc, lax.dot_general(R[i, i + 1:], c[i + 1:], (((0,), (0,)), ((), ()))))
    c = c.at[i].set(lax.div(acc, R[i, i]))
  return c


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov: bool = False):
  """The least-squares polynomial of degree `deg` through the points (x, y).

  Args:
    x: 1-D sample points.
    y: samples (1-D, or 2-D with one data set per column).
    deg: the degree (static).
    rcond: with `full`, the relative cutoff for small singular values (default: len(x) times
      the dtype's epsilon); otherwise unused (the solver is a QR factorization).
    full: also return the diagnostics of the least-squares solve (NumPy's and JAX's): the
      residuals, the rank and singular values of the scaled Vandermonde matrix, and rcond.
    w: optional weights applied to the residuals.
    cov: also return the covariance of the coefficients (scaled as NumPy does), or 'unscaled'.

  Returns:
    The coefficients (highest power first); with `full`, (coefficients, residuals, rank,
    singular values, rcond); else with `cov`, (coefficients, covariance).

  Example:
    >>> c, resids, rank, s, rcond = jnp.polyfit(jnp.arange(4.), jnp.array([1., 3., 5., 7.]), 1,
    ...                                         full=True)
    >>> jnp.round(c, 4), rank
    (Array([2., 1.], dtype=float32), Array(2, dtype=int32))
  """
  from revax._src.numpy.matrices import vander
  util.check_arraylike("polyfit", x, y)
  deg = operator.index(deg)
  if deg < 0:
    raise ValueError("expected deg >= 0")
  x, y = util.promote_args_inexact("polyfit", x, y)
  x, y = util.as_array(x), util.as_array(y)
  if aval_of(x).ndim != 1:
    raise TypeError("expected 1D vector for x")
  if _len(x) == 0:
    raise TypeError("expected non-empty vector for x")
  if aval_of(y).ndim not in (1, 2):
    raise TypeError("expected 1D or 2D array for y")
  if _len(x) != _len(y):
    raise TypeError("expected x and y to have same length")
  order = deg + 1
  if _len(x) < order:
    raise ValueError(f"polyfit: {order} coefficients need at least {order} points, got "
                     f"{_len(x)}")
  lhs = vander(x, order)
  rhs = y
  if w is not None:
    util.check_arraylike("polyfit", w)
    (w,) = util.promote_args_inexact("polyfit", w)
    w = util.as_array(w)
    if aval_of(w).ndim != 1 or _len(w) != _len(x):
      raise TypeError("expected a 1-d array for weights of the length of x")
    lhs = lax.mul(lhs, lax.expand_dims(w, (1,)))
    rhs = lax.mul(rhs, w if aval_of(rhs).ndim == 1 else lax.expand_dims(w, (1,)))
  if full:
    return _polyfit_full(x, lhs, rhs, rcond)
  scale = lax.sqrt(lax.reduce_sum(lax.mul(lhs, lhs), (0,)))
  scale = lax.select_n(lax.eq(scale, util.constant_like(scale, 0)), scale,
                       lax.full_like(scale, 1))
  lhs = lax.div(lhs, lax.expand_dims(scale, (0,)))
  c, R = _householder_lstsq(lhs, rhs)
  c = lax.div(c, scale if aval_of(c).ndim == 1 else lax.expand_dims(scale, (1,)))
  if not cov:
    return c
  # (lhs^T lhs)^-1 = R^-1 R^-T, then undo the column scaling
  eye = lax.convert_element_type(lax.eq(lax.broadcasted_iota(dtypes.int32, (order, order), 0),
                                        lax.broadcasted_iota(dtypes.int32, (order, order), 1)),
                                 aval_of(R).dtype)
  r_inv = _back_substitute(R, eye)
  vbase = lax.dot_general(r_inv, r_inv, (((1,), (1,)), ((), ())))
  vbase = lax.div(vbase, lax.mul(lax.expand_dims(scale, (1,)), lax.expand_dims(scale, (0,))))
  if cov == "unscaled":
    fac = util.constant_like(vbase, 1)
  else:
    n = _len(x)
    if n <= order:
      raise ValueError("the number of data points must exceed order to scale the covariance "
                       "matrix")
    resid = lax.sub(lax.dot_general(vander(x, order), c, (((1,), (0,)), ((), ()))), y)
    if w is not None:
      resid = lax.mul(resid, w if aval_of(resid).ndim == 1 else lax.expand_dims(w, (1,)))
    fac = lax.div(lax.reduce_sum(lax.mul(resid, resid), (0,)),
                  util.constant_like(vbase, n - order))
  if aval_of(y).ndim == 1:
    return c, lax.mul(vbase, fac)
  return c, lax.mul(lax.expand_dims(vbase, (2,)), lax.broadcast_in_dim(
      fac, (order, order, aval_of(fac).shape[0]), (2,)))


def _complex_of(dt):
  return dt if dtypes.is_complex(dt) else (dtypes.complex128 if dt == dtypes.float64
                                           else dtypes.complex64)


def _roots_no_zeros(p):
  """The eigenvalues of the companion matrix of `p` (p[0] != 0), in LAPACK ?geev's order, as
  JAX computes them."""
  from revax._src.numpy.linalg import eigvals
  n = _len(p)
  dt = aval_of(p).dtype
  if n < 2:
    return util.full_of((0,), 0, _complex_of(dt))
  m = n - 1
  rows = lax.broadcasted_iota(dtypes.int32, (m, m), 0)
  cols = lax.broadcasted_iota(dtypes.int32, (m, m), 1)
  sub = lax.convert_element_type(lax.eq(rows, lax.add(cols, util.full_of((m, m), 1, dtypes.int32))),
                                 dt)
  first = lax.neg(lax.div(p[1:], lax.broadcast_in_dim(p[0], (m,), ())))
  companion = lax.select_n(lax.eq(rows, util.full_of((m, m), 0, dtypes.int32)), sub,
                           lax.broadcast_in_dim(first, (m, m), (1,)))
  return eigvals(companion)


def _roots_with_zeros(p, num_leading_zeros):
  """strip_zeros=False: leading zeros rolled to the end, the zero roots sorted last and the
  roots the leading zeros leave undefined (the last num_leading_zeros) NaN, as JAX."""
  from revax._src.numpy.rearrange import roll
  n = _len(p)
  all_zero = lax.eq(num_leading_zeros, util.scalar_constant(n, aval_of(num_leading_zeros).dtype))
  p = lax.select_n(lax.broadcast_in_dim(all_zero, (n,), ()), p,
                   util.full_of((n,), 1, aval_of(p).dtype))
  found = _roots_no_zeros(roll(p, lax.neg(num_leading_zeros)))
  is_zero = lax.eq(found, util.constant_like(found, 0))
  found = lax.sort_key_val(is_zero, found)[1]
  m = n - 1  # the last num_leading_zeros roots are undefined: NaN, as JAX returns them
  undefined = lax.ge(lax.iota(dtypes.int32, m),
                     lax.sub(util.full_of((m,), m, dtypes.int32),
                             lax.broadcast_in_dim(num_leading_zeros, (m,), ())))
  return lax.select_n(undefined, found, lax.full_like(found, complex(np.nan, np.nan)))


def roots(p, *, strip_zeros: bool = True):
  """The roots of the polynomial with coefficients `p` (highest power first): the eigenvalues of
  its companion matrix (LAPACK ?geev's order), complex, as JAX computes them.

  Args:
    p: 1-D coefficients.
    strip_zeros: drop leading zeros (needs a concrete `p`); otherwise they are kept (and jit
      works), and the roots they leave undefined come out as NaN, last.

  Example:
    >>> jnp.roots(jnp.array([1., -3., 2.]))
    Array([2.+0.j, 1.+0.j], dtype=complex64)
  """
  util.check_arraylike("roots", p)
  (p,) = util.promote_args_inexact("roots", p)
  p = util.as_array(p)
  if aval_of(p).ndim == 0:
    p = lax.reshape(p, (1,))
  if aval_of(p).ndim != 1:
    raise ValueError("Input must be a rank-1 array.")
  n = _len(p)
  if n < 2:
    return util.full_of((0,), 0, _complex_of(aval_of(p).dtype))
  if strip_zeros:
    if isinstance(p, Tracer):
      raise ConcretizationTypeError(
          "The error occurred in the jnp.roots() function. To use this within a JIT-compiled "
          "context, pass strip_zeros=False, but be aware that leading zeros will result in some "
          "returned roots being set to NaN.")
    nz = np.flatnonzero(np.asarray(p))
    return _roots_no_zeros(p[int(nz[0]) if nz.size else n:])
  nonzero = lax.ne(p, util.constant_like(p, 0))
  leading = lax.argmax(nonzero, 0, dtypes.int32)
  any_nonzero = lax.reduce_or(nonzero, (0,))
  num_leading_zeros = lax.select_n(any_nonzero, util.scalar_constant(n, dtypes.int32), leading)
  return _roots_with_zeros(p, num_leading_zeros)


def _polyfit_full(x, lhs, rhs, rcond):
  """polyfit's full=True branch, as JAX computes it: lstsq (an SVD) of the column-scaled
  Vandermonde matrix."""
  from revax._src.numpy.linalg import lstsq
  if rcond is None:
    rcond = _len(x) * float(dtypes.finfo(aval_of(x).dtype).eps)
  rcond = float(rcond)
  scale = lax.sqrt(lax.reduce_sum(lax.mul(lhs, lhs), (0,)))
  lhs = lax.div(lhs, lax.expand_dims(scale, (0,)))
  c, resids, rank, s = lstsq(lhs, rhs, rcond)
  c = lax.div(c, scale if aval_of(c).ndim == 1 else lax.expand_dims(scale, (1,)))
  return c, resids, rank, s, util.as_array(rcond)
