"""Print, per table of a dtype-table test module, how many cases differ from jax.

    python -m tests.dtype_tables.report tests.dtype_tables.test_lax_binary_table [-v]

(-v prints every differing case; jax's recorded outcomes, or live ones with
REVAX_LIVE_ORACLE=1). The numbers in the closing notes of issue 33 come from here.
"""
import importlib
import sys


def main(argv):
  verbose = "-v" in argv
  for module_name in [a for a in argv if not a.startswith("-")]:
    module = importlib.import_module(module_name)
    total = differing = 0
    for table in module.TABLES:
      cases = table.make()
      diffs = table.differences(module.__file__)
      total += 1
      differing += bool(diffs)
      print(f"{module_name.rsplit('.', 1)[-1]}: {table.name}: {len(diffs)} of {len(cases)} "
            f"cases differ")
      for d in diffs if verbose else ():
        print("   ", d)
    print(f"{module_name}: {differing} of {total} tables differ")


if __name__ == "__main__":
  main(sys.argv[1:])
