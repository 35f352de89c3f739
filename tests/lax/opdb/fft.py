"""Op records for fft: each transform type over 1, 2 and 3 innermost dimensions, odd and even
last lengths (RFFT/IRFFT treat the Nyquist bin of even lengths apart), leading batch dimensions,
a real input converted for FFT, and a zero-size batch. All are linear (transposition suite);
FFT, IFFT and RFFT have an inverse rule (inverse round trip). The reference is numpy.fft."""
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

_NUMPY = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn, "irfft": np.fft.irfftn}
_OUT = {"fft": np.complex64, "ifft": np.complex64, "rfft": np.complex64, "irfft": np.float32}


def _ref(kind, lengths):
  axes = tuple(range(-len(lengths), 0))
  return lambda x: np.fft.__dict__[kind + "n"](x, s=lengths, axes=axes).astype(_OUT[kind]) \
      if x.size else np.zeros(_out_shape(kind, x.shape, lengths), _OUT[kind])


def _out_shape(kind, shape, lengths):
  k = len(lengths)
  if kind == "rfft":
    return shape[:-k] + lengths[:-1] + (lengths[-1] // 2 + 1,)
  if kind == "irfft":
    return shape[:-k] + lengths
  return shape


def _in_shape(kind, batch, lengths):
  if kind == "irfft":
    return batch + lengths[:-1] + (lengths[-1] // 2 + 1,)
  return batch + lengths


def _record(kind, batch, lengths, tag=""):
  dtype = np.float32 if kind == "rfft" else np.complex64
  shape = _in_shape(kind, batch, lengths)
  name = f"fft_{kind}_{'x'.join(map(str, shape)) or 'scalar'}_n{'x'.join(map(str, lengths))}{tag}"
  return OpRecord(name, "fft", lambda x: lax.fft(x, kind, lengths), args_of(rand(shape, dtype)),
                  _ref(kind, lengths), atol=1e-4, rtol=1e-5, linear=True)


_CASES = [
    ((), (8,)), ((3,), (7,)), ((2,), (3, 4)), ((), (2, 3, 5)), ((2,), (2, 2, 4)),
]

RECORDS = [_record(kind, batch, lengths) for kind in ("fft", "ifft", "rfft", "irfft")
           for batch, lengths in _CASES] + [
    OpRecord("fft_fft_of_f32_converts", "fft", lambda x: lax.fft(x, lax.FftType.FFT, (6,)),
             args_of(rand((2, 6))), lambda x: np.fft.fft(x).astype(np.complex64), atol=1e-4,
             linear=True),
    OpRecord("fft_rfft_of_i32_converts", "fft", lambda x: lax.fft(x, "RFFT", (5,)),
             args_of(rand((5,), np.int32)), lambda x: np.fft.rfft(x).astype(np.complex64),
             atol=1e-4, grad_order=0),
    _record("fft", (0,), (4,), "_empty_batch"),
    _record("rfft", (0, 2), (6,), "_empty_batch"),
]
