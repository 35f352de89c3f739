"""Flush-to-zero for the host (NumPy) implementations, so that eager results equal XLA's.

XLA:CPU runs its programs with the SSE control bits FTZ (results that would be subnormal become
zero) and DAZ (subnormal inputs read as zero) set; JAX users see `jnp.ceil(1e-40) == 0` and
`count_nonzero([1e-40]) == 0`. revax's eager path runs NumPy, which keeps subnormals, so eager
and jit disagreed on them (count_nonzero, ceil, sign, sort order, products). The eager
dispatcher therefore runs each NumPy implementation with both bits set in the calling thread's
MXCSR and restores the caller's bits right after, so user NumPy code outside revax is untouched:

    old = flush_on()
    try: out = impl(...)
    finally: flush_off(old)

Setting MXCSR takes one instruction pair (stmxcsr/ldmxcsr) that no C library exports on its own
(glibc's fesetenv also reloads the x87 state and costs ~5x more). On x86-64 this module maps a
19-byte leaf function `uint32 swap_mxcsr(uint32 new)` (returns the old value) into an executable
page and calls it through ctypes: about 0.2 us per call. Where that is impossible (another
architecture, or a system refusing executable anonymous memory) flushing is off and
`supported()` is False; eager results may then keep subnormals that jit flushes.
"""
from __future__ import annotations

import ctypes
import mmap
import platform

FTZ_DAZ = 0x8040  # MXCSR bit 15 (flush to zero) and bit 6 (denormals are zero)

# stmxcsr [rsp-4]; mov eax, [rsp-4]; mov [rsp-8], edi; ldmxcsr [rsp-8]; ret
# (a System V leaf function using the red zone below rsp: `new` in edi, the old value in eax)
_SWAP_CODE = bytes([0x0F, 0xAE, 0x5C, 0x24, 0xFC, 0x8B, 0x44, 0x24, 0xFC, 0x89, 0x7C, 0x24, 0xF8,
                    0x0F, 0xAE, 0x54, 0x24, 0xF8, 0xC3])


def _load_swap():
  if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
    return None, None
  try:
    page = mmap.mmap(-1, mmap.PAGESIZE,
                     prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(_SWAP_CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    swap = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32)(address)
    old = swap(0x1F80)  # probe: set the default control word and read back what was there
    if swap(old) != 0x1F80:
      return None, None
    return swap, page  # the page must stay mapped as long as the function is used
  except (OSError, ValueError, TypeError, AttributeError, PermissionError):
    return None, None


_swap, _page = _load_swap()


def supported() -> bool:
  """Whether host implementations run with FTZ/DAZ here (as XLA:CPU programs do)."""
  return _swap is not None


def mxcsr() -> int:
  """The calling thread's MXCSR (0 where unsupported)."""
  if _swap is None:
    return 0
  old = _swap(0x1F80)
  _swap(old)
  return old


if _swap is not None:
  def flush_on() -> int:
    """Set FTZ and DAZ in this thread; returns the previous MXCSR for `flush_off`."""
    old = _swap(0x1F80 | FTZ_DAZ)  # the default control word (all masked, round to nearest)
    if old & 0xFFC0 != 0x1F80:  # the caller changed rounding or masks: keep them, add FTZ/DAZ
      _swap(old | FTZ_DAZ)
    return old

  def flush_off(old: int) -> None:
    """Restore the MXCSR that `flush_on` returned."""
    _swap(old)
else:
  def flush_on() -> int:
    return 0

  def flush_off(old: int) -> None:
    return None
