"""FFT run time, revax vs JAX, side by side in one process.

Run: python benchmarks/bench_fft.py [--quick]

Measures the steady-state run time of a jitted `fft` of 2**20 complex64 values and a jitted
`rfft` of 2**20 float32 values (jnp.fft.fft / jnp.fft.rfft: one `stablehlo.fft` each, which XLA
runs on both sides, so the ratio shows the call overhead around the same transform). Each
library's call is timed in interleaved rounds (revax, JAX, revax, ...) so that load from other
processes hits both alike; a value is the median round's mean time per call, a ratio the median of
the per-round ratios (paired); revax's compiled program also runs directly on the runtime in the
same rounds (`timing.revax_program_directly`).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from timing import describe, jitted_calls, libraries, row, time_interleaved

os.environ.setdefault("JAX_PLATFORMS", "cpu")

N = 2 ** 20


def fft_calls(libs, kind: str):
  rng = np.random.default_rng(0)
  x = rng.standard_normal(N).astype(np.float32)
  if kind == "fft":
    x = (x + 1j * rng.standard_normal(N)).astype(np.complex64)
  calls, outs = {}, {}
  for name, (lib, np_mod) in libs.items():
    f = lib.jit(getattr(np_mod.fft, kind))
    a = lib.device_put(x)
    outs[name] = np.asarray(f(a))
    calls.update(jitted_calls(name, lib, f, a))
  scale = np.abs(outs["jax"]).max()
  np.testing.assert_allclose(outs["revax"], outs["jax"], rtol=1e-4, atol=1e-5 * scale)
  return calls


def rows(quick: bool):
  """[(label, unit, revax value, JAX value, target ratio)] for benchmarks/run.py."""
  libs = libraries()
  rounds = 5 if quick else 11
  out = []
  for kind, dtype in (("fft", "complex64"), ("rfft", "float32")):
    t = time_interleaved(fft_calls(libs, kind), number=2 if quick else 5, rounds=rounds)
    out.append(row(f"jit(jnp.fft.{kind}) of 2**20 {dtype}", t, 1.5))
  return out


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
