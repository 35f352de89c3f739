"""Re-records jax's outcomes for the edge suites: `python -m tests.edges.record [SUITE ...]`
(SUITE is a module name of this folder, e.g. test_zero_size; all suites by default)."""
import importlib
import sys
import warnings

from tests.edges import harness

SUITES = ["test_zero_size", "test_nan_inf", "test_exceptions", "test_ordering",
          "test_degenerate_derivatives", "test_ownership", "test_dtypes_lowp"]

if __name__ == "__main__":
  warnings.simplefilter("ignore")
  for name in sys.argv[1:] or SUITES:
    module = importlib.import_module(f"tests.edges.{name}")
    harness.record(module.__file__, module.oracle_cases())
    print(f"recorded {name}")
