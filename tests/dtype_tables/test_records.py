"""The records of jax's outcomes (`records.py`): exact round trips of every value the tables
produce, and clear failures for a missing, stale or incomplete record."""
import json

import ml_dtypes
import numpy as np
import pytest

from tests.dtype_tables import records, tables
from tests.dtype_tables.records import Outcome

SPECIAL = [0.0, -0.0, 1.5, -2.25, np.nan, np.inf, -np.inf, 1e-30, 3.4e38, 2.0 ** -149]


def _round_trip(outcome):
  return records.decode(json.loads(json.dumps(records.encode(outcome), allow_nan=False)))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16,
                                   np.uint32, np.int64, ml_dtypes.bfloat16, np.float16,
                                   np.float32, np.float64, np.complex64, np.complex128])
def test_values_round_trip_exactly(dtype):
  dtype = np.dtype(dtype)
  if dtype.kind in "fcV":
    with np.errstate(over="ignore", under="ignore"):
      vals = np.array(SPECIAL, np.float64).astype(dtype)
    if dtype.kind == "c":
      vals.imag = vals.real[::-1]
  else:
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    vals = (np.array([True, False]) if info is None
            else np.array([info.min, info.max, 0, 1], dtype))
  vals = vals.reshape(-1, 2)
  avals = ((vals.shape, dtype.name, True),)
  got = _round_trip(Outcome(avals=avals, values=(vals,)))
  assert got.avals == avals
  (v,) = got.values
  assert v.dtype == dtype and v.shape == vals.shape
  # bit for bit: NaN (NumPy's quiet NaN; the comparison ignores NaN's sign and payload),
  # infinities, subnormals and the sign of zero survive
  assert v.tobytes() == vals.tobytes()


def test_errors_and_abstract_outcomes_round_trip():
  err = _round_trip(Outcome(TypeError, "lax.add requires arguments to have the same dtypes, "
                                       "got float16, float32 at 0x7f00deadbeef" + "x" * 200))
  assert err.error is TypeError and err.message.startswith("lax.add requires")
  assert "0x7f" not in err.message and len(err.message) == 90
  abstract = _round_trip(Outcome(avals=(((2,), "float32", False), ((), "int32", True))))
  assert abstract.values is None
  assert abstract.avals == (((2,), "float32", False), ((), "int32", True))


def _suite(tmp_path, monkeypatch, text="X = 1\n"):
  monkeypatch.setattr(records, "DATA", tmp_path / "data")
  monkeypatch.setattr(records, "_LOADED", {})
  suite = tmp_path / "test_fake_table.py"
  suite.write_text("from tests.dtype_tables import tables\n" + text)
  return suite


def _case(label):
  return tables.Case(label, lambda lib: None, ())


def test_missing_stale_and_incomplete_records_fail_clearly(tmp_path, monkeypatch):
  suite = _suite(tmp_path, monkeypatch)
  with pytest.raises(AssertionError, match="no record.*python -m tests.dtype_tables.record "
                                           "test_fake_table"):
    records.recorded_outcomes(suite, "t", [])
  records.write(suite, "0.10.2", {"t": [("f()", Outcome(ValueError, "bad"))]})
  (got,) = records.recorded_outcomes(suite, "t", [_case("f")])
  assert got.error is ValueError
  with pytest.raises(AssertionError, match="other cases"):
    records.recorded_outcomes(suite, "t", [_case("f"), _case("g")])
  with pytest.raises(AssertionError, match="no record of table 'u'"):
    records.recorded_outcomes(suite, "u", [_case("f")])
  suite.write_text(suite.read_text() + "Y = 2\n")  # the cases' source changed
  monkeypatch.setattr(records, "_LOADED", {})
  with pytest.raises(AssertionError, match="stale"):
    records.recorded_outcomes(suite, "t", [_case("f")])


def test_live_check_finds_every_kind_of_stale_record(tmp_path, monkeypatch):
  import jax
  suite = _suite(tmp_path, monkeypatch)
  f32 = ((2,), "float32", False)
  rec = [("f()", Outcome(avals=(f32,), values=(np.array([1.0, np.nan], np.float32),))),
         ("g()", Outcome(TypeError, "no"))]
  records.write(suite, jax.__version__, {"t": rec})
  cases = [_case("f"), _case("g")]
  assert records.stale_outcomes(suite, "t", cases, [o for _, o in rec]) == []
  one_ulp = np.nextafter(np.float32(1), np.float32(2))
  live = [Outcome(avals=(f32,), values=(np.array([one_ulp, np.nan], np.float32),)),
          Outcome(ValueError, "no")]
  lines = records.stale_outcomes(suite, "t", cases, live)
  assert [line.split(":")[0] for line in lines] == ["f()", "g()"]
  records.write(suite, "0.0.1", {"t": rec})
  monkeypatch.setattr(records, "_LOADED", {})
  (line,) = records.stale_outcomes(suite, "t", cases, [o for _, o in rec])
  assert "made with jax 0.0.1" in line


def test_recorded_arrays_round_trip_and_fail_clearly(tmp_path, monkeypatch):
  monkeypatch.setattr(records, "LIVE", False)
  test_file = tmp_path / "test_fake.py"
  test_file.write_text("X = 1\n")
  rec = records.RecordedArrays(test_file, "python -m fake")
  with pytest.raises(AssertionError, match="no record.*python -m fake"):
    rec.get("a", None)
  draws = [np.array([1.5, -0.0, np.inf], np.float32), np.arange(4, dtype=np.uint32)]
  assert rec.record([("a", lambda: draws), ("b", lambda: draws[1])]) == 2
  got = records.RecordedArrays(test_file, "python -m fake")
  assert [a.tobytes() for a in got.get("a", None)] == [a.tobytes() for a in draws]
  with pytest.raises(AssertionError, match="no record of 'c'"):
    got.get("c", None)
  test_file.write_text("X = 2\n")
  with pytest.raises(AssertionError, match="stale.*python -m fake"):
    records.RecordedArrays(test_file, "python -m fake").get("a", None)
