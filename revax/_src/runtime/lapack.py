"""LAPACK for compiled programs on CPU: finding it, and registering revax's FFI handlers.

The XLA CPU plugin has no LAPACK custom calls of its own. JAX brings them in jaxlib; revax has
six FFI handlers in C (`_lapack.c`: eigh through ?syevd/?heevd, svd through ?gesdd, lu through
?getrf, cholesky through ?potrf, eig through ?geev, schur through ?gees) that call the LAPACKE functions of the ILP64 OpenBLAS NumPy's wheel bundles
(`numpy.libs/libscipy_openblas64_*.so`, symbols `scipy_LAPACKE_*64_`; the `scipy_openblas64`
package's copy is tried too). Lowering (revax/_src/lax/linalg.py) asks `target(op, dtype)` for
the custom call target to name; None means "lower to the algorithm written in lax", which is
the answer when:
- REVAX_LAPACK=0 is set (read once, at the first question),
- the backend is not a CPU one (the handlers read host memory),
- the C extension `_lapack` was not built, or no such library or symbol is found,
- the plugin has no FFI extension or refuses the registration.

The handlers are registered with the plugin when the backend starts (client.py calls
`register`), so before any program naming them is compiled: lowered here, loaded from the
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
  """Find LAPACK, hand it to the C handlers, register them: {op: set of dtypes}."""
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
  from revax._src.runtime import client, ffi
  try:
    platform = client.get_backend().platform
    if platform.lower() != "cpu":  # the handlers read host memory
      return {}
    for op, address in _lapack.handlers().items():
      ffi.register_handler(_PREFIX + op, address, platform)
  except Exception:  # noqa: BLE001 - no FFI extension or a refusal: the lax algorithms remain
    return {}
  return {op: {dt for dt, a in zip(_KINDS, addresses[4 * i:4 * i + 4]) if a}
          for i, op in enumerate(OPS)}


def _table() -> dict:
  global _state
  if _state is None:
    from revax._src.runtime import client
    client.get_backend()  # first, outside the lock: starting the backend calls `register`
    with _lock:
      if _state is None:
        _state = _load()
  return _state


def register() -> None:
  """Find LAPACK and register the handlers with the backend's plugin (once; never raises: where
  anything is missing, `target` answers None)."""
  _table()


def available(op: str, dtype) -> bool:
  """Whether a program may call LAPACK's `op` (one of `OPS`) for `dtype`."""
  return np.dtype(dtype) in _table().get(op, ())


def target(op: str, dtype) -> str | None:
  """The custom call target running `op` for `dtype`, or None (use the lax algorithm)."""
  return _PREFIX + op if available(op, dtype) else None
