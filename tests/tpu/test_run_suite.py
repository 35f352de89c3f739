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
