"""The persistent compilation cache: compiled executables kept on disk across processes.

`Backend.compile` asks this cache before it compiles. The key is a SHA-256 over everything that
changes the executable: the StableHLO text, the serialized compile options, the plugin (its file,
platform name and version, PJRT API version), the host CPU (XLA:CPU compiles for the CPU it runs
on: an entry written on another machine sharing the directory must never be loaded here), the
device count, XLA_FLAGS, revax's version and this file format's version. A hit deserializes the
stored executable (milliseconds) instead of compiling it (tens of milliseconds to seconds).

An entry is one file, `<key>.rvx`: a header (magic, format version, the key, the payload's length
and SHA-256) and the payload (`Executable.serialize()` bytes). Every way an entry can be bad
(truncated, corrupted, written for another key, unreadable, deleted by another process while we
read it) is detected before the bytes reach the plugin and turns into a warning and a fresh
compile. Writes go to a temporary file in the same directory and are renamed into place, so
processes racing on one key never see half an entry; the last rename wins and every writer wrote
the same executable. After a store, the directory is trimmed to `max_size` bytes by removing the
least recently used entries (a hit refreshes its entry's modification time).

Settings (revax.config options with JAX's names; the environment gives their defaults):
  jax_enable_compilation_cache            on by default; env REVAX_COMPILATION_CACHE=0 turns it
                                          off.
  jax_compilation_cache_dir               env REVAX_COMPILATION_CACHE_DIR, else
                                          $XDG_CACHE_HOME/revax, else ~/.cache/revax.
  jax_compilation_cache_max_size          bytes kept on disk (env REVAX_COMPILATION_CACHE_MAX_SIZE;
                                          1 GiB; -1: no limit).
  jax_persistent_cache_min_compile_time_secs
                                          programs that compiled faster than this are not written
                                          (env REVAX_COMPILATION_CACHE_MIN_COMPILE_TIME_SECS; 0.05 s:
                                          a hit costs ~2 ms, so below that the entry would save
                                          little and the eager one-primitive programs would fill
                                          the directory).
  jax_persistent_cache_min_entry_size_bytes
                                          smaller entries are not written (0).
Log: the logger "revax.compilation_cache" reports each hit, miss, store and eviction at DEBUG.
"""
from __future__ import annotations

import hashlib
import logging
import os
import platform
import struct
import sys
import tempfile
import threading
import warnings

from revax._src.core.config import config

logger = logging.getLogger("revax.compilation_cache")

FORMAT_VERSION = 1
_MAGIC = b"RVXCACHE"
_HEADER = struct.Struct("<8sI32sQ32s")  # magic, format version, key, payload size, payload sha256
_SUFFIX = ".rvx"


def _default_dir() -> str:
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.path.join(base, "revax")


class CacheSettings:
  """The cache's settings: mirrors of revax.config's options, refreshed when one changes."""

  def __init__(self):
    self.refresh()

  def refresh(self) -> None:
    read = config.read
    self.enabled = read("enable_compilation_cache")
    self.directory = read("compilation_cache_dir") or _default_dir()
    size = read("compilation_cache_max_size")
    self.max_size = float("inf") if size == -1 else size
    self.min_compile_time_secs = read("persistent_cache_min_compile_time_secs")
    self.min_entry_size = read("persistent_cache_min_entry_size_bytes")


settings = CacheSettings()
_OPTIONS = ("enable_compilation_cache", "compilation_cache_dir", "compilation_cache_max_size",
            "persistent_cache_min_compile_time_secs", "persistent_cache_min_entry_size_bytes")
config.on_change(lambda name: settings.refresh() if name in _OPTIONS else None)
# What happened in this process: tests and the debug log read them.
counters = {"hit": 0, "miss": 0, "store": 0, "discard": 0, "evict": 0}
_warned: set[str] = set()
_lock = threading.Lock()


def _warn_once(kind: str, message: str) -> None:
  """One warning per kind of trouble and process: a read-only directory must not warn per call."""
  with _lock:
    if kind in _warned:
      return
    _warned.add(kind)
  warnings.warn(f"revax compilation cache: {message}", RuntimeWarning, stacklevel=4)


def _cpu_identity() -> bytes:
  """What the code XLA:CPU generates depends on: architecture, model and ISA extensions (read
  from /proc/cpuinfo; where there is none, the processor name `platform` reports, which costs
  a subprocess on some systems)."""
  parts = [platform.machine()]
  try:
    with open("/proc/cpuinfo", "rb") as f:
      for line in f:
        if line.startswith((b"model name", b"flags", b"Features", b"CPU part")):
          parts.append(line.decode(errors="replace").strip())
          if line.startswith((b"flags", b"Features")):
            break  # the first processor's lines are enough
  except OSError:
    parts.append(platform.processor())
  return "\n".join(parts).encode()


_cpu = None
_version = None


def _revax_version() -> str:
  global _version
  if _version is None:
    # the loaded package's own version: asking importlib.metadata scans every distribution on
    # sys.path (tens of milliseconds, paid by each process's first compile)
    _version = getattr(sys.modules.get("revax"), "__version__", None)
  if _version is None:
    from importlib import metadata
    try:
      _version = metadata.version("revax")
    except metadata.PackageNotFoundError:  # run from a source tree
      _version = "source"
  return _version


