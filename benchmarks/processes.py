"""One library per process: child interpreters, pairs of them, and ratios per pair.

Two XLA runtimes in one process (revax's PJRT plugin and jaxlib's) compete for the cores with
their thread pools: issue 36 read the same pair of programs anywhere from 1.05x to 1.47x in one
process, depending on which ran first and on pauses between calls. So compiled programs are
timed with each library in its own child interpreter (`python benchmarks/processes.py --child
LIB ...`, which imports only that library), in pairs of children alternating which goes first
(`pair_order`), and a ratio revax/jax is the median of the per-pair ratios. This module holds
that machinery for bench_plugins.py, bench_conv_ops.py and run.py's compiled rows (with the
topic modules' ones):

- `child_env`, `run_child`, `emit`: start a child with the environment it needs and read the
  one JSON line it prints (`RESULT {...}`);
- `time_apart(module, groups, quick)`: for run.py's rows. A module names groups of calls; its
  function `apart_calls(group, lib_name, lib, np_mod, quick)` returns a `ChildCalls` for one
  library (e.g. {"revax": revax.jit's call, "revax direct": the same program run straight on
  the runtime} or {"jax": jax.jit's call}). Each child times its calls in interleaved rounds
  (`timing.time_interleaved`, wall and CPU time), so ratios between two calls of one library
  (jit/direct: revax's call path) stay paired within a process, and ratios across libraries are
  per pair of processes. The first pair's outputs are compared across the libraries, and every
  child reports which of jax, jaxlib and revax it had imported: `time_apart` refuses a result
  where a child loaded the other library.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
from typing import NamedTuple

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
LIBRARIES = ("revax", "jax")
# the top-level modules that tell which libraries a process has loaded
_MARKERS = {"revax": ("revax",), "jax": ("jax", "jaxlib")}


def one_library(name: str):
  """(lib, lib.numpy) of library `name` ("revax" or "jax"), importing only that one; revax's
  persistent compilation cache is turned off (`timing.compile_uncached`)."""
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  if name == "jax":
    import jax
    import jax.numpy as jnp
    return jax, jnp
  if name != "revax":
    raise ValueError(f"unknown library {name!r}")
  import revax
  import revax.numpy as rnp
  sys.path.insert(0, str(HERE))
  from timing import compile_uncached
  compile_uncached()
  return revax, rnp


def loaded_libraries() -> list[str]:
  """The top-level modules among jax, jaxlib and revax that this process has imported."""
  return sorted(m for names in _MARKERS.values() for m in names if m in sys.modules)


def foreign_modules(lib_name: str, loaded: list[str]) -> list[str]:
  """The modules in `loaded` that belong to the library that is not `lib_name`."""
  other = [m for lib, names in _MARKERS.items() if lib != lib_name for m in names]
  return [m for m in loaded if m in other]


def pair_order(names, i: int) -> list:
  """The order of the children of pair `i`: `names` rotated by `i` (two names alternate)."""
  names = list(names)
  shift = i % len(names)
  return names[shift:] + names[:shift]


def child_env(extra: dict | None = None, plugin: str | None = None, search=()) -> dict:
  """The environment of a child: this one with JAX_PLATFORMS=cpu, the repository (and every
  folder inside each folder of `search`: `pip install --target` folders) on PYTHONPATH, env
  PJRT_PLUGIN=`plugin` where given, and `extra` on top."""
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  paths = [str(ROOT)] + [str(p) for d in search for p in sorted(pathlib.Path(d).iterdir())
                         if p.is_dir()]
  env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
  if plugin is not None:
    env["PJRT_PLUGIN"] = plugin
  env.update(extra or {})
  return env


class ChildFailed(RuntimeError):
  """A child interpreter exited with an error or printed no result."""


def run_child(script, args: list, env: dict, timeout: float = 1800) -> dict:
  """Run `python script *args` with `env` and return the JSON of its last `RESULT ` line.

  Raises:
    ChildFailed: the child failed (the message ends with its last output lines).
  """
  proc = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True,
                        text=True, env=env, timeout=timeout)
  lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
  if proc.returncode != 0 or not lines:
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    raise ChildFailed(f"{pathlib.Path(script).name} {' '.join(map(str, args))}: exit "
                      f"{proc.returncode}: " + " / ".join(tail))
  return json.loads(lines[-1][len("RESULT "):])


def emit(result: dict) -> None:
  """Print a child's result as the line `run_child` reads."""
  print("RESULT " + json.dumps(result), flush=True)


