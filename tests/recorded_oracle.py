"""jax's side of in-process differential tests, recorded: what jax computes for a test's inputs
is the same every run, so the suite can read it from a committed file instead of computing it
(in the files that use this, jax's eager and jitted calls were 90% of the test's time).

    ORACLE = recorded_oracle.Oracle(__file__)
    want = ORACLE(("power", idx, kwargs, jit), lambda: _run(jax, jnp, "power", idx, kwargs, jit))

A record is `tests/<folder>/expected/<module>.oracle.pkl.xz`: the key of what its values depend on
(the test module's text, the text of every `tests` module it imports, jax's version) and one
value per call, under the repr of the call's parts (plus jax_enable_x64). The values must be
plain data: NumPy arrays, Python scalars, strings, tuples, lists, dicts (never jax arrays).
A record whose key no longer matches is not used (every call computes live) and
tests/test_recorded_oracle.py fails until it is recorded again; a part not in the record is
computed live. `REVAX_LIVE_ORACLE=1` always computes live; `REVAX_RECORD_ORACLE=1` writes what it
computes (one file per test module, merged under a lock, so `-n 2` may record too):

    REVAX_RECORD_ORACLE=1 REVAX_LIVE_ORACLE=1 python -m pytest tests/numpy/test_wrap_negative_indices.py
"""
import fcntl
import hashlib
import lzma
import os
import pickle
import tempfile

from tests.recorded_children import _sources

_PROTOCOL = 4


def record_path(module_file: str) -> str:
  folder, name = os.path.split(os.path.abspath(module_file))
  return os.path.join(folder, "expected", os.path.splitext(name)[0] + ".oracle.pkl.xz")


def source_key(module_file: str) -> str:
  """The key of everything a record's values depend on but the calls' own parts."""
  import importlib.metadata
  digest = hashlib.sha256()
  for text in _sources(os.path.abspath(module_file), set()):
    digest.update(hashlib.sha256(text).digest())
  digest.update(importlib.metadata.version("jax").encode())
  return digest.hexdigest()


def read_record(path: str) -> dict:
  """{'key': ..., 'values': {...}} of a record file, or an empty record."""
  try:
    with lzma.open(path, "rb") as f:
      return pickle.load(f)
  except FileNotFoundError:
    return {"key": None, "values": {}}


class Oracle:
  """Call with (parts, compute): the recorded value of `parts` where the record is current, else
  `compute()` (recorded with REVAX_RECORD_ORACLE=1)."""

  def __init__(self, module_file: str):
    self.path = record_path(module_file)
    self.key = source_key(module_file)
    record = read_record(self.path)
    self.values = record["values"] if record["key"] == self.key else {}

  def __call__(self, parts, compute):
    import jax
    name = repr((parts, bool(jax.config.jax_enable_x64)))
    if os.environ.get("REVAX_LIVE_ORACLE") != "1" and name in self.values:
      return self.values[name]
    value = compute()
    if os.environ.get("REVAX_RECORD_ORACLE") == "1":
      self._store(name, value)
    return value

  def _store(self, name: str, value) -> None:
    os.makedirs(os.path.dirname(self.path), exist_ok=True)
    lock_path = os.path.join(tempfile.gettempdir(),
                             "revax-oracle-" + hashlib.sha256(self.path.encode()).hexdigest()[:16])
    with open(lock_path, "w") as lock:
      fcntl.flock(lock, fcntl.LOCK_EX)
      record = read_record(self.path)
      if record["key"] != self.key:
        record = {"key": self.key, "values": {}}
      record["values"][name] = value
      with lzma.open(self.path + ".tmp", "wb") as f:
        pickle.dump(record, f, protocol=_PROTOCOL)
      os.replace(self.path + ".tmp", self.path)
    self.values[name] = value
