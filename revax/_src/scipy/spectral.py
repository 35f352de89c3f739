"""Spectral analysis for revax.scipy.signal: stft, istft, csd and welch, as jax.scipy.signal.

A signal is cut into segments of `nperseg` samples, `nperseg - noverlap` apart (one gather
with a static index table), each segment is detrended, windowed and Fourier-transformed along
the last axis (rfft for real one-sided spectra, fft otherwise). csd multiplies the conjugated
spectra of x by those of y, scales them (density: 1 / (fs * sum(win**2)); spectrum:
1 / sum(win)**2), doubles the one-sided bins that stand for two, and averages over segments
(mean, or median with its bias correction); welch is csd of x with itself. stft keeps every
segment's spectrum (scaled by 1 / sum(win)). istft inverts the segment transforms and adds the
windowed segments back in place (a scatter-add), dividing by the summed squared window, which
is a constant computed on the host. The default "hann" window is computed here; other named
windows come from scipy.signal.get_window (imported only then, as JAX does).
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from revax._src.core import dtypes
from revax._src.lax import shapes as lax_shapes
from revax._src.lax import slicing as lax_slicing
from revax._src.lax.binary import mul, sub
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.sorting import sort
from revax._src.lax.unary import conj, imag, real
from revax._src.numpy import fft as jnp_fft
from revax._src.numpy.reductions import mean
from revax._src.numpy.shape_ops import moveaxis, transpose
from revax._src.numpy.util import (aval_of, as_array, broadcast_shapes, canonicalize_axis,
                                   check_arraylike, full_of, promote_args_inexact)
from revax._src.scipy.signal import detrend

__all__ = ["stft", "istft", "csd", "welch"]


def _complex_dtype(dtype) -> np.dtype:
  wide = np.dtype(dtype) in (dtypes.float64, dtypes.complex128)
  return dtypes.canonicalize_dtype(dtypes.complex128 if wide else dtypes.complex64)


def _hann(n: int) -> np.ndarray:
  """The periodic Hann window (scipy.signal.get_window("hann", n))."""
  return np.ones(1) if n == 1 else np.sin(np.pi * np.arange(n) / n) ** 2


def _named_window(window, n: int) -> np.ndarray:
  if isinstance(window, str) and window == "hann":
    return _hann(n)
  try:
    from scipy.signal import get_window
  except ImportError as err:
    raise ImportError(f"scipy must be available to use window={window!r}") from err
  return np.asarray(get_window(window, n))


def _window_and_length(window, nperseg, input_length: int, dtype):
  """(window as a NumPy array of `dtype`, nperseg) from a name or an array."""
  if isinstance(window, (str, tuple)):
    n = input_length if nperseg is None else int(nperseg)
    if n > input_length:
      warnings.warn(f"nperseg={n} is greater than input_length={input_length}, using "
                    f"nperseg={input_length}")
      n = input_length
    return _named_window(window, n).astype(dtype), n
  win = np.asarray(window).astype(dtype)
  if win.ndim != 1:
    raise ValueError("window must be 1-D")
  n = win.size if nperseg is None else int(nperseg)
  if input_length < win.size:
    raise ValueError("window is longer than input signal")
  if n != win.size:
    raise ValueError("value specified for nperseg is different from length of window")
  return win, n


# --- boundary extensions (along the last axis) ---------------------------------------------------
def _take_last(x, start, stop):
  shape = aval_of(x).shape
  return lax_slicing.slice(x, (0,) * (len(shape) - 1) + (start,), shape[:-1] + (stop,))


def _flip_last(x):
  return lax_shapes.rev(x, (aval_of(x).ndim - 1,))


def _extend(x, n: int, boundary):
  if boundary is None or n < 1:
    return x
  size = aval_of(x).shape[-1]
  last = aval_of(x).ndim - 1
  if boundary == "zeros":
    return lax_shapes.pad(x, np.zeros((), aval_of(x).dtype), ((0, 0, 0),) * last + ((n, n, 0),))
  if boundary == "constant":  # repeat the edge values
    left = lax_shapes.concatenate([_take_last(x, 0, 1)] * n, last)
    right = lax_shapes.concatenate([_take_last(x, size - 1, size)] * n, last)
  else:
    if n > size - 1:
      raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                       f"x.shape[axis]-1, which is {size - 1}.")
    left = _flip_last(_take_last(x, 1, n + 1))
    right = _flip_last(_take_last(x, size - n - 1, size - 1))
    if boundary == "odd":  # reflect about the end points' values
      left = sub(mul(_take_last(x, 0, 1), np.asarray(2, aval_of(x).dtype)), left)
      right = sub(mul(_take_last(x, size - 1, size), np.asarray(2, aval_of(x).dtype)), right)
  return lax_shapes.concatenate([left, x, right], last)


_BOUNDARIES = ("even", "odd", "constant", "zeros", None)


def _pad_end(x, n: int):
  if n <= 0:
    return x
  nd = aval_of(x).ndim
  return lax_shapes.pad(x, np.zeros((), aval_of(x).dtype), ((0, 0, 0),) * (nd - 1) + ((0, n, 0),))


# --- the windowed transforms ---------------------------------------------------------------------
def _segment_spectra(x, win, detrend_func, nperseg, noverlap, nfft, twosided):
  """Spectra of the detrended, windowed segments of `x` along its last axis: shape
  (..., segments, frequencies)."""
  if not dtypes.is_inexact(aval_of(x).dtype):
    x = convert_element_type(x, win.dtype)
  length = aval_of(x).shape[-1]
  step = nperseg - noverlap
  starts = np.arange(0, max(length - nperseg + 1, 0), step)
  segments = x[..., starts[:, None] + np.arange(nperseg)[None, :]]
  segments = detrend_func(segments)
  if dtypes.is_complex(win.dtype) and not dtypes.is_complex(aval_of(segments).dtype):
    segments = convert_element_type(segments, _complex_dtype(aval_of(segments).dtype))
  segments = mul(segments, win.astype(aval_of(segments).dtype))
  if twosided:
    return jnp_fft.fft(segments, n=nfft)
  return jnp_fft.rfft(real(segments) if dtypes.is_complex(aval_of(segments).dtype)
                      else segments, n=nfft)


def _static_int(value, what):
  try:
    return operator.index(value) if not isinstance(value, float) else int(value)
  except TypeError:
    raise TypeError(f"{what} must be a concrete integer, got {value!r}") from None


def _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
              scaling, axis, mode, boundary=None, padded=False):
  """(frequencies, segment times, spectra) as scipy.signal's _spectral_helper."""
  if mode not in ("psd", "stft"):
    raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
  if boundary not in _BOUNDARIES:
    raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                     f"{list(_BOUNDARIES)}")
  axis = operator.index(axis)
  if y is None:
    check_arraylike("spectral_helper", x)
    (x,) = promote_args_inexact("spectral_helper", x)
    x = as_array(x)
    axis = canonicalize_axis(axis, aval_of(x).ndim)
    outer = aval_of(x).shape[:axis] + aval_of(x).shape[axis + 1:]
  else:
    if mode != "psd":
      raise ValueError("two-argument mode is available only when mode=='psd'")
    check_arraylike("spectral_helper", x, y)
    x, y = (as_array(v) for v in promote_args_inexact("spectral_helper", x, y))
    sx, sy = aval_of(x).shape, aval_of(y).shape
    if len(sx) != len(sy):
      raise ValueError(f"two-arguments must have the same rank ({len(sx)} vs {len(sy)}).")
    axis = canonicalize_axis(axis, len(sx))
    try:
      outer = broadcast_shapes(sx[:axis] + sx[axis + 1:], sy[:axis] + sy[axis + 1:])
    except (ValueError, TypeError) as err:
      raise ValueError("x and y cannot be broadcast together.") from err
  result_dtype = _complex_dtype(aval_of(x).dtype)
  freq_dtype = np.dtype(np.finfo(result_dtype).dtype)
  if nperseg is not None:
    nperseg = _static_int(nperseg, "nperseg")
    if nperseg < 1:
      raise ValueError("nperseg must be a positive integer")
  win, nperseg = _window_and_length(window, nperseg, aval_of(x).shape[axis], aval_of(x).dtype)
  noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap")
  nfft = nperseg if nfft is None else _static_int(nfft, "nfft")

  if y is None and aval_of(x).size == 0:
    shape = aval_of(x).shape
    return (full_of(shape, 0, freq_dtype), full_of(shape, 0, freq_dtype),
            full_of(shape, 0, result_dtype))
  if y is not None and (aval_of(x).size == 0 or aval_of(y).size == 0):
    n = min(aval_of(x).shape[axis], aval_of(y).shape[axis])
    shape = outer[:axis] + (n,) + outer[axis:]
    return (full_of(shape, 0, freq_dtype), full_of(shape, 0, freq_dtype),
            full_of(shape, 0, result_dtype))

  x = moveaxis(x, axis, -1)
  if y is not None:
    y = moveaxis(y, axis, -1) if aval_of(y).ndim > 1 else y
    nx, ny = aval_of(x).shape[-1], aval_of(y).shape[-1]
    x, y = _pad_end(x, ny - nx), _pad_end(y, nx - ny)
  if nfft < nperseg:
    raise ValueError("nfft must be greater than or equal to nperseg.")
  if noverlap >= nperseg:
    raise ValueError("noverlap must be less than nperseg.")
  step = nperseg - noverlap
  if boundary is not None:
    x = _extend(x, nperseg // 2, boundary)
    y = None if y is None else _extend(y, nperseg // 2, boundary)
  if padded:
    extra = (-(aval_of(x).shape[-1] - nperseg) % step) % nperseg
    x = _pad_end(x, extra)
    y = None if y is None else _pad_end(y, extra)

  if isinstance(detrend_type, str):
    detrend_func = lambda d: detrend(d, type=detrend_type, axis=-1)
  elif callable(detrend_type):
    detrend_func = detrend_type
    if axis != aval_of(x).ndim - 1:
      detrend_func = lambda d: moveaxis(detrend_type(moveaxis(d, axis, -1)), -1, axis)
  elif not detrend_type:
    detrend_func = lambda d: d
  else:
    raise ValueError(f"Unsupported detrend type: {detrend_type}")

  if scaling == "density":
    scale = 1.0 / (fs * float((win.astype(np.float64) ** 2).sum()))
  elif scaling == "spectrum":
    scale = 1.0 / float(win.astype(np.float64).sum()) ** 2
  else:
    raise ValueError(f"Unknown scaling: {scaling}")
  if mode == "stft":
    scale = scale ** 0.5

  twosided = not return_onesided
  if return_onesided and (dtypes.is_complex(aval_of(x).dtype)
                          or (y is not None and dtypes.is_complex(aval_of(y).dtype))):
    twosided = True
    warnings.warn("Input data is complex, switching to return_onesided=False")
  if twosided:
    freqs = jnp_fft.fftfreq(nfft, 1 / fs, dtype=freq_dtype)
  else:
    freqs = jnp_fft.rfftfreq(nfft, 1 / fs, dtype=freq_dtype)

  result = _segment_spectra(x, win, detrend_func, nperseg, noverlap, nfft, twosided)
  if y is not None:
    result = mul(conj(result), _segment_spectra(y, win, detrend_func, nperseg, noverlap, nfft,
                                                twosided))
  elif mode == "psd":
    result = mul(conj(result), result)
  result = result * scale
  if not twosided and mode == "psd":
    weights = np.full(aval_of(result).shape[-1], 2.0)
    weights[0] = 1.0
    if nfft % 2 == 0:
      weights[-1] = 1.0
    result = mul(result, weights.astype(aval_of(result).dtype))

  length = aval_of(x).shape[-1]
  times = np.arange(nperseg / 2, length - nperseg / 2 + 1, step).astype(freq_dtype)
  if boundary is not None:
    times = times - freq_dtype.type(nperseg / 2)
  times = times / fs if isinstance(fs, (int, float)) else as_array(times) / fs
  result = convert_element_type(result, result_dtype)
  if y is None and mode != "stft":
    result = real(result)
  return freqs, times, moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
  """The short-time Fourier transform, as scipy.signal.stft.

  Args:
    x: the signal. fs: the sampling frequency. window: a window name, tuple or 1-d array.
    nperseg: the segment length. noverlap: samples shared by neighbouring segments (default
      nperseg // 2). nfft: the FFT length (default nperseg). detrend: False, "constant",
      "linear" or a function of the segments. return_onesided: a one-sided spectrum for real
      x. boundary: how to extend the signal at both ends ("zeros", "even", "odd", "constant",
      None). padded: zero-pad the end to a whole number of segments. axis: the time axis.

  Returns:
    (frequencies, segment times, the complex STFT with frequencies before segment times).
  """
  return _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                   "spectrum", axis, "stft", boundary, padded)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1, average="mean"):
  """The cross power spectral density of x and y by Welch's method, as scipy.signal.csd.

  Args:
    x, y: the signals (y None: the power spectral density of x). fs, window, nperseg,
      noverlap, nfft, detrend, return_onesided, axis: as for `stft`. scaling: "density" or
      "spectrum". average: "mean" or "median" over the segments.

  Returns:
    (frequencies, the cross spectral density).
  """
  freqs, _, pxy = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, scaling, axis, "psd")
  if y is not None and not dtypes.is_complex(aval_of(pxy).dtype):
    pxy = convert_element_type(pxy, _complex_dtype(aval_of(pxy).dtype))
  shape = aval_of(pxy).shape
  if len(shape) >= 2 and aval_of(pxy).size > 0:
    if shape[-1] > 1:
      if average == "median":
        bias = 1 + sum(1 / (k + 1) - 1 / k for k in range(2, shape[-1], 2))
        if dtypes.is_complex(aval_of(pxy).dtype):
          from revax._src.lax.binary import complex as lax_complex
          pxy = lax_complex(_median_last(real(pxy)), _median_last(imag(pxy)))
        else:
          pxy = _median_last(pxy)
        pxy = pxy / np.asarray(bias, aval_of(pxy).dtype)
      elif average == "mean":
        pxy = mean(pxy, axis=-1)
      else:
        raise ValueError(f'average must be "median" or "mean", got {average}')
    else:
      pxy = lax_shapes.reshape(pxy, shape[:-1])
  return freqs, pxy


