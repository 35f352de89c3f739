"""benchmarks/processes.py: run.py's compiled rows (and the topic modules' jitted rows, and
bench_plugins.py's rows) time each library in its own child process, never both in one.

Checked by what the children imported (each reports the top-level modules among jax, jaxlib and
revax it had loaded), not by timings: a real `time_apart` of run.py's rows, a module whose revax
child also imports jax (refused), and, over the source of run.py and every topic module it
runs, that a jitted program's calls are only built in `apart_calls` (the child side). The ratio
arithmetic of `Apart` runs on synthetic timings.
"""
from __future__ import annotations

import ast
import importlib
import os
import pathlib
import sys

import pytest

from tests.platform_tolerances import ON_TPU

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
  """(processes, run) modules of benchmarks/ (a folder of scripts, not a package)."""
  sys.path.insert(0, str(BENCHMARKS))
  try:
    yield importlib.import_module("processes"), importlib.import_module("run")
  finally:
    sys.path.remove(str(BENCHMARKS))


def test_run_rows_time_each_library_in_its_own_process(bench):
  pytest.importorskip("jax")
  processes, _ = bench
  # on a TPU machine this process holds the chip: the children time on the CPU
  cpu = {"REVAX_PLATFORMS": "cpu", "JAX_PLATFORMS": "cpu"} if ON_TPU else None
  got = processes.time_apart("run", ["add8", "mlp_grad"], quick=True, pairs=2, env_all=cpu)
  for pair in got[None]["pairs"]:
    assert "jax" not in pair["revax"]["loaded"] and "jaxlib" not in pair["revax"]["loaded"]
    assert "revax" in pair["revax"]["loaded"]
    assert "revax" not in pair["jax"]["loaded"] and "jax" in pair["jax"]["loaded"]
  for group in ("add8", "mlp_grad"):
    t = got[group]
    assert set(t) == {"revax", "revax direct", "jax"}
    assert t.child_of == {"revax": "revax", "revax direct": "revax", "jax": "jax"}
    assert len(t.ratios("revax", "jax")) == 2 and all(x > 0 for x in t.ratios("revax", "jax"))
    assert set(t.cpu) == set(t)


def test_a_child_that_loads_both_libraries_is_refused(bench, tmp_path, monkeypatch):
  processes, _ = bench
  (tmp_path / "both_libraries.py").write_text(
      "from processes import ChildCalls\n\n\n"
      "def apart_calls(group, lib_name, lib, np_mod, quick):\n"
      "  import jax  # the bias time_apart exists to avoid: two runtimes in one process\n"
      "  import revax\n"
      "  return ChildCalls({lib_name: lambda: None}, 1, 1, 0)\n")
  monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
  with pytest.raises(RuntimeError, match="one library per process"):
    processes.time_apart("both_libraries", ["g"], quick=True, pairs=1)


def test_foreign_modules_and_pair_order(bench):
  processes, _ = bench
  assert processes.foreign_modules("revax", ["jaxlib", "revax"]) == ["jaxlib"]
  assert processes.foreign_modules("jax", ["jax", "jaxlib"]) == []
  assert processes.foreign_modules("jax", ["jax", "revax"]) == ["revax"]
  assert [processes.pair_order(["revax", "jax"], i) for i in range(3)] == [
      ["revax", "jax"], ["jax", "revax"], ["revax", "jax"]]
  orders = [processes.pair_order(["default", "gemm", "jax"], i) for i in range(3)]
  assert [o[0] for o in orders] == ["default", "gemm", "jax"]  # each goes first once


def test_apart_ratios_pair_rounds_within_a_child_and_processes_across(bench):
  processes, _ = bench
  pairs = [{"revax": {"revax": [2.0, 6.0, 4.0], "revax direct": [1.0, 2.0, 4.0]},
            "jax": {"jax": [8.0, 8.0, 8.0]}},
           {"revax": {"revax": [3.0, 3.0, 3.0], "revax direct": [3.0, 1.0, 1.0]},
            "jax": {"jax": [1.0, 2.0, 3.0]}}]
  t = processes.Apart(pairs)
  assert t["revax"] == pytest.approx(3.5)  # the children's medians 4 and 3
  assert t.ratios("revax", "jax") == pytest.approx([0.5, 1.5])  # child medians, pair by pair
  assert t.ratio("revax", "jax") == pytest.approx(1.0)
  # same child: per-round ratios, median per child (2, 3, 1 -> 2; 1, 3, 3 -> 3)
  assert t.ratios("revax", "revax direct") == pytest.approx([2.0, 3.0])
  summed = t.with_sums({"both": ("revax", "revax direct")})
  assert summed.pairs[0]["revax"]["both"] == [3.0, 8.0, 8.0]
  with pytest.raises(ValueError, match="different children"):
    t.with_sums({"bad": ("revax", "jax")})


def _calls_in_this_process(path: pathlib.Path, names: set) -> list[str]:
  """Calls of `names` in the functions of `path` that its `rows` or `main` reach through calls
  by name (a child's `apart_calls`, run by time_apart in other processes, is not followed)."""
  tree = ast.parse(path.read_text())
  functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}

  def called(node):
    for sub in ast.walk(node):
      if isinstance(sub, ast.Call):
        fn = sub.func
        yield sub, fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)
  reached, todo = set(), [n for n in ("rows", "main") if n in functions]
  while todo:
    name = todo.pop()
    if name in reached or name == "apart_calls":
      continue
    reached.add(name)
    todo += [c for _, c in called(functions[name]) if c in functions]
  return [f"{path.name}:{call.lineno} {fn} (in {name})" for name in sorted(reached)
          for call, fn in called(functions[name]) if fn in names]


def test_jitted_calls_are_built_only_in_child_processes(bench):
  """run.py and its topic modules build a jitted program's timed calls (`jitted_calls`,
  `revax_program_directly`, `jitted_child_calls`) only in `apart_calls`, which runs in a child
  process of one library; the eager, trace and compile rows are the only ones timed here."""
  _, run = bench
  names = {"jitted_calls", "revax_program_directly", "jitted_child_calls"}
  files = [BENCHMARKS / "run.py"] + [BENCHMARKS / f"bench_{t}.py" for t in run.TOPICS]
  bad = [hit for path in files if path.exists() for hit in _calls_in_this_process(path, names)]
  assert bad == []
  # and every module with an apart_calls reaches time_apart
  for path in files:
    text = path.read_text()
    if "def apart_calls" in text:
      assert "time_apart(" in text, path.name


def test_bench_plugins_variants(bench):
  """--variant ENV=VALUE[,ENV=VALUE]: one more revax column, its children with those variables."""
  bench_plugins = importlib.import_module("bench_plugins")
  assert bench_plugins.parse_variant("REVAX_CPU_GEMM=large-nt") == {"REVAX_CPU_GEMM": "large-nt"}
  assert bench_plugins.parse_variant("A=1, B=") == {"A": "1", "B": ""}
  with pytest.raises(SystemExit, match="ENV=VALUE"):
    bench_plugins.parse_variant("REVAX_CPU_GEMM")
  processes, _ = bench
  env = processes.child_env({"REVAX_CPU_GEMM": "large"}, plugin="xla-cpu-pjrt")
  assert env["REVAX_CPU_GEMM"] == "large" and env["PJRT_PLUGIN"] == "xla-cpu-pjrt"
  assert env["JAX_PLATFORMS"] == "cpu"
  assert env["PYTHONPATH"].split(os.pathsep)[0] == str(BENCHMARKS.parent)
