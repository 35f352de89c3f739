"""Lowerings chosen for the TPU, run here on the CPU (the StableHLO is valid for any platform;
the chip runs the same suites through tests/tpu/run_suite.py).

- select_and_scatter_add and the generic select_and_scatter (lax/windowed.py): the TPU compiler
  implements windows whose two minor-most dimensions are inactive only, so for "tpu" the
  lowering moves the inactive dimensions last (appending unit ones); jax 0.10.2 leaves the
  generic op's 2-d windows to XLA:TPU, which refuses them;
- clamp of booleans (lax/comparison.py): no TPU clamp of PRED; `(x | lo) & hi`;
- total-order comparisons (eq_to, le_to, lt_to) of floats narrower than 32 bits
  (lax/comparison.py): XLA:TPU dropped NaN's sign in them, so for "tpu" they compare the bit
  patterns' total-order keys as signed integers;
- logistic (lax/unary.py): 1 / (1 + exp(-x)) on every platform, as jax lowers it (XLA:TPU's
  own LogisticOp returned values on a grid of 2**-15 on the chip).
"""
import ml_dtypes
import numpy as np
import pytest

import revax
from revax import lax
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.interpreters import mlir
from revax._src.lax import windowed
from tests.platform_tolerances import NARROW_NAN_SIGN, ON_TPU, assert_same_values

CASES = [  # (shape, window, strides, padding)
    ((8, 8), (2, 2), (2, 2), ((0, 0), (0, 0))),                        # a 2-d max-pool
    ((2, 8, 8, 3), (1, 2, 2, 1), (1, 2, 2, 1), ((0, 0),) * 4),           # NHWC
    ((2, 3, 8, 8), (1, 1, 3, 3), (1, 1, 2, 2), ((0, 0), (0, 0), (1, 1), (1, 1))),  # NCHW
    ((9,), (3,), (2,), ((1, 0),)),                                       # 1-d, padded
    ((4, 6, 5), (2, 1, 3), (1, 1, 2), ((0, 0), (0, 0), (1, 1))),         # one inactive dim
]


@pytest.mark.parametrize("shape,window,strides,padding", CASES)
@pytest.mark.parametrize("select", [lax.ge_p, lax.le_p])
def test_minor_inactive_form_equals_plain(shape, window, strides, padding, select):
  rng = np.random.RandomState(0)
  operand = rng.randn(*shape).astype(np.float32)
  out_shape = lax.reduce_window(operand, -np.inf, lax.max, window, strides, padding).shape
  source = rng.randn(*out_shape).astype(np.float32)
  params = dict(select_prim=select, window_dimensions=window, window_strides=strides,
                padding=padding, window_dilation=(1,) * len(shape))
  plain = revax.jit(lambda s, x: windowed.select_and_scatter_add_p.bind(s, x, **params))
  moved = revax.jit(lambda s, x: windowed._select_and_scatter_add_minor_inactive(s, x, **params))
  np.testing.assert_allclose(moved(source, operand), plain(source, operand), rtol=1e-6)


@pytest.mark.parametrize("shape,window,strides,padding", CASES)
@pytest.mark.parametrize("select,scatter,init", [(lax.ge, lax.add, 0.0), (lax.le, lax.max, -1.0),
                                                 (lax.ge, lax.mul, 1.0)])
