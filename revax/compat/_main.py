"""`python -m revax.run_as_jax`: install the jax-compatibility mode, then run a script or a
module as `__main__`."""
from __future__ import annotations

import runpy
import sys

from revax.compat._finder import install

USAGE = ("usage: python -m revax.run_as_jax script.py [args...]\n"
         "       python -m revax.run_as_jax -m module [args...]")


def main(argv=None) -> None:
  """Run `argv` (default: sys.argv[1:]) with `import jax` resolving to revax."""
  argv = list(sys.argv[1:] if argv is None else argv)
  if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
    print(USAGE, file=sys.stderr if argv[:1] != ["-h"] and argv[:1] != ["--help"] else sys.stdout)
    raise SystemExit(0 if argv[:1] in (["-h"], ["--help"]) else 2)
  install()
  if argv[0] == "-m":
    sys.argv = argv[1:]
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
  else:
    sys.argv = argv
    sys.path.insert(0, __import__("os").path.dirname(argv[0]) or ".")
    runpy.run_path(argv[0], run_name="__main__")
