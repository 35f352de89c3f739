"""Micro-benchmark of the runtime's hot paths (not collected by pytest; timing lives outside tests).

    python tests/runtime/bench_runtime.py          # revax runtime only
    python tests/runtime/bench_runtime.py --jax    # plus jax's numbers for the same program

Prints the best-of-5 median microseconds of: copying a small array to the device, executing a small add
with resident buffers, reading a result back, and a full NumPy -> NumPy call.
"""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

ADD = """module @add {
  func.func public @main(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.add %a, %b : tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
}"""

_JAX_SNIPPET = """
import time, numpy as np, jax, jax.numpy as jnp
def median_us(f, n=%d, warmup=200, rounds=5):
    for _ in range(warmup): f()
    ts, best = np.empty(n), float("inf")
    for _ in range(rounds):
        for k in range(n):
            t = time.perf_counter_ns(); f(); ts[k] = time.perf_counter_ns() - t
        best = min(best, float(np.median(ts)) / 1e3)
    return best
f = jax.jit(lambda a, b: a + b)
x = np.ones((4, 4), np.float32); y = np.ones((4, 4), np.float32)
dx, dy = jax.device_put(x), jax.device_put(y)
f(dx, dy).block_until_ready()
print("put", median_us(lambda: jax.device_put(x).block_until_ready()))
print("execute", median_us(lambda: f(dx, dy).block_until_ready()))
r = f(dx, dy)
print("to_numpy", median_us(lambda: np.array(r)))
print("full", median_us(lambda: np.asarray(f(x, y))))
"""


def median_us(fn, n: int = 3000, warmup: int = 300, rounds: int = 5) -> float:
  """The best of `rounds` medians of `n` timed calls (the best round is the least disturbed)."""
  for _ in range(warmup):
    fn()
  best = float("inf")
  times = np.empty(n)
  for _ in range(rounds):
    for k in range(n):
      start = time.perf_counter_ns()
      fn()
      times[k] = time.perf_counter_ns() - start
    best = min(best, float(np.median(times)) / 1e3)
  return best


def revax_numbers(n: int) -> dict[str, float]:
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

  return {
      "put": median_us(lambda: backend.buffer_from_numpy(x), n),
      "execute": median_us(lambda: exe.execute([bx, by]), n),
      "to_numpy": median_us(result.to_numpy, n),
      "full": median_us(full_call, n),
  }


def jax_numbers(n: int) -> dict[str, float]:
  out = subprocess.run([sys.executable, "-c", _JAX_SNIPPET % n], capture_output=True, text=True,
                       check=True).stdout
  return {name: float(value) for name, value in (line.split() for line in out.splitlines())}


_LABELS = {
    "put": "put 4x4 f32 (+ free)",
    "execute": "execute only, resident buffers (+ free out)",
    "to_numpy": "to_numpy of a 4x4 result",
    "full": "full call numpy -> numpy (2 puts, execute, read)",
}


def main() -> None:
  n = 3000
  ours = revax_numbers(n)
  theirs = jax_numbers(n) if "--jax" in sys.argv else {}
  for key, label in _LABELS.items():
    line = f"{label:50s} revax {ours[key]:7.1f} us"
    if key in theirs:
      line += f"   jax {theirs[key]:7.1f} us   ratio {ours[key] / theirs[key]:5.2f}"
    print(line)


if __name__ == "__main__":
  main()
