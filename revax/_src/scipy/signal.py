"""revax.scipy.signal: convolution, correlation and detrending, as jax.scipy.signal.

convolve/convolve2d (method "direct" or "auto") are one `conv_general_dilated` of the larger
input with the flipped smaller one (a batch and a feature dimension of size 1 added around
them), padded for the mode: "full" pads every side by the kernel size - 1, "same" centres the
output on the first input (offsets as SciPy's), "valid" pads nothing. fftconvolve multiplies
spectra: real inputs through rfftn/irfftn and complex ones through fftn/ifftn at the full output
size, then slices the mode's window; with `axes`, the other axes must agree and are carried
along elementwise. Correlation is convolution with the second input conjugated and flipped.
Inputs are promoted to a common inexact dtype, as in JAX.
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src.lax import shapes as lax_shapes
from revax._src.lax import slicing as lax_slicing
from revax._src.lax.binary import mul, sub
from revax._src.lax.convolution import conv_general_dilated
from revax._src.lax.unary import conj
from revax._src.numpy import fft as jnp_fft
from revax._src.numpy.reductions import mean, sum as np_sum
from revax._src.numpy.shape_ops import flip, moveaxis
from revax._src.numpy.util import (aval_of, as_array, canonicalize_axis, check_arraylike,
                                   promote_args_inexact)
from revax._src.core import dtypes

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve", "detrend"]

_MODES = ("full", "same", "valid")


def _check_mode(mode):
  if mode not in _MODES:
    raise ValueError(f"mode must be one of ['full', 'same', 'valid'], got {mode!r}")


def _convolve_nd(in1, in2, mode, precision, fun_name):
  """SciPy's n-dimensional direct convolution of two arrays of one rank."""
  _check_mode(mode)
  check_arraylike(fun_name, in1, in2)
  in1, in2 = (as_array(v) for v in promote_args_inexact(fun_name, in1, in2))
  s1, s2 = aval_of(in1).shape, aval_of(in2).shape
  if len(s1) != len(s2):
    raise ValueError(f"{fun_name}: in1 and in2 must have the same number of dimensions, got "
                     f"shapes {s1} and {s2}")
  if 0 in s1 or 0 in s2:
    raise ValueError(f"{fun_name}: zero-size arrays not supported in convolutions, got shapes "
                     f"{s1} and {s2}.")
  bigger_first = all(a >= b for a, b in zip(s1, s2, strict=True))
  smaller_first = all(a <= b for a, b in zip(s1, s2, strict=True))
  if not (bigger_first or smaller_first):
    raise ValueError(f"{fun_name}: one input must be smaller than the other in every "
                     f"dimension, got shapes {s1} and {s2}")
  if smaller_first and not bigger_first:
    in1, in2 = in2, in1
  kernel = aval_of(in2).shape
  if mode == "valid":
    padding = [(0, 0)] * len(kernel)
  elif mode == "full":
    padding = [(k - 1, k - 1) for k in kernel]
  else:  # "same": an output the size of the original in1 (in2 is the original second input)
    padding = [(k - 1 - (o - 1) // 2, k - o + (o - 1) // 2)
               for k, o in zip(kernel, s2, strict=True)]
  lhs = lax_shapes.reshape(in1, (1, 1) + aval_of(in1).shape)
  rhs = lax_shapes.reshape(flip(in2), (1, 1) + kernel)
  out = conv_general_dilated(lhs, rhs, (1,) * len(kernel), padding, precision=precision)
  return lax_shapes.reshape(out, aval_of(out).shape[2:])


def convolve(in1, in2, mode="full", method="auto", precision=None):
  """The n-dimensional convolution of two arrays of one rank, as scipy.signal.convolve.

  Args:
    in1, in2: arrays of the same rank; one must be at least as large as the other in every
      dimension.
    mode: "full" (every overlap), "same" (the size of in1, centred) or "valid" (full overlaps
      only).
    method: "auto" or "direct" (a convolution op) or "fft" (`fftconvolve`).
    precision: the convolution's precision (direct method).

  Returns:
    The convolution, in the promoted inexact dtype of the inputs.

  Example:
    >>> import revax.scipy.signal
    >>> revax.scipy.signal.convolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
  """
  if method == "fft":
    return fftconvolve(in1, in2, mode=mode)
  if method in ("direct", "auto"):
    return _convolve_nd(in1, in2, mode, precision, "convolve")
  raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")


def correlate(in1, in2, mode="full", method="auto", precision=None):
  """The n-dimensional cross-correlation of two arrays, as scipy.signal.correlate:
  `convolve(in1, flip(conj(in2)))` (arguments as `convolve`)."""
  check_arraylike("correlate", in1, in2)
  return convolve(in1, flip(conj(as_array(in2)) if _is_complex(in2) else as_array(in2)),
                  mode=mode, method=method, precision=precision)


def _is_complex(x) -> bool:
  return dtypes.is_complex(aval_of(as_array(x)).dtype)


def _check_2d(fun_name, in1, in2, boundary, fillvalue):
  if boundary != "fill" or fillvalue != 0:
    raise NotImplementedError(f"{fun_name}() only supports boundary='fill', fillvalue=0")
  check_arraylike(fun_name, in1, in2)
  if np.ndim(as_array(in1)) != 2 or np.ndim(as_array(in2)) != 2:
    raise ValueError(f"{fun_name}() only supports 2-dimensional inputs, got shapes "
                     f"{np.shape(as_array(in1))} and {np.shape(as_array(in2))}.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """The two-dimensional convolution, as scipy.signal.convolve2d (only boundary="fill" with
  fillvalue=0).

  Args:
    in1, in2: 2-d arrays. mode, precision: as for `convolve`.
    boundary, fillvalue: only the defaults.

  Returns:
    The convolution.
  """
  _check_2d("convolve2d", in1, in2, boundary, fillvalue)
  return _convolve_nd(in1, in2, mode, precision, "convolve2d")


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """The two-dimensional cross-correlation, as scipy.signal.correlate2d (arguments as
  `convolve2d`).

  SciPy aligns correlate2d's output with in1 differently from correlate when in2 is the larger
  input: there the result is that of correlating in2 with in1 (conjugated and flipped back).
  """
  _check_2d("correlate2d", in1, in2, boundary, fillvalue)
  _check_mode(mode)
  in1, in2 = (as_array(v) for v in promote_args_inexact("correlate2d", in1, in2))
  s1, s2 = aval_of(in1).shape, aval_of(in2).shape
  second_larger = all(a <= b for a, b in zip(s1, s2, strict=True))
  same = s1 == s2
  conj_ = lambda v: conj(v) if dtypes.is_complex(aval_of(v).dtype) else v
  if mode != "same" and second_larger and not (mode == "valid" and same):
    out = _convolve_nd(flip(in2), conj_(in1), mode, precision, "correlate2d")
    return conj_(out) if mode == "full" else out
  return flip(_convolve_nd(flip(in1), conj_(in2), mode, precision, "correlate2d"))


# --- fftconvolve ---------------------------------------------------------------------------------
def fftconvolve(in1, in2, mode="full", axes=None):
  """Convolution through the FFT, as scipy.signal.fftconvolve.

  Args:
    in1, in2: arrays of the same rank.
    mode: "full", "same" or "valid" (as for `convolve`).
    axes: the axes to convolve over (default: all); the other axes must have equal sizes and
      are computed elementwise.

  Returns:
    The convolution, in the promoted inexact dtype of the inputs.
  """
  check_arraylike("fftconvolve", in1, in2)
  in1, in2 = (as_array(v) for v in promote_args_inexact("fftconvolve", in1, in2))
  s1, s2 = aval_of(in1).shape, aval_of(in2).shape
  if len(s1) != len(s2):
    raise ValueError(f"in1 and in2 should have the same dimensionality, got shapes {s1} and "
                     f"{s2}")
  _check_mode(mode)
  ndim = len(s1)
  if axes is None:
    axes = tuple(range(ndim))
  else:
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    axes = tuple(sorted(canonicalize_axis(operator.index(a), ndim) for a in axes))
  others = [d for d in range(ndim) if d not in axes]
  if any(s1[d] != s2[d] for d in others):
    raise ValueError(f"mapped axes must have same shape; got in1.shape={s1} in2.shape={s2} "
                     f"axes={axes}")
  if mode == "valid":
    bigger_first = all(s1[d] >= s2[d] for d in axes)
    smaller_first = all(s1[d] <= s2[d] for d in axes)
    if not (bigger_first or smaller_first):
      raise ValueError("For 'valid' mode, One input must be at least as large as the other in "
                       "every dimension.")
    if smaller_first:
      in1, in2 = in2, in1
      s1, s2 = s2, s1
  full = {d: s1[d] + s2[d] - 1 for d in axes}
  if all(s1[d] == 1 or s2[d] == 1 for d in axes):
    conv = mul(in1, in2)  # a product broadcast against size-1 dims is the whole convolution
  else:
    lengths = tuple(full[d] for d in axes)
    if dtypes.is_complex(aval_of(in1).dtype):
      spectrum = mul(jnp_fft.fftn(in1, lengths, axes), jnp_fft.fftn(in2, lengths, axes))
      conv = jnp_fft.ifftn(spectrum, lengths, axes)
    else:
      spectrum = mul(jnp_fft.rfftn(in1, lengths, axes), jnp_fft.rfftn(in2, lengths, axes))
      conv = jnp_fft.irfftn(spectrum, lengths, axes)
  conv_shape = aval_of(conv).shape
  if mode == "full":
    want = {d: full[d] for d in axes}
  elif mode == "same":
    want = {d: s1[d] for d in axes}
  else:
    want = {d: s1[d] - s2[d] + 1 for d in axes}
  starts = tuple((conv_shape[d] - want[d]) // 2 if d in want else 0 for d in range(ndim))
  limits = tuple(starts[d] + want[d] if d in want else conv_shape[d] for d in range(ndim))
  return lax_slicing.slice(conv, starts, limits)


# --- detrend -------------------------------------------------------------------------------------
def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):  # noqa: A002 (scipy's)
  """Remove a constant or (piecewise) linear least-squares trend along `axis`, as
  scipy.signal.detrend.

  Args:
    data: an array.
    axis: the axis along which to detrend.
    type: "linear" (a line per segment between breakpoints) or "constant" (the mean).
    bp: static breakpoints (ints) splitting the axis into segments, for "linear".
    overwrite_data: unsupported (must be None), as in JAX.

  Returns:
    The detrended data, in an inexact dtype.
  """
  if overwrite_data is not None:
    raise NotImplementedError("overwrite_data argument not implemented.")
  if type not in ("constant", "linear"):
    raise ValueError("Trend type must be 'linear' or 'constant'.")
  check_arraylike("detrend", data)
  (x,) = promote_args_inexact("detrend", as_array(data))
  x = as_array(x)
  ndim = aval_of(x).ndim
  axis = canonicalize_axis(axis, ndim)
  if type == "constant":
    return sub(x, mean(x, axis=axis, keepdims=True))
  n = aval_of(x).shape[axis]
  edges = np.sort(np.unique(np.r_[0, bp, n]))
  if edges[0] < 0 or edges[-1] > n:
    raise ValueError("Breakpoints must be non-negative and less than length of data along "
                     "given axis.")
  x = moveaxis(x, axis, -1)
  shape = aval_of(x).shape
  pieces = []
  for lo, hi in zip(edges[:-1], edges[1:], strict=True):
    seg = lax_slicing.slice(x, (0,) * ndim, shape[:-1] + (int(hi),)) if lo == 0 else \
        lax_slicing.slice(x, (0,) * (ndim - 1) + (int(lo),), shape[:-1] + (int(hi),))
    pieces.append(_remove_line(seg, int(hi - lo)))
  out = pieces[0] if len(pieces) == 1 else lax_shapes.concatenate(pieces, ndim - 1)
  return moveaxis(out, -1, axis)


def _remove_line(seg, npts: int):
  """`seg` minus its least-squares line along the last axis (a segment of one point is its
  own line)."""
  if npts <= 1:
    return sub(seg, seg)
  dtype = aval_of(seg).dtype
  t = np.arange(npts, dtype=np.float64)
  t = (t - t.mean()).astype(dtype)
  slope = np_sum(mul(seg, t), axis=-1, keepdims=True) / np.asarray(float(np.sum(t.astype(
      np.float64) ** 2)), dtype)
  return sub(sub(seg, mean(seg, axis=-1, keepdims=True)), mul(slope, t))
