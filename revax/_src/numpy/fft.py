"""revax.numpy.fft: discrete Fourier transforms, as jax.numpy.fft.

Every transform is the `fft` primitive of revax.lax applied to the innermost dimensions: the
requested axes are moved there first (and back after), `s=`/`n=` crop or zero-pad them, and
`norm=` scales the result ("backward": no scaling on the forward transform and 1/n on the
inverse; "ortho": 1/sqrt(n) both ways; "forward": 1/n on the forward transform). XLA transforms
at most three dimensions at a time; more are done in groups (as JAX does: two groups of two for
four dimensions, else groups of three from the innermost), complex transforms over the outer
groups. hfft/ihfft scale as JAX's do (by n and 1/n whatever `norm` is).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.lax import shapes as lax_shapes
from revax._src.lax import slicing as lax_slicing
from revax._src.lax.binary import div, mul
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.fft import FftType
from revax._src.lax.fft import fft as lax_fft
from revax._src.lax.unary import conj
from revax._src.numpy.shape_ops import moveaxis
from revax._src.numpy.util import aval_of, as_array, canonicalize_axis, check_arraylike

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn",
           "fft2", "ifft2", "rfft2", "irfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")


def _norm_factor(func_name: str, norm, lengths) -> float | None:
  """The scale `norm` puts on the transform over `lengths` (None: no scaling)."""
  if norm is None or norm == "backward":
    return None
  if norm not in _NORMS:
    raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
  size = float(math.prod(lengths))
  inverse = func_name.startswith("i")
  if norm == "ortho":
    return math.sqrt(size) if inverse else 1 / math.sqrt(size)
  return size if inverse else 1 / size


def _resize(x, lengths, fft_type):
  """Crop or zero-pad the innermost dims of `x` to `lengths` (IRFFT: the last to n // 2 + 1)."""
  shape = aval_of(x).shape
  k = len(lengths)
  target = list(lengths)
  if fft_type == FftType.IRFFT:
    target[-1] = target[-1] // 2 + 1
  target = shape[:len(shape) - k] + tuple(target)
  if any(t < n for t, n in zip(target, shape, strict=True)):
    x = lax_slicing.slice(x, (0,) * len(shape), tuple(min(t, n) for t, n in
                                                     zip(target, shape, strict=True)))
  if any(t > n for t, n in zip(target, shape, strict=True)):
    dtype = aval_of(x).dtype
    x = lax_shapes.pad(x, np.zeros((), dtype), tuple((0, max(t - n, 0), 0) for t, n in
                                                     zip(target, shape, strict=True)))
  return x


def _fft_innermost(x, fft_type: FftType, lengths):
  """The transform over the innermost len(lengths) dims, in groups of at most three dims."""
  k = len(lengths)
  if k <= 3:
    return lax_fft(x, fft_type, lengths)
  group = 2 if k == 4 else 3
  ndim = aval_of(x).ndim
  outer = tuple(range(ndim - k, ndim - group))  # the dims left after the innermost group
  inner_pos = tuple(range(ndim - k + group, ndim))
  if fft_type in (FftType.FFT, FftType.RFFT):
    x = lax_fft(x, fft_type, lengths[-group:])
    x = moveaxis(x, outer, inner_pos)
    x = _fft_innermost(x, FftType.FFT, lengths[:-group])
    return moveaxis(x, inner_pos, outer)
  x = moveaxis(x, outer, inner_pos)
  x = _fft_innermost(x, FftType.IFFT, lengths[:-group])
  x = moveaxis(x, inner_pos, outer)
  return lax_fft(x, fft_type, lengths[-group:])


def _fft_core(func_name: str, fft_type: FftType, a, s, axes, norm):
  full_name = f"revax.numpy.fft.{func_name}"
  check_arraylike(full_name, a)
  x = as_array(a)
  ndim = aval_of(x).ndim
  if s is not None:
    s = tuple(operator.index(n) for n in s)
    if any(n <= 0 for n in s):
      raise ValueError(f"Shape should be positive; {full_name} got s={s}.")
  if s is not None and axes is not None and len(s) != len(axes):
    raise ValueError(f"Shape and axes have different lengths: {full_name} got s={s} and "
                     f"axes={tuple(axes)}.")
  moved = axes is not None
  if axes is None:
    axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
  else:
    axes = tuple(canonicalize_axis(ax, ndim) for ax in axes)
  if len(set(axes)) != len(axes):
    raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
  if len(axes) > ndim:
    raise ValueError(f"{full_name}: {len(axes)} transform axes for an array of rank {ndim}")
  innermost = tuple(range(ndim - len(axes), ndim))
  if moved:
    x = moveaxis(x, axes, innermost)
  shape = aval_of(x).shape
  if s is not None:
    x = _resize(x, s, fft_type)
    lengths = s
  elif fft_type == FftType.IRFFT and innermost:
    lengths = tuple(shape[ax] for ax in innermost[:-1]) + (max(0, 2 * (shape[-1] - 1)),)
  else:
    lengths = tuple(shape[ax] for ax in innermost)
  out = _fft_innermost(x, fft_type, lengths)
  factor = _norm_factor(func_name, norm, lengths)
  if factor is not None:
    out = mul(out, np.asarray(factor, aval_of(out).dtype))
  if moved:
    out = moveaxis(out, innermost, axes)
  return out


def _fft_1d(func_name, fft_type, a, n, axis, norm):
  if isinstance(axis, (list, tuple)):
    raise ValueError(f"revax.numpy.fft.{func_name} does not support multiple axes. Please use "
                     f"revax.numpy.fft.{func_name}n. Got axis = {axis!r}.")
  return _fft_core(func_name, fft_type, a, None if n is None else [n],
                   None if axis is None else [axis], norm)


def _fft_2d(func_name, fft_type, a, s, axes, norm):
  if len(axes) != 2:
    raise ValueError(f"revax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
  return _fft_core(func_name, fft_type, a, s, axes, norm)


def fft(a, n=None, axis: int = -1, norm=None):
  """The one-dimensional discrete Fourier transform along `axis`.

  Args:
    a: an array (converted to complex).
    n: the transform length: `a` is cropped or zero-padded to it along `axis`.
    axis: the axis to transform.
    norm: "backward" (default, no scaling), "ortho" (1/sqrt(n)) or "forward" (1/n).

  Returns:
    A complex array.

  Example:
    >>> jnp.fft.fft(jnp.arange(4.0))
    Array([ 6.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex64)
  """
  return _fft_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis: int = -1, norm=None):
  """The one-dimensional inverse discrete Fourier transform along `axis`.

  Args:
    a, n, axis: as for `fft`.
    norm: "backward" (default, 1/n), "ortho" (1/sqrt(n)) or "forward" (no scaling).

  Returns:
    A complex array.
  """
  return _fft_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis: int = -1, norm=None):
  """The one-dimensional transform of real input: the n // 2 + 1 non-negative frequencies.

  Args:
    a: a real array. n, axis, norm: as for `fft`.

  Returns:
    A complex array whose `axis` has length n // 2 + 1.
  """
  return _fft_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis: int = -1, norm=None):
  """The inverse of `rfft`: real values of length `n` from a half spectrum.

  Args:
    a: the half spectrum (complex). n: the output length along `axis` (default
      2 * (a.shape[axis] - 1)). axis, norm: as for `ifft`.

  Returns:
    A real array.
  """
  return _fft_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis: int = -1, norm=None):
  """The transform of a signal with Hermitian symmetry (given by its half spectrum): real output.

  Args:
    a: the first half of a Hermitian-symmetric signal. n: the output length (default
      2 * (a.shape[axis] - 1)). axis, norm: as for `fft`.

  Returns:
    A real array of length n along `axis`.
  """
  if isinstance(axis, (list, tuple)):
    return _fft_1d("hfft", FftType.IRFFT, a, n, axis, norm)
  check_arraylike("revax.numpy.fft.hfft", a)
  a = conj(as_array(a))
  scale = (aval_of(a).shape[axis] - 1) * 2 if n is None else n
  return mul(_fft_1d("hfft", FftType.IRFFT, a, n, axis, norm), _scalar(scale, a, real=True))


