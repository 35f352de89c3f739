"""revax on each available CPU PJRT plugin, against jax on jaxlib's own XLA, one row set per plugin.

Run: python benchmarks/bench_plugins.py [--quick] [--plugin NAME_OR_PATH ...] [--search DIR ...]
                                        [--write]

Each plugin runs in its own interpreter (a process has one backend), chosen with env
`PJRT_PLUGIN`: by default the pinned `xla-cpu-pjrt` and the other CPU plugins on the package index
(`fastatomstruct-xla-cpu`, `lammps-jax-pjrt-cpu`) where they are installed. `--search DIR` adds
every folder in DIR to the children's PYTHONPATH, so packages installed with
`pip install --target DIR/<name> <name>` are found by name. Rows:
  - the MLP 784-1024-1024-1024-10 training step (bench_dot), batch 256;
  - per-example gradients of the small CNN (bench_conv), 16 examples;
  - jit(vmap(dot_general)) with batch dims in odd positions, lhs only mapped (bench_dot);
  - a jitted elementwise call, f32[8] + f32[8] (the call overhead).
In every round revax and jax each run `number` calls (which goes first alternates), and the
round's ratio is revax / jax: a row reports the medians of each side's per-call times and the
median of the per-round ratios (paired), so load from elsewhere hits both sides of a ratio alike
and the ratios of different plugins (measured against the same jax) can be compared. The plugins
take turns over `--passes` child processes each (default 2), whose rounds are pooled.
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
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

KNOWN_PLUGINS = ("xla-cpu-pjrt", "fastatomstruct-xla-cpu", "lammps-jax-pjrt-cpu")
SECTION_START = "<!-- bench_plugins: start -->"
SECTION_END = "<!-- bench_plugins: end -->"


def paired(calls: dict, number: int, rounds: int, warmup: int = 2) -> dict:
  """{"revax": [s/call per round], "jax": [s/call per round]}, the two sides' rounds paired."""
  for fn in calls.values():
    for _ in range(warmup):
      fn()
  names = ["revax", "jax"]
  samples = {name: [] for name in names}
  for i in range(rounds):
    for name in (names if i % 2 == 0 else names[::-1]):
      fn = calls[name]
      t = time.perf_counter()
      for _ in range(number):
        fn()
      samples[name].append((time.perf_counter() - t) / number)
  return samples


def summarize(revax_times: list, jax_times: list) -> dict:
  """Medians of each side and the median of the per-round ratios revax/jax (paired)."""
  ratios = [r / j for r, j in zip(revax_times, jax_times, strict=True)]
  return {"revax": statistics.median(revax_times), "jax": statistics.median(jax_times),
          "ratio": statistics.median(ratios), "rounds": len(ratios)}


def elementwise_calls(libs):
  calls = {}
  x, y = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
  for name, (lib, _) in libs.items():
    f = lib.jit(lambda a, b: a + b)
    dx, dy = lib.device_put(x), lib.device_put(y)
    np.testing.assert_array_equal(np.asarray(f(dx, dy)), x + y)
    calls[name] = lambda f=f, dx=dx, dy=dy: f(dx, dy).block_until_ready()
  return calls


def child(quick: bool) -> dict:
  """Measure every row in this process (its plugin chosen by env PJRT_PLUGIN)."""
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  import bench_conv
  import bench_dot
  from timing import libraries

  import revax
  from revax._src.runtime import client, plugins
  libs = libraries()
  revax.devices()
  rounds = 5 if quick else 15
  rows = [
      ("MLP 784-1024-1024-1024-10 training step, batch 256", bench_dot.mlp_step_calls(libs),
       3 if quick else 5),
      ("CNN per-example gradients, jit(vmap(grad)), 16 examples",
       bench_conv.calls_of(libs, bench_conv.per_example_grads, bench_conv.PER_EXAMPLE_BATCH),
       3 if quick else 10),
      ("jit(vmap(dot_general)), odd batch dims, lhs only mapped",
       bench_dot.vmapped_dot_calls(libs, both_mapped=False), 20 if quick else 50),
      ("jitted call, f32[8] + f32[8]", elementwise_calls(libs), 500 if quick else 2000),
  ]
  choice = plugins.loaded()
  out = {"plugin": {"package": choice.package, "version": choice.version, "path": choice.path},
         "describe": plugins.describe(client.get_backend()), "rows": []}
  for label, calls, number in rows:
    out["rows"].append({"label": label, **paired(calls, number, rounds)})
  return out


