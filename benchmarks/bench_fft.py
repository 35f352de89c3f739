"""FFT run time, revax vs JAX, one library per process.

Run: python benchmarks/bench_fft.py [--quick]

Measures the steady-state run time of a jitted `fft` of 2**20 complex64 values and a jitted
`rfft` of 2**20 float32 values (jnp.fft.fft / jnp.fft.rfft: one `stablehlo.fft` each, which XLA
runs on both sides, so the ratio shows the call overhead around the same transform).
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

N = 2 ** 20


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool):
  """One library's calls of `group` ("fft" or "rfft") for processes.time_apart."""
  rng = np.random.default_rng(0)
  x = rng.standard_normal(N).astype(np.float32)
  if group == "fft":
    x = (x + 1j * rng.standard_normal(N)).astype(np.complex64)
  f = lib.jit(getattr(np_mod.fft, group))
  return jitted_child_calls(lib_name, lib, f, (lib.device_put(x),), 2 if quick else 5,
                            3 if quick else 5, rtol=1e-4, atol=1e-5, scaled=True)


def rows(quick: bool):
  """[`timing.row` tuples] for benchmarks/run.py: each library in its own processes."""
  t = time_apart("bench_fft", ["fft", "rfft"], quick)
  return [row(f"jit(jnp.fft.{kind}) of 2**20 {dtype}", t[kind], 1.5)
          for kind, dtype in (("fft", "complex64"), ("rfft", "float32"))]


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
