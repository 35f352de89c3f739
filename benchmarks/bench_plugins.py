"""revax on each available CPU PJRT plugin against jax on jaxlib's XLA, one library per process.

Run: python benchmarks/bench_plugins.py [--quick] [--plugin NAME_OR_PATH ...] [--search DIR ...]
                                        [--pairs N] [--rows NAME,...] [--variant ENV=VALUE,...]
                                        [--write]

Each measurement is a child interpreter running ONE library (a process has one backend, and two
XLA runtimes in one process compete for the cores: issue 36 measured the same pair anywhere from
1.05x to 1.47x that way). For each plugin (env `PJRT_PLUGIN`: by default the pinned
`xla-cpu-pjrt` and the other CPU plugins on the package index, `fastatomstruct-xla-cpu` and
`lammps-jax-pjrt-cpu`, where installed) the script runs `--pairs` pairs of children, revax then
jax, then jax then revax, alternating; the plugins take turns pair by pair, so slow drifts in load
hit every column alike. `--search DIR` adds every folder in DIR to the children's PYTHONPATH,
so packages installed with `pip install --target DIR/<name> <name>` are found by name.
The child processes are processes.py's (`child_env`, `run_child`), shared with run.py's rows.

`--variant ENV=VALUE[,ENV=VALUE...]` (repeatable) adds a revax column per plugin whose children
get those environment variables, beside the default one (this environment): a pair is then one
jax child and one revax child per variant, the order rotating from pair to pair, and each
variant's ratio is taken against the jax child of its own pair. For example
`--variant REVAX_CPU_GEMM=1 --variant REVAX_CPU_GEMM=large-nt` compares XLA's dots, one-thread
BLAS GEMMs and the threaded large-dot rule (revax/_src/runtime/gemm.py) in one run.

Rows (the acceptance rows of issue 36), all on device-resident inputs:
  - jit(grad) of the 64-block reversible MLP of bench_invertible (width 256, batch 64);
  - the MLP 784-1024-1024-1024-10 training step (bench_dot), batch 256;
  - per-example gradients of the small CNN (bench_conv), 16 examples;
  - the CNN training step (bench_conv), batch 64;
  - jit(vmap(dot_general)) with batch dims in odd positions, both operands / lhs only mapped;
  - a jitted 32x32 matrix product, and a jitted f32[8] + f32[8] (the call overhead).
A child times `repeats` runs of `number` calls per row after warming up; its figure is the
median run (the fastest run over all children, the least disturbed by other processes on a
loaded machine, is printed beside the per-pair ratios). A row reports the median over the
children of each library and the median of the per-pair ratios revax/jax, with the 1-minute
load average when the plugin's last pair ended.
Before timing, the parent checks that revax's results equal jax's (per row tolerances).
`--write` puts the table into benchmarks/RESULTS.md (its "PJRT plugins" section).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from processes import (ChildFailed, child_env, emit, foreign_modules,  # noqa: E402
                       loaded_libraries, one_library, pair_order, run_child)

KNOWN_PLUGINS = ("xla-cpu-pjrt", "fastatomstruct-xla-cpu", "lammps-jax-pjrt-cpu")
SECTION_START = "<!-- bench_plugins: start -->"
SECTION_END = "<!-- bench_plugins: end -->"

# row name -> (label, calls per run (full), relative tolerance of revax's results against jax's)
ROWS = {
    "rev_mlp": ("reversible MLP, 64 blocks, width 256, batch 64: jit(grad)", 10, 1e-3),
    "mlp_step": ("MLP 784-1024-1024-1024-10 training step, batch 256", 10, 1e-4),
    "cnn_per_example": ("CNN per-example gradients, jit(vmap(grad)), 16 examples", 10, 2e-3),
    "cnn_step": ("CNN training step, batch 64", 10, 2e-3),
    "vdot_both": ("jit(vmap(dot_general)), odd batch dims, both operands mapped", 50, 1e-4),
    "vdot_lhs": ("jit(vmap(dot_general)), odd batch dims, lhs only mapped", 50, 1e-4),
    "matmul32": ("jitted 32x32 matrix product", 500, 1e-5),
    "add8": ("jitted call, f32[8] + f32[8]", 2000, 0.0),
}


def row_program(name: str, lib, np_mod):
  """(jitted function, device-resident arguments) of row `name` for one library."""
  if name == "rev_mlp":
    import bench_invertible
    return (lib.jit(lib.grad(bench_invertible._loss(np_mod))),
            lib.device_put(bench_invertible._inputs(64)))
  if name in ("mlp_step", "vdot_both", "vdot_lhs"):
    import bench_dot
    return bench_dot.program(name, lib, np_mod)
  if name in ("cnn_per_example", "cnn_step"):
    import bench_conv
    return bench_conv.program(name, lib, np_mod)
  if name == "matmul32":
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((32, 32)).astype(np.float32) for _ in range(2))
    return lib.jit(lambda a, b: a @ b), lib.device_put((a, b))
  if name == "add8":
    return (lib.jit(lambda a, b: a + b),
            lib.device_put((np.arange(8, dtype=np.float32), np.ones(8, np.float32))))
  raise ValueError(f"unknown row {name!r}")


def child(lib_name: str, rows: list[str], quick: bool, outputs: str | None) -> dict:
  """Measure `rows` for one library in this process (its plugin chosen by env PJRT_PLUGIN)."""
  from timing import blocked_runs
  lib, np_mod = one_library(lib_name)
  repeats = 3 if quick else 7
  out = {"times": {}, "first_call": {}, "best": {}}
  saved = {}
  for name in rows:
    number = max(1, ROWS[name][1] // (5 if quick else 1))
    start = time.perf_counter()
    f, args = row_program(name, lib, np_mod)
    result = lib.block_until_ready(f(*args))
    out["first_call"][name] = time.perf_counter() - start
    if outputs:
      for i, leaf in enumerate(lib.tree_util.tree_leaves(result)):
        saved[f"{name}/{i}"] = np.asarray(leaf)
    runs = blocked_runs(lib, f, args, number, repeats)
    out["times"][name], out["best"][name] = statistics.median(runs), min(runs)
  if outputs:
    np.savez(outputs, **saved)
  out["loaded"] = loaded_libraries()
  if lib_name == "revax":
    from revax._src.runtime import client, plugins
    choice = plugins.loaded()
    out["plugin"] = {"package": choice.package, "version": choice.version, "path": choice.path}
    out["describe"] = plugins.describe(client.get_backend())
  return out


def measure(lib: str, plugin: str, rows: list[str], quick: bool, search: list[str],
            env_extra: dict | None = None, outputs: str | None = None) -> dict:
  """One child's result (`child`), or {"error": ...} where it failed."""
  args = ["--child", lib, "--rows", ",".join(rows)] + (["--quick"] if quick else [])
  if outputs:
    args += ["--outputs", outputs]
  try:
    got = run_child(pathlib.Path(__file__).resolve(), args,
                    child_env(env_extra, plugin=plugin, search=search))
  except ChildFailed as e:
    return {"error": str(e)}
  if foreign_modules(lib, got["loaded"]):
    return {"error": f"the {lib} child loaded {got['loaded']}: one library per process"}
  return got


