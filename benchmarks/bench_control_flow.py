"""Control flow, revax vs JAX: XLA temp memory of jit(grad) of a tanh RNN written with scan (the
per-step residuals the backward pass needs, nothing more), trace+lower time of that program, its
steady-state run time (each library in its own processes: processes.time_apart), and eager
scan/cond/while dispatch (both libraries in this process, interleaved rounds).

Run: python benchmarks/bench_control_flow.py [--quick]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from processes import jitted_child_calls, time_apart
from timing import describe, libraries, measure_interleaved, row, time_interleaved

HIDDEN = 64


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


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool):
  """One library's calls of jit(grad(rnn_loss)) over 1000 steps on device-resident inputs (for
  revax also its program run directly), for processes.time_apart."""
  f = lib.jit(lib.grad(rnn_loss_fn(lib, np_mod)))
  return jitted_child_calls(lib_name, lib, f, lib.device_put(rnn_inputs(1000)),
                            5 if quick else 20, 3 if quick else 5, rtol=1e-3, atol=1e-4,
                            scaled=True)


def eager_scan(lib, steps: int):
  """A zero-argument eager (un-jitted) cumulative product scan of `steps` steps."""
  xs = lib.device_put(np.linspace(0.9, 1.1, steps, dtype=np.float32))
  return lambda: lib.block_until_ready(lib.lax.scan(lambda c, x: (c * x, c), np.float32(1), xs))


def eager_cond(lib, np_mod):
  """A zero-argument eager cond on a device scalar."""
  x = lib.device_put(np.float32(0.5))
  return lambda: lib.block_until_ready(lib.lax.cond(x > 0, np_mod.sin, np_mod.cos, x))


def rows(quick: bool) -> list:
  """Rows for benchmarks/run.py, paired medians of interleaved rounds (`timing.row`); memory rows
  are in bytes ('B'); the jitted run row also has revax's program run directly."""
  libs = libraries()
  rounds = 3 if quick else 5
  out = []
  for steps in ((1000,) if quick else (1000, 2000)):
    mem = measure_interleaved(lambda n, lib, np_mod: grad_temp_bytes(lib, np_mod, steps), libs, 1)
    out.append(row(f"jit(grad(tanh RNN, scan {steps} steps, H={HIDDEN})): XLA temp bytes", mem,
                   1.25, unit="B", scale=1))
  low = measure_interleaved(lambda n, lib, np_mod: grad_lower_seconds(lib, np_mod, 1000), libs,
                            rounds)
  out.append(row("jit(grad(tanh RNN scan)): trace+lower", low, None, unit="s", scale=1))
  t = time_apart("bench_control_flow", ["rnn_grad"], quick)["rnn_grad"]  # own processes
  out.append(row("jit(grad(tanh RNN scan 1000 steps)): run", t, None))
  t = time_interleaved({name: eager_scan(lib, 100) for name, (lib, _) in libs.items()},
                       number=2 if quick else 3, rounds=rounds, warmup=1)
  out.append(row("eager scan, 100 steps of a scalar product", t, None))
  t = time_interleaved({name: eager_cond(lib, np_mod) for name, (lib, np_mod) in libs.items()},
                       number=20 if quick else 100, rounds=rounds)
  out.append(row("eager cond (same branch functions each call)", t, None))
  return out


if __name__ == "__main__":
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true")
  print("\n".join(describe(rows(parser.parse_args().quick))))
