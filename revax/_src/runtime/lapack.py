"""LAPACK for compiled programs on CPU: finding it, and registering revax's FFI handlers.

The XLA CPU plugin has no LAPACK custom calls of its own. JAX brings them in jaxlib; revax has
six FFI handlers in C (`_lapack.c`: eigh through ?syevd/?heevd, svd through ?gesdd, lu through
?getrf, cholesky through ?potrf, eig through ?geev, schur through ?gees) that call the LAPACKE functions of the ILP64 OpenBLAS NumPy's wheel bundles
(`numpy.libs/libscipy_openblas64_*.so`, symbols `scipy_LAPACKE_*64_`; the `scipy_openblas64`
package's copy is tried too). Lowering (revax/_src/lax/linalg.py) asks `target(op, dtype)` for
the custom call target to name; None means "lower to the algorithm written in lax", which is
the answer when:
- REVAX_LAPACK=0 is set (read once, at the first question),
- the program is lowered for another platform than the CPU (the handlers read host memory;
  in a process whose default is the TPU, CPU programs still get them),
- the C extension `_lapack` was not built, or no such library or symbol is found,
- the plugin has no FFI extension or refuses the registration.

The handlers are registered with the CPU plugin when the CPU backend starts (client.py calls
`register`, whether that backend is the default or started beside a TPU), so before any program naming them is compiled: lowered here, loaded from the
persistent compilation cache, or deserialized by revax.export in another process.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import threading

import numpy as np

__all__ = ["target", "available", "library_path", "register"]

OPS = ("syevd", "gesdd", "getrf", "potrf", "geev", "gees")
_PREFIX = "revax_lapack_"
_KINDS = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
          np.dtype(np.complex128))
# The LAPACKE functions set_lapack takes, in its order (lowercase s/d/c/z are filled in).
_SYMBOLS = ([f"scipy_LAPACKE_{t}{'syevd' if t in 'sd' else 'heevd'}64_" for t in "sdcz"]
            + [f"scipy_LAPACKE_{t}gesdd64_" for t in "sdcz"]
            + [f"scipy_LAPACKE_{t}getrf_work64_" for t in "sdcz"]
            + [f"scipy_LAPACKE_{t}potrf_work64_" for t in "sdcz"]
            + [f"scipy_LAPACKE_{t}geev64_" for t in "sdcz"]
            + [f"scipy_LAPACKE_{t}gees64_" for t in "sdcz"])

_lock = threading.Lock()
_state: dict | None = None  # op -> set of dtypes with a registered handler


_lapacke_cache: dict[str, dict] = {}
_lapacke_lock = threading.Lock()


def lapacke_functions(routine: str) -> dict:
  """{dtype: NumPy's bundled ILP64 OpenBLAS's LAPACKE ?`routine`} (e.g. "geev", "gees"; {} where
  the library or the symbols are missing), loaded once per routine; called from the host."""
  with _lapacke_lock:
    found = _lapacke_cache.get(routine)
    if found is None:
      found = _lapacke_cache[routine] = {}
      path = library_path()
      try:
        library = ctypes.CDLL(path) if path is not None else None
      except OSError:
        library = None
      for t, dt in zip("sdcz", (np.float32, np.float64, np.complex64, np.complex128)):
        fn = getattr(library, f"scipy_LAPACKE_{t}{routine}64_", None) if library else None
        if fn is not None:
          fn.restype = ctypes.c_int64
          found[np.dtype(dt)] = fn
    return found


def library_path() -> str | None:
  """The ILP64 OpenBLAS shared library with LAPACKE (NumPy's bundled copy first), or None."""
  candidates = []
  spec = importlib.util.find_spec("numpy")
  if spec is not None and spec.origin:
    libs = os.path.join(os.path.dirname(os.path.dirname(spec.origin)), "numpy.libs")
    candidates += sorted(glob.glob(os.path.join(libs, "libscipy_openblas64_*.so*")))
  spec = importlib.util.find_spec("scipy_openblas64")
  if spec is not None and spec.origin:
    lib = os.path.join(os.path.dirname(spec.origin), "lib")
    candidates += sorted(glob.glob(os.path.join(lib, "libscipy_openblas64_*.so*")))
  return candidates[0] if candidates else None


def _addresses(path: str) -> list[int | None]:
  library = ctypes.CDLL(path)  # already loaded by NumPy: the same handle
  out = []
  for name in _SYMBOLS:
    try:
      out.append(ctypes.cast(getattr(library, name), ctypes.c_void_p).value)
    except AttributeError:
      out.append(None)
  return out


def _load() -> dict:
  """Find LAPACK, hand it to the C handlers, register them with the CPU plugin: {op: dtypes}."""
  if os.environ.get("REVAX_LAPACK", "1").strip().lower() in ("0", "false", "no", "off"):
    return {}
  try:
    from revax._src.runtime import _lapack
  except ImportError:
    return {}
  path = library_path()
  if path is None:
    return {}
  try:
    addresses = _addresses(path)
  except OSError:
    return {}
  try:
    _lapack.set_lapack(addresses)
  except ValueError:  # an extension built from an older _lapack.c (fewer handlers): rebuild it
    return {}
  gemm = _gemm_addresses(path)
  try:
    _lapack.set_blas(gemm)
  except (AttributeError, ValueError):  # an extension built from an older _lapack.c
    gemm = [None] * 5
  from revax._src.runtime import ffi
  try:
    for op, address in _lapack.handlers().items():
      ffi.register_handler(_PREFIX + op, address, "cpu")  # the CPU backend's plugin
  except Exception:  # noqa: BLE001 - no FFI extension or a refusal: the lax algorithms remain
    return {}
  table = {op: {dt for dt, a in zip(_KINDS, addresses[4 * i:4 * i + 4]) if a}
           for i, op in enumerate(OPS)}
  table["gemm"] = {dt for dt, a in zip(_KINDS, gemm[:4]) if a}
  if "conv" in _lapack.handlers():  # (an extension built from an older _lapack.c has none)
    table["conv"] = table["gemm"]
  return table


def _gemm_addresses(path: str) -> list[int | None]:
  library = ctypes.CDLL(path)
  out = []
  for name in [f"scipy_cblas_{t}gemm64_" for t in "sdcz"] + ["openblas_set_num_threads_local"]:
    try:
      out.append(ctypes.cast(getattr(library, name), ctypes.c_void_p).value)
    except AttributeError:
      out.append(None)
  return out


def _table() -> dict:
  global _state
  if _state is None:
    from revax._src.runtime import client
    try:
      client.get_backend("cpu")  # first, outside the lock: starting it calls `register`
    except RuntimeError:  # no CPU backend in this process (the handlers read host memory)
      return {}
    with _lock:
      if _state is None:
        _state = _load()
  return _state


def register() -> None:
  """Find LAPACK and register the handlers with the CPU backend's plugin (once, when that
  backend starts, whether or not it is the default; never raises: where anything is missing,
  `target` answers None)."""
  _table()


def available(op: str, dtype, platform: str = "cpu") -> bool:
  """Whether a program lowered for `platform` may call LAPACK's `op` (one of `OPS`) for
  `dtype`: only CPU programs can (the handlers read host memory)."""
  return platform == "cpu" and np.dtype(dtype) in _table().get(op, ())


def target(op: str, dtype, platform: str = "cpu") -> str | None:
  """The custom call target running `op` for `dtype` in a program lowered for `platform`, or
  None (use the lax algorithm)."""
  return _PREFIX + op if available(op, dtype, platform) else None