def parse_variant(text: str) -> dict:
  """{ENV: VALUE} of a --variant "ENV=VALUE[,ENV=VALUE...]"."""
  env = {}
  for item in text.split(","):
    name, eq, value = item.partition("=")
    if not eq or not name.strip():
      raise SystemExit(f"--variant {text!r}: expected ENV=VALUE[,ENV=VALUE...]")
    env[name.strip()] = value.strip()
  return env


def check_outputs(revax_file: str, jax_file: str, rows: list[str]) -> list[str]:
  """Rows whose revax results differ from jax's beyond the row's tolerance."""
  r, j = np.load(revax_file), np.load(jax_file)
  bad = []
  for name in rows:
    keys = sorted(k for k in r.files if k.split("/")[0] == name)
    if keys != sorted(k for k in j.files if k.split("/")[0] == name):
      bad.append(f"{name}: different outputs")
      continue
    tol = ROWS[name][2]
    for k in keys:  # relative to the output's scale (gradients through 64 blocks add up)
      scale = float(np.max(np.abs(j[k]))) if j[k].size else 0.0
      diff = float(np.max(np.abs(r[k].astype(np.float64) - j[k]))) if j[k].size else 0.0
      if diff > tol * max(scale, 1e-30):
        bad.append(f"{name}: {k} differs (max |diff| {diff:.3g}, scale {scale:.3g})")
  return bad


