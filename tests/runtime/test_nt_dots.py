"""runtime/nt_dots.py: x @ w.T compiled as (w @ x.T).T on the default CPU plugin where its Eigen
NT kernel is slow. Checked by the text XLA compiles and by values, never by timings."""
import re

import numpy as np
import pytest

import revax
from revax import lax
from revax._src.runtime import gemm, nt_dots
from revax._src.runtime.client import get_backend

pytestmark = pytest.mark.skipif(
    get_backend().platform != "cpu" or not gemm.enabled_for_plugin(get_backend()._api.version),
    reason="the rewrite is for the CPU plugins whose XLA was measured (gemm.NEWEST_MEASURED_API)")

NT = (((1,), (1,)), ((), ()))


def _xla_dots(compiled_text: str) -> list[str]:
  """The contracting dimensions of each dot in XLA's optimized module."""
  return re.findall(r"dot\([^)]*\), (lhs_contracting_dims=\{\d*\}, rhs_contracting_dims=\{\d*\})",
                    compiled_text)


@pytest.mark.parametrize("m,k,n,swapped", [
    (256, 1024, 1024, True), (16, 1024, 1024, True), (128, 512, 512, True),
    (512, 1024, 1024, True), (256, 2048, 1024, True), (32, 4096, 4096, True),
    (256, 784, 1024, False), (1024, 1024, 1024, False), (2048, 256, 256, False),
    (256, 768, 768, True), (64, 256, 256, True), (128, 256, 1024, True),
    (256, 1000, 1000, False), (256, 1024, 10, False), (256, 10, 1024, False),
    (8, 512, 64, False)])  # (the last under MIN_FLOPS)
def test_the_rule_is_the_measured_table(m, k, n, swapped):
  assert nt_dots.swaps(m, k, n) is swapped


@pytest.mark.parametrize("m,k,n", [(64, 512, 256), (40, 1024, 96), (3, 512, 4096)])
def test_swapped_dots_compute_x_at_w_transposed(m, k, n, monkeypatch):
  rng = np.random.default_rng(m)
  x = rng.standard_normal((m, k), np.float32)
  w = rng.standard_normal((n, k), np.float32)
  f = lambda x, w: lax.dot_general(x, w, NT)  # noqa: E731
  compiled = revax.jit(f).lower(x, w).compile()
  assert _xla_dots(compiled.as_text()) == ["lhs_contracting_dims={1}, rhs_contracting_dims={0}"]
  np.testing.assert_allclose(revax.jit(f)(x, w), x.astype(np.float64) @ w.T.astype(np.float64),
                             rtol=2e-5, atol=2e-4)
  monkeypatch.setenv("REVAX_CPU_NT_DOTS", "0")  # off: XLA's own NT dot
  off = revax.jit(lambda x, w: lax.dot_general(x, w, NT)).lower(x, w).compile()
  assert _xla_dots(off.as_text()) == ["lhs_contracting_dims={1}, rhs_contracting_dims={1}"]


def test_the_dense_layer_backward_pass_is_swapped_and_unchanged_in_value():
  """g @ w.T, the input gradient of a dense layer, is the NT dot of every MLP's backward pass."""
  rng = np.random.default_rng(0)
  x = rng.standard_normal((64, 1024), np.float32)
  w1 = rng.standard_normal((1024, 1024), np.float32) / 32
  w2 = rng.standard_normal((1024, 512), np.float32) / 32

  def loss(w1, w2, x):
    return (revax.numpy.tanh(revax.numpy.tanh(x @ w1) @ w2) ** 2).sum()
  grad = revax.jit(revax.grad(loss, argnums=(0, 1)))
  dots = _xla_dots(grad.lower(w1, w2, x).compile().as_text())
  assert "lhs_contracting_dims={1}, rhs_contracting_dims={1}" not in dots, dots
  h = np.tanh(x.astype(np.float64) @ w1)
  y = np.tanh(h @ w2)
  gy = 2 * y * (1 - y ** 2)
  gh = (gy @ w2.T) * (1 - h ** 2)
  for got, want in zip(grad(w1, w2, x), (x.T @ gh, h.T @ gy)):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


class _F64:
  """A lowered program's text with its float32 as float64 (the rule swaps float32 dots only:
  float64 was not measured)."""
  def __init__(self, lowered):
    self._text = lowered.as_text().replace("f32", "f64")

  def as_text(self):
    return self._text


@pytest.mark.parametrize("case", ["batched", "float64", "three-d", "nn"])
def test_other_dots_are_left_to_xla(case):
  lowered = {
      "batched": lambda: revax.jit(lambda x, w: lax.dot_general(x, w, (((2,), (2,)), ((0,), (0,)))))
      .lower(np.ones((2, 64, 512), np.float32), np.ones((2, 256, 512), np.float32)),
      "float64": lambda: _F64(revax.jit(lambda x, w: lax.dot_general(x, w, NT))
                              .lower(np.ones((64, 512), np.float32), np.ones((256, 512), np.float32))),
      "three-d": lambda: revax.jit(lambda x, w: lax.dot_general(x, w, (((2,), (1,)), ((), ()))))
      .lower(np.ones((2, 64, 512), np.float32), np.ones((256, 512), np.float32)),
      "nn": lambda: revax.jit(lambda x, w: x @ w)
      .lower(np.ones((64, 512), np.float32), np.ones((512, 256), np.float32)),
  }[case]()
  code = lowered.as_text().encode()
  assert nt_dots.rewrite_program(code) == code


