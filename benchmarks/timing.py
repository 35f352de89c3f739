"""Timing helpers shared by the benchmarks: revax and JAX side by side, in one process.

Calls are timed in interleaved rounds (revax, jax, revax, jax, ...), so that load from elsewhere
on the machine hits every library alike, and reported as paired medians: the median over rounds
of each library's mean time per call, and the median over rounds of the ratio of two libraries
within the same round (a round disturbed by load is disturbed for both, so its ratio stays
honest where its times do not).
"""
from __future__ import annotations

import statistics
import time


class Timings(dict):
  """{name: median seconds per call} of interleaved rounds; `samples` keeps every round's value
  per name, `ratio(a, b)` is the median over rounds of a's time over b's in the same round."""

  def __init__(self, samples: dict):
    super().__init__({name: statistics.median(s) for name, s in samples.items()})
    self.samples = samples

  def ratio(self, a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(self.samples[a], self.samples[b], strict=True))


def libraries() -> dict:
  """{"revax": (revax, revax.numpy), "jax": (jax, jax.numpy)}."""
  import jax
  import jax.numpy as jnp

  import revax
  import revax.numpy as rnp
  return {"revax": (revax, rnp), "jax": (jax, jnp)}


def time_interleaved(calls: dict, number: int, rounds: int, warmup: int = 3) -> Timings:
  """Paired medians of `rounds` interleaved rounds, each the mean over `number` calls of each
  function in `calls` ({name: function}); see `Timings`."""
  for fn in calls.values():
    for _ in range(max(warmup, number // 5)):
      fn()
  samples = {name: [] for name in calls}
  for _ in range(rounds):
    for name, fn in calls.items():
      t = time.perf_counter()
      for _ in range(number):
        fn()
      samples[name].append((time.perf_counter() - t) / number)
  return Timings(samples)


def revax_program_directly(jitted, *args):
  """A function running the executable that `jitted(*args)` runs (revax's compiled program)
  straight on the runtime: `Executable.execute` on the arguments' device buffers, its outputs
  freed when dropped -- no jit front end (no signature lookup, argument checks, Array outputs or
  pytrees). Beside `revax.jit` it shows what the call path adds to the program itself; beside
  JAX, whether a gap is revax's program or revax's call path.

  `args` must be device-resident (revax.device_put) for the call to touch no host data.
  """
  import revax
  compiled = jitted.lower(*args).compile()
  entry = compiled._entry
  program = entry.program
  leaves = list(entry.consts) + revax.tree_util.tree_leaves(args)
  buffers = [revax.device_put(leaf)._device_buffer() for leaf in leaves]
  executable = program.executable
  return lambda: executable.execute(buffers)


def row(label: str, t: Timings, target, unit: str = "us", scale: float = 1e6) -> tuple:
  """A run.py row from interleaved timings of "revax" and "jax" (and "revax direct", when the
  revax call is one jitted program: see `revax_program_directly`), with paired median ratios."""
  extra = {"ratio": t.ratio("revax", "jax")}
  if "revax direct" in t:
    extra["direct"] = t["revax direct"] * scale
    extra["jit/direct"] = t.ratio("revax", "revax direct")
  return (label, unit, t["revax"] * scale, t["jax"] * scale, target, extra)


def per_call_us(fn, number: int, repeats: int = 5, warmup: int = 200) -> float:
  """Median over `repeats` of the mean microseconds per call over `number` calls."""
  for _ in range(min(number, warmup)):
    fn()
  samples = []
  for _ in range(repeats):
    t = time.perf_counter_ns()
    for _ in range(number):
      fn()
    samples.append((time.perf_counter_ns() - t) / number / 1e3)
  return statistics.median(samples)