def summarize(pairs: list) -> dict:
  """{row: {"revax", "jax" (median seconds per call over the children), "ratio" (median of the
  per-pair ratios), "pairs", "first_revax", "first_jax"}} of (revax result, jax result) pairs."""
  out = {}
  for name in pairs[0][0]["times"]:
    rv = [r["times"][name] for r, _ in pairs]
    jx = [j["times"][name] for _, j in pairs]
    out[name] = {"revax": statistics.median(rv), "jax": statistics.median(jx),
                 "ratio": statistics.median(a / b for a, b in zip(rv, jx, strict=True)),
                 "ratios": [a / b for a, b in zip(rv, jx, strict=True)], "pairs": len(pairs),
                 "first_revax": statistics.median(r["first_call"][name] for r, _ in pairs),
                 "first_jax": statistics.median(j["first_call"][name] for _, j in pairs),
                 "best_revax": min(r.get("best", r["times"])[name] for r, _ in pairs),
                 "best_jax": min(j.get("best", j["times"])[name] for _, j in pairs)}
  return out


def fmt_us(seconds: float) -> str:
  us = seconds * 1e6
  return f"{us:.1f} us" if us < 1000 else f"{us / 1000:.2f} ms"


def table(results: dict) -> str:
  lines = []
  for plugin, res in results.items():
    if "error" in res:
      lines.append(f"- `{plugin}`: not measured ({res['error']})")
      continue
    p = res["plugin"]
    versions = [line.split(": ", 1)[1] for line in res["describe"]
                if line.startswith("pjrt plugin versions")]
    lines.append(f"- `{plugin}`: {p['package']} {p['version']}"
                 + (f"; {versions[0]}" if versions else "")
                 + f"; {res['pairs']} pairs, 1-minute load average {res['load']:.1f} at the end"
                 + ("" if not res.get("mismatch") else
                    "; RESULTS DIFFER FROM JAX: " + "; ".join(res["mismatch"])))
  measured = [p for p, r in results.items() if "rows" in r]
  header = "| row | " + " | ".join(f"{p}: revax / jax (ratio)" for p in measured) + " |"
  lines += ["", header, "|---|" + "---|" * len(measured)]
  for name, (label, _, _) in ROWS.items():
    cells = []
    for plugin in measured:
      row = results[plugin]["rows"].get(name)
      cells.append("-" if row is None else
                   f"{fmt_us(row['revax'])} / {fmt_us(row['jax'])} ({row['ratio']:.2f}x)")
    if any(c != "-" for c in cells):
      lines.append(f"| {label} | " + " | ".join(cells) + " |")
  return "\n".join(lines)


