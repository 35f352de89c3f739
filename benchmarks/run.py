"""revax vs JAX, side by side in one run; prints ratios (revax / JAX) and writes RESULTS.md.

Run: python benchmarks/run.py [--quick] [--core]
     python benchmarks/run.py --tpu [--quick]   # on a TPU machine: the accelerator's rows

Measures: import time to a first result, eager `add` on small arrays, jitted call overhead on
small arrays, first-call trace+lower and compile time of an MLP with 64 layers, jit(grad) of it,
then the topic modules (bench_<topic>.py: dot_general, windows, control flow, ...).
A compiled program's row (a jitted call) times each library in its own child process
(processes.py, `time_apart`: pairs of processes alternating which library goes first; the ratio
is the median of the per-pair ratios), where two XLA runtimes cannot bias each other; inside
revax's child, revax.jit and revax's compiled program run directly on the runtime
(`Executable.execute` on the argument buffers) are timed in interleaved rounds, so that a gap to
JAX is attributed by measurement: revax.jit vs direct is revax's call path, direct vs JAX is the
program and the runtime. Rows about revax's own overheads that are not a compiled program's run
(eager ops, trace+lower, compile, first calls) time both libraries in this process, in
interleaved rounds reported as paired medians (timing.py). Ratios below 1 mean revax is faster.
See benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import platform
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from processes import jitted_child_calls, time_apart  # noqa: E402
from timing import Timings, libraries, measure_interleaved, per_call_us, row  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent

IMPORT_SNIPPET = {
    "revax": "import revax.numpy as jnp; x = jnp.add(jnp.ones(3), 1.0); float(x[0])",
    "jax": "import jax.numpy as jnp; x = jnp.add(jnp.ones(3), 1.0); float(x[0])",
}


def import_times(repeats: int) -> dict:
  """Seconds from `import` to a first computed value, in a fresh interpreter, per library.

  Both libraries are timed as installed packages run: from their bytecode caches (pip compiles
  them at install time; a warm-up run writes revax's, whose editable install has none yet), in
  interleaved rounds so that machine load hits both alike; paired medians of `repeats`.
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
  return Timings(times)


def paired_row(label, unit, t: Timings, target):
  return (label, unit, t["revax"], t["jax"], target, {"ratio": t.ratio("revax", "jax")})


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


def eager_add_us(name, lib, np_mod, calls: int) -> float:
  if name == "revax":  # eager revax ops run in NumPy on host values
    x, y = np_mod.asarray(np.arange(8, dtype=np.float32)), np_mod.asarray(np.ones(8, np.float32))
  else:
    x, y = lib.device_put(np.arange(8, dtype=np.float32)), lib.device_put(np.ones(8, np.float32))
  return per_call_us(lambda: (x + y).block_until_ready(), calls)


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool):
  """One library's calls of run.py's compiled rows, for `processes.time_apart` (a child
  process each): "add8", a jitted f32[8] + f32[8] (the call overhead); "mlp_grad", jit(grad) of
  the 64-layer MLP's loss; both on device-resident inputs."""
  n_calls = 2000 if quick else 20000
  rounds = 6 if quick else 12
  if group == "add8":
    f = lib.jit(lambda a, b: a + b)
    args = lib.device_put((np.arange(8, dtype=np.float32), np.ones(8, np.float32)))
    return jitted_child_calls(lib_name, lib, f, args, n_calls // 10, rounds, rtol=0, atol=0)
  if group == "mlp_grad":
    mlp = mlp_fn(np_mod, 64)
    g = lib.jit(lib.grad(lambda p, x: (mlp(p, x) ** 2).sum()))
    args = lib.device_put((mlp_params(64, 32), np.ones((8, 32), np.float32)))
    return jitted_child_calls(lib_name, lib, g, args, max(10, n_calls // 400), rounds,
                              rtol=1e-4, atol=1e-4, scaled=True)
  raise ValueError(f"unknown group {group!r}")


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
  parser.add_argument("--tpu", action="store_true",
                      help="on a TPU machine: the accelerator's rows only (tpu_rows), written "
                           "to RESULTS.md's TPU section")
  args = parser.parse_args()
  if args.tpu:
    tpu_report(args)
    return
  args.load_at_start = os.getloadavg()
  n_import = 3 if args.quick else 7
  n_calls = 2000 if args.quick else 20000
  rounds = 2 if args.quick else 5

  rows = []
  rows.append(paired_row("import to first result", "s", import_times(n_import), 0.3))
  apart = time_apart("run", ["add8", "mlp_grad"], args.quick)  # a process per library

  libs = libraries()
  eager = measure_interleaved(lambda n, lib, np_mod: eager_add_us(n, lib, np_mod, n_calls),
                              libs, rounds)
  rows.append(paired_row("eager add, f32[8]", "us", eager, 0.5))
  rows.append(row("jitted call, f32[8] + f32[8]", apart["add8"], 1.0))

  lower = measure_interleaved(lambda n, lib, np_mod: first_call_times(lib, np_mod, 64)[0],
                              libs, rounds)
  rows.append(paired_row("MLP 64 layers: trace+lower", "s", lower, 0.5))
  comp = measure_interleaved(lambda n, lib, np_mod: first_call_times(lib, np_mod, 64)[1],
                             libs, 3)
  rows.append(paired_row("MLP 64 layers: XLA compile", "s", comp, None))

  glower = measure_interleaved(lambda n, lib, np_mod: grad_lower_time(lib, np_mod, 64),
                               libs, rounds)
  rows.append(paired_row("jit(grad(MLP loss)), 64 layers: trace+lower", "s", glower, 0.5))
  rows.append(row("jit(grad(MLP loss)), 64 layers: run", apart["mlp_grad"], 1.1))

  if not args.core:
    rows += topic_rows(args.quick)
  report(rows, args)


# The accelerator's rows: issue 32's reversible MLP (width 2048 per stream, batch 8192, f32) as
# deep as the chip allows each method. bench_reversible.py measures each library in its own
# process (the chip holds one program's process at a time); its report names the chip.
TPU_DEPTHS, TPU_QUICK_DEPTHS = (8, 32, 64, 128), (8, 32, 128)
TPU_START, TPU_END = "<!-- run.py --tpu: start -->", "<!-- run.py --tpu: end -->"


def tpu_report(args, path=HERE / "RESULTS.md") -> None:
  """`--tpu`: plain grad, checkpoint per block and invertible of the reversible MLP on the chip,
  revax and jax, per depth: step time and XLA's memory of the step (temp + arguments +
  outputs: the device's peak while it runs), "out of memory" where a method does not fit, and
  the per-block ratios; printed and written between TPU_START and TPU_END in `path`."""
  import tempfile
  sys.path.insert(0, str(HERE))
  import bench_reversible
  depths = TPU_QUICK_DEPTHS if args.quick else TPU_DEPTHS
  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "tpu.md")
    bench_reversible.main(["--out", out, "--size", "tpu", "--depths",
                           ",".join(map(str, depths)), "--rounds", "2" if args.quick else "3",
                           "--calls", "3", "--max-seconds", "200"])
    body = pathlib.Path(out).read_text()
  body = body.replace("# Reversible MLP per block:", "## TPU rows of `python benchmarks/run.py "
                      "--tpu" + (" --quick" if args.quick else "") + "`: reversible MLP on", 1)
  body = "\n".join(("#" + line if line.startswith("## ") and i else line)
                   for i, line in enumerate(body.splitlines()))
  section = f"{TPU_START}\n{body.rstrip()}\n{TPU_END}\n"
  path = pathlib.Path(path)
  old = path.read_text() if path.exists() else ""
  if TPU_START in old and TPU_END in old:
    text = old.split(TPU_START, 1)[0] + section + old.split(TPU_END, 1)[1].lstrip("\n")
  else:
    text = old.rstrip("\n") + "\n\n" + section
  path.write_text(text)
  print(f"written to {path}")


def table(rows, jax_version: str) -> str:
  """The results table in Markdown, one line per row.

  Rows are (label, unit, revax, jax, target) or (..., target, extra) where extra may hold
  "direct" (revax's program run directly, same unit), "ratio" (paired median revax/JAX) and
  "jit/direct" (paired median revax.jit / direct); a row without them shows "-" there."""
  lines = [f"| measurement | revax | revax program, direct | jax {jax_version} | revax/JAX | "
           "jit/direct | target |", "|---|---|---|---|---|---|---|"]
  for row in rows:
    label, unit, r, j, target = row[:5]
    extra = row[5] if len(row) > 5 else {}
    ratio = extra.get("ratio", r / j)
    tgt = f"<= {target}x" if target is not None else "-"
    ok = "" if target is None else (" (met)" if ratio <= target else " (missed)")
    direct = fmt(extra["direct"], unit) if "direct" in extra else "-"
    over = f"{extra['jit/direct']:.2f}x" if "jit/direct" in extra else "-"
    lines.append(f"| {label} | {fmt(r, unit)} | {direct} | {fmt(j, unit)} | {ratio:.2f}x | "
                 f"{over} | {tgt}{ok} |")
  return "\n".join(lines)


def report(rows, args, path=HERE / "RESULTS.md"):
  """Print the table and the machine's load; a full run (not --core) also writes them to
  `path` (RESULTS.md), keeping what follows its own table: bench_plugins.py's section and the
  sections after it (the TPU's)."""
  import jax
  import revax
  text_table = table(rows, jax.__version__)
  load = lambda avg: "/".join(f"{x:.1f}" for x in avg)
  at_start = getattr(args, "load_at_start", None)
  load_text = ("load average (1/5/15 min) " + (f"{load(at_start)} at the start, " if at_start
                                                else "") + f"{load(os.getloadavg())} at the end")
  print(text_table)
  print(load_text)
  if args.core:
    return  # a partial table: RESULTS.md keeps the last full run
  cmd = "python benchmarks/run.py" + (" --quick" if args.quick else "")
  text = (f"# Benchmarks: revax {revax.__version__} vs JAX\n\nCommand: `{cmd}`  \n"
          f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"{platform.python_implementation()} {platform.python_version()}, measured "
          f"{time.strftime('%Y-%m-%d')}; {load_text}.  \n"
          "Columns: see benchmarks/README.md.\n\n"
          f"{text_table}\n")
  path = pathlib.Path(path)
  # keep the sections other scripts own (bench_plugins.py's table between its markers)
  old = path.read_text() if path.exists() else ""
  start = "<!-- bench_plugins: start -->"
  if start in old:
    text += "\n" + start + old.split(start, 1)[1]
  path.write_text(text)


def fmt(v, unit):
  if unit == "s":
    return f"{v * 1e3:.1f} ms"
  return f"{v:.1f} us" if unit == "us" else f"{v:.3g} {unit}"


if __name__ == "__main__":
  main()
