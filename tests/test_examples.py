"""examples/reversible_resnet.py: its training loop lowers the loss, the reversible network's
gradient is the same whether reverse mode stores the activations (plain), rebuilds them from the
outputs (invertible) or recomputes them per block (checkpoint), invertible stores no activation
of the stack however deep it is, and `--quick` runs end to end (data, training, table, plot)."""
import importlib.util
import pathlib

import numpy as np
import pytest

import revax
from revax import ad_checkpoint

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "reversible_resnet.py"


def _import_example():
  spec = importlib.util.spec_from_file_location("reversible_resnet", EXAMPLE)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


rr = _import_example()


def _toy_digits(n, seed=0):
  """Ten fixed 8x8 patterns with noise: a learnable stand-in for the digits that needs no
  scikit-learn."""
  rng = np.random.default_rng(seed)
  templates = rng.uniform(0, 1, (10, 8, 8, 1)).astype(np.float32)
  labels = rng.integers(0, 10, n).astype(np.int32)
  images = templates[labels] + 0.2 * rng.standard_normal((n, 8, 8, 1)).astype(np.float32)
  return images, labels


def test_training_loop_lowers_the_loss():
  images, labels = _toy_digits(128)
  params = rr.init_params(revax.random.PRNGKey(1), depth=2, channels=4)
  trained, losses = rr.train(params, images, labels, epochs=4, batch_size=32, step_size=1e-2,
                             mode="invertible", progress=False)
  assert len(losses) == 4 * (128 // 32)
  assert all(np.isfinite(losses))
  assert np.mean(losses[-4:]) < 0.6 * np.mean(losses[:4]), losses
  accuracy = rr.accuracy(trained, images, labels)
  assert accuracy > 0.5, accuracy  # chance is 0.1
  with pytest.raises(ValueError, match="exceeds"):
    rr.train(params, images[:8], labels[:8], epochs=1, batch_size=16, progress=False)


def test_invertible_and_checkpoint_gradients_equal_plain_gradient():
  images, labels = _toy_digits(16, seed=2)
  params = rr.init_params(revax.random.PRNGKey(0), depth=3, channels=4)
  grads = {mode: revax.jit(revax.grad(lambda p, x, y, mode=mode: rr.loss(p, x, y, mode)))(
      params, images, labels) for mode in rr.MODES}
  eager = revax.grad(lambda p: rr.loss(p, images, labels, "invertible"))(params)
  expected = revax.tree_util.tree_leaves(grads["plain"])
  assert len(expected) == 2 + 4 * 3 + 2
  for got in (grads["invertible"], grads["checkpoint"], eager):
    got = revax.tree_util.tree_leaves(got)
    for g, e in zip(got, expected, strict=True):
      np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=2e-4, atol=2e-6)
  with pytest.raises(ValueError, match="mode must be one of"):
    rr.make_stack(rr.conv_residual, "stored")


def _activation_residuals(depth, mode):
  images, labels = _toy_digits(4, seed=3)
  params = rr.init_params(revax.random.PRNGKey(0), depth=depth, channels=2)
  saved = ad_checkpoint.saved_residuals(lambda p: rr.loss(p, images, labels, mode), params)
  return [d for aval, d in saved if aval.shape == (4, 8, 8, 2)]


def test_invertible_stores_no_activation_of_the_stack():
  plain = [len(_activation_residuals(d, "plain")) for d in (1, 3)]
  invertible = [_activation_residuals(d, "invertible") for d in (1, 3)]
  assert plain[1] > plain[0] > 0  # plain reverse mode stores more as the stack deepens
  assert invertible[0] == invertible[1] == ["output of invertible"] * 2  # only the outputs


def test_quick_run_end_to_end(tmp_path, capsys):
  pytest.importorskip("sklearn")
  pytest.importorskip("tqdm")
  pytest.importorskip("matplotlib")
  plot = tmp_path / "memory.png"
  result = rr.main(["--quick", "--plot", str(plot)])
  out = capsys.readouterr().out
  assert "test accuracy" in out and str(plot) in out
  png = plot.read_bytes()
  assert png[:8] == b"\x89PNG\r\n\x1a\n"
  width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
  assert width > 2 * height  # two panels side by side: memory and step time
  header = next(line for line in out.splitlines() if line.startswith("depth |"))
  assert header.split() == ["depth", "|", *rr.MODES, "|", *rr.MODES]  # names in full
  assert result["losses"][-1] < result["losses"][0]
  assert result["test_accuracy"] > 0.2  # one epoch of a tiny net, chance is 0.1
  assert set(result["table"]) == {(m, d) for m in rr.MODES for d in (2, 4)}
  assert all(temp > 0 and seconds > 0 for temp, seconds in result["table"].values())