def write_section(text: str, command: str) -> None:
  path = HERE / "RESULTS.md"
  old = path.read_text() if path.exists() else ""
  section = (f"{SECTION_START}\n## PJRT plugins: revax on each CPU plugin vs jax (jaxlib's XLA)\n\n"
             f"Command: `{command}`  \nMachine: {platform.machine()}, {os.cpu_count()} cores, "
             f"measured {time.strftime('%Y-%m-%d')}. Each library in its own process, pairs of "
             "processes alternating which goes first; a cell is the median over the processes "
             "of each library's median run, and the median of the per-pair ratios revax/jax; "
             "below 1 revax is faster.\n\n"
             f"{text}\n{SECTION_END}\n")
  if SECTION_START in old and SECTION_END in old:
    before, rest = old.split(SECTION_START, 1)
    after = rest.split(SECTION_END, 1)[1].lstrip("\n")
    new = before + section + after
  else:
    new = old.rstrip("\n") + "\n\n" + section
  path.write_text(new)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer calls and runs (noisier)")
  parser.add_argument("--plugin", action="append", default=None,
                      help="a plugin path or installed package name (repeatable); default: "
                           + ", ".join(KNOWN_PLUGINS))
  parser.add_argument("--search", action="append", default=[],
                      help="a folder of `pip install --target` folders, added to PYTHONPATH")
  parser.add_argument("--pairs", type=int, default=4,
                      help="pairs of processes (revax, jax) per plugin, alternating the order")
  parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated row names")
  parser.add_argument("--variant", action="append", default=[],
                      help="ENV=VALUE[,ENV=VALUE...]: one more revax column per plugin, its "
                           "children run with those variables (repeatable)")
  parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
  parser.add_argument("--child", choices=("revax", "jax"), help=argparse.SUPPRESS)
  parser.add_argument("--outputs", help=argparse.SUPPRESS)
  args = parser.parse_args()
  rows = args.rows.split(",")
  if args.child:
    emit(child(args.child, rows, args.quick, args.outputs))
    return
  unknown = [r for r in rows if r not in ROWS]
  if unknown:
    parser.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
  plugins = args.plugin or list(KNOWN_PLUGINS)
  variants = {"default": {}} | {v: parse_variant(v) for v in args.variant}
  column = lambda plugin, v: plugin if not args.variant else f"{plugin} [{v}]"
  columns = [column(p, v) for p in plugins for v in variants]
  pairs = {c: [] for c in columns}
  errors, mismatch, load = {}, {}, {}
  with tempfile.TemporaryDirectory(prefix="bench-plugins-") as tmp:
    for i in range(args.pairs):
      for plugin in plugins:
        if plugin in errors:
          continue
        print(f"pair {i + 1}: {plugin} ...", file=sys.stderr, flush=True)
        # revax's variants and jax, the order rotating from pair to pair (two alternate)
        got = {}
        for name in pair_order([*variants, "jax"], i):
          lib = "jax" if name == "jax" else "revax"
          outputs = os.path.join(tmp, f"{len(got)}.npz") if i == 0 else None
          got[name] = measure(lib, plugin, rows, args.quick, args.search,
                              variants.get(name), outputs)
          got[name]["outputs"] = outputs
        bad = [f"{name}: {r['error']}" for name, r in got.items() if "error" in r]
        if bad:
          errors[plugin] = "; ".join(bad)
          continue
        for v in variants:
          if i == 0:
            mismatch[column(plugin, v)] = check_outputs(got[v]["outputs"], got["jax"]["outputs"],
                                                        rows)
          pairs[column(plugin, v)].append((got[v], got["jax"]))
          load[column(plugin, v)] = os.getloadavg()[0]
  results = {}
  for plugin in plugins:
    for v in variants:
      c = column(plugin, v)
      if not pairs[c]:
        results[c] = {"error": errors.get(plugin, "no pair measured")}
        continue
      first = pairs[c][0][0]
      results[c] = {"plugin": first["plugin"], "describe": first["describe"],
                    "rows": summarize(pairs[c]), "pairs": len(pairs[c]), "load": load[c],
                    "mismatch": mismatch.get(c), "env": variants[v]}
  text = table(results)
  print(text)
  for plugin, res in results.items():
    for name, row in res.get("rows", {}).items():
      print(f"{plugin} {name}: per-pair ratios "
            + ", ".join(f"{r:.2f}" for r in row["ratios"])
            + f"; best runs {fmt_us(row['best_revax'])} / {fmt_us(row['best_jax'])} "
            f"({row['best_revax'] / row['best_jax']:.2f}x)"
            + f"; first call revax {row['first_revax']:.2f} s, jax {row['first_jax']:.2f} s",
            file=sys.stderr)
  if args.write:
    command = ("python benchmarks/bench_plugins.py" + "".join(f" --search {s}" for s in args.search)
               + "".join(f" --plugin {p}" for p in (args.plugin or ()))
               + (" --quick" if args.quick else "")
               + (f" --pairs {args.pairs}" if args.pairs != 4 else "")
               + (f" --rows {args.rows}" if rows != list(ROWS) else "")
               + "".join(f" --variant {v}" for v in args.variant)
               + ("" if os.environ.get("REVAX_CPU_GEMM") is None else
                  f"  (env REVAX_CPU_GEMM={os.environ['REVAX_CPU_GEMM']})"))
    write_section(text, command)


if __name__ == "__main__":
  main()
