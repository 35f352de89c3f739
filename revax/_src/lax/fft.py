"""fft: discrete Fourier transforms over the innermost dimensions, as jax.lax.fft.

One primitive, `fft`, with a static `fft_type` (FFT, IFFT, RFFT, IRFFT) and `fft_lengths`, the
sizes of the 1 to 3 innermost dimensions it transforms (XLA's limit; revax.numpy.fft composes
transforms for more). FFT/IFFT map complex to complex, RFFT maps real to the non-negative half
of the spectrum (last length n -> n // 2 + 1), IRFFT maps such a half spectrum back to reals of
the given lengths. The lowering is `stablehlo.fft`; the eager host path uses numpy.fft.

Derivatives: every type is linear, so the JVP applies the same transform to the tangent. The
transposes follow JAX's convention for complex values (the pairing of an output with its
cotangent is Re(sum(y * ct)), without conjugation): the DFT matrix is symmetric, so FFT and IFFT
are their own transposes; RFFT's transpose is a scaled IRFFT of the conjugated cotangent, and
IRFFT's the conjugate of a scaled RFFT, each weighting the half-spectrum bins that stand for two
bins of the full spectrum twice.
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, binary, unary
from revax._src.lax.conversion import convert_element_type

__all__ = ["fft", "FftType", "fft_p"]

_MAX_FFT_RANK = 3  # XLA transforms at most the 3 innermost dimensions in one operation


class FftType(enum.IntEnum):
  """Which transform `fft` computes."""
  FFT = 0  # forward, complex to complex
  IFFT = 1  # inverse, complex to complex
  RFFT = 2  # forward, real to complex (half spectrum)
  IRFFT = 3  # inverse, complex (half spectrum) to real


_FFT_TYPE_NAMES = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT,
                   "irfft": FftType.IRFFT}


def _fft_type(fft_type) -> FftType:
  if isinstance(fft_type, FftType):
    return fft_type
  if isinstance(fft_type, str):
    typ = _FFT_TYPE_NAMES.get(fft_type.lower()) if fft_type in (fft_type.lower(),
                                                                fft_type.upper()) else None
    if typ is None:
      raise ValueError(f"Unknown FFT type '{fft_type}'")
    return typ
  raise TypeError(f"Unknown FFT type value '{fft_type}'")


def _complex_of(dtype) -> np.dtype:
  """complex128 for 64-bit inputs (canonicalized: complex64 without x64), else complex64."""
  wide = np.dtype(dtype) in (dtypes.float64, dtypes.int64, dtypes.uint64, dtypes.complex128)
  return dtypes.canonicalize_dtype(dtypes.complex128 if wide else dtypes.complex64)


def _real_of(dtype) -> np.dtype:
  return np.dtype(np.finfo(dtype).dtype)


# --- fft -----------------------------------------------------------------------------------------
def fft(x, fft_type, fft_lengths):
  """A discrete Fourier transform over the innermost `len(fft_lengths)` dimensions of `x`.

  Args:
    x: an array. FFT/IFFT/IRFFT convert it to complex (complex64, or complex128 for 64-bit
      types); RFFT takes real values and converts integers to floats.
    fft_type: an `FftType` or its name ("fft", "IFFT", "rfft", ...).
    fft_lengths: the lengths of the transformed (innermost) dimensions, 1 to 3 of them; for
      IRFFT the last one is the length of the real output (the input holds n // 2 + 1 there).

  Returns:
    The transform: complex for FFT, IFFT and RFFT (RFFT's last dimension n becomes
    n // 2 + 1), real for IRFFT. With no lengths, `x` converted as above.

  Example:
    >>> lax.fft(jnp.ones(4), "fft", (4,))
    Array([4.+0.j, 0.+0.j, 0.+0.j, 0.+0.j], dtype=complex64)
  """
  typ = _fft_type(fft_type)
  try:
    lengths = tuple(operator.index(n) for n in fft_lengths)
  except TypeError:
    raise TypeError(f"fft_lengths must be a sequence of ints, got {fft_lengths!r}") from None
  dtype = get_aval(x).dtype
  if typ == FftType.RFFT:
    if dtypes.is_complex(dtype):
      raise ValueError("only real valued inputs supported for rfft")
    if not dtypes.is_inexact(dtype):
      dtype = dtypes.default_float_dtype()
  else:
    dtype = _complex_of(dtype)
  x = convert_element_type(x, dtype)
  if not lengths:
    return x
  return fft_p.bind(x, fft_type=typ, fft_lengths=lengths)


def _fft_abstract_eval(x, *, fft_type, fft_lengths):
  k = len(fft_lengths)
  if not 1 <= k <= _MAX_FFT_RANK:
    raise ValueError(f"fft transforms 1 to {_MAX_FFT_RANK} innermost dimensions, got "
                     f"fft_lengths {fft_lengths}; compose transforms for more (as "
                     "revax.numpy.fft.fftn does)")
  if k > x.ndim:
    raise ValueError(f"FFT input shape {x.shape} must have at least as many input dimensions "
                     f"as fft_lengths {fft_lengths}.")
  if any(n < 0 for n in fft_lengths):
    raise ValueError(f"fft_lengths must be non-negative, got {fft_lengths}")
  minor = x.shape[-k:]
  if fft_type == FftType.RFFT:
    if x.dtype not in (dtypes.float32, dtypes.float64):
      raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
    if minor != fft_lengths:
      raise ValueError(f"RFFT input shape {x.shape} minor dimensions must be equal to "
                       f"fft_lengths {fft_lengths}")
    shape = x.shape[:-k] + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
    return ShapedArray(shape, _complex_of(x.dtype), x.weak_type)
  if not dtypes.is_complex(x.dtype):
    raise ValueError(f"{fft_type.name} input must be complex64 or complex128, got {x.dtype}")
  if fft_type == FftType.IRFFT:
    expected = fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
    if minor != expected:
      raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to all "
                       f"except the last fft_length and fft_lengths[-1] // 2 + 1 = "
                       f"{expected[-1]} in the last, got fft_lengths={fft_lengths}")
    return ShapedArray(x.shape[:-k] + fft_lengths, _real_of(x.dtype), x.weak_type)
  if minor != fft_lengths:
    raise ValueError(f"FFT input shape {x.shape} minor dimensions must be equal to "
                     f"fft_lengths {fft_lengths}")
  return ShapedArray(x.shape, x.dtype, x.weak_type)


_NUMPY_FFTS = {FftType.FFT: np.fft.fftn, FftType.IFFT: np.fft.ifftn,
               FftType.RFFT: np.fft.rfftn, FftType.IRFFT: np.fft.irfftn}


def _fft_numpy(x, *, fft_type, fft_lengths):
  out = _fft_abstract_eval(ShapedArray(x.shape, x.dtype), fft_type=fft_type,
                           fft_lengths=fft_lengths)
  if math.prod(out.shape) == 0 or math.prod(x.shape) == 0:
    return np.zeros(out.shape, out.dtype)
  axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
  res = _NUMPY_FFTS[fft_type](x, s=fft_lengths, axes=axes)
  return np.asarray(res).astype(out.dtype, copy=False)


def _fft_lower(ctx, x, *, fft_type, fft_lengths):
  return ctx.op1("stablehlo.fft", [x],
                 props={"fft_type": f"#stablehlo<fft_type {fft_type.name}>",
                        "fft_length": mlir.i64_array(fft_lengths)})


def _half_spectrum_weights(fft_lengths, dtype, doubled: float, single: float):
  """Weights along the half spectrum's last axis: `single` for the bins that stand for one bin
  of the full spectrum (0, and n / 2 for even n), `doubled` for those standing for two."""
  n = fft_lengths[-1]
  w = np.full((n // 2 + 1,), doubled, dtype)
  w[0] = single
  if n % 2 == 0:
    w[-1] = single
  return w


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
  if fft_type in (FftType.FFT, FftType.IFFT):  # the DFT matrix is symmetric
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]
  size = math.prod(fft_lengths)
  if fft_type == FftType.RFFT:
    dtype = get_aval(ct).dtype
    w = _half_spectrum_weights(fft_lengths, dtype, 0.5 * size, 1.0 * size)
    ct = binary.mul(unary.conj(ct), w)
    return [fft_p.bind(ct, fft_type=FftType.IRFFT, fft_lengths=fft_lengths)]
  spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
  w = _half_spectrum_weights(fft_lengths, get_aval(spectrum).dtype, 2.0 / size, 1.0 / size)
  return [unary.conj(binary.mul(spectrum, w))]


def _fft_batch(vals, dims, *, fft_type, fft_lengths):
  """The transform acts on the innermost dims: a batch dim in front of them stays where it is;
  one among them moves to the front."""
  (x,), (d,) = vals, dims
  if d >= get_aval(x).ndim - len(fft_lengths):
    x, d = batch_util.moveaxis(x, d, 0), 0
  return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), d


_INVERSE_TYPES = {FftType.FFT: FftType.IFFT, FftType.IFFT: FftType.FFT,
                  FftType.RFFT: FftType.IRFFT}


def _fft_inverse(y, *, fft_type, fft_lengths):
  return fft_p.bind(y, fft_type=_INVERSE_TYPES[fft_type], fft_lengths=fft_lengths)


def _fft_inverse_solves(known, eqn, facts) -> bool:
  """FFT, IFFT and RFFT are one-to-one; IRFFT is not (it drops the imaginary parts of the bins
  that must be real, and the redundant half of the inner dimensions' spectrum)."""
  return eqn.params["fft_type"] in _INVERSE_TYPES


fft_p = Primitive("fft")
fft_p.def_abstract_eval(_fft_abstract_eval)
dispatch.def_numpy_impl(fft_p, _fft_numpy)
mlir.register_lowering(fft_p, _fft_lower)
ad.deflinear(fft_p, _fft_transpose)
batching.primitive_batchers[fft_p] = _fft_batch
inv.definverse_unary(fft_p, _fft_inverse, solves=_fft_inverse_solves)
