"""Run a program with `import jax` resolving to revax (revax's jax-compatibility mode).

    python -m revax.run_as_jax script.py [args...]
    python -m revax.run_as_jax -m module [args...]

The program runs as `python script.py` (or `python -m module`) would run it: as `__main__`,
with `sys.argv` set to the script (or module) and its arguments.
"""
from revax.compat._main import main as _main

if __name__ == "__main__":
  _main()
