"""revax vs JAX, side by side in one run; prints ratios (revax / JAX) and writes RESULTS.md.

Run: python benchmarks/run.py [--quick]

Measures: import time to a first result, eager `add` on small arrays, jitted call overhead on
small arrays, and first-call trace+lower and compile time of an MLP with 64 layers.
Timings are medians; ratios below 1 mean revax is faster.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent

IMPORT_SNIPPET = {
    "revax": "import revax.numpy as jnp; x = jnp.add(jnp.ones(3), 1.0); float(x[0])",
    "jax": "import jax.numpy as jnp; x = jnp.add(jnp.ones(3), 1.0); float(x[0])",
}


def import_time(lib: str, repeats: int) -> float:
  """Seconds from `import` to a first computed value, in a fresh interpreter."""
  code = ("import time; t = time.perf_counter(); " + IMPORT_SNIPPET[lib] +
          "; print(time.perf_counter() - t)")
  times = []
  for _ in range(repeats):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"})
    times.append(float(out.stdout.strip().splitlines()[-1]))
  return statistics.median(times)


def per_call_us(fn, number: int, repeats: int = 5) -> float:
  """Median over `repeats` of the mean microseconds per call over `number` calls."""
  for _ in range(min(number, 200)):
    fn()
  samples = []
  for _ in range(repeats):
    t = time.perf_counter_ns()
    for _ in range(number):
      fn()
    samples.append((time.perf_counter_ns() - t) / number / 1e3)
  return statistics.median(samples)


def libraries():
  import jax
  import jax.numpy as jnp
  import revax
  import revax.numpy as rnp
  return {"revax": (revax, rnp), "jax": (jax, jnp)}


def mlp_fn(np_mod, depth: int):
  def mlp(params, x):
    for w, b in params:
      x = np_mod.tanh(x @ w + b)
    return x
  return mlp


def mlp_params(depth: int, width: int):
  rng = np.random.default_rng(0)
  return [(rng.standard_normal((width, width), np.float32) / np.sqrt(width),
           np.zeros(width, np.float32)) for _ in range(depth)]


def first_call_times(lib, np_mod, depth: int, repeats: int):
  """(trace+lower seconds, compile seconds) of a fresh jit of the MLP."""
  params = mlp_params(depth, 32)
  x = np.ones((8, 32), np.float32)
  lowers, compiles = [], []
  for _ in range(repeats):
    f = lib.jit(mlp_fn(np_mod, depth))
    t0 = time.perf_counter()
    lowered = f.lower(params, x)
    lowered.as_text()
    t1 = time.perf_counter()
    lowered.compile()
    t2 = time.perf_counter()
    lowers.append(t1 - t0)
    compiles.append(t2 - t1)
  return statistics.median(lowers), statistics.median(compiles)


def grad_times(lib, np_mod, depth: int, repeats: int, calls: int):
  """(trace+lower seconds of jit(grad(mlp_loss)), steady-state microseconds per gradient)."""
  params = mlp_params(depth, 32)
  x = np.ones((8, 32), np.float32)
  mlp = mlp_fn(np_mod, depth)
  loss = lambda p, x: (mlp(p, x) ** 2).sum()
  lowers = []
  for _ in range(repeats):
    g = lib.jit(lib.grad(loss))
    t0 = time.perf_counter()
    g.lower(params, x).as_text()
    lowers.append(time.perf_counter() - t0)
  g = lib.jit(lib.grad(loss))
  dparams = lib.device_put(params)
  dx = lib.device_put(x)
  run = per_call_us(lambda: lib.block_until_ready(g(dparams, dx)), calls)
  return statistics.median(lowers), run


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer repeats (noisier)")
  args = parser.parse_args()
  n_import = 3 if args.quick else 7
  n_calls = 2000 if args.quick else 20000
  n_first = 2 if args.quick else 5

  rows = []
  imp = {lib: import_time(lib, n_import) for lib in ("revax", "jax")}
  rows.append(("import to first result", "s", imp["revax"], imp["jax"], 0.3))

  libs = libraries()
  eager, jitted = {}, {}
  for name, (lib, np_mod) in libs.items():
    x = lib.device_put(np.arange(8, dtype=np.float32))
    y = lib.device_put(np.ones(8, dtype=np.float32))
    if name == "revax":  # eager revax ops run in NumPy on host values
      x, y = np_mod.asarray(np.arange(8, dtype=np.float32)), np_mod.asarray(np.ones(8, np.float32))
    eager[name] = per_call_us(lambda: (x + y).block_until_ready(), n_calls)
    f = lib.jit(lambda a, b: a + b)
    dx, dy = lib.device_put(np.arange(8, dtype=np.float32)), lib.device_put(np.ones(8, np.float32))
    jitted[name] = per_call_us(lambda: f(dx, dy).block_until_ready(), n_calls)
  rows.append(("eager add, f32[8]", "us", eager["revax"], eager["jax"], 0.5))
  rows.append(("jitted call, f32[8] + f32[8]", "us", jitted["revax"], jitted["jax"], 1.5))

  first = {name: first_call_times(lib, np_mod, 64, n_first) for name, (lib, np_mod) in libs.items()}
  rows.append(("MLP 64 layers: trace+lower", "s", first["revax"][0], first["jax"][0], 0.5))
  rows.append(("MLP 64 layers: XLA compile", "s", first["revax"][1], first["jax"][1], None))

  grads = {name: grad_times(lib, np_mod, 64, n_first, max(50, n_calls // 100))
           for name, (lib, np_mod) in libs.items()}
  rows.append(("jit(grad(MLP loss)), 64 layers: trace+lower", "s", grads["revax"][0],
               grads["jax"][0], 0.5))
  rows.append(("jit(grad(MLP loss)), 64 layers: run", "us", grads["revax"][1], grads["jax"][1],
               1.1))

  report(rows, args)


def report(rows, args):
  import jax
  import revax
  header = f"| measurement | revax | jax {jax.__version__} | revax/JAX | target |"
  lines = [header, "|---|---|---|---|---|"]
  for label, unit, r, j, target in rows:
    ratio = r / j
    tgt = f"<= {target}x" if target is not None else "-"
    ok = "" if target is None else (" (met)" if ratio <= target else " (missed)")
    lines.append(f"| {label} | {fmt(r, unit)} | {fmt(j, unit)} | {ratio:.2f}x | {tgt}{ok} |")
  table = "\n".join(lines)
  print(table)
  cmd = "python benchmarks/run.py" + (" --quick" if args.quick else "")
  text = (f"# Benchmarks: revax {revax.__version__} vs JAX\n\nCommand: `{cmd}`  \n"
          f"Machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, measured {time.strftime('%Y-%m-%d')}.\n\n{table}\n")
  (HERE / "RESULTS.md").write_text(text)


def fmt(v, unit):
  return f"{v * 1e3:.1f} ms" if unit == "s" else f"{v:.1f} us"


if __name__ == "__main__":
  main()
