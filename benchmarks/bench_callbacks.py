"""Host callback round trip: revax vs JAX, one library per process.

Run: python benchmarks/bench_callbacks.py [--quick]

Measures one jitted call whose program is a single `pure_callback` (the identity on a float32[8]
array, called from XLA through the FFI), on a device-resident input, block_until_ready included:
the callback's full round trip (execute -> handler -> Python -> results copied back).
Each library runs in its own child processes (processes.py, `time_apart`: pairs alternating
which library goes first; a ratio is the median of the per-pair ratios); in revax's child,
revax's compiled program also runs directly on the runtime in the same interleaved rounds as
revax.jit (`timing.revax_program_directly`).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from processes import jitted_child_calls, time_apart
from timing import describe, row

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _identity(a):
  return a


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool):
  """One library's calls of the callback program for processes.time_apart."""
  x = np.arange(8, dtype=np.float32)
  f = lib.jit(lambda v: lib.pure_callback(_identity, lib.ShapeDtypeStruct(v.shape, v.dtype), v))
  return jitted_child_calls(lib_name, lib, f, (lib.device_put(x),), 200 if quick else 500,
                            3 if quick else 9, rtol=0, atol=0)


def rows(quick: bool):
  """[`timing.row` tuple] for benchmarks/run.py: each library in its own processes."""
  return [row("pure_callback round trip inside jit",
              time_apart("bench_callbacks", ["callback"], quick)["callback"], 1.5)]


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
