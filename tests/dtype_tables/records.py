"""jax's outcomes of the dtype tables, recorded once in `data/` instead of computed in every run.

Computing what jax does with a table's cases (eval_shape per case, then one jit per table for
the values) costs about 95% of a table's time; revax's side costs seconds. So each test module
of this folder has one record, `data/<module>.json.xz`: per table, per case label, jax's
outcome -- the exception type (its first built-in class) and message, or the shape, dtype and
weak type of each output, and the values jax computed (every element exactly: floats as
Python's shortest round-trip repr, NaN and infinities as strings, complex as [real, imag]).

The record names jax's version and the SHA-256 of the sources that define its cases (the test
module, `tables.py` and any module of this folder the test module imports from). A missing or
stale record fails with the command that re-records it:

    python -m tests.dtype_tables.record [test_numpy_unary_table ...]

With REVAX_LIVE_ORACLE=1 the tables run jax live instead, as before, and also check that the
record equals what jax gives now (a record of another jax version fails there).
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
import hashlib
import json
import lzma
import math
import os
import pathlib
import re

import numpy as np

DATA = pathlib.Path(__file__).parent / "data"
LIVE = os.environ.get("REVAX_LIVE_ORACLE") == "1"
_PACKAGE = "tests.dtype_tables"


@dataclasses.dataclass
class Outcome:
  """What one library did with one case: an exception type and message, or the (shape, dtype
  name, weak_type) of each output and, where computed, the values."""
  error: type | None = None
  message: str = ""
  avals: tuple = ()  # (shape, dtype name, weak_type) per output
  values: tuple | None = None

  def describe(self):
    if self.error is not None:
      return f"{self.error.__name__}({self.message[:90]!r})"
    return ", ".join(f"{d}{list(s)}{'~' if w else ''}" for s, d, w in self.avals)


# --- encoding ---------------------------------------------------------------------------------
_MESSAGE_CHARS = 90  # what describe() prints
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _scalar(x):
  x = float(x)
  return x if math.isfinite(x) else repr(x)  # 'nan', 'inf', '-inf'


def encode_array(v):
  """[dtype name, shape, every element exactly] of an array (decode_array inverts it)."""
  v = np.asarray(v)
  flat = v.ravel()
  if v.dtype.kind == "c":
    data = [[_scalar(z.real), _scalar(z.imag)] for z in flat]
  elif v.dtype.kind in "fV":  # (bfloat16 is kind "V")
    data = [_scalar(z) for z in flat.astype(np.float64)]
  else:
    data = flat.tolist()
  return [v.dtype.name, list(v.shape), data]


def decode_array(encoded):
  import ml_dtypes  # noqa: F401 -- registers bfloat16 with NumPy

  name, shape, data = encoded
  dtype = np.dtype(name)
  if dtype.kind == "c":
    flat = np.array([complex(float(r), float(i)) for r, i in data], np.complex128)
  elif dtype.kind in "fV":
    flat = np.array([float(z) for z in data], np.float64)
  else:
    flat = np.array(data, dtype)
  return flat.astype(dtype).reshape(shape)


def encode(outcome: Outcome):
  """A JSON-able form of `outcome` (decode() inverts it; messages keep their first 90
  characters, with memory addresses blanked)."""
  if outcome.error is not None:
    return {"error": outcome.error.__name__,
            "message": _ADDRESS.sub("0x?", outcome.message)[:_MESSAGE_CHARS]}
  out = {"avals": [[list(s), d, w] for s, d, w in outcome.avals]}
  if outcome.values is not None:
    out["values"] = [encode_array(v) for v in outcome.values]
  return out


def decode(data) -> Outcome:
  if "error" in data:
    return Outcome(getattr(builtins, data["error"]), data["message"])
  avals = tuple((tuple(s), d, bool(w)) for s, d, w in data["avals"])
  values = data.get("values")
  return Outcome(avals=avals,
                 values=None if values is None else tuple(decode_array(v) for v in values))


# --- files ------------------------------------------------------------------------------------
def _stem(suite_file):
  return pathlib.Path(suite_file).stem


def _sources(suite_file):
  """The files whose text defines a suite's cases: the suite, tables.py, and the modules of
  this folder it imports names from."""
  suite = pathlib.Path(suite_file)
  names = {"tables"}
  for node in ast.walk(ast.parse(suite.read_text())):
    if isinstance(node, ast.ImportFrom) and node.module == _PACKAGE:
      names |= {a.name for a in node.names}
    elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(_PACKAGE + "."):
      names.add(node.module.rsplit(".", 1)[1])
  here = pathlib.Path(__file__).parent
  return [suite] + [here / f"{n}.py" for n in sorted(names) if (here / f"{n}.py") != suite]


def digest(suite_file):
  return digest_files(_sources(suite_file))


def digest_files(paths):
  """SHA-256 of the names and bytes of `paths`."""
  h = hashlib.sha256()
  for p in paths:
    p = pathlib.Path(p)
    h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
  return h.hexdigest()


def write_doc(file, doc):
  """Writes a JSON document xz-compressed (the same document gives the same bytes)."""
  text = json.dumps(doc, separators=(",", ":"), allow_nan=False) + "\n"
  pathlib.Path(file).parent.mkdir(exist_ok=True)
  pathlib.Path(file).write_bytes(lzma.compress(text.encode(), preset=9 | lzma.PRESET_EXTREME))


def read_doc(file):
  return json.loads(lzma.decompress(pathlib.Path(file).read_bytes()))


def path(suite_file):
  return DATA / f"{_stem(suite_file)}.json.xz"


def rerecord_hint(suite_file):
  return f"re-record with: python -m tests.dtype_tables.record {_stem(suite_file)}"


def write(suite_file, jax_version, outcomes_per_table):
  """Writes the record of a suite: `outcomes_per_table` maps a table's name to a list of
  (case label, Outcome) in case order."""
  tables = {}
  for name, outcomes in outcomes_per_table.items():
    labels = [label for label, _ in outcomes]
    assert len(set(labels)) == len(labels), f"table {name!r} has repeated case labels"
    tables[name] = {label: encode(o) for label, o in outcomes}
  # (xz keeps the ~8 MB of JSON in ~220 KB, a third less than gzip)
  write_doc(path(suite_file), {"jax": jax_version, "sha256": digest(suite_file), "tables": tables})


_LOADED = {}


def load(suite_file):
  """The record of a suite, {"jax": version, "sha256": ..., "tables": {...}}, read once;
  AssertionError (with the command that re-records it) when it is missing or stale."""
  key = str(path(suite_file))
  if key not in _LOADED:
    p = path(suite_file)
    assert p.exists(), f"no record of jax's outcomes for {_stem(suite_file)}: " \
                       f"{rerecord_hint(suite_file)}"
    doc = read_doc(p)
    assert doc["sha256"] == digest(suite_file), (
        f"the record of jax's outcomes for {_stem(suite_file)} is stale (its cases' sources "
        f"changed since it was made with jax {doc['jax']}): {rerecord_hint(suite_file)}")
    _LOADED[key] = doc
  return _LOADED[key]


def recorded_outcomes(suite_file, table_name, cases):
  """jax's recorded Outcome of each case of a table, in case order."""
  doc = load(suite_file)
  table = doc["tables"].get(table_name)
  assert table is not None, f"no record of table {table_name!r}: {rerecord_hint(suite_file)}"
  missing = [c.label for c in cases if c.label not in table]
  assert not missing and len(table) == len(cases), (
      f"the record of table {table_name!r} has other cases ({len(table)}) than the table "
      f"({len(cases)}; {missing[:3]} not recorded): {rerecord_hint(suite_file)}")
  return [decode(table[c.label]) for c in cases]


