"""revax on each available CPU PJRT plugin against jax on jaxlib's XLA, one library per process.

Run: python benchmarks/bench_plugins.py [--quick] [--plugin NAME_OR_PATH ...] [--search DIR ...]
                                        [--pairs N] [--write]

Each measurement is a child interpreter running ONE library (a process has one backend, and two
XLA runtimes in one process compete for the cores: issue 36 measured the same pair anywhere from
1.05x to 1.47x that way). For each plugin (env `PJRT_PLUGIN`: by default the pinned
`xla-cpu-pjrt` and the other CPU plugins on the package index, `fastatomstruct-xla-cpu` and
`lammps-jax-pjrt-cpu`, where installed) the script runs `--pairs` pairs of children, revax then
jax, then jax then revax, alternating; the plugins take turns pair by pair, so slow drifts in load
hit every column alike. `--search DIR` adds every folder in DIR to the children's PYTHONPATH,
so packages installed with `pip install --target DIR/<name> <name>` are found by name. Set
`REVAX_CPU_GEMM=0` to measure revax without its BLAS dots (revax/_src/runtime/gemm.py).

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
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

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
  if name == "mlp_step":
    import bench_dot
    rng = np.random.default_rng(1)
    x = rng.standard_normal((bench_dot.MLP_BATCH, bench_dot.MLP_SIZES[0])).astype(np.float32)
    labels = np.eye(bench_dot.MLP_SIZES[-1], dtype=np.float32)[
        rng.integers(0, bench_dot.MLP_SIZES[-1], bench_dot.MLP_BATCH)]
    return bench_dot.mlp_step_fn(lib, np_mod), lib.device_put((bench_dot.mlp_params(), x, labels))
  if name in ("cnn_per_example", "cnn_step"):
    import bench_conv
    make, batch = ((bench_conv.per_example_grads, bench_conv.PER_EXAMPLE_BATCH)
                   if name == "cnn_per_example" else (bench_conv.train_step, bench_conv.BATCH))
    images, labels = bench_conv.data(batch, 1)
    return make(lib, np_mod), lib.device_put((bench_conv.cnn_params(), images, labels))
  if name in ("vdot_both", "vdot_lhs"):
    import bench_dot as d
    rng = np.random.default_rng(0)
    lhs = rng.standard_normal((d.M, d.B, d.V, d.K)).astype(np.float32)
    if name == "vdot_both":
      rhs, in_axes = rng.standard_normal((d.K, d.V, d.N, d.B)).astype(np.float32), (2, 1)
    else:
      rhs, in_axes = rng.standard_normal((d.K, d.N, d.B)).astype(np.float32), (2, None)
    f = lib.jit(lib.vmap(lambda a, b: lib.lax.dot_general(a, b, d.DOT_DIMS), in_axes=in_axes))
    return f, lib.device_put((lhs, rhs))
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
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  from timing import blocked_runs, compile_uncached
  if lib_name == "jax":
    import jax
    import jax.numpy as np_mod
    lib = jax
  else:
    import revax
    import revax.numpy as np_mod
    lib = revax
    compile_uncached()
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
  if lib_name == "revax":
    from revax._src.runtime import client, plugins
    choice = plugins.loaded()
    out["plugin"] = {"package": choice.package, "version": choice.version, "path": choice.path}
    out["describe"] = plugins.describe(client.get_backend())
  return out


def run_child(lib: str, plugin: str, rows: list[str], quick: bool, search: list[str],
              outputs: str | None = None) -> dict:
  env = dict(os.environ)
  env["PJRT_PLUGIN"] = plugin
  env["JAX_PLATFORMS"] = "cpu"
  extra = [str(ROOT)] + [str(p) for d in search for p in sorted(pathlib.Path(d).iterdir())
                         if p.is_dir()]
  env["PYTHONPATH"] = os.pathsep.join(extra + [env.get("PYTHONPATH", "")])
  args = [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", lib,
          "--rows", ",".join(rows)]
  if quick:
    args.append("--quick")
  if outputs:
    args += ["--outputs", outputs]
  proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
  lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
  if proc.returncode != 0 or not lines:
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
    return {"error": " / ".join(tail) or f"exit {proc.returncode}"}
  return json.loads(lines[-1][len("RESULT "):])


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
  parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
  parser.add_argument("--child", choices=("revax", "jax"), help=argparse.SUPPRESS)
  parser.add_argument("--outputs", help=argparse.SUPPRESS)
  args = parser.parse_args()
  rows = args.rows.split(",")
  if args.child:
    print("RESULT " + json.dumps(child(args.child, rows, args.quick, args.outputs)))
    return
  plugins = args.plugin or list(KNOWN_PLUGINS)
  pairs = {p: [] for p in plugins}
  errors, mismatch, load = {}, {}, {}
  with tempfile.TemporaryDirectory(prefix="bench-plugins-") as tmp:
    for i in range(args.pairs):
      for plugin in plugins:
        if plugin in errors:
          continue
        print(f"pair {i + 1}: {plugin} ...", file=sys.stderr, flush=True)
        order = ("revax", "jax") if i % 2 == 0 else ("jax", "revax")
        got = {}
        for lib in order:
          outputs = os.path.join(tmp, f"{lib}.npz") if i == 0 else None
          got[lib] = run_child(lib, plugin, rows, args.quick, args.search, outputs)
        bad = [f"{lib}: {r['error']}" for lib, r in got.items() if "error" in r]
        if bad:
          errors[plugin] = "; ".join(bad)
          continue
        if i == 0:
          mismatch[plugin] = check_outputs(os.path.join(tmp, "revax.npz"),
                                           os.path.join(tmp, "jax.npz"), rows)
        pairs[plugin].append((got["revax"], got["jax"]))
        load[plugin] = os.getloadavg()[0]
  results = {}
  for plugin in plugins:
    if not pairs[plugin]:
      results[plugin] = {"error": errors.get(plugin, "no pair measured")}
      continue
    first = pairs[plugin][0][0]
    results[plugin] = {"plugin": first["plugin"], "describe": first["describe"],
                       "rows": summarize(pairs[plugin]), "pairs": len(pairs[plugin]),
                       "load": load[plugin], "mismatch": mismatch.get(plugin)}
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
               + ("" if os.environ.get("REVAX_CPU_GEMM") is None else
                  f"  (env REVAX_CPU_GEMM={os.environ['REVAX_CPU_GEMM']})"))
    write_section(text, command)


if __name__ == "__main__":
  main()