def test_the_rewrite_keeps_precision_and_location(monkeypatch):
  text = revax.jit(lambda x, w: lax.dot_general(x, w, NT, precision=lax.Precision.HIGHEST)).lower(
      np.ones((64, 512), np.float32), np.ones((256, 512), np.float32)).as_text()
  new = nt_dots.rewrite_program(text.encode()).decode()
  (dot,) = [line for line in new.splitlines() if "stablehlo.dot_general" in line]
  assert "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]" in dot
  assert "(tensor<256x512xf32>, tensor<512x64xf32>) -> tensor<256x64xf32>" in dot
  monkeypatch.setenv("REVAX_CPU_NT_DOTS", "0")
  assert nt_dots.rewrite_program(text.encode()) == text.encode()


def test_dots_inside_regions_are_left_to_xla():
  """A conditional's branch (where checkpoint and invertible fence their backward steps) keeps
  XLA's dot: swapped there, XLA:CPU kept a buffer per block alive (invertible's flat memory)."""
  x, w = np.ones((64, 512), np.float32), np.ones((256, 512), np.float32)
  inner = revax.jit(lambda p, x, w: lax.cond(p, lambda: lax.dot_general(x, w, NT),
                                             lambda: lax.dot_general(x, w, NT) * 2))
  code = inner.lower(True, x, w).as_text().encode()
  assert b'"stablehlo.case"' in code or b'"stablehlo.if"' in code
  assert nt_dots.rewrite_program(code) == code
  top = revax.jit(lambda x, w: lax.dot_general(x, w, NT)).lower(x, w).as_text().encode()
  assert nt_dots.rewrite_program(top) != top


TN = (((0,), (0,)), ((), ()))


def _xla_dot_shapes(compiled_text: str) -> list[str]:
  """The result shape of each dot in XLA's optimized module."""
  return re.findall(r"= (f32\[[\d,]*\])(?:\{[\d,]*\})? dot\(", compiled_text)


@pytest.mark.parametrize("k,m,n,swapped", [
    (256, 1024, 4, True), (256, 1024, 10, True), (256, 1024, 32, True), (256, 1024, 64, True),
    (256, 1024, 128, False), (256, 1024, 256, False), (64, 256, 10, True), (128, 512, 10, True),
    (256, 784, 10, True), (1024, 1024, 10, True), (256, 4096, 10, True), (32, 1024, 10, True),
    (256, 1024, 1, True), (256, 1024, 1024, False), (8, 64, 4, False)])  # (the last: flops)
def test_the_tn_rule_is_the_measured_table(k, m, n, swapped):
  assert nt_dots.tn_swaps(k, m, n) is swapped


@pytest.mark.parametrize("k,m,n", [(256, 1024, 10), (64, 300, 7), (200, 512, 2)])
def test_narrow_tn_dots_compute_narrow_side_first(k, m, n, monkeypatch):
  """x.T @ g with g narrow: XLA computes g.T @ x (n x m) and transposes that small result."""
  rng = np.random.default_rng(k)
  x = rng.standard_normal((k, m), np.float32)
  g = rng.standard_normal((k, n), np.float32)
  f = lambda x, g: lax.dot_general(x, g, TN)  # noqa: E731
  assert _xla_dot_shapes(revax.jit(f).lower(x, g).compile().as_text()) == [f"f32[{n},{m}]"]
  np.testing.assert_allclose(revax.jit(f)(x, g), x.T.astype(np.float64) @ g,
                             rtol=2e-5, atol=2e-4)
  # the transpose rule's own form, (g.T @ x).T: fenced so that XLA keeps the transpose apart
  h = lambda x, g: lax.dot_general(g, x, TN).T  # noqa: E731
  assert _xla_dot_shapes(revax.jit(h).lower(x, g).compile().as_text()) == [f"f32[{n},{m}]"]
  np.testing.assert_allclose(revax.jit(h)(x, g), x.T.astype(np.float64) @ g,
                             rtol=2e-5, atol=2e-4)
  monkeypatch.setenv("REVAX_CPU_NT_DOTS", "0")  # off: XLA folds both into one m x n dot
  for fn in (lambda x, g: lax.dot_general(x, g, TN), lambda x, g: lax.dot_general(g, x, TN).T):
    assert _xla_dot_shapes(revax.jit(fn).lower(x, g).compile().as_text()) == [f"f32[{m},{n}]"]


def test_a_narrow_heads_weight_gradient_is_computed_narrow_side_first():
  """The last layer of a classifier (1024 -> 10): its weight gradient x.T @ g, which revax's
  transpose rule writes as (g.T @ x).T, keeps XLA from folding it into the slow 1024 x 10 dot."""
  rng = np.random.default_rng(1)
  x = rng.standard_normal((256, 1024), np.float32)
  w = rng.standard_normal((1024, 10), np.float32) / 32
  loss = lambda w, x: (revax.numpy.tanh(x @ w) ** 2).sum()  # noqa: E731
  grad = revax.jit(revax.grad(loss))
  assert "f32[10,1024]" in _xla_dot_shapes(grad.lower(w, x).compile().as_text())
  y = np.tanh(x.astype(np.float64) @ w)
  np.testing.assert_allclose(grad(w, x), x.T @ (2 * y * (1 - y ** 2)), rtol=1e-4, atol=1e-3)
