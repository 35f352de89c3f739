"""benchmarks/run.py's table: every jitted row can show revax's program run directly on the
runtime beside revax.jit, with jit/direct a paired median of the same interleaved rounds.

Small and fast: synthetic timings for the arithmetic, and one f32[8] + f32[8] program timed for
a few rounds to check that the helpers the topic modules use build such a row end to end.
"""
from __future__ import annotations

import argparse
import importlib
import pathlib
import statistics
import sys

import numpy as np
import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
  """(timing, run) modules of benchmarks/ (a folder of scripts, not a package)."""
  sys.path.insert(0, str(BENCHMARKS))
  try:
    yield importlib.import_module("timing"), importlib.import_module("run")
  finally:
    sys.path.remove(str(BENCHMARKS))


def test_row_ratios_are_paired_medians(bench):
  timing, _ = bench
  # per-round jit/direct: 2, 1, 3 -> paired median 2; the ratio of the medians would be 4/3
  t = timing.Timings({"revax": [2.0, 4.0, 9.0], "revax direct": [1.0, 4.0, 3.0],
                      "jax": [1.0, 8.0, 3.0]})
  label, unit, r, j, target, extra = timing.row("prog", t, 1.5)
  assert (label, unit, target) == ("prog", "us", 1.5)
  assert r == pytest.approx(4e6) and j == pytest.approx(3e6)
  assert extra["direct"] == pytest.approx(3e6)
  assert extra["jit/direct"] == pytest.approx(2.0)  # not 4 / 3
  assert extra["ratio"] == pytest.approx(2.0)  # per round 2, 0.5, 3
  # named sides: a revax variant against another, its own direct run found by name
  t = timing.Timings({"ck": [3.0, 6.0, 2.0], "ck direct": [3.0, 2.0, 2.0], "plain": [1.0] * 3})
  extra = timing.row("ck vs plain", t, None, revax="ck", reference="plain")[5]
  assert extra["jit/direct"] == pytest.approx(1.0) and extra["ratio"] == pytest.approx(3.0)
  # no direct run (an eager op): no direct figure
  t = timing.Timings({"revax": [1.0], "jax": [2.0]})
  assert set(timing.row("eager", t, None)[5]) == {"ratio"}


def test_rounds_interleave_in_rotating_order(bench):
  """Every call runs once per round, and takes each place in a round equally often."""
  timing, _ = bench
  log = []
  calls = {name: (lambda name=name: log.append(name)) for name in ("revax", "revax direct", "jax")}
  t = timing.time_interleaved(calls, number=1, rounds=6, warmup=0)
  assert len(log) == 18  # no warm-up calls with warmup=0 and one call a round
  rounds = [log[k:k + 3] for k in range(0, len(log), 3)]
  assert len(rounds) == 6 and all(sorted(r) == sorted(calls) for r in rounds)
  for place in range(3):
    assert sorted(r[place] for r in rounds) == sorted(list(calls) * 2)
  assert all(len(s) == 6 for s in t.samples.values())


def test_table_has_the_direct_column(bench):
  _, run = bench
  rows = [("jitted thing", "us", 12.0, 10.0, 1.1,
           {"ratio": 1.25, "direct": 11.0, "jit/direct": 1.08}),
          ("eager thing", "us", 3.0, 6.0, None, {"ratio": 0.5}),
          ("memory", "MiB", 1.0, 4.0, 0.5)]
  lines = run.table(rows, "0.10.2").splitlines()
  header = [c.strip() for c in lines[0].strip("|").split("|")]
  assert header == ["measurement", "revax", "revax program, direct", "jax 0.10.2", "revax/JAX",
                    "jit/direct", "target"]
  cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
  assert all(len(c) == len(header) for c in cells)
  assert cells[0] == ["jitted thing", "12.0 us", "11.0 us", "10.0 us", "1.25x", "1.08x",
                      "<= 1.1x (missed)"]
  assert cells[1][2] == "-" and cells[1][5] == "-" and cells[1][4] == "0.50x"
  assert cells[2][2] == "-" and cells[2][4] == "0.25x" and cells[2][6] == "<= 0.5x (met)"