class ChildCalls(NamedTuple):
  """What one child times for a group: `calls` ({name: zero-argument call}) in `rounds`
  interleaved rounds of `number` calls each after `warmup` calls; `outputs` (arrays, or None)
  are compared with the other library's within `rtol`/`atol` (relative to the largest |value|
  of the reference output where `scaled`); `extra` (JSON values: XLA's temp sizes, say) comes
  back as the group's `Apart.extra[lib_name]`."""
  calls: dict
  number: int
  rounds: int
  warmup: int = 3
  outputs: list | None = None
  rtol: float = 1e-4
  atol: float = 1e-5
  scaled: bool = False
  extra: dict | None = None


class Apart(dict):
  """{name: median over pairs of the child's median seconds per call} of `time_apart`'s pairs,
  read like `timing.Timings`: `ratio(a, b)` is the median over pairs of the ratio within the
  child where a and b ran in one child (the same library: paired rounds), else of the children's
  medians (one pair of processes); `cpu` holds the same in process CPU time."""

  def __init__(self, pairs: list, cpu: list | None = None):
    # pairs: [{child label: {name: [seconds per call, one per round]}}]
    self.pairs = pairs
    self.child_of = {name: child for child, s in pairs[0].items() for name in s}
    self.per_pair = {name: [statistics.median(p[child][name]) for p in pairs]
                     for name, child in self.child_of.items()}
    super().__init__({name: statistics.median(v) for name, v in self.per_pair.items()})
    self.extra = {}
    if cpu is not None:
      self.cpu = Apart(cpu)

  def ratios(self, a: str, b: str) -> list[float]:
    """One ratio a/b per pair (paired rounds where a and b ran in one child)."""
    if self.child_of[a] == self.child_of[b]:
      child = self.child_of[a]
      return [statistics.median(x / y for x, y in zip(p[child][a], p[child][b], strict=True))
              for p in self.pairs]
    return [x / y for x, y in zip(self.per_pair[a], self.per_pair[b], strict=True)]

  def ratio(self, a: str, b: str) -> float:
    return statistics.median(self.ratios(a, b))

  def with_sums(self, sums: dict) -> Apart:
    """This with more names, each the per-round sum of two names of one child ({new: (a, b)})."""
    def add(pairs):
      out = []
      for p in pairs:
        p = {child: dict(s) for child, s in p.items()}
        for new, (a, b) in sums.items():
          child = self.child_of[a]
          if self.child_of[b] != child:
            raise ValueError(f"{a!r} and {b!r} ran in different children")
          p[child][new] = [x + y for x, y in zip(p[child][a], p[child][b], strict=True)]
        out.append(p)
      return out
    out = Apart(add(self.pairs), add(self.cpu.pairs) if hasattr(self, "cpu") else None)
    out.extra = self.extra
    return out


def jitted_child_calls(lib_name: str, lib, f, args, number: int, rounds: int, *,
                       rtol: float = 1e-4, atol: float = 1e-5, scaled: bool = False,
                       warmup: int = 3) -> ChildCalls:
  """`ChildCalls` of one jitted program `f` on device-resident `args`: its first call's outputs
  (for the comparison across libraries), and `timing.jitted_calls` (revax.jit and revax's
  program run directly, or jax.jit), each call waiting for its outputs."""
  from timing import jitted_calls
  outputs = [np.asarray(x) for x in lib.tree_util.tree_leaves(lib.block_until_ready(f(*args)))]
  return ChildCalls(jitted_calls(lib_name, lib, f, *args), number, rounds, warmup, outputs,
                    rtol, atol, scaled)


def default_pairs(quick: bool) -> int:
  """Pairs of processes per `time_apart`: 2 with --quick, else 4."""
  return 2 if quick else 4


