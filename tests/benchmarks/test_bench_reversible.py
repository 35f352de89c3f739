"""benchmarks/bench_reversible.py: the report's arithmetic (per-block slopes between depths,
ratios over the same depths, out-of-memory cells) on synthetic results, and one tiny run end to
end (a revax process and a jax process, XLA dumps read) whose program counts say what each
variant does per block: plain grad 6 dots, one forward 2, invertible and checkpoint 8 (one
forward recomputed), checkpoint one conditional (fence) per block, invertible none per block."""
from __future__ import annotations

import importlib
import pathlib
import sys
from types import SimpleNamespace

import pytest

from tests.platform_tolerances import ON_TPU

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
  sys.path.insert(0, str(BENCHMARKS))
  try:
    yield importlib.import_module("bench_reversible")
  finally:
    sys.path.remove(str(BENCHMARKS))


def _result(seconds, total=2 ** 20):
  return {"seconds": seconds, "cpu_seconds": 2 * seconds, "compile_s": 0.1,
          "memory": {"temp": total, "argument": 0, "output": 0, "alias": 0, "total": total}}


def test_report_arithmetic(bench):
  # step = fixed + per_block * depth; plain 3 ms/block, forward 1, invertible 4.4, checkpoint 4
  per = {"revax plain": 3e-3, "revax forward": 1e-3, "revax invertible": 4.4e-3,
         "revax checkpoint": 4e-3, "jax plain": 3e-3, "jax forward": 1e-3,
         "jax checkpoint": 3.3e-3}
  results = {(v, d): _result(0.05 + p * d) for v, p in per.items() for d in (8, 16, 32)}
  results["jax plain", 32] = {"oom": "RESOURCE_EXHAUSTED: Ran out of memory"}
  results["process", 0] = {"platform": "TPU v5 lite (tpu)", "device_peak_bytes": 3 * 2 ** 30}
  pb = bench.per_block(results, "revax invertible", (8, 16, 32))
  assert pb[0] == pytest.approx(4.4e-3) and pb[1:] == (8, 32)
  assert bench.per_block(results, "jax plain", (8, 16, 32))[1:] == (8, 16)  # ran at 8 and 16
  common = bench.per_block_common(results, ["jax checkpoint", "jax plain"], (8, 16, 32))
  assert common == pytest.approx({"jax checkpoint": 3.3e-3, "jax plain": 3e-3})
  args = SimpleNamespace(depths=(8, 16, 32), width=2048, batch=8192, rounds=5, calls=3,
                         argv=["--out", "x.md"])
  report = bench.format_report(results, args, ["TPU v5 lite (tpu)"], (1.0, 2.0))
  assert "# Reversible MLP per block: TPU v5 lite (tpu)" in report
  header = next(line for line in report.splitlines() if line.startswith("| depth |"))
  row32 = next(line for line in report.splitlines() if line.startswith("| 32 |"))
  cells = dict(zip(header.strip("|").split(" | "), row32.strip("|").split(" | "), strict=True))
  assert cells["jax plain"].strip() == "out of memory"
  assert cells["revax invertible"].strip() == f"{(0.05 + 4.4e-3 * 32) * 1e3:.2f} ms, 1.0 MiB"
  rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:] for line in report.splitlines()
          if line.startswith("| ") and " / " in line}
  assert float(rows["revax invertible / revax checkpoint"][0]) == pytest.approx(1.1)
  assert float(rows["revax invertible / (revax plain + revax forward)"][0]) == pytest.approx(1.1)
  assert float(rows["revax invertible / (revax plain + revax forward)"][1]) == pytest.approx(1.1)
  assert float(rows["jax checkpoint / (jax plain + jax forward)"][0]) == pytest.approx(0.825)
  assert "3.00 GiB" in report
  # the coupling option's process: its rows and its two ratios
  results.update({("revax invertible (VJP reads y - x)", d): _result(0.05 + 3.63e-3 * d)
                  for d in (8, 16, 32)})
  report = bench.format_report(results, args, ["TPU v5 lite (tpu)"], (1.0, 2.0))
  rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:] for line in report.splitlines()
          if line.startswith("| ") and " / " in line}
  assert float(rows["revax invertible, VJP reads y - x / as is (separate processes)"][0]) == \
      pytest.approx(3.63 / 4.4)
  assert float(rows["revax invertible, VJP reads y - x / jax checkpoint (separate processes)"]
               [0]) == pytest.approx(1.1)


def test_tiny_run_end_to_end(bench, tmp_path, capsys, monkeypatch):
  pytest.importorskip("jax")
  if ON_TPU:  # the CPU's programs (this process holds the chip; the counts are XLA:CPU's)
    monkeypatch.setenv("REVAX_PLATFORMS", "cpu")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
  out = tmp_path / "table.md"
  bench.main(["--out", str(out), "--depths", "1,3", "--width", "32", "--batch", "8",
              "--rounds", "1", "--calls", "1", "--dump", "--barrier"])
  report = out.read_text()
  counts = {}
  for line in report.split("## What each revax program holds per block")[1].splitlines():
    if line.startswith("| revax"):
      cells = [c.strip() for c in line.strip("|").split("|")]
      counts[cells[0]] = dict(zip(["dot_general", "if", "case", "barrier", "transpose", "while",
                                   "xla dot", "copy", "conditional", "loop fusion",
                                   "loop MiB"],
                                  (float(c) for c in cells[1:]), strict=True))
  barrier = {v: counts.pop(v) for v in list(counts) if v.endswith("(barrier fence)")}
  assert {v: c["dot_general"] for v, c in counts.items()} == {
      "revax plain": 6, "revax forward": 2, "revax invertible": 8, "revax checkpoint": 8}
  assert {v: c["xla dot"] for v, c in counts.items()} == {
      "revax plain": 6, "revax forward": 2, "revax invertible": 8, "revax checkpoint": 8}
  # the experiment's fence: a barrier per checkpointed block, none per block of the walk, and
  # no conditional
  assert {v: (c["barrier"], c["if"], c["dot_general"]) for v, c in barrier.items()} == {
      "revax invertible (barrier fence)": (0, 0, 8), "revax checkpoint (barrier fence)": (1, 0, 8)}
  assert "| revax invertible, barrier fence / conditional fence (separate processes) |" in report
  assert counts["revax checkpoint"]["if"] == 1 and counts["revax invertible"]["if"] == 0
  # the walk adds one forward's work and nothing else: no more elementwise passes than plain
  # grad's plus one forward's (XLA fuses the ends of tiny walks a little differently), no
  # conditional per block (one fence around the whole walk) and no copies of data
  inv, plain, fwd = (counts[f"revax {v}"] for v in ("invertible", "plain", "forward"))
  assert inv["loop fusion"] <= plain["loop fusion"] + fwd["loop fusion"], counts
  assert inv["conditional"] == 0 and counts["revax checkpoint"]["conditional"] == 1, counts
  assert inv["copy"] == 0, counts
  for variant in ("revax plain", "revax invertible", "jax plain", "jax checkpoint"):
    assert f"| {variant} | " in report