def test_generic_minor_inactive_form_equals_plain(shape, window, strides, padding, select,
                                                  scatter, init):
  rng = np.random.RandomState(1)
  operand = rng.randn(*shape).astype(np.float32)
  out_shape = lax.reduce_window(operand, -np.inf, lax.max, window, strides, padding).shape
  source = rng.randn(*out_shape).astype(np.float32)
  plain = revax.jit(lambda x, s: windowed.select_and_scatter(
      x, select, window, strides, padding, s, np.float32(init), scatter))
  closed = revax.make_jaxpr(plain)(operand, source)
  eqn = closed.jaxpr.eqns[0].params["jaxpr"].eqns[0]
  moved = revax.jit(lambda x, s: windowed._select_and_scatter_minor_inactive(
      x, s, np.float32(init), **eqn.params))
  np.testing.assert_allclose(moved(operand, source), plain(operand, source), rtol=1e-6)
  text = mlir.lower_jaxpr_to_module(ClosedJaxpr(closed.jaxpr, closed.consts), "main",
                                    platform="tpu")
  (line,) = [line for line in text.splitlines() if "select_and_scatter" in line]
  assert line.split("window_dimensions = array<i64: ")[1].split(">")[0].endswith("1, 1"), line


@pytest.mark.parametrize("shape,window,strides,padding", CASES)
def test_tpu_lowering_leaves_two_minor_dims_inactive(shape, window, strides, padding):
  operand = np.zeros(shape, np.float32)
  grad = revax.grad(lambda x: lax.reduce_window(x, -np.inf, lax.max, window, strides,
                                                padding).sum())
  closed = revax.make_jaxpr(grad)(operand)
  text = mlir.lower_jaxpr_to_module(ClosedJaxpr(closed.jaxpr, closed.consts), "main",
                                    platform="tpu")
  dims = [line for line in text.splitlines() if "select_and_scatter" in line]
  assert dims, text
  for line in dims:
    window_text = line.split("window_dimensions = array<i64: ")[1].split(">")[0]
    strides_text = line.split("window_strides = array<i64: ")[1].split(">")[0]
    assert window_text.replace(" ", "").endswith("1,1"), line
    assert strides_text.replace(" ", "").endswith("1,1"), line
  cpu = mlir.lower_jaxpr_to_module(ClosedJaxpr(closed.jaxpr, closed.consts), "main",
                                   platform="cpu")
  original = "window_dimensions = array<i64: " + ", ".join(map(str, window)) + ">"
  assert original in cpu  # the CPU form keeps the window as it is


def _run_lowered_for_tpu(fun, *args):
  """`fun` lowered as for the TPU, compiled and run on the CPU backend."""
  from revax._src.runtime.client import get_backend
  closed = revax.make_jaxpr(fun)(*args)
  text = mlir.lower_jaxpr_to_module(ClosedJaxpr(closed.jaxpr, closed.consts), "main",
                                    platform="tpu")
  backend = get_backend()
  outs = backend.compile(text).execute([backend.buffer_from_numpy(np.asarray(a)) for a in args])
  return text, [o.to_numpy() for o in outs]


def test_bool_clamp_lowers_without_clamp_for_tpu():
  lo = np.array([False, True, False, True] * 2)
  x = np.array([False, False, True, True] * 2)
  hi = np.array([True] * 4 + [False] * 4)
  text, (out,) = _run_lowered_for_tpu(lax.clamp, lo, x, hi)
  assert "stablehlo.clamp" not in text
  np.testing.assert_array_equal(out, np.minimum(np.maximum(x, lo), hi))
  text, (out,) = _run_lowered_for_tpu(lambda v: lax.clamp(False, v, True), x)
  np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
@pytest.mark.parametrize("name", ["eq_to", "le_to", "lt_to"])
def test_total_order_lowers_as_jax_for_tpu(name, dtype):
  """eq_to/le_to/lt_to lower to a TOTALORDER compare for a TPU too, as jax's: XLA:TPU reads a
  float16/bfloat16 -NaN as +NaN whatever the program does with it (a bitcast to integers
  included: tests/tpu/probe_total_order.py), so no other lowering is exact there and this one
  gives jax's answers on the chip (NARROW_NAN_SIGN)."""
  from revax._src.lax.comparison import _total_order_compare
  if ON_TPU and np.dtype(dtype).itemsize < 4:
    pytest.skip(f"TPU: {NARROW_NAN_SIGN}")
  special = np.array([np.nan, -np.nan, -np.inf, -1.5, -0.0, 0.0, 1e-3, 2.0, np.inf], np.float32)
  v = special.astype(dtype)
  x, y = np.repeat(v, len(v)), np.tile(v, len(v))
  prim = getattr(lax, f"{name}_p")
  text, (out,) = _run_lowered_for_tpu(lambda a, b: prim.bind(a, b), x, y)
  expected = _total_order_compare(getattr(np, {"eq_to": "equal", "le_to": "less_equal",
                                               "lt_to": "less"}[name]), x, y)
  np.testing.assert_array_equal(out, expected)
  assert "TOTALORDER" in text and "bitcast_convert" not in text, text


