"""Records jax's outcomes of the dtype tables in `data/` (see `records.py`):

    python -m tests.dtype_tables.record [MODULE ...]

MODULE is a test module of this folder (test_numpy_unary_table, ...); all of them by default.
Run it after changing a table's cases, `tables.py`, or the installed jax (the record names
jax's version); then `REVAX_LIVE_ORACLE=1 python -m pytest tests/dtype_tables` runs jax live
and checks the new record against it. Recording runs jax only (a few minutes for all).
"""
import importlib
import pathlib
import sys
import time
import warnings

import jax

from tests.dtype_tables import records

MODULES = sorted(p.stem for p in pathlib.Path(__file__).parent.glob("test_*_table.py"))


def record(module_name):
  """Computes jax's outcomes of every table of a test module and writes its record."""
  module = importlib.import_module(f"tests.dtype_tables.{module_name}")
  outcomes = {}
  for table in module.TABLES:
    cases = table.make()
    outcomes[table.name] = list(zip([c.label for c in cases], table.jax_outcomes(cases),
                                    strict=True))
  records.write(module.__file__, jax.__version__, outcomes)
  return sum(len(v) for v in outcomes.values())


def main(argv):
  warnings.simplefilter("ignore")
  for name in argv or MODULES:
    start = time.perf_counter()
    n = record(name)
    size = records.path(name).stat().st_size
    print(f"recorded {name}: {n} cases, {size / 1024:.0f} KiB, "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
  main(sys.argv[1:])