def test_report_keeps_the_sections_after_its_table(bench, tmp_path, capsys):
  _, run = bench
  path = tmp_path / "RESULTS.md"
  plugins = "<!-- bench_plugins: start -->\n## PJRT plugins\n| a | b |\n<!-- bench_plugins: end -->"
  tpu = "## TPU (one v5e chip)\n| step | 0.85x |\n"
  path.write_text("# old table\n\n" + plugins + "\n" + tpu)
  args = argparse.Namespace(core=False, quick=True, load_at_start=(1.0, 2.0, 3.0))
  run.report([("x", "us", 2.0, 1.0, None, {"ratio": 2.0, "direct": 1.5, "jit/direct": 1.3})],
             args, path=path)
  text = path.read_text()
  assert "# old table" not in text and plugins in text and text.endswith(tpu)
  assert "| revax program, direct |" in text
  assert "| x | 2.0 us | 1.5 us | 1.0 us | 2.00x | 1.30x |" in text
  assert "load average (1/5/15 min) 1.0/2.0/3.0 at the start" in text
  assert "1.30x" in capsys.readouterr().out


def test_jitted_row_end_to_end(bench):
  """A real f32[8] + f32[8] as revax's child process builds it (run.apart_calls): revax.jit and
  its program run directly, in the same rounds (jax's child has jax.jit alone)."""
  timing, run = bench
  libs = timing.libraries()
  spec = run.apart_calls("add8", "revax", *libs["revax"], True)
  calls = spec.calls
  assert list(calls) == ["revax", "revax direct"]
  assert list(run.apart_calls("add8", "jax", *libs["jax"], True).calls) == ["jax"]
  np.testing.assert_array_equal(spec.outputs[0], np.arange(8, dtype=np.float32) + 1)
  (out,) = calls["revax direct"]()  # the compiled program itself, on the arguments' buffers
  np.testing.assert_array_equal(out.to_numpy(), np.arange(8, dtype=np.float32) + 1)
  t = timing.time_interleaved(calls, number=5, rounds=3, warmup=1, cpu=True)
  assert all(len(s) == 3 for s in t.samples.values()) and set(t.cpu) == set(calls)
  label, unit, r, j, target, extra = timing.row("add", t, 1.0, reference="revax direct")
  per_round = [a / b for a, b in zip(t.samples["revax"], t.samples["revax direct"], strict=True)]
  assert extra["jit/direct"] == pytest.approx(statistics.median(per_round))
  assert extra["direct"] == pytest.approx(statistics.median(t.samples["revax direct"]) * 1e6)
  # the helper topic modules use builds the same pair for any jitted function
  revax = libs["revax"][0]
  f = revax.jit(lambda a: a * 2)
  x = revax.device_put(np.ones(4, np.float32))
  pair = timing.jitted_calls("revax", revax, f, x)
  assert list(pair) == ["revax", "revax direct"]
  np.testing.assert_array_equal(pair["revax direct"]()[0].to_numpy(), np.full(4, 2, np.float32))
  assert list(timing.jitted_calls("jax", libs["jax"][0], libs["jax"][0].jit(lambda a: a), 1.0)) \
      == ["jax"]


def test_tpu_rows_go_to_their_own_section(bench, tmp_path, monkeypatch):
  """`run.py --tpu` runs bench_reversible.py at the chip's sizes over run.py's TPU depths and
  writes its report as RESULTS.md's TPU section, between markers: the CPU table before it and
  the sections after it are kept, and a second run replaces the section instead of adding one."""
  _, run = bench
  import bench_reversible
  calls = []

  def fake_main(argv):
    calls.append(argv)
    out = argv[argv.index("--out") + 1]
    pathlib.Path(out).write_text(f"# Reversible MLP per block: TPU v5 lite (tpu)\n\nrun "
                                 f"{len(calls)}\n\n## Per block\n\n| a | b |\n")
  monkeypatch.setattr(bench_reversible, "main", fake_main)
  results = tmp_path / "RESULTS.md"
  results.write_text("# Benchmarks\n\n| cpu table |\n\n<!-- bench_plugins: start -->\nplugins\n")
  for quick in (False, True):
    run.tpu_report(argparse.Namespace(quick=quick), path=results)
  text = results.read_text()
  assert calls[0][calls[0].index("--depths") + 1] == ",".join(map(str, run.TPU_DEPTHS))
  assert calls[1][calls[1].index("--depths") + 1] == ",".join(map(str, run.TPU_QUICK_DEPTHS))
  assert all(c[c.index("--size") + 1] == "tpu" for c in calls)
  assert text.startswith("# Benchmarks\n\n| cpu table |\n\n<!-- bench_plugins: start -->")
  assert text.count(run.TPU_START) == text.count(run.TPU_END) == 1
  section = text.split(run.TPU_START)[1]
  assert "run 2" in section and "run 1" not in section
  assert "## TPU rows of `python benchmarks/run.py --tpu --quick`: reversible MLP on TPU v5 lite" \
      in section and "\n### Per block" in section
