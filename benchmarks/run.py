"""revax vs JAX, side by side in one run; prints ratios (revax / JAX) and writes RESULTS.md.

Run: python benchmarks/run.py [--quick]

Measures: import time to a first result, eager `add` on small arrays, jitted call overhead on
small arrays, first-call trace+lower and compile time of an MLP with 64 layers, jit(grad) of it,
then the topic modules (bench_<topic>.py: dot_general, windows, control flow, ...).
Each figure is the best of interleaved rounds (revax, jax, revax, jax, ...; per-call figures are
medians within a round), so that load from elsewhere on the machine hits both libraries alike.
Ratios below 1 mean revax is faster.
"""
from __future__ import annotations

import argparse
import gc
import os
import pathlib
import platform
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from timing import libraries, per_call_us  # noqa: E402 (benchmarks/ on the path first)

HERE = pathlib.Path(__file__).resolve().parent

IMPORT_SNIPPET = {
    "revax": "import revax.numpy as jnp; x = jnp.add(jnp.ones(3), 1.0); float(x[0])",
    "jax": "import jax.numpy as jnp; x = jnp.add(jnp.ones(3), 1.0); float(x[0])",
}


def import_times(repeats: int) -> dict:
  """Seconds from `import` to a first computed value, in a fresh interpreter, per library.

  Both libraries are timed as installed packages run: from their bytecode caches (pip compiles
  them at install time; a warm-up run writes revax's, whose editable install has none yet), in
  interleaved rounds so that machine load hits both alike. Best of `repeats`.
  """
  env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
  env["JAX_PLATFORMS"] = "cpu"
  times = {lib: [] for lib in IMPORT_SNIPPET}
  for round_ in range(repeats + 1):
    for lib, snippet in IMPORT_SNIPPET.items():
      code = "import time; t = time.perf_counter(); " + snippet + "; print(time.perf_counter() - t)"
      out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env=env)
      if round_:  # round 0 is the warm-up
        times[lib].append(float(out.stdout.strip().splitlines()[-1]))
  return {lib: min(t) for lib, t in times.items()}


def interleaved(measure, libs, rounds: int = 3) -> dict:
  """`measure(name, lib, np_mod)` for each library in turn, `rounds` times; the best per library
  (the least disturbed by other load), with garbage collected before each measurement."""
  best = {}
  for _ in range(rounds):
    for name, (lib, np_mod) in libs.items():
      gc.collect()
      value = measure(name, lib, np_mod)
      best[name] = value if name not in best else min(best[name], value)
  return best


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


def first_call_times(lib, np_mod, depth: int):
  """(trace+lower seconds, compile seconds) of a fresh jit of the MLP."""
  params = mlp_params(depth, 32)
  x = np.ones((8, 32), np.float32)
  f = lib.jit(mlp_fn(np_mod, depth))
  t0 = time.perf_counter()
  lowered = f.lower(params, x)
  lowered.as_text()
  t1 = time.perf_counter()
  lowered.compile()
  return t1 - t0, time.perf_counter() - t1


def grad_lower_time(lib, np_mod, depth: int) -> float:
  """Trace+lower seconds of a fresh jit(grad(mlp_loss))."""
  params = mlp_params(depth, 32)
  x = np.ones((8, 32), np.float32)
  mlp = mlp_fn(np_mod, depth)
  g = lib.jit(lib.grad(lambda p, x: (mlp(p, x) ** 2).sum()))
  t0 = time.perf_counter()
  g.lower(params, x).as_text()
  return time.perf_counter() - t0


def grad_run_us(lib, np_mod, depth: int, calls: int) -> float:
  """Steady-state microseconds per call of jit(grad(mlp_loss)) on device-resident inputs."""
  mlp = mlp_fn(np_mod, depth)
  g = lib.jit(lib.grad(lambda p, x: (mlp(p, x) ** 2).sum()))
  dparams = lib.device_put(mlp_params(depth, 32))
  dx = lib.device_put(np.ones((8, 32), np.float32))
  return per_call_us(lambda: lib.block_until_ready(g(dparams, dx)), calls)


