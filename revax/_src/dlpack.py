"""DLPack exchange (as jax.dlpack): revax Arrays from any object that implements the DLPack
protocol. revax Arrays live on the host (the CPU plugin's buffers are read through NumPy), so a
DLPack import goes through NumPy and lands on the CPU device; revax Arrays export themselves
through NumPy too (`Array.__dlpack__`, `__dlpack_device__`).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from revax._src.core import dtypes

__all__ = ["from_dlpack", "is_supported_dtype"]

_SUPPORTED = frozenset(np.dtype(d) for d in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128))


def is_supported_dtype(dtype) -> bool:
  """Whether arrays of `dtype` can be exchanged through DLPack (JAX's list).

  Example:
    >>> from revax.dlpack import is_supported_dtype
    >>> is_supported_dtype(jnp.bfloat16)
    True
  """
  if dtype is None:
    raise TypeError(f"Expected a string or dtype-like object; got {dtype=}")
  return np.dtype(dtype) in _SUPPORTED


def _target_device(device):
  """The one device `device` (a Device, a one-device Sharding or None) names."""
  if device is None or not hasattr(device, "device_set"):
    return device
  devices = device.device_set
  if len(devices) != 1:
    raise ValueError("from_dlpack can only unpack a dlpack tensor onto a singular device, but a "
                     f"Sharding with {len(devices)} devices was provided.")
  (only,) = devices
  return only


def from_dlpack(external_array, device=None, copy: bool | None = None):
  """A revax Array of the data of `external_array`, any object with `__dlpack__` and
  `__dlpack_device__` (a NumPy array, a torch CPU tensor, a revax or jax Array).

  Args:
    external_array: the DLPack producer.
    device: optional Device (or one-device Sharding) to place the result on.
    copy: True to copy, False to refuse a copy (NumPy's BufferError when one is needed), None
      to copy only when needed.

  Returns:
    A revax Array; 64-bit data is canonicalized (float64 becomes float32 without x64), as JAX.

  Example:
    >>> from revax.dlpack import from_dlpack
    >>> from_dlpack(np.arange(3.0))
    Array([0., 1., 2.], dtype=float32)
  """
  from revax._src.api import device_put
  from revax._src.runtime.basearray import Array
  target = _target_device(device)
  if not hasattr(external_array, "__dlpack__") or not hasattr(external_array,
                                                              "__dlpack_device__"):
    raise TypeError("The array passed to from_dlpack must have __dlpack__ and __dlpack_device__ "
                    "methods.")
  if isinstance(external_array, Array):  # (NumPy cannot export bfloat16 through DLPack)
    return device_put(external_array, target)
  host = np.from_dlpack(external_array, copy=copy)
  canonical = dtypes.canonicalize_dtype(host.dtype)
  if canonical != host.dtype:
    host = host.astype(canonical)
  return device_put(host, target)
