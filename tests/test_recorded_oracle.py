"""tests/recorded_oracle.py: jax's side of in-process differential tests read from committed
records only while they are current, and every committed record current."""
import glob
import os

import numpy as np
import pytest

from tests import recorded_oracle

ROOT = os.path.dirname(os.path.abspath(__file__))


def test_a_current_record_is_used_and_a_stale_one_is_not(tmp_path, monkeypatch):
  monkeypatch.delenv("REVAX_LIVE_ORACLE", raising=False)
  module = tmp_path / "test_thing.py"
  module.write_text("X = 1\n")
  calls = []

  def compute():
    calls.append(1)
    return np.arange(3.0), "float32"
  monkeypatch.setenv("REVAX_RECORD_ORACLE", "1")
  value = recorded_oracle.Oracle(str(module))(("case", 2), compute)
  assert len(calls) == 1 and value[1] == "float32"
  assert os.path.exists(tmp_path / "expected" / "test_thing.oracle.pkl.xz")
  monkeypatch.delenv("REVAX_RECORD_ORACLE")
  # read back in a new process's Oracle: not computed again, the same value
  got = recorded_oracle.Oracle(str(module))(("case", 2), compute)
  assert len(calls) == 1 and np.array_equal(got[0], np.arange(3.0)) and got[1] == "float32"
  # a part the record lacks is computed live
  recorded_oracle.Oracle(str(module))(("case", 3), compute)
  assert len(calls) == 2
  # REVAX_LIVE_ORACLE=1 computes live
  monkeypatch.setenv("REVAX_LIVE_ORACLE", "1")
  recorded_oracle.Oracle(str(module))(("case", 2), compute)
  assert len(calls) == 3
  monkeypatch.delenv("REVAX_LIVE_ORACLE")
  # the module changed: the record is stale, every call computes live
  module.write_text("X = 2\n")
  recorded_oracle.Oracle(str(module))(("case", 2), compute)
  assert len(calls) == 4


def test_the_key_covers_the_tests_modules_a_module_imports(tmp_path):
  module = tmp_path / "test_a.py"
  module.write_text("from tests import recorded_oracle\n")
  before = recorded_oracle.source_key(str(module))
  assert before == recorded_oracle.source_key(str(module))
  module.write_text("from tests import recorded_children\n")
  assert recorded_oracle.source_key(str(module)) != before


RECORDS = sorted(glob.glob(os.path.join(ROOT, "**", "expected", "*.oracle.pkl.xz"), recursive=True))


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_record_is_current(record):
  """A stale record makes its tests compute jax's side live (slower, still correct): record it
  again with the command this names."""
  folder = os.path.dirname(os.path.dirname(record))
  module = os.path.join(folder, os.path.basename(record).replace(".oracle.pkl.xz", ".py"))
  assert os.path.exists(module), f"{record} has no test module"
  key = recorded_oracle.read_record(record)["key"]
  assert key == recorded_oracle.source_key(module), (
      f"stale: REVAX_RECORD_ORACLE=1 REVAX_LIVE_ORACLE=1 python -m pytest "
      f"{os.path.relpath(module, os.path.dirname(ROOT))} (then commit the record)")
