"""Timing helpers shared by the benchmarks: revax and JAX side by side, in one process.

Every figure is the best of several interleaved rounds (revax, jax, revax, jax, ...): the fastest
round is the one least disturbed by other load on the machine, and interleaving lets that load
hit both libraries alike.
"""
from __future__ import annotations

import statistics
import time


def libraries() -> dict:
  """{"revax": (revax, revax.numpy), "jax": (jax, jax.numpy)}."""
  import jax
  import jax.numpy as jnp

  import revax
  import revax.numpy as rnp
  return {"revax": (revax, rnp), "jax": (jax, jnp)}


def time_interleaved(calls: dict, number: int, rounds: int, warmup: int = 3) -> dict:
  """{name: seconds per call}: the fastest of `rounds` means over `number` calls of each
  function in `calls`, the functions' rounds interleaved."""
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
  return {name: min(s) for name, s in samples.items()}


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