def eager_add_us(name, lib, np_mod, calls: int) -> float:
  if name == "revax":  # eager revax ops run in NumPy on host values
    x, y = np_mod.asarray(np.arange(8, dtype=np.float32)), np_mod.asarray(np.ones(8, np.float32))
  else:
    x, y = lib.device_put(np.arange(8, dtype=np.float32)), lib.device_put(np.ones(8, np.float32))
  return per_call_us(lambda: (x + y).block_until_ready(), calls)


def jitted_add_us(lib, calls: int) -> float:
  f = lib.jit(lambda a, b: a + b)
  dx, dy = lib.device_put(np.arange(8, dtype=np.float32)), lib.device_put(np.ones(8, np.float32))
  return per_call_us(lambda: f(dx, dy).block_until_ready(), calls)


# Topic benchmarks: modules benchmarks/bench_<topic>.py exposing rows(quick) -> list of
# (label, unit, revax value, jax value, target ratio or None).
TOPICS = ["dot", "windowed", "control_flow", "conv", "random", "checkpoint", "invertible",
          "callbacks", "compilation_cache", "fft", "linalg", "sharding"]


def topic_rows(quick: bool) -> list:
  import importlib
  sys.path.insert(0, str(HERE))
  rows = []
  for topic in TOPICS:
    if (HERE / f"bench_{topic}.py").exists():
      rows += importlib.import_module(f"bench_{topic}").rows(quick)
  return rows


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer repeats (noisier)")
  parser.add_argument("--core", action="store_true", help="only the core rows (no topic modules)")
  args = parser.parse_args()
  n_import = 3 if args.quick else 7
  n_calls = 2000 if args.quick else 20000
  rounds = 2 if args.quick else 5

  rows = []
  imp = import_times(n_import)
  rows.append(("import to first result", "s", imp["revax"], imp["jax"], 0.3))

  libs = libraries()
  eager = interleaved(lambda n, lib, np_mod: eager_add_us(n, lib, np_mod, n_calls), libs, rounds)
  rows.append(("eager add, f32[8]", "us", eager["revax"], eager["jax"], 0.5))
  jitted = interleaved(lambda n, lib, np_mod: jitted_add_us(lib, n_calls), libs, rounds)
  rows.append(("jitted call, f32[8] + f32[8]", "us", jitted["revax"], jitted["jax"], 1.5))

  lower = interleaved(lambda n, lib, np_mod: first_call_times(lib, np_mod, 64)[0], libs, rounds)
  rows.append(("MLP 64 layers: trace+lower", "s", lower["revax"], lower["jax"], 0.5))
  comp = interleaved(lambda n, lib, np_mod: first_call_times(lib, np_mod, 64)[1], libs, 2)
  rows.append(("MLP 64 layers: XLA compile", "s", comp["revax"], comp["jax"], None))

  glower = interleaved(lambda n, lib, np_mod: grad_lower_time(lib, np_mod, 64), libs, rounds)
  rows.append(("jit(grad(MLP loss)), 64 layers: trace+lower", "s", glower["revax"],
               glower["jax"], 0.5))
  grun = interleaved(lambda n, lib, np_mod: grad_run_us(lib, np_mod, 64, max(50, n_calls // 20)),
                     libs, rounds)
  rows.append(("jit(grad(MLP loss)), 64 layers: run", "us", grun["revax"], grun["jax"], 1.1))

  if not args.core:
    rows += topic_rows(args.quick)
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
  cmd = "python benchmarks/run.py" + (" --quick" if args.quick else "") + (" --core" if args.core else "")
  text = (f"# Benchmarks: revax {revax.__version__} vs JAX\n\nCommand: `{cmd}`  \n"
          f"Machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, measured {time.strftime('%Y-%m-%d')}.\n\n{table}\n")
  (HERE / "RESULTS.md").write_text(text)


def fmt(v, unit):
  if unit == "s":
    return f"{v * 1e3:.1f} ms"
  return f"{v:.1f} us" if unit == "us" else f"{v:.3g} {unit}"


if __name__ == "__main__":
  main()
