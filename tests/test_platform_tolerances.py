"""tests/platform_tolerances.py changes nothing on the CPU, and on a TPU exactly what it declares."""
import numpy as np
import pytest

from tests import platform_tolerances as pt
from tests.lax.op_db import all_records

RECORDS = {r.name: r for r in all_records()}


def test_every_declared_record_exists_and_has_a_reason():
  assert set(pt.RECORD_DIFFERENCES) <= set(RECORDS)
  assert all(isinstance(why, str) and why for why in pt.RECORD_DIFFERENCES.values())


@pytest.mark.skipif(pt.ON_TPU, reason="checks the CPU's view")
def test_the_cpu_suite_is_unchanged():
  assert pt.tolerance(1e-6, 0.0) == (1e-6, 0.0)
  for name in pt.RECORD_DIFFERENCES:
    record = RECORDS[name]
    assert pt.record_tolerance(record) == (record.rtol, record.atol)
    assert pt.record_marks(record) == []
  with pytest.raises(AssertionError):
    pt.assert_same_values(np.float32([1.0]), np.float32([1.0 + 1e-6]))
  assert pt.allclose_tol(rtol=1e-6) == {"rtol": 1e-6, "atol": 0.0}
  assert pt.as_the_oracles_device("TpuDevice(id=0)") == "TpuDevice(id=0)"


def test_on_a_tpu_the_declared_differences_apply(monkeypatch):
  monkeypatch.setattr(pt, "ON_TPU", True)
  assert pt.tolerance(1e-6, None) == (pt.TPU_RTOL, pt.TPU_ATOL)
  assert pt.tolerance(1e-2, 5e-2) == (1e-2, 5e-2)  # never tighter than the CPU's
  log = RECORDS["log_f32"]
  assert pt.record_tolerance(log) == pt.tolerance(log.rtol, log.atol)
  assert pt.record_marks(log) == []
  assert pt.record_marks(RECORDS["rem_f32_signs"])[0].kwargs["reason"].startswith("TPU: ")
  untouched = RECORDS["add_f32"] if "add_f32" in RECORDS else next(
      r for n, r in RECORDS.items() if n not in pt.RECORD_DIFFERENCES)
  assert pt.record_tolerance(untouched) == (untouched.rtol, untouched.atol)
  pt.assert_same_values(np.float32([1.0]), np.float32([1.0 + 1e-6]))
  with pytest.raises(AssertionError):  # integers (random bits) stay exact
    pt.assert_same_values(np.uint32([1]), np.uint32([2]))
  assert pt.allclose_tol(rtol=1e-6) == {"rtol": pt.TPU_RTOL, "atol": pt.TPU_ATOL}
  assert pt.as_the_oracles_device("NamedSharding(TpuDevice(id=0))") == (
      "NamedSharding(CpuDevice(id=0))")