def time_apart(module: str, groups: list, quick: bool, pairs: int | None = None,
               env_extra: dict | None = None, env_all: dict | None = None) -> dict:
  """Time each group of `module`'s calls with each library in its own child, in pairs.

  Args:
    module: a module in benchmarks/ with `apart_calls(group, lib_name, lib, np_mod, quick)`
      returning a `ChildCalls` for one library.
    groups: the group names; one child per library and pair times them all, in turn.
    quick: passed to `apart_calls`.
    pairs: pairs of children (default `default_pairs(quick)`), alternating which goes first.
    env_extra: environment variables for revax's children only.
    env_all: environment variables for every child.

  Returns:
    {group: `Apart`} (with `.cpu`), and under the key None the children's results
    ({"pairs": [{lib: result}], "loaded": {lib: [modules]}}).

  Raises:
    RuntimeError: a child imported the other library (the measurement would carry the
      one-process bias), or failed.
    AssertionError: revax's outputs differ from jax's beyond a group's tolerance.
  """
  pairs = default_pairs(quick) if pairs is None else pairs
  results = []
  with tempfile.TemporaryDirectory(prefix="bench-apart-") as tmp:
    for i in range(pairs):
      got = {}
      for lib in pair_order(LIBRARIES, i):
        args = ["--child", lib, "--module", module, "--groups", ",".join(groups)]
        if quick:
          args.append("--quick")
        if i == 0:
          args += ["--outputs", os.path.join(tmp, f"{lib}.npz")]
        env = child_env({**(env_all or {}), **((env_extra or {}) if lib == "revax" else {})})
        got[lib] = run_child(pathlib.Path(__file__), args, env)
        foreign = foreign_modules(lib, got[lib]["loaded"])
        if foreign or lib not in got[lib]["loaded"]:
          raise RuntimeError(f"the {lib} child of {module} ({', '.join(groups)}) loaded "
                             f"{got[lib]['loaded']}: one library per process is required")
      if i == 0:
        check_outputs(os.path.join(tmp, "revax.npz"), os.path.join(tmp, "jax.npz"),
                      got["revax"]["check"], module)
      results.append(got)
  out = {}
  for group in groups:
    wall = [{lib: r[lib]["groups"][group]["wall"] for lib in LIBRARIES} for r in results]
    cpu = [{lib: r[lib]["groups"][group]["cpu"] for lib in LIBRARIES} for r in results]
    out[group] = Apart(wall, cpu)
    out[group].extra = {lib: results[0][lib]["groups"][group].get("extra") for lib in LIBRARIES}
  out[None] = {"pairs": results, "loaded": {lib: results[0][lib]["loaded"] for lib in LIBRARIES}}
  return out


def check_outputs(revax_file: str, jax_file: str, tolerances: dict, what: str) -> None:
  """Compare the outputs the two children saved, group by group (`tolerances`: {group: (rtol,
  atol, scaled)}, from revax's child)."""
  r, j = np.load(revax_file), np.load(jax_file)
  for group, (rtol, atol, scaled) in tolerances.items():
    keys = sorted(k for k in r.files if k.split("/")[0] == group)
    assert keys == sorted(k for k in j.files if k.split("/")[0] == group), \
        f"{what} {group}: the libraries returned different outputs"
    for k in keys:
      scale = float(np.max(np.abs(j[k]))) if scaled and j[k].size else 1.0
      np.testing.assert_allclose(r[k], j[k], rtol=rtol, atol=atol * scale,
                                 err_msg=f"{what} {k}: revax differs from jax")


def child_main(lib_name: str, module: str, groups: list, quick: bool,
               outputs: str | None) -> dict:
  """The child side of `time_apart`: time `module`'s groups with library `lib_name` alone."""
  sys.path.insert(0, str(HERE))
  lib, np_mod = one_library(lib_name)
  from timing import time_interleaved
  mod = importlib.import_module(module)
  out, saved, check = {}, {}, {}
  for group in groups:
    spec = mod.apart_calls(group, lib_name, lib, np_mod, quick)
    if spec.outputs is not None:
      for i, leaf in enumerate(spec.outputs):
        saved[f"{group}/{i}"] = np.asarray(leaf)
      check[group] = (spec.rtol, spec.atol, spec.scaled)
    t = time_interleaved(spec.calls, spec.number, spec.rounds, spec.warmup, cpu=True)
    out[group] = {"wall": t.samples, "cpu": t.cpu.samples, "extra": spec.extra}
    del spec, t
  if outputs:
    np.savez(outputs, **saved)
  return {"groups": out, "check": check, "loaded": loaded_libraries()}


def main():
  parser = argparse.ArgumentParser(description="child interpreter of time_apart")
  parser.add_argument("--child", choices=LIBRARIES, required=True)
  parser.add_argument("--module", required=True)
  parser.add_argument("--groups", required=True)
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--outputs")
  args = parser.parse_args()
  emit(child_main(args.child, args.module, args.groups.split(","), args.quick, args.outputs))


if __name__ == "__main__":
  main()
