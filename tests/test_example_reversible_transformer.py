"""examples/reversible_transformer.py and examples/device_memory.py: the reversible transformer
learns (its loss falls below a uniform guess), its gradient is the same whether reverse mode
stores the activations (plain), recomputes them per layer (checkpoint) or rebuilds them
(invertible; layers in a scan or a Python loop), `--quick` runs end to end through its child
processes (training, one sweep per method, table, plot) with invertible's peak memory flat in
depth apart from the weights, and the memory helper's fallbacks and out-of-memory handling."""
import importlib.util
import math
import pathlib
import sys

import numpy as np
import pytest

import revax
from tests.platform_tolerances import ON_TPU

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def _import(name):
  spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module  # dataclasses look their module up there
  spec.loader.exec_module(module)
  return module


rt = _import("reversible_transformer")
dm = rt.device_memory  # the module the example imported (its own directory on sys.path)
CFG = rt.SIZES["quick"]


def _data(seed=0):
  codes, alphabet = rt.encode(rt.corpus())
  return codes, len(alphabet), next(rt.batches(codes, CFG.seq, CFG.batch, seed))


def test_training_lowers_the_loss_below_a_uniform_guess():
  codes, vocab, _ = _data()
  _, losses = rt.train(CFG, codes, vocab, steps=30, progress=False)
  assert len(losses) == 30 and all(np.isfinite(losses))
  assert np.mean(losses[-5:]) < math.log(vocab) - 0.3, losses


def test_every_method_gives_the_plain_gradient():
  _, vocab, (inputs, targets) = _data(seed=1)
  grads = {}
  for method, scan_layers in (("plain", True), ("checkpoint", True), ("invertible", True),
                              ("invertible", False)):
    params = rt.init_params(CFG, vocab, 2, seed=3, scan_layers=scan_layers)
    g = revax.jit(revax.grad(rt.make_loss(CFG, method, scan_layers)))(params, inputs, targets)
    if not scan_layers:  # per-layer gradients, stacked as the scan's
      g["layers"] = revax.tree_util.tree_map(lambda *ws: np.stack(ws), *g["layers"])
    grads[method, scan_layers] = revax.tree_util.tree_leaves(g)
  want = grads.pop(("plain", True))
  assert len(want) == 3 + 5 + 3  # embed, pos, head; q, k, v, o, scale of F; w1, w2, scale of G
  for key, got in grads.items():
    for a, b in zip(got, want, strict=True):
      np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-5, err_msg=str(key))


def test_quick_run_end_to_end(tmp_path, capsys):
  pytest.importorskip("tqdm")
  pytest.importorskip("matplotlib")
  plot, table = tmp_path / "memory.png", tmp_path / "table.md"
  out = rt.main(["--quick", "--plot", str(plot), "--table", str(table)])
  printed = capsys.readouterr().out
  assert "reversible transformer, 2 layers" in printed and "sample: 'Beautiful is " in printed
  assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert table.read_text().strip() == out["text"] and out["text"] in printed
  assert out["size"] == "quick" and out["platform"]
  assert np.mean(out["losses"][-10:]) < out["losses"][0]
  results = out["table"]
  assert set(results) == {(m, d) for m in rt.METHODS for d in CFG.depths}
  assert all(r["peak_bytes"] > 0 and r["seconds"] > 0 for r in results.values())
  lo, hi = CFG.depths
  growth = {m: results[m, hi]["peak_bytes"] - results[m, lo]["peak_bytes"] for m in rt.METHODS}
  weights = results["invertible", hi]["param_bytes"] - results["invertible", lo]["param_bytes"]
  activation = CFG.batch * CFG.seq * CFG.width * 4
  # invertible: the weights, their gradients and XLA's copy of them, no activation per layer
  assert growth["invertible"] <= 3 * weights + activation, (growth, weights)
  # checkpoint keeps each layer's two inputs, plain everything
  assert growth["checkpoint"] >= growth["invertible"] + 2 * (hi - lo) * activation, growth
  assert growth["plain"] >= growth["checkpoint"] + 8 * (hi - lo) * activation, growth