def run_child(plugin: str, quick: bool, search: list[str]) -> dict:
  env = dict(os.environ)
  env["PJRT_PLUGIN"] = plugin
  env["JAX_PLATFORMS"] = "cpu"
  extra = [str(ROOT)] + [str(p) for d in search for p in sorted(pathlib.Path(d).iterdir())
                         if p.is_dir()]
  env["PYTHONPATH"] = os.pathsep.join(extra + [env.get("PYTHONPATH", "")])
  args = [sys.executable, str(pathlib.Path(__file__).resolve()), "--child"]
  if quick:
    args.append("--quick")
  proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
  lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
  if proc.returncode != 0 or not lines:
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
    return {"error": " / ".join(tail) or f"exit {proc.returncode}"}
  return json.loads(lines[-1][len("RESULT "):])


def fmt_us(seconds: float) -> str:
  us = seconds * 1e6
  return f"{us:.1f} us" if us < 1000 else f"{us / 1000:.2f} ms"


def table(results: dict) -> str:
  labels = []
  for res in results.values():
    for row in res.get("rows", ()):
      if row["label"] not in labels:
        labels.append(row["label"])
  lines = []
  for plugin, res in results.items():
    if "error" in res:
      lines.append(f"- `{plugin}`: not measured ({res['error']})")
    else:
      p = res["plugin"]
      versions = [line.split(": ", 1)[1] for line in res["describe"]
                  if line.startswith("pjrt plugin versions")]
      lines.append(f"- `{plugin}`: {p['package']} {p['version']}"
                   + (f"; {versions[0]}" if versions else ""))
  measured = [p for p, r in results.items() if "rows" in r]
  header = "| row | " + " | ".join(f"{p}: revax / jax (ratio)" for p in measured) + " |"
  lines += ["", header, "|---|" + "---|" * len(measured)]
  for label in labels:
    cells = []
    for plugin in measured:
      row = next((r for r in results[plugin]["rows"] if r["label"] == label), None)
      cells.append("-" if row is None else
                   f"{fmt_us(row['revax'])} / {fmt_us(row['jax'])} ({row['ratio']:.2f}x)")
    lines.append(f"| {label} | " + " | ".join(cells) + " |")
  return "\n".join(lines)


def write_section(text: str, command: str) -> None:
  path = HERE / "RESULTS.md"
  old = path.read_text() if path.exists() else ""
  section = (f"{SECTION_START}\n## PJRT plugins: revax on each CPU plugin vs jax (jaxlib's XLA)\n\n"
             f"Command: `{command}`  \nMachine: {platform.machine()}, "
             f"{os.cpu_count()} cores, 5-minute load average {os.getloadavg()[1]:.1f} at the "
             f"end, measured {time.strftime('%Y-%m-%d')}. Paired medians (per-round revax/jax "
             "ratios); below 1 revax is faster.\n\n"
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
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  parser.add_argument("--plugin", action="append", default=None,
                      help="a plugin path or installed package name (repeatable); default: "
                           + ", ".join(KNOWN_PLUGINS))
  parser.add_argument("--search", action="append", default=[],
                      help="a folder of `pip install --target` folders, added to PYTHONPATH")
  parser.add_argument("--passes", type=int, default=2,
                      help="child processes per plugin, taking turns (their rounds pooled)")
  parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
  parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child:
    print("RESULT " + json.dumps(child(args.quick)))
    return
  results = {}
  for i in range(args.passes):  # the plugins take turns, so slow drifts in load hit each alike
    for plugin in args.plugin or KNOWN_PLUGINS:
      print(f"pass {i + 1}: measuring {plugin} ...", file=sys.stderr, flush=True)
      res = run_child(plugin, args.quick, args.search)
      if plugin not in results or "error" in results[plugin]:
        results[plugin] = res
      elif "error" not in res:
        for mine, more in zip(results[plugin]["rows"], res["rows"], strict=True):
          mine["revax"] += more["revax"]
          mine["jax"] += more["jax"]
  for res in results.values():
    for row in res.get("rows", ()):
      row.update(summarize(row.pop("revax"), row.pop("jax")))
  text = table(results)
  print(text)
  if args.write:
    command = "python benchmarks/bench_plugins.py" + "".join(
        f" --search {s}" for s in args.search) + (" --quick" if args.quick else "") + (
        f" --passes {args.passes}" if args.passes != 2 else "")
    write_section(text, command)


if __name__ == "__main__":
  main()
