"""Spherical harmonics for revax.scipy.special: sph_harm_y, jax 0.10.2's algorithm step by step.

jax tabulates the normalized associated Legendre functions Pbar_l^m(cos theta) for every order
and degree up to n_max at every angle (`_gen_associated_legendre`: the diagonal by a cumulative
product of -sqrt(1 + 1/(2i)) sin(theta), sin(theta) as sqrt(1 - cos^2); the first off-diagonal
by sqrt(2m + 3) cos(theta); the rest by a fori_loop of the three-term recurrence whose
coefficients sit on the planes l = m + k of two masks), then reads the table at
[|m|, n, arange(len(n))] with indices clipped: the k-th degree/order pair meets the k-th angle's
column, so n and m select one column per element (a single n with many angles reads the first
angle's column: jax's answer, kept). The phase is e^(i|m|phi), conjugated times (-1)^|m| for
m < 0. jax's `_sph_harm` is jitted; here it runs op by op eagerly (XLA takes seconds to compile
the table's loop for each shape, jax too; the op-by-op values agree with jax's, NaN and inf
included, on tests/scipy/test_special.py's grids).
"""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.core.trace import ConcretizationTypeError, Tracer
from revax._src.lax.control_flow import fori_loop
from revax._src.numpy import contractions, creation, dtype_api, index_tricks, matrices, numeric
from revax._src.numpy import rearrange, reductions, shape_ops, type_predicates, ufuncs

__all__ = ["sph_harm_y"]


def _recurrence_masks(l_max: int, dtype):
  """jax's `_gen_recurrence_mask` (normalized): the coefficients d0, d1 of
  Pbar_l^m = d0 x Pbar_{l-1}^m - d1 Pbar_{l-2}^m on the planes i + j - k = 0."""
  m_mat, l_mat = numeric.meshgrid(creation.arange(l_max + 1, dtype=dtype),
                                  creation.arange(l_max + 1, dtype=dtype), indexing="ij")
  c0 = l_mat * l_mat
  c1 = m_mat * m_mat
  c2 = 2.0 * l_mat
  c3 = (l_mat - 1.0) * (l_mat - 1.0)
  d0 = ufuncs.sqrt((4.0 * c0 - 1.0) / (c0 - c1))
  d1 = ufuncs.sqrt(((c2 + 1.0) * (c3 - c1)) / ((c2 - 3.0) * (c0 - c1)))
  d0_idx = matrices.triu_indices(l_max + 1, 1)
  d1_idx = matrices.triu_indices(l_max + 1, 2)
  d_zeros = creation.zeros((l_max + 1, l_max + 1), dtype=dtype)
  d0_mask = d_zeros.at[d0_idx].set(d0[d0_idx])
  d1_mask = d_zeros.at[d1_idx].set(d1[d1_idx])
  i, j, k = index_tricks.ogrid[:l_max + 1, :l_max + 1, :l_max + 1]
  mask = shape_ops.astype(i + j - k == 0, dtype)
  return (contractions.einsum("jk,ijk->ijk", d0_mask, mask),
          contractions.einsum("jk,ijk->ijk", d1_mask, mask))


def _associated_legendre(l_max: int, x):
  """jax's `_gen_associated_legendre(l_max, x, is_normalized=True)`: shape (order, degree,
  len(x))."""
  p = creation.zeros((l_max + 1, l_max + 1, x.shape[0]), dtype=x.dtype)
  a_idx = creation.arange(1, l_max + 1, dtype=x.dtype)
  b_idx = creation.arange(l_max, dtype=x.dtype)
  initial_value = 0.5 / ufuncs.sqrt(np.pi)
  f_a = reductions.cumprod(-1 * ufuncs.sqrt(1.0 + 0.5 / a_idx))
  f_b = ufuncs.sqrt(2.0 * b_idx + 3.0)
  p = p.at[(0, 0)].set(initial_value)
  y = reductions.cumprod(shape_ops.broadcast_to(ufuncs.sqrt(1.0 - x * x), (l_max, x.shape[0])),
                         axis=0)
  p_diag = initial_value * contractions.einsum("i,ij->ij", f_a, y)
  diag_indices = matrices.diag_indices(l_max + 1)
  p = p.at[(diag_indices[0][1:], diag_indices[1][1:])].set(p_diag)
  p_offdiag = contractions.einsum("ij,ij->ij", contractions.einsum("i,j->ij", f_b, x),
                                  p[matrices.diag_indices(l_max)])
  offdiag_indices = (diag_indices[0][:l_max], diag_indices[1][:l_max] + 1)
  p = p.at[offdiag_indices].set(p_offdiag)
  d0_mask_3d, d1_mask_3d = _recurrence_masks(l_max, x.dtype)

  def body_fun(i, p_val):
    coeff_0 = d0_mask_3d[i]
    coeff_1 = d1_mask_3d[i]
    h = (contractions.einsum("ij,ijk->ijk", coeff_0, contractions.einsum(
        "ijk,k->ijk", rearrange.roll(p_val, shift=1, axis=1), x))
         - contractions.einsum("ij,ijk->ijk", coeff_1, rearrange.roll(p_val, shift=2, axis=1)))
    return p_val + h

  p = shape_ops.astype(p, dtype_api.result_type(p, x, d0_mask_3d))
  if l_max > 1:
    p = fori_loop(2, l_max + 1, body_fun, p)
  return p


def _sph_harm(n, m, theta, phi, n_max: int):
  legendre = _associated_legendre(n_max, ufuncs.cos(theta))
  legendre_val = legendre.at[ufuncs.abs(m), n, creation.arange(len(n))].get(mode="clip")
  angle = ufuncs.abs(m) * phi
  vandermonde = lax.complex(ufuncs.cos(angle), ufuncs.sin(angle))
  harmonics = lax.complex(legendre_val * ufuncs.real(vandermonde),
                          legendre_val * ufuncs.imag(vandermonde))
  return ufuncs.where(m < 0, (-1.0) ** ufuncs.abs(m) * ufuncs.conjugate(harmonics), harmonics)


def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
  """The spherical harmonic Y_n^m(theta, phi) (as scipy.special.sph_harm_y), jax's algorithm.

  Args:
    n: degrees, a 1-D integer array (n >= 0; values above n_max read degree n_max).
    m: orders, integers with |m| <= n (other values are undefined, as in jax).
    theta: polar angles, 1-D (a scalar is one angle); the k-th degree/order pair is evaluated
      at the k-th angle, as jax's table read.
    phi: azimuths (broadcast with the rest).
    diff_n: unsupported (as in JAX).
    n_max: the largest degree, static; required when n is traced, else max(n).

  Returns:
    A complex array (complex64 for float32 angles).

  Example:
    >>> y = revax.scipy.special.sph_harm_y(jnp.array([1]), jnp.array([0]), jnp.array([0.0]),
    ...                                    jnp.array([0.0]))
    >>> print(f"{float(y.real[0]):.5f}")
    0.48860
  """
  if diff_n is not None:
    raise NotImplementedError(
        "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
  if type_predicates.isscalar(theta):
    theta = creation.array([theta])
  if n_max is None:
    n_max = np.max(n)  # (a traced n refuses the conversion, as jax's does)
  if isinstance(n_max, Tracer):
    raise ConcretizationTypeError(
        "The `n_max` argument of `jnp.scipy.special.sph_harm` must be statically specified to "
        "use `sph_harm` within JAX transformations.")
  return _sph_harm(n, m, theta, phi, n_max=int(n_max))
