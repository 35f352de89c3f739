"""Memory layout of the sub-byte types (int4, uint4, int2, uint2, float4_e2m1fn).

NumPy (ml_dtypes) keeps one element per byte, its code in the low bits, and so do PJRT's host
transfers; XLA:CPU's device memory holds them packed, k = 8 // bits elements per byte, element
i of the row-major order in bits [bits * (i % k), bits * (i % k + 1)) of byte i // k. Reading
that memory directly (client.py's CPU copy) unpacks it.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

BITS = {np.dtype(ml_dtypes.int4): 4, np.dtype(ml_dtypes.uint4): 4,
        np.dtype(ml_dtypes.int2): 2, np.dtype(ml_dtypes.uint2): 2,
        np.dtype(ml_dtypes.float4_e2m1fn): 4}


def packed_nbytes(shape, dtype) -> int:
  """The bytes a packed array of `shape` and the sub-byte `dtype` takes."""
  return math.ceil(math.prod(shape) * BITS[np.dtype(dtype)] / 8)


def unpack(packed: np.ndarray, out: np.ndarray) -> None:
  """Fill `out` (a dense array of a sub-byte dtype) from its packed bytes."""
  bits = BITS[out.dtype]
  per = 8 // bits
  shifts = np.arange(per, dtype=np.uint8) * np.uint8(bits)
  codes = (packed.reshape(-1, 1) >> shifts) & np.uint8((1 << bits) - 1)
  out.reshape(-1).view(np.uint8)[...] = codes.reshape(-1)[:out.size]