def ihfft(a, n=None, axis: int = -1, norm=None):
  """The inverse of `hfft`: the half spectrum of a real signal, conjugated and scaled by 1/n.

  Args:
    a: a real array. n, axis, norm: as for `rfft`.

  Returns:
    A complex array of length n // 2 + 1 along `axis`.
  """
  if isinstance(axis, (list, tuple)):
    return _fft_1d("ihfft", FftType.RFFT, a, n, axis, norm)
  check_arraylike("revax.numpy.fft.ihfft", a)
  a = as_array(a)
  size = aval_of(a).shape[axis] if n is None else n
  out = conj(_fft_1d("ihfft", FftType.RFFT, a, n, axis, norm))
  return mul(out, _scalar(1 / size, out))


def _scalar(value, like, real=False):
  dtype = aval_of(like).dtype
  if real and dtypes.is_complex(dtype):
    dtype = np.finfo(dtype).dtype
  return np.asarray(value, dtype)


def fftn(a, s=None, axes=None, norm=None):
  """The N-dimensional discrete Fourier transform over `axes` (default: all, or the last
  len(s)).

  Args:
    a: an array. s: the transform lengths (crop or zero-pad). axes: the axes to transform.
    norm: as for `fft`, with n the product of the lengths.

  Returns:
    A complex array.
  """
  return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
  """The N-dimensional inverse discrete Fourier transform (arguments as `fftn`)."""
  return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
  """The N-dimensional transform of real input; the last axis keeps n // 2 + 1 frequencies
  (arguments as `fftn`)."""
  return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
  """The inverse of `rfftn`: real output of lengths `s` (default: the input's, with the last
  2 * (n - 1)) over `axes`."""
  return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
  """The two-dimensional discrete Fourier transform over `axes` (two of them)."""
  return _fft_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
  """The two-dimensional inverse discrete Fourier transform over `axes` (two of them)."""
  return _fft_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
  """The two-dimensional transform of real input over `axes` (two of them)."""
  return _fft_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
  """The inverse of `rfft2` over `axes` (two of them)."""
  return _fft_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


