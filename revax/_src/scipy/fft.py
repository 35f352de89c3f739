"""revax.scipy.fft: the discrete cosine transform (type 2) and its inverse, as jax.scipy.fft.

dct computes y_k = 2 sum_n x_n cos(pi k (2n + 1) / (2N)) along an axis with one complex FFT of
length N (Makhoul's method): the even-indexed samples followed by the odd-indexed ones reversed
are transformed, and each bin k is turned by exp(-i pi k / (2N)); the real part, doubled, is the
DCT. idct runs the same steps backwards (turn, inverse FFT, undo the reordering). norm="ortho"
scales bin 0 by sqrt(1 / (4N)) and the others by sqrt(1 / (2N)), making the transform orthogonal.
The N-dimensional transforms apply the one-dimensional ones axis by axis (the DCT is separable).
Complex inputs transform their real and imaginary parts separately. Only type 2 exists here, as
in JAX.
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.lax import shapes as lax_shapes
from revax._src.lax import slicing as lax_slicing
from revax._src.lax.binary import complex as lax_complex
from revax._src.lax.binary import mul
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.unary import imag, real
from revax._src.numpy import fft as jnp_fft
from revax._src.numpy.shape_ops import moveaxis
from revax._src.numpy.util import aval_of, as_array, canonicalize_axis, check_arraylike

__all__ = ["dct", "idct", "dctn", "idctn"]


def _check(func_name, x, type, norm):  # noqa: A002 (scipy's name)
  check_arraylike(f"revax.scipy.fft.{func_name}", x)
  if type != 2:
    raise NotImplementedError("Only DCT type 2 is implemented.")
  if norm is not None and norm not in ("backward", "ortho"):
    raise ValueError(f"revax.scipy.fft.{func_name}: norm={norm!r} is not implemented")
  return as_array(x)


def _resize_axis(x, n, axis):
  """Zero-pad or crop `x` to length n along `axis`."""
  shape = aval_of(x).shape
  if n is None or n == shape[axis]:
    return x
  n = operator.index(n)
  if n < shape[axis]:
    return lax_slicing.slice(x, (0,) * len(shape), shape[:axis] + (n,) + shape[axis + 1:])
  config = tuple((0, n - s if d == axis else 0, 0) for d, s in enumerate(shape))
  return lax_shapes.pad(x, np.zeros((), aval_of(x).dtype), config)


def _ortho_scale(size: int, dtype):
  scale = np.full((size,), np.sqrt(1 / (2 * size)), dtype)
  scale[0] = np.sqrt(1 / (4 * size))
  return scale


def _turn(size: int, dtype, sign: float):
  """exp(sign * i * pi * k / (2N)) for k = 0..N-1."""
  return np.exp(sign * 0.5j * np.pi * np.arange(size) / size).astype(dtype)


def _reorder(x):
  """[x0, x2, x4, ..., x5, x3, x1] along the last axis."""
  shape = aval_of(x).shape
  n = shape[-1]
  lead = (0,) * (len(shape) - 1)
  evens = lax_slicing.slice(x, lead + (0,), shape, (1,) * (len(shape) - 1) + (2,))
  if n < 2:
    return evens
  odds = lax_slicing.slice(x, lead + (1,), shape, (1,) * (len(shape) - 1) + (2,))
  return lax_shapes.concatenate([evens, lax_shapes.rev(odds, (len(shape) - 1,))], len(shape) - 1)


def _unreorder(v):
  """The inverse of `_reorder`: interleave the first ceil(N/2) values with the rest reversed."""
  shape = aval_of(v).shape
  n = shape[-1]
  half = (n + 1) // 2
  last = len(shape) - 1
  lead = (0,) * last
  evens = lax_slicing.slice(v, lead + (0,), shape[:-1] + (half,))
  odds = lax_shapes.rev(lax_slicing.slice(v, lead + (half,), shape), (last,))
  if n - half < half:  # odd n: one more even sample; pad the odds to pair them up
    odds = lax_shapes.pad(odds, np.zeros((), aval_of(v).dtype), ((0, 0, 0),) * last + ((0, 1, 0),))
  pairs = lax_shapes.concatenate([lax_shapes.reshape(evens, shape[:-1] + (half, 1)),
                                  lax_shapes.reshape(odds, shape[:-1] + (half, 1))], last + 1)
  flat = lax_shapes.reshape(pairs, shape[:-1] + (2 * half,))
  return lax_slicing.slice(flat, lead + (0,), shape) if 2 * half != n else flat


def _dct_last(x, norm):
  """DCT-II of real `x` along its last axis."""
  n = aval_of(x).shape[-1]
  spectrum = jnp_fft.fft(_reorder(x), axis=-1)
  cdtype = aval_of(spectrum).dtype
  out = real(mul(spectrum, _turn(n, cdtype, -1.0) * 2))
  if norm == "ortho":
    out = mul(out, _ortho_scale(n, aval_of(out).dtype))
  return out


def _idct_last(x, norm):
  """The inverse of `_dct_last` along the last axis."""
  n = aval_of(x).shape[-1]
  if not dtypes.is_inexact(aval_of(x).dtype):
    x = convert_element_type(x, dtypes.default_float_dtype())
  wide = aval_of(x).dtype == dtypes.float64
  rdtype = dtypes.float64 if wide else dtypes.float32  # the FFT's precision (f16 computes in f32)
  if norm == "ortho":
    scale = np.full((n,), np.sqrt(2.0 * n), rdtype)
    scale[0] = np.sqrt(float(n))
  else:
    scale = np.ones((n,), rdtype)
    scale[0] = 0.5
  turned = _turn(n, dtypes.complex128 if wide else dtypes.complex64, 1.0) * scale
  v = real(jnp_fft.ifft(mul(convert_element_type(x, turned.dtype), turned), axis=-1))
  return _unreorder(v)


def _along(fn, x, axis, norm):
  ndim = aval_of(x).ndim
  axis = canonicalize_axis(axis, ndim)
  x = moveaxis(x, axis, -1)
  return moveaxis(fn(x, norm), -1, axis)


def _split_complex(fn, x, *args):
  if dtypes.is_complex(aval_of(x).dtype):
    return lax_complex(fn(real(x), *args), fn(imag(x), *args))
  return fn(x, *args)


def dct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002 (scipy's name)
  """The discrete cosine transform (type 2) along `axis`, as scipy.fft.dct.

  Args:
    x: an array (complex arrays transform their real and imaginary parts).
    type: the DCT type; only 2 is implemented.
    n: the transform length: `x` is zero-padded or cropped to it along `axis`.
    axis: the axis to transform.
    norm: None/"backward" (no scaling) or "ortho" (orthonormal).

  Returns:
    A real array (complex for complex input) with `axis` of length n.

  Example:
    >>> import revax.scipy.fft
    >>> revax.scipy.fft.dct(jnp.array([1.0, 2.0, 3.0]))
    Array([12.       , -3.4641016,  0.       ], dtype=float32)
  """
  x = _check("dct", x, type, norm)
  return _split_complex(lambda v: _along(_dct_last, _resize_axis(v, n, _axis(v, axis)),
                                         axis, norm), x)


def idct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002 (scipy's name)
  """The inverse of `dct` (type 2) along `axis`, as scipy.fft.idct.

  Args:
    x, type, n, axis, norm: as for `dct`.

  Returns:
    A real array (complex for complex input).
  """
  x = _check("idct", x, type, norm)
  return _split_complex(lambda v: _along(_idct_last, _resize_axis(v, n, _axis(v, axis)),
                                         axis, norm), x)


def _axis(x, axis):
  return canonicalize_axis(axis, aval_of(x).ndim)


def _axes_and_sizes(x, s, axes):
  ndim = aval_of(x).ndim
  if s is not None:
    s = [operator.index(s)] if isinstance(s, (int, np.integer)) else list(s)
    if len(s) > ndim:
      raise ValueError(f"s must have at most x.ndim ({ndim}) elements, got {len(s)}")
  if axes is None:
    axes = tuple(range(ndim - len(s), ndim)) if s is not None else tuple(range(ndim))
  else:
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    axes = tuple(canonicalize_axis(a, ndim) for a in axes)
    if len(set(axes)) != len(axes):
      raise ValueError(f"repeated axes {axes}")
  sizes = [None] * len(axes) if s is None else s
  if len(sizes) != len(axes):
    raise ValueError(f"s and axes have different lengths: s={s}, axes={axes}")
  return axes, sizes


def _transform_n(one_d, name, x, type, s, axes, norm):  # noqa: A002
  x = _check(name, x, type, norm)
  axes, sizes = _axes_and_sizes(x, s, axes)

  def apply(v):
    for ax, size in zip(axes, sizes, strict=True):
      v = _along(one_d, _resize_axis(v, size, ax), ax, norm)
    return v
  return _split_complex(apply, x)


def dctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002 (scipy's name)
  """The N-dimensional discrete cosine transform (type 2) over `axes`, as scipy.fft.dctn.

  Args:
    x: an array. type: only 2. s: the transform lengths (pad or crop), one per axis.
    axes: the axes (default: all, or the last len(s)). norm: as for `dct`.

  Returns:
    The transform over every axis in `axes`.
  """
  return _transform_n(_dct_last, "dctn", x, type, s, axes, norm)


def idctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002 (scipy's name)
  """The inverse of `dctn` (arguments as `dctn`)."""
  return _transform_n(_idct_last, "idctn", x, type, s, axes, norm)