def test_sweep_stops_after_out_of_memory_and_reraises_other_errors(monkeypatch):
  calls = []

  def fake_measure_step(jitted, args, calls_=None, **kw):
    depth = revax.tree_util.tree_leaves(args[0]["layers"])[0].shape[0]
    calls.append(depth)
    if depth >= 2:
      raise RuntimeError("RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used 24.2G "
                         "of 15.75G hbm.")
    return {"peak_bytes": 1, "seconds": 1.0}
  monkeypatch.setattr(dm, "measure_step", fake_measure_step)
  results = rt.sweep_method(CFG, 10, "plain", (4, 1, 2))
  assert calls == [1, 2] and list(results) == [1, 2]
  assert results[2]["oom"].startswith("RESOURCE_EXHAUSTED") and results[2]["param_bytes"] > 0
  table = rt.format_table({("plain", d): r for d, r in results.items()}, (1, 2, 4), "TPU v5 lite")
  assert "out of memory" in table and "| 4 |" in table

  def broken(*a, **k):
    raise ValueError("a bug, not memory")
  monkeypatch.setattr(dm, "measure_step", broken)
  with pytest.raises(ValueError, match="a bug"):
    rt.sweep_method(CFG, 10, "plain", (1,))


def test_memory_helper_reads_the_device_peak_where_there_is_one(monkeypatch):
  if ON_TPU:  # the TPU's allocator keeps statistics
    assert dm.device_peak_bytes() > 0
  else:
    assert dm.device_peak_bytes() is None  # XLA:CPU keeps no allocator statistics, as JAX's

  class Device:
    def __init__(self, stats):
      self.stats = stats

    def memory_stats(self):
      return self.stats
  assert dm.device_peak_bytes(Device({"bytes_in_use": 5, "peak_bytes_in_use": 7})) == 7
  assert dm.device_peak_bytes(Device({"bytes_in_use": 5})) is None
  assert dm.device_peak_bytes(Device(None)) is None
  f = revax.jit(lambda x: (x @ x.T).sum(0))
  x = revax.device_put(np.ones((64, 32), np.float32))
  r = dm.measure_step(f, (x,), calls=2)
  if not ON_TPU:
    assert r["source"] == "compiled memory_analysis"
    assert r["peak_bytes"] == r["compiled"]["total"] >= 64 * 32 * 4 + 64 * 4
  else:
    assert r["source"].startswith("the larger") and r["peak_bytes"] >= 64 * 32 * 4
  # a device figure counts where it is the larger (other buffers alive beside the step) ...
  monkeypatch.setattr(dm, "device_peak_bytes", lambda device=None: 10 ** 9)
  r = dm.measure_step(f, (x,), calls=1)
  assert r["peak_bytes"] == 10 ** 9 and r["device_peak_bytes"] == 10 ** 9
  assert r["source"] == "the larger of device peak_bytes_in_use and compiled memory_analysis"
  # ... and XLA's account where the device's misses the step's temporaries (libtpu's does)
  monkeypatch.setattr(dm, "device_peak_bytes", lambda device=None: 1)
  r = dm.measure_step(f, (x,), calls=1)
  assert r["peak_bytes"] == r["compiled"]["total"] > 1
  assert dm.is_out_of_memory(RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying"))
  assert not dm.is_out_of_memory(ValueError("shapes do not match"))


def test_in_process_sweep_with_unrolled_layers(tmp_path, capsys):
  pytest.importorskip("tqdm")
  pytest.importorskip("matplotlib")
  out = rt.main(["--quick", "--in-process", "--no-train", "--depths", "2", "--layers", "loop",
                 "--plot", str(tmp_path / "p.png")])
  assert "losses" not in out and set(out["table"]) == {(m, 2) for m in rt.METHODS}
  assert out["table"]["invertible", 2]["peak_bytes"] < out["table"]["plain", 2]["peak_bytes"]