def _median_last(x):
  """The median along the last axis (the mean of the two middle values for an even count)."""
  n = aval_of(x).shape[-1]
  s = sort(x, dimension=aval_of(x).ndim - 1)
  lo = _take_last(s, (n - 1) // 2, (n - 1) // 2 + 1)
  hi = _take_last(s, n // 2, n // 2 + 1)
  mid = (lo + hi) * np.asarray(0.5, aval_of(x).dtype)
  return lax_shapes.reshape(mid, aval_of(x).shape[:-1])


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1, average="mean"):
  """The power spectral density by Welch's method, as scipy.signal.welch (arguments as `csd`).

  Returns:
    (frequencies, the power spectral density, real).
  """
  freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                   nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                   scaling=scaling, axis=axis, average=average)
  return freqs, real(pxx) if dtypes.is_complex(aval_of(pxx).dtype) else pxx


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,  # noqa: N803
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
  """The inverse short-time Fourier transform, as scipy.signal.istft.

  Args:
    Zxx: the STFT (frequencies along `freq_axis`, segments along `time_axis`). fs, window,
      nperseg, noverlap, nfft: as the STFT used. input_onesided: whether Zxx is one-sided.
    boundary: whether the STFT extended the signal at both ends (those samples are dropped).
    time_axis, freq_axis: the axes of Zxx.

  Returns:
    (sample times, the signal).
  """
  check_arraylike("istft", Zxx)
  z = as_array(Zxx)
  ndim = aval_of(z).ndim
  if ndim < 2:
    raise ValueError("Input stft must be at least 2d!")
  freq_axis = canonicalize_axis(freq_axis, ndim)
  time_axis = canonicalize_axis(time_axis, ndim)
  if freq_axis == time_axis:
    raise ValueError("Must specify differing time and frequency axes!")
  z = convert_element_type(z, _complex_dtype(aval_of(z).dtype))
  nfreq = aval_of(z).shape[freq_axis]
  n_default = 2 * (nfreq - 1) if input_onesided else nfreq
  nperseg_ = _static_int(nperseg or n_default, "nperseg")
  if nperseg_ < 1:
    raise ValueError("nperseg must be a positive integer")
  if nfft is None:
    nfft_ = n_default + (1 if input_onesided and nperseg_ == n_default + 1 else 0)
  else:
    nfft_ = _static_int(nfft, "nfft")
  if nfft_ < nperseg_:
    raise ValueError(f"FFT length ({nfft_}) must be longer than nperseg ({nperseg_}).")
  noverlap_ = _static_int(noverlap or nperseg_ // 2, "noverlap")
  if noverlap_ >= nperseg_:
    raise ValueError("noverlap must be less than nperseg.")
  step = nperseg_ - noverlap_
  if time_axis != ndim - 1 or freq_axis != ndim - 2:
    outer = tuple(d for d in range(ndim) if d not in (time_axis, freq_axis))
    z = transpose(z, outer + (freq_axis, time_axis))
  inverse = jnp_fft.irfft if input_onesided else jnp_fft.ifft
  frames = inverse(z, axis=-2, n=nfft)  # (..., frame length, frames)
  frames = _take_second_last(frames, nperseg_)
  rdtype = aval_of(frames).dtype
  if isinstance(window, (str, tuple)):
    win = _named_window(window, nperseg_).astype(rdtype)
  else:
    win = np.asarray(window)
    if win.ndim != 1:
      raise ValueError("window must be 1-D")
    if win.shape[0] != nperseg_:
      raise ValueError(f"window must have length of {nperseg_}")
    win = win.astype(rdtype)
  frames = mul(frames, np.asarray(win.sum(), rdtype))
  frames = mul(frames, win[:, None])
  frames = moveaxis(frames, -1, -2)  # (..., frames, frame length)
  nframes = aval_of(frames).shape[-2]
  out_len = step * (nframes - 1) + nperseg_
  index = np.arange(nframes)[:, None] * step + np.arange(nperseg_)[None, :]
  signal = full_of(aval_of(frames).shape[:-2] + (out_len,), 0, rdtype).at[..., index].add(frames)
  norm = np.zeros(out_len, np.float64)
  np.add.at(norm, index, np.broadcast_to(win.astype(np.float64) ** 2, index.shape))
  if boundary:
    half = nperseg_ // 2
    signal = _take_last(signal, half, out_len - half) if half else _take_last(signal, 0, 0)
    norm = norm[half:-half] if half else norm[:0]
  signal = signal / np.where(norm > 1e-10, norm, 1.0).astype(np.finfo(rdtype).dtype)
  if aval_of(signal).ndim > 1 and time_axis != ndim - 1:
    if freq_axis < time_axis:
      time_axis -= 1
    signal = moveaxis(signal, -1, time_axis)
  times = np.arange(aval_of(signal).shape[0], dtype=np.finfo(rdtype).dtype)
  times = times / fs if isinstance(fs, (int, float)) else as_array(times) / fs
  return times, signal


def _take_second_last(x, n):
  shape = aval_of(x).shape
  if shape[-2] <= n:
    return x
  return lax_slicing.slice(x, (0,) * len(shape), shape[:-2] + (n, shape[-1]))