def _precisions(text):
  """The precisions a module's dots and convolutions name (both printed forms), DEFAULT where
  one names none."""
  import re
  found = re.findall(r"precision (DEFAULT|HIGHEST|HIGH)>", text)
  for group in re.findall(r"precision = \[([A-Z, ]+)\]", text):
    found += [p.strip() for p in group.split(",")]
  ops = len(re.findall(r"stablehlo[.\"]*(?:dot_general|convolution)", text))
  return sorted(set(found or ["DEFAULT"])) if ops else []


@pytest.mark.parametrize("setting,expected", [
    (None, "DEFAULT"), ("highest", "HIGHEST"), ("float32", "HIGHEST"), ("high", "HIGH"),
    ("bfloat16", "DEFAULT")])
def test_default_matmul_precision_reaches_dots_and_convs_as_in_jax(setting, expected):
  """On a TPU the config decides float32 products' precision (DEFAULT rounds operands to
  bfloat16); revax's lowering names the same precision as jax's."""
  import jax
  a = np.ones((2, 2, 3, 3), np.float32)
  w = np.ones((2, 2, 2, 2), np.float32)
  dot = lambda m: lambda x, y: x.reshape(6, 6) @ y.reshape(16, 1)[:6]  # noqa: E731
  conv = lambda m: lambda x, y: m.conv_general_dilated(x, y, (1, 1), "VALID")  # noqa: E731
  for make in (dot, conv):
    with revax.default_matmul_precision(setting), jax.default_matmul_precision(setting):
      ours = _precisions(revax.jit(make(lax)).lower(a, w).as_text())
      theirs = _precisions(jax.jit(make(jax.lax)).lower(a, w).as_text())
      np.testing.assert_allclose(revax.jit(make(lax))(a, w), jax.jit(make(jax.lax))(a, w),
                                 rtol=1e-6)
    assert ours == theirs == [expected]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.complex64])
def test_logistic_lowers_as_jax_without_the_logistic_op(dtype):
  """jax lowers logistic as 1 / (1 + exp(-x)) (its LogisticOp lowering is switched off for its
  numerical problems): on a TPU, `stablehlo.logistic` gave 3.05e-5 for logistic(-10) = 4.54e-5
  (tests/tpu/RESULTS.md, fourth session). Same ops, same values as jax's, here and on a TPU."""
  import jax
  x = np.linspace(-90, 90, 37).astype(dtype)
  if dtype == np.complex64:
    x = (x / 30 + 0.5j).astype(dtype)
  text = revax.jit(lax.logistic).lower(x).as_text()
  assert "stablehlo.logistic" not in text
  ops = [op for op in ("negate", "exponential", "add", "divide") if f"stablehlo.{op}" in text]
  assert ops == ["negate", "exponential", "add", "divide"]
  # (the oracle computes on the CPU: on a TPU the chip's exp, TRANSCENDENTAL)
  assert_same_values(revax.jit(lax.logistic)(x), jax.jit(jax.lax.logistic)(x))
  assert_same_values(revax.jit(revax.grad(lambda v: lax.logistic(v).real.sum()))(
      x.real.astype(np.float32)), jax.jit(jax.grad(lambda v: jax.lax.logistic(v).sum()))(
          x.real.astype(np.float32)))
