"""Control flow, revax vs JAX: XLA temp memory of jit(grad) of a tanh RNN written with scan (the
per-step residuals the backward pass needs, nothing more), trace+lower time of that program, its
steady-state run time, and eager scan/cond/while dispatch.

Run: python benchmarks/bench_control_flow.py [--quick]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np

HIDDEN = 64


def _libs():
  import jax
  import jax.numpy as jnp
  import revax
  import revax.numpy as rnp
  return {"revax": (revax, rnp), "jax": (jax, jnp)}


def rnn_loss_fn(lib, np_mod):
  """loss(params, xs) of a tanh RNN: h <- tanh(W h + U x + b), summed squares of the states."""
  def loss(params, xs):
    W, U, b = params

    def step(h, x):
      h = np_mod.tanh(W @ h + U @ x + b)
      return h, np_mod.sum(h * h)

    h, per_step = lib.lax.scan(step, np_mod.zeros(HIDDEN, np.float32), xs)
    return np_mod.sum(per_step) + np_mod.sum(h)
  return loss


def rnn_inputs(steps: int, seed: int = 0):
  rng = np.random.default_rng(seed)
  W = (rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)
  U = (rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)
  b = rng.standard_normal(HIDDEN).astype(np.float32) * 0.1
  xs = rng.standard_normal((steps, HIDDEN)).astype(np.float32)
  return (W, U, b), xs


def grad_temp_bytes(lib, np_mod, steps: int) -> int:
  """`temp_size_in_bytes` of jit(grad(rnn_loss)) compiled for `steps` steps."""
  params, xs = rnn_inputs(steps)
  f = lib.jit(lib.grad(rnn_loss_fn(lib, np_mod)))
  return int(f.lower(params, xs).compile().memory_analysis().temp_size_in_bytes)


def grad_lower_seconds(lib, np_mod, steps: int) -> float:
  params, xs = rnn_inputs(steps)
  f = lib.jit(lib.grad(rnn_loss_fn(lib, np_mod)))
  t = time.perf_counter()
  f.lower(params, xs).as_text()
  return time.perf_counter() - t


def grad_run_us(lib, np_mod, steps: int, calls: int) -> float:
  params, xs = rnn_inputs(steps)
  params, xs = lib.device_put(params), lib.device_put(xs)
  f = lib.jit(lib.grad(rnn_loss_fn(lib, np_mod)))
  lib.block_until_ready(f(params, xs))
  samples = []
  for _ in range(3):
    t = time.perf_counter_ns()
    for _ in range(calls):
      out = f(params, xs)
    lib.block_until_ready(out)
    samples.append((time.perf_counter_ns() - t) / calls / 1e3)
  return statistics.median(samples)


def eager_scan_us(lib, np_mod, steps: int) -> float:
  """One eager (un-jitted) cumulative product scan of `steps` steps."""
  xs = lib.device_put(np.linspace(0.9, 1.1, steps, dtype=np.float32))
  f = lambda: lib.lax.scan(lambda c, x: (c * x, c), np.float32(1), xs)
  lib.block_until_ready(f())
  t = time.perf_counter_ns()
  lib.block_until_ready(f())
  return (time.perf_counter_ns() - t) / 1e3


def eager_cond_us(lib, np_mod, calls: int) -> float:
  x = lib.device_put(np.float32(0.5))
  f = lambda: lib.lax.cond(x > 0, np_mod.sin, np_mod.cos, x)
  lib.block_until_ready(f())
  t = time.perf_counter_ns()
  for _ in range(calls):
    out = f()
  lib.block_until_ready(out)
  return (time.perf_counter_ns() - t) / calls / 1e3


def _best(measure, rounds: int) -> dict:
  libs = _libs()
  best = {}
  for _ in range(rounds):
    for name, (lib, np_mod) in libs.items():
      gc.collect()
      v = measure(lib, np_mod)
      best[name] = v if name not in best else min(best[name], v)
  return best


def rows(quick: bool) -> list:
  """(label, unit, revax, jax, target ratio) rows; memory rows are in bytes ('B')."""
  rounds = 1 if quick else 3
  out = []
  for steps in ((1000,) if quick else (1000, 2000)):
    mem = _best(lambda lib, np_mod: grad_temp_bytes(lib, np_mod, steps), 1)
    out.append((f"jit(grad(tanh RNN, scan {steps} steps, H={HIDDEN})): XLA temp bytes", "B",
                mem["revax"], mem["jax"], 1.25))
  low = _best(lambda lib, np_mod: grad_lower_seconds(lib, np_mod, 1000), rounds)
  out.append(("jit(grad(tanh RNN scan)): trace+lower", "s", low["revax"], low["jax"], None))
  run = _best(lambda lib, np_mod: grad_run_us(lib, np_mod, 1000, 5 if quick else 20), rounds)
  out.append(("jit(grad(tanh RNN scan 1000 steps)): run", "us", run["revax"], run["jax"], None))
  es = _best(lambda lib, np_mod: eager_scan_us(lib, np_mod, 100), rounds)
  out.append(("eager scan, 100 steps of a scalar product", "us", es["revax"], es["jax"], None))
  ec = _best(lambda lib, np_mod: eager_cond_us(lib, np_mod, 20 if quick else 100), rounds)
  out.append(("eager cond (fresh branch functions each call)", "us", ec["revax"], ec["jax"],
              None))
  return out


def _fmt(v, unit):
  if unit == "B":
    return f"{v / 1024:.1f} KiB"
  return f"{v * 1e3:.1f} ms" if unit == "s" else f"{v:.1f} us"


if __name__ == "__main__":
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true")
  args = parser.parse_args()
  for label, unit, r, j, target in rows(args.quick):
    tgt = f" (target <= {target}x)" if target is not None else ""
    print(f"{label}: revax {_fmt(r, unit)}, jax {_fmt(j, unit)}, ratio {r / j:.2f}x{tgt}")