def cache_key(code: bytes, options: bytes, backend) -> str:
  """The entry's name: a SHA-256 of the program and everything its executable depends on."""
  global _cpu
  if _cpu is None:
    _cpu = _cpu_identity()
  h = hashlib.sha256()
  for part in (str(FORMAT_VERSION).encode(), _revax_version().encode(), backend._api.path.encode(),
               repr(backend._api.version).encode(), backend.platform.encode(),
               backend.platform_version.encode(), str(len(backend.devices)).encode(), _cpu,
               os.environ.get("XLA_FLAGS", "").encode(), options, code):
    h.update(len(part).to_bytes(8, "little"))
    h.update(part)
  return h.hexdigest()


def _path(key: str) -> str:
  return os.path.join(settings.directory, key + _SUFFIX)


def load(key: str) -> bytes | None:
  """The payload stored under `key`, or None (a miss, or an entry found bad and removed)."""
  path = _path(key)
  try:
    with open(path, "rb") as f:
      blob = f.read()
  except (FileNotFoundError, NotADirectoryError):
    counters["miss"] += 1
    logger.debug("miss %s", key[:16])
    return None
  except OSError as e:
    counters["miss"] += 1
    _warn_once("read", f"cannot read {path} ({e}); compiling instead")
    return None
  problem = _check(blob, key)
  if problem:
    _warn_once("bad-entry", f"discarding {path}: {problem}; compiling instead")
    counters["miss"] += 1
    discard(key)
    return None
  try:
    os.utime(path)  # least recently used goes first when trimming
  except OSError:
    pass
  counters["hit"] += 1
  logger.debug("hit %s (%d bytes)", key[:16], len(blob))
  return blob[_HEADER.size:]


def _check(blob: bytes, key: str) -> str | None:
  if len(blob) < _HEADER.size:
    return f"truncated ({len(blob)} bytes)"
  magic, fmt, stored_key, size, digest = _HEADER.unpack_from(blob)
  if magic != _MAGIC:
    return "not a revax cache entry"
  if fmt != FORMAT_VERSION:
    return f"format version {fmt}, this revax reads {FORMAT_VERSION}"
  if stored_key != bytes.fromhex(key):
    return "written for another program, plugin or machine"
  payload = memoryview(blob)[_HEADER.size:]
  if len(payload) != size:
    return f"truncated ({len(payload)} of {size} payload bytes)"
  if hashlib.sha256(payload).digest() != digest:
    return "corrupted (checksum mismatch)"
  return None


def store(key: str, payload: bytes) -> None:
  """Write the entry atomically (temporary file, then rename), then trim the directory."""
  directory = settings.directory
  header = _HEADER.pack(_MAGIC, FORMAT_VERSION, bytes.fromhex(key), len(payload),
                        hashlib.sha256(payload).digest())
  tmp = None
  try:
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=_SUFFIX, dir=directory)
    with os.fdopen(fd, "wb") as f:
      f.write(header)
      f.write(payload)
    os.replace(tmp, _path(key))
    tmp = None
  except OSError as e:
    _warn_once("write", f"cannot write to {directory} ({e}); programs are compiled as usual")
    return
  finally:
    if tmp is not None:
      try:
        os.unlink(tmp)
      except OSError:
        pass
  counters["store"] += 1
  logger.debug("stored %s (%d bytes)", key[:16], len(header) + len(payload))
  _trim_if_needed(directory, len(header) + len(payload))


# The directory's size as this process last saw it, plus what it has written since: a store
# scans the directory (a stat per entry) only when that estimate passes the bound, on the first
# store into a directory, and every _RESCAN_EVERY stores (other processes write there too).
# Scanning on every store made a session that compiles thousands of programs into a directory
# of thousands of entries quadratic.
_RESCAN_EVERY = 64
_estimate_lock = threading.Lock()
_estimate = {"directory": None, "bytes": None, "stores": 0}


def _trim_if_needed(directory: str, written: int) -> None:
  with _estimate_lock:
    est = _estimate
    if est["directory"] != directory or est["stores"] >= _RESCAN_EVERY:
      est.update(directory=directory, bytes=None, stores=0)
    est["stores"] += 1
    if est["bytes"] is not None:
      est["bytes"] += written
      if est["bytes"] <= settings.max_size:
        return
    est["bytes"] = trim(settings.max_size)


def discard(key: str) -> None:
  counters["discard"] += 1
  try:
    os.unlink(_path(key))
  except OSError:
    pass


def entries() -> list[tuple[str, int, float]]:
  """(path, size, mtime) of every entry, oldest first."""
  found = []
  try:
    with os.scandir(settings.directory) as it:
      for entry in it:
        if entry.name.endswith(_SUFFIX) and not entry.name.startswith("."):
          try:
            stat = entry.stat()
          except OSError:  # removed by another process meanwhile
            continue
          found.append((entry.path, stat.st_size, stat.st_mtime))
  except OSError:
    return []
  found.sort(key=lambda e: e[2])
  return found


def trim(max_size: int) -> int:
  """Remove least recently used entries until the directory holds at most `max_size` bytes;
  returns the bytes left."""
  found = entries()
  total = sum(size for _, size, _ in found)
  for path, size, _ in found:
    if total <= max_size:
      break
    try:
      os.unlink(path)
      counters["evict"] += 1
      logger.debug("evicted %s", os.path.basename(path))
    except OSError:
      pass
    total -= size
  return total


def clear() -> None:
  """Remove every entry (and stray temporary files) from the cache directory."""
  try:
    with os.scandir(settings.directory) as it:
      names = [e.path for e in it if e.name.endswith(_SUFFIX)]
  except OSError:
    return
  for path in names:
    try:
      os.unlink(path)
    except OSError:
      pass