def stale_outcomes(suite_file, table_name, cases, live):
  """Where the record of a table differs from jax's live outcomes `live`: one line per case,
  or one line saying the record is missing, stale, or of another jax version than the one
  installed now."""
  import jax

  try:
    doc = load(suite_file)
  except AssertionError as e:
    return [str(e)]
  if doc["jax"] != jax.__version__:
    return [f"the record of {_stem(suite_file)} was made with jax {doc['jax']}, jax "
            f"{jax.__version__} is installed"]
  table = doc["tables"].get(table_name, {})
  lines = [f"{label}: recorded, not a case any more" for label in
           sorted(set(table) - {c.label for c in cases})]
  for case, outcome in zip(cases, live, strict=True):
    want = json.loads(json.dumps(encode(outcome)))  # through JSON, as the file holds it
    if table.get(case.label) != want:
      lines.append(f"{case.label}: recorded {table.get(case.label)}, live {want}")
  return lines


class RecordedArrays:
  """jax's output arrays of a test module's cases, recorded in `expected/<module>.json.xz` next
  to it under jax's version and the module's SHA-256 (the same encoding as the tables).

  `get(key, thunk)` is the recorded list of arrays by default; with REVAX_LIVE_ORACLE=1 it is
  `thunk()` (each output through np.asarray), failing where the record differs from it.
  `record(cases)` runs every (key, thunk) with jax and writes the record.
  """

  def __init__(self, test_file, rerecord_command):
    self.test_file = pathlib.Path(test_file)
    self.path = self.test_file.parent / "expected" / f"{self.test_file.stem}.json.xz"
    self.hint = f"re-record with: {rerecord_command}"
    self._doc = None

  @staticmethod
  def _arrays(out):
    return [np.asarray(x) for x in (out if isinstance(out, (list, tuple)) else [out])]

  def _load(self):
    if self._doc is None:
      assert self.path.exists(), f"no record of jax's outputs for {self.test_file.name}: " \
                                 f"{self.hint}"
      doc = read_doc(self.path)
      assert doc["sha256"] == digest_files([self.test_file]), (
          f"the record of jax's outputs for {self.test_file.name} is stale (the file changed "
          f"since it was made with jax {doc['jax']}): {self.hint}")
      self._doc = doc
    return self._doc

  def get(self, key, thunk):
    if not LIVE:
      outputs = self._load()["outputs"]
      assert key in outputs, f"no record of {key!r}: {self.hint}"
      return [decode_array(a) for a in outputs[key]]
    import jax

    live = self._arrays(thunk())
    doc = self._load()
    assert doc["jax"] == jax.__version__, (
        f"the record of {self.test_file.name} was made with jax {doc['jax']}, jax "
        f"{jax.__version__} is installed: {self.hint}")
    now = json.loads(json.dumps([encode_array(a) for a in live]))
    assert doc["outputs"].get(key) == now, \
        f"the record of {key!r} differs from live jax: {self.hint}"
    return live

  def record(self, cases):
    import jax

    outputs = {}
    for key, thunk in cases:
      assert key not in outputs, f"repeated key {key!r}"
      outputs[key] = [encode_array(a) for a in self._arrays(thunk())]
    write_doc(self.path, {"jax": jax.__version__, "sha256": digest_files([self.test_file]),
                          "outputs": outputs})
    return len(outputs)