# --- frequencies and shifts ----------------------------------------------------------------------
def _check_freq_args(func_name, n, d):
  if isinstance(n, (list, tuple)):
    raise ValueError(f"The n argument of revax.numpy.fft.{func_name} only takes an int. "
                     f"Got n = {list(n)}.")
  if isinstance(d, (list, tuple)):
    raise ValueError(f"The d argument of revax.numpy.fft.{func_name} only takes a single "
                     f"value. Got d = {list(d)}.")
  return operator.index(n)


def _place(x, device):
  if device is None:
    return x
  from revax._src.api import device_put
  return device_put(x, device)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
  """The sample frequencies of an `fft` of length n with sample spacing d:
  [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n).

  Args:
    n: the transform length. d: the sample spacing (may be traced).
    dtype: the result dtype (default float32, or float64 with x64). device: where to put it.

  Returns:
    An array of n frequencies.
  """
  n = _check_freq_args("fftfreq", n, d)
  out_dtype = dtypes.canonicalize_dtype(dtype if dtype is not None
                                        else dtypes.default_float_dtype())
  real = out_dtype if dtypes.is_float(out_dtype) else (
      np.finfo(out_dtype).dtype if dtypes.is_complex(out_dtype)
      else dtypes.default_float_dtype())
  k = np.arange(n)
  k = np.where(k < (n + 1) // 2, k, k - n).astype(real)
  out = div(as_array(k), convert_element_type(mul(as_array(d), n) if not _is_py(d)
                                              else np.asarray(d * n), real))
  return _place(convert_element_type(out, out_dtype), device)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
  """The sample frequencies of an `rfft` of length n with sample spacing d:
  [0, 1, ..., n // 2] / (d * n).

  Args:
    n, d, dtype, device: as for `fftfreq`.

  Returns:
    An array of n // 2 + 1 frequencies.
  """
  n = _check_freq_args("rfftfreq", n, d)
  dtype = dtypes.canonicalize_dtype(dtype if dtype is not None else dtypes.default_float_dtype())
  k = np.arange(n // 2 + 1).astype(dtype)
  if not dtypes.is_inexact(dtype):
    k = k.astype(dtypes.default_float_dtype())
  scale = mul(as_array(d), n) if not _is_py(d) else np.asarray(d * n)
  out = div(as_array(k), convert_element_type(scale, k.dtype))
  return _place(out, device)


def _is_py(x) -> bool:
  return type(x) in (bool, int, float, complex)


def _roll(x, shifts, axes):
  """`x` rolled by static `shifts` along `axes` (slices and one concatenate per axis)."""
  shape = aval_of(x).shape
  for shift, ax in zip(shifts, axes, strict=True):
    size = shape[ax]
    if size == 0 or shift % size == 0:
      continue
    cut = size - shift % size
    head = _slice_axis(x, cut, size, ax)
    tail = _slice_axis(x, 0, cut, ax)
    x = lax_shapes.concatenate([head, tail], ax)
  return x


def _slice_axis(x, start, stop, axis):
  shape = aval_of(x).shape
  return lax_slicing.slice(x, tuple(start if d == axis else 0 for d in range(len(shape))),
                           tuple(stop if d == axis else n for d, n in enumerate(shape)))


def _shift(func_name, x, axes, sign):
  check_arraylike(f"revax.numpy.fft.{func_name}", x)
  x = as_array(x)
  ndim = aval_of(x).ndim
  if axes is None:
    axes = tuple(range(ndim))
  elif isinstance(axes, (int, np.integer)):
    axes = (axes,)
  axes = tuple(canonicalize_axis(ax, ndim) for ax in axes)
  shape = aval_of(x).shape
  return _roll(x, tuple(sign * (shape[ax] // 2) for ax in axes), axes)


def fftshift(x, axes=None):
  """Move the zero frequency to the centre: roll each of `axes` (default all) by n // 2.

  Args:
    x: an array of frequencies or spectrum values. axes: an int, a sequence of ints, or None.

  Returns:
    The shifted array.
  """
  return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
  """The inverse of `fftshift`: roll each of `axes` (default all) by -(n // 2)."""
  return _shift("ifftshift", x, axes, -1)
