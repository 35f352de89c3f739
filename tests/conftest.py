"""Fixtures shared across the suite."""
import pathlib
import re
import sys

import jax
import pytest

import revax
from revax._src.runtime import backends

# Where the suite runs on a TPU (tests/tpu/run_suite.py), float32 matrix products and
# convolutions run at full float32 precision, as the jax oracle does on the CPU: the TPU's
# default precision rounds their operands to bfloat16 (JAX's documented default there), which no
# float32 tolerance here is meant to absorb. This is the one place where the platform changes
# how tests compute; the CPU suite is unchanged. The oracle gets the same setting (a no-op for
# XLA:CPU's float32), so that tests comparing the two libraries' configurations agree.
if backends.platform_order()[0] == "tpu":
  revax.config.update("jax_default_matmul_precision", "highest")
  jax.config.update("jax_default_matmul_precision", "highest")


# --- bytecode for every process the suite starts ----------------------------------------------
# Where Python is told not to write bytecode (PYTHONDONTWRITEBYTECODE=1, as in some CI shells),
# every process compiles each module it imports from source again: each pytest worker and each
# child process the suite starts (sharding suites on 4 CPU devices, examples and benchmarks end
# to end, the fast path's suites without the extension) spent 0.5-1.5 s of CPU compiling revax's
# modules before doing anything. Python still reads bytecode caches that exist, so the
# controller writes them once (compileall skips what is up to date; a cache is checked against
# its source's modification time, so an edited file is compiled afresh as usual). Test modules
# are left out: pytest rewrites their asserts into caches of its own.
ROOT = pathlib.Path(__file__).resolve().parents[1]


def pytest_configure(config):
  if hasattr(config, "workerinput") or not sys.flags.dont_write_bytecode:
    return  # a worker (the controller has written them), or Python writes its own caches
  import compileall
  test_module = re.compile(r"[/\\]test_[^/\\]*\.py$")
  for name in ("revax", "tests", "examples", "benchmarks"):
    try:
      compileall.compile_dir(ROOT / name, quiet=2, rx=test_module)
    except OSError:  # a read-only tree: every process compiles as before
      pass


@pytest.fixture
def x64():
  """Both libraries with 64-bit types on for the test, off again after it."""
  revax.config.update("enable_x64", True)
  jax.config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    revax.config.update("enable_x64", False)
    jax.config.update("jax_enable_x64", False)


@pytest.fixture
def frozen_heap():
  """The objects earlier tests left in this worker frozen out of the collector for the test.

  Leak checkers (both libraries' `checking_leaks`) run `gc.collect()` and `gc.get_referrers`,
  which walk every object the collector tracks: late in a full-suite worker that heap made one
  such test take 10-20 s. `gc.freeze()` moves the existing objects to the permanent generation,
  which neither walks; everything the test creates is still seen. They stay frozen until
  pytest_runtest_setup below unfreezes the worker's heap.
  """
  import gc
  gc.freeze()
  yield


# --- the collector and a long-lived worker ------------------------------------------------------
# Every object a test file leaves alive (the libraries' caches of traced and compiled programs,
# jaxprs, the oracle's own state) stays in the collector's oldest generation, and each automatic
# full collection walks all of it again: late in a full-suite worker that made test files several
# times slower than alone (tests/numpy/test_fft.py 12.5 s after two other files with this, 22.5 s
# without). So where a new test file begins, its predecessors' survivors are collected and then
# frozen (`gc.freeze()`: the permanent generation, which collections do not walk). Every 25th
# file they are unfrozen first, so that cyclic garbage among them is still freed now and then.
_gc_state = {"module": None, "files": 0}


def pytest_runtest_setup(item):
  import gc
  module = getattr(item, "module", None)
  if module is None or module is _gc_state["module"]:
    return
  _gc_state["module"] = module
  _gc_state["files"] += 1
  if _gc_state["files"] % 25 == 0:
    gc.unfreeze()
  gc.collect()
  gc.freeze()
