"""Micro-benchmark of the runtime's hot paths (not collected by pytest; timing lives outside tests).

    python tests/runtime/bench_runtime.py          # revax runtime only
    python tests/runtime/bench_runtime.py --jax    # plus jax's numbers for the same program

Prints, for each system, the best of 5 rounds of median microseconds (the rounds of both systems
interleaved, since this machine's speed drifts) of: copying a small array to the device,
executing a small add with resident buffers, reading a result back, and a full NumPy -> NumPy
call. jax's "put" includes its block_until_ready.
"""
from __future__ import annotations

import sys
import time

import numpy as np

ADD = """module @add {
  func.func public @main(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.add %a, %b : tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
}"""


def median_us(fn, n: int) -> float:
  """The median of `n` timed calls, in microseconds."""
  times = np.empty(n)
  for k in range(n):
    start = time.perf_counter_ns()
    fn()
    times[k] = time.perf_counter_ns() - start
  return float(np.median(times)) / 1e3


def revax_cases() -> dict:
  """The four measured operations, as zero-argument callables."""
  from revax._src.runtime.client import get_backend
  backend = get_backend()
  exe = backend.compile(ADD)
  x = np.arange(16, dtype=np.float32).reshape(4, 4)
  y = np.ones((4, 4), np.float32)
  bx, by = backend.buffer_from_numpy(x), backend.buffer_from_numpy(y)
  (result,) = exe.execute([bx, by])
  assert np.array_equal(result.to_numpy(), x + y)

  def full_call():
    (out,) = exe.execute([backend.buffer_from_numpy(x), backend.buffer_from_numpy(y)])
    return out.to_numpy()

  return {"put": lambda: backend.buffer_from_numpy(x), "execute": lambda: exe.execute([bx, by]),
          "to_numpy": result.to_numpy, "full": full_call}


def jax_cases() -> dict:
  """The same operations in jax, in this process (jax's XLA and the plugin coexist)."""
  import jax
  add = jax.jit(lambda a, b: a + b)
  x = np.arange(16, dtype=np.float32).reshape(4, 4)
  y = np.ones((4, 4), np.float32)
  dx, dy = jax.device_put(x), jax.device_put(y)
  result = add(dx, dy).block_until_ready()
  return {"put": lambda: jax.device_put(x).block_until_ready(),
          "execute": lambda: add(dx, dy).block_until_ready(),
          "to_numpy": lambda: np.array(result), "full": lambda: np.asarray(add(x, y))}


def measure(cases: dict[str, dict], n: int, rounds: int) -> dict[str, dict[str, float]]:
  """Best-of-`rounds` medians, the systems interleaved so that they share machine conditions."""
  best = {system: {key: float("inf") for key in fns} for system, fns in cases.items()}
  for fns in cases.values():
    for fn in fns.values():
      for _ in range(n // 10):  # warm up
        fn()
  for _ in range(rounds):
    for key in _LABELS:
      for system, fns in cases.items():
        best[system][key] = min(best[system][key], median_us(fns[key], n))
  return best


_LABELS = {
    "put": "put 4x4 f32 (+ free)",
    "execute": "execute only, resident buffers (+ free out)",
    "to_numpy": "to_numpy of a 4x4 result",
    "full": "full call numpy -> numpy (2 puts, execute, read)",
}


def main() -> None:
  cases = {"revax": revax_cases()}
  if "--jax" in sys.argv:
    cases["jax"] = jax_cases()
  results = measure(cases, n=2000, rounds=5)
  for key, label in _LABELS.items():
    ours = results["revax"][key]
    line = f"{label:50s} revax {ours:7.1f} us"
    if "jax" in results:
      theirs = results["jax"][key]
      line += f"   jax {theirs:7.1f} us   ratio {ours / theirs:5.2f}"
    print(line)


if __name__ == "__main__":
  main()
