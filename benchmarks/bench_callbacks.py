"""Host callback round trip: revax vs JAX, side by side in one process.

Run: python benchmarks/bench_callbacks.py [--quick]

Measures one jitted call whose program is a single `pure_callback` (the identity on a float32[8]
array, called from XLA through the FFI), on a device-resident input, block_until_ready included:
the callback's full round trip (execute -> handler -> Python -> results copied back). Calls are
timed in interleaved rounds (revax, JAX, revax, ...); a value is the median round's mean time per
call, a ratio the median of the per-round ratios (paired); revax's compiled program also runs
directly on the runtime in the same rounds (`timing.revax_program_directly`).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from timing import describe, jitted_calls, libraries, row, time_interleaved

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _identity(a):
  return a


def rows(quick: bool):
  """[(label, unit, revax value, JAX value, target ratio)] for benchmarks/run.py."""
  libs = libraries()
  calls = {}
  x = np.arange(8, dtype=np.float32)
  for name, (lib, np_mod) in libs.items():
    f = lib.jit(lambda v, lib=lib: lib.pure_callback(
        _identity, lib.ShapeDtypeStruct(v.shape, v.dtype), v))
    arg = lib.device_put(x)
    np.testing.assert_array_equal(np.asarray(f(arg)), x)
    calls.update(jitted_calls(name, lib, f, arg))
  t = time_interleaved(calls, number=200 if quick else 500, rounds=3 if quick else 9)
  return [row("pure_callback round trip inside jit", t, 1.5)]


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
