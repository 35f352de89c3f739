"""The chip runner's own checks, on any machine (tests/tpu/run_suite.py)."""
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import run_suite  # noqa: E402


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's /proc")
def test_memory_watch_counts_the_children_of_a_target():
  # a target's children (jax oracles, fresh interpreters) hold memory too: the device machine
  # was lost once to a target whose memory the watch of the pytest process alone did not see
  child = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
           "'x = bytearray(200 * 2**20); x[::4096] = b\"1\" * len(x[::4096]); "
           "import time; time.sleep(30)']); time.sleep(30)")
  process = subprocess.Popen([sys.executable, "-c", child], start_new_session=True)
  try:
    deadline = time.monotonic() + 20
    while run_suite._rss_bytes(process.pid) < 200 * 2**20 and time.monotonic() < deadline:
      time.sleep(0.2)
    assert run_suite._rss_bytes(process.pid) >= 200 * 2**20
  finally:
    os.killpg(process.pid, 9)
    process.wait()
  assert run_suite._rss_bytes(process.pid) == 0  # gone


def test_merge_reads_runs_in_the_natural_order_of_their_names():
  names = ["r/suite_10.tar.gz", "r/suite_2.tar.gz", "r/suite_1.tar.gz", "r/suite_3_rerun.tar.gz"]
  assert sorted(names, key=run_suite.natural_key) == [
      "r/suite_1.tar.gz", "r/suite_2.tar.gz", "r/suite_3_rerun.tar.gz", "r/suite_10.tar.gz"]


def test_node_ids_key_as_junit_cases():
  assert run_suite.node_key("tests/a/test_b.py::test_c[x-1]") == ("tests/a/test_b.py",
                                                                  "test_c[x-1]")
  assert run_suite.node_key("tests/a/test_b.py::TestK::test_c") == (
      "tests/a/test_b/TestK.py", "test_c")  # (junit's classname joins the class to the module)
  assert run_suite.node_key("tests/a/test_b.py::test_s[3::-1]") == ("tests/a/test_b.py",
                                                                    "test_s[3::-1]")


def test_merge_counts_never_run_tests_and_groups_skips(tmp_path):
  cases = {("tests/a/test_b.py", "test_c"): ("passed", ""),
           ("tests/a/test_b.py", "test_d"): ("skipped", "TPU: one reason\nmore"),
           ("tests/a/test_e.py", "test_f"): ("skipped", "TPU: one reason"),
           ("tests/a/test_e.py", "test_g"): ("skipped", "another")}
  ids = tmp_path / "ids.txt"
  ids.write_text("tests/a/test_b.py::test_c\ntests/a/test_b.py::test_d\n"
                 "tests/a/test_h.py::test_i\ntests/a/test_h.py::test_j\n\n2 tests collected\n")
  lines = run_suite.never_run_lines(cases, str(ids))
  assert lines[0].startswith("Of the 4 tests collected on the CPU, 2 have run on the chip; 2 ")
  assert lines[2:] == ["- tests/a/test_h.py: 2"]
  assert run_suite.skip_lines(cases) == [
      "- 2: TPU: one reason (tests/a/test_b.py, tests/a/test_e.py)",
      "- 1: another (tests/a/test_e.py)"]
