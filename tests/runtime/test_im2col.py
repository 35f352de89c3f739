"""CPU convolutions as patch GEMMs (revax/_src/runtime/im2col.py, `_lapack.c`'s conv_handler):
with every convolution the handler can run rewritten (REVAX_CPU_CONV=all), every convolution
record of the op database matches its NumPy reference and XLA's own convolution
(REVAX_CPU_GEMM=0), and a generated family (1-3 spatial dims x strides, paddings of both signs,
lhs and rhs dilations, feature groups, layouts; zero sizes; the four float and complex dtypes;
window reversal; batch groups) matches jax and XLA's convolution; integer, bfloat16 and
mixed-precision convolutions stay XLA's; batch groups (the weight gradients of grouped convolutions) are the
handler's too; the default rule picks grouped and few-channel
convolutions; the rewrite never shows in `Lowered.as_text()`; per-example CNN gradients (vmap of
grad: grouped convolutions) match jax."""
import itertools

import numpy as np
import pytest

import revax
from revax import lax
from revax._src.core.errors import JaxRuntimeError
from revax._src.runtime import gemm, im2col, lapack
from tests import platform_tolerances
from tests.lax.op_db import all_records, assert_close

jax = pytest.importorskip("jax")
pytestmark = platform_tolerances.skip_on_tpu(platform_tolerances.NO_FFI)

needs_conv = pytest.mark.skipif(lapack.target("conv", np.float32) is None,
                                reason="no _lapack extension with conv_handler or no cblas_sgemm")
TARGETS = {dt: lapack.target("conv", dt) for dt in ("float32", "float64", "complex64",
                                                    "complex128")}
Z = np.ones(gemm.CHEAP_MARGIN, np.float32)
TOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-11, np.dtype(np.complex64): 1e-4,
       np.dtype(np.complex128): 1e-11}


@pytest.fixture(autouse=True)
def conv_on(monkeypatch):
  """The handler's default rule (whatever the environment running the tests says)."""
  monkeypatch.setenv("REVAX_CPU_CONV", "1")


def _busy(f):
  """f beside z * z on CHEAP_MARGIN elements: a program of nothing but one convolution keeps
  XLA's (test_a_program_of_one_convolution_keeps_it)."""
  return lambda *args: (f(*args[:-1]), args[-1] * args[-1])


def _rewrite(text: str) -> str:
  return im2col.rewrite_program(text.encode(), TARGETS).decode()


def _run(f, args):
  """f's result, compiled now (under the environment the caller set)."""
  compiled = revax.jit(_busy(f)).lower(*args, Z).compile()
  return np.asarray(compiled(*args, Z)[0])


def _both(f, args, monkeypatch):
  """(the lowered text, f's result with every convolution rewritten, XLA's result)."""
  monkeypatch.setenv("REVAX_CPU_CONV", "all")
  text = revax.jit(_busy(f)).lower(*args, Z).as_text()
  got = _run(f, args)
  monkeypatch.setenv("REVAX_CPU_GEMM", "0")
  assert im2col.rewrite_program(text.encode(), TARGETS) == text.encode()
  xla = _run(f, args)
  monkeypatch.delenv("REVAX_CPU_GEMM")
  return text, got, xla


CONV_RECORDS = [r for r in all_records() if r.primitive == "conv_general_dilated"]
HANDLED = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)}


@needs_conv
@pytest.mark.parametrize("record", CONV_RECORDS, ids=str)
def test_op_db_convolutions_match_reference_and_xla(record, monkeypatch):
  args = record.args(np.random.default_rng(0))
  text, got, xla = _both(record.fun, args, monkeypatch)
  assert text.count('"stablehlo.convolution"') == 1
  monkeypatch.setenv("REVAX_CPU_CONV", "all")
  rewritten = _rewrite(text)
  # integer, bfloat16 and mixed-precision convolutions keep XLA's
  handled = {np.asarray(a).dtype for a in args} <= HANDLED and got.dtype in HANDLED
  assert ("revax_lapack_conv" in rewritten) == handled, rewritten
  assert ('"stablehlo.convolution"' in rewritten) == (not handled)
  assert_close(got, record.ref(*args), record.rtol, record.atol, record.check_dtype,
               err_msg=record.name)
  assert_close(got, xla, record.rtol, record.atol, record.check_dtype, err_msg=record.name)


# Geometries per number of spatial dims: (name, window strides, padding, lhs dilation, rhs
# dilation); padding may be negative (revax crops those dims before the convolution).
GEOMETRIES = [
    ("valid", 1, "VALID", 1, 1),
    ("same_stride2", 2, "SAME", 1, 1),
    ("explicit_negative", 1, "neg", 1, 1),
    ("lhs_dilated", 1, "transpose", 2, 1),
    ("rhs_dilated", 1, "SAME", 1, 2),
    ("everything", 2, "explicit", 2, 2),
]
SHAPES = {1: ((2, 9), (3,)), 2: ((2, 7, 6), (3, 2)), 3: ((1, 5, 4, 5), (2, 2, 3))}


def _padding(kind, n):
  if kind in ("VALID", "SAME"):
    return kind
  return {"neg": [(1, 0)] * (n - 1) + [(-1, 2)], "transpose": [(2, 1)] * n,
          "explicit": [(1, 2)] * (n - 1) + [(0, 1)]}[kind]


def _family():
  out = []
  for n, (geometry, groups, layout) in itertools.product(
      (1, 2, 3), itertools.product(GEOMETRIES, (1, 2, 4), ("channels_last", "channels_first"))):
    name, stride, pad, ldil, rdil = geometry
    if layout == "channels_first" and (groups == 2 or name not in ("valid", "everything")):
      continue  # layouts are the lowering's transposes: a few suffice
    out.append((f"{n}d_{name}_g{groups}_{layout}", n, stride, pad, ldil, rdil, groups, layout))
  return out


FAMILY = _family()


@needs_conv
@pytest.mark.parametrize("n,batch_groups,geometry", [
    (1, 2, "valid"), (2, 2, "same_stride2"), (2, 4, "everything"), (2, 3, "explicit_negative"),
    (3, 2, "rhs_dilated")], ids=lambda v: str(v))
def test_batch_groups_match_jax_and_xla(n, batch_groups, geometry, monkeypatch):
  _, stride, pad, ldil, rdil = next(g for g in GEOMETRIES if g[0] == geometry)
  x, w = _operands(n, 1, "channels_last", np.float32, batch=3 * batch_groups)
  w = np.concatenate([w] * batch_groups, axis=-1)  # o = 3 * batch_groups
  f = lambda lib: lambda x, w: lib.lax.conv_general_dilated(
      x, w, (stride,) * n, _padding(pad, n), lhs_dilation=(ldil,) * n, rhs_dilation=(rdil,) * n,
      dimension_numbers=_dnums(n, "channels_last"), batch_group_count=batch_groups,
      precision=lib.lax.Precision.HIGHEST)
  text, got, xla = _both(f(revax), (x, w), monkeypatch)
  assert "batch_groups = " in _rewrite(text) and "revax_lapack_conv" in _rewrite(text)
  want = np.asarray(jax.jit(f(jax))(x, w))
  assert got.shape == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(got, xla, rtol=1e-4, atol=1e-4)


def _operands(n, groups, layout, dtype, seed=0, batch=None, channels=None):
  (lhs_batch, *spatial), window = SHAPES[n]
  c = 4 if channels is None else channels
  o = 2 * groups if groups > 1 else 3
  lhs = (lhs_batch if batch is None else batch, *spatial, c)
  rhs = (*window, c // groups, o)
  if layout == "channels_first":
    lhs = (lhs[0], lhs[-1], *lhs[1:-1])
    rhs = (rhs[-1], rhs[-2], *rhs[:-2])
  rng = np.random.default_rng(seed)
  make = lambda s: (rng.uniform(-2, 2, s) + (1j * rng.uniform(-2, 2, s)
                                            if np.dtype(dtype).kind == "c" else 0)).astype(dtype)
  return make(lhs), make(rhs)


def _dnums(n, layout):
  sp = "DHW"[3 - n:]
  if layout == "channels_last":
    return (f"N{sp}C", f"{sp}IO", f"N{sp}C")
  return (f"NC{sp}", f"OI{sp}", f"NC{sp}")


def _conv(lib, n, stride, pad, ldil, rdil, groups, layout):
  return lambda x, w: lib.lax.conv_general_dilated(
      x, w, (stride,) * n, _padding(pad, n), lhs_dilation=(ldil,) * n, rhs_dilation=(rdil,) * n,
      dimension_numbers=_dnums(n, layout), feature_group_count=groups,
      precision=lib.lax.Precision.HIGHEST)


def _check(name, n, stride, pad, ldil, rdil, groups, layout, dtype, monkeypatch, **shape):
  x, w = _operands(n, groups, layout, dtype, **shape)
  params = (n, stride, pad, ldil, rdil, groups, layout)
  text, got, xla = _both(_conv(revax, *params), (x, w), monkeypatch)
  monkeypatch.setenv("REVAX_CPU_CONV", "all")
  rewritten = _rewrite(text)
  assert "revax_lapack_conv" in rewritten and '"stablehlo.convolution"' not in rewritten
  assert '"stablehlo.convolution"' in text  # what as_text() shows stays jax's
  want = np.asarray(jax.jit(_conv(jax, *params))(x, w))
  assert got.shape == want.shape and got.dtype == want.dtype, name
  tol = TOL[np.dtype(dtype)]
  np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)
  np.testing.assert_allclose(got, xla, rtol=tol, atol=tol, err_msg=name)


@needs_conv
@pytest.mark.parametrize("name,n,stride,pad,ldil,rdil,groups,layout", FAMILY,
                         ids=[c[0] for c in FAMILY])
def test_generated_family_matches_jax_and_xla(name, n, stride, pad, ldil, rdil, groups, layout,
                                              monkeypatch):
  _check(name, n, stride, pad, ldil, rdil, groups, layout, np.float32, monkeypatch)


@needs_conv
@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", ["2d_everything_g2", "1d_same_stride2_g4", "3d_valid_g1"])
def test_dtypes_match_jax_and_xla(case, dtype, monkeypatch):
  n, geometry, groups = int(case[0]), case[3:case.rindex("_g")], int(case[-1])
  _, stride, pad, ldil, rdil = next(g for g in GEOMETRIES if g[0] == geometry)
  _check(case, n, stride, pad, ldil, rdil, groups, "channels_last", dtype, monkeypatch)


@needs_conv
@pytest.mark.parametrize("what", ["batch", "channels", "output"])
def test_zero_sizes_match_jax_and_xla(what, monkeypatch):
  if what == "output":  # a window larger than the input: no output positions
    x, w = np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32)
    f = lambda lib: lambda x, w: lib.lax.conv_general_dilated(
        x, w, (1,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"))
    text, got, xla = _both(f(revax), (x, w), monkeypatch)
    np.testing.assert_array_equal(got, np.asarray(jax.jit(f(jax))(x, w)))
    np.testing.assert_array_equal(got, xla)
    return
  shape = {"batch": dict(batch=0), "channels": dict(channels=0)}[what]
  _check(what, 2, 1, "SAME", 1, 1, 1, "channels_last", np.float32, monkeypatch, **shape)


@needs_conv
@pytest.mark.parametrize("reversal", ["true, false", "false, true", "true, true"])
def test_window_reversal_matches_xla(reversal, monkeypatch):
  """revax's lowering writes no reversed windows (jax neither); the handler's reading of the
  attribute is checked on edited text, against XLA's convolution of the same text."""
  from revax._src.runtime import client
  x, w = _operands(2, 2, "channels_last", np.float32)
  f = _busy(_conv(revax, 2, 1, "explicit", 1, 2, 2, "channels_last"))
  text = revax.jit(f).lower(x, w, Z).as_text()
  text = text.replace("window_reversal = array<i1: false, false>",
                      f"window_reversal = array<i1: {reversal}>")
  assert f"array<i1: {reversal}>" in text
  backend = client.get_backend("cpu")
  results = {}
  for setting in ("all", "0"):
    monkeypatch.setenv("REVAX_CPU_CONV", setting)
    assert ("revax_lapack_conv" in _rewrite(text)) == (setting == "all")
    exe = backend.compile(text)
    outs = exe.execute([backend.buffer_from_numpy(a) for a in (x, w, Z)])
    results[setting] = outs[0].to_numpy()
  np.testing.assert_allclose(results["all"], results["0"], rtol=1e-4, atol=1e-4)
  plain = _conv(revax, 2, 1, "explicit", 1, 2, 2, "channels_last")(x, w)
  assert not np.allclose(np.asarray(plain), results["all"])  # the reversal changed something


@needs_conv
@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("dtype", [np.int32, np.float16, "bfloat16"])
def test_other_dtypes_and_mixed_precision_keep_xlas_convolution(dtype, monkeypatch):
  monkeypatch.setenv("REVAX_CPU_CONV", "all")
  make = (lambda s: revax.numpy.ones(s, "bfloat16")) if dtype == "bfloat16" else \
      (lambda s: np.ones(s, dtype))
  f = _busy(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                  feature_group_count=2))
  text = revax.jit(f).lower(make((2, 4, 5, 5)), make((4, 2, 3, 3)), Z).as_text()
  assert im2col.rewrite_program(text.encode(), TARGETS) == text.encode()
  mixed = _busy(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                      preferred_element_type=np.float64))
  text = revax.jit(mixed).lower(np.ones((1, 2, 5, 5), np.float32),
                                np.ones((3, 2, 3, 3), np.float32), Z).as_text()
  assert "xf64>" in text
  assert im2col.rewrite_program(text.encode(), TARGETS) == text.encode()


@needs_conv
@pytest.mark.parametrize("channels,groups,expected", [
    (1, 1, True),     # the first layer of an image network
    (FEW := im2col.FEW_CHANNELS, 1, True),
    (FEW + 1, 1, False),  # many channels: XLA's
    (32, 1, False),
    (64, 2, True),    # grouped
    (32, 32, True),   # depthwise
])
def test_default_rule(channels, groups, expected):
  f = _busy(lambda x, w: lax.conv_general_dilated(
      x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
      feature_group_count=groups))
  text = revax.jit(f).lower(np.ones((2, 8, 8, channels), np.float32),
                            np.ones((3, 3, channels // groups, 2 * groups), np.float32),
                            Z).as_text()
  assert ("revax_lapack_conv" in _rewrite(text)) == expected


@needs_conv
def test_switches(monkeypatch):
  f = _busy(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"))
  text = revax.jit(f).lower(np.ones((2, 1, 8, 8), np.float32), np.ones((4, 1, 3, 3), np.float32),
                            Z).as_text()
  monkeypatch.delenv("REVAX_CPU_CONV")
  assert "revax_lapack_conv" in _rewrite(text)  # the default
  monkeypatch.setenv("REVAX_CPU_CONV", "0")
  assert _rewrite(text) == text
  monkeypatch.setenv("REVAX_CPU_CONV", "1")
  assert "revax_lapack_conv" in _rewrite(text)
  monkeypatch.setenv("REVAX_CPU_GEMM", "0")
  assert _rewrite(text) == text
  monkeypatch.delenv("REVAX_CPU_GEMM")
  assert im2col.rewrite_program(text.encode(), {}) == text.encode()
  assert im2col.rewrite_program(text.encode(), {"float64": "f64_conv"}) == text.encode()


@needs_conv
def test_a_program_of_one_convolution_keeps_it():
  """XLA runs a program of under 1000 flops in the caller's thread (gemm.py): a program whose
  only work is convolutions keeps the largest one XLA's."""
  conv = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME")
  x, w = np.ones((2, 1, 8, 8), np.float32), np.ones((4, 1, 3, 3), np.float32)
  text = revax.jit(conv).lower(x, w).as_text()
  assert _rewrite(text) == text
  two = lambda x, w: (conv(x, w), conv(x[:, :, :4], w))
  rewritten = _rewrite(revax.jit(two).lower(x, w).as_text())
  assert rewritten.count("revax_lapack_conv") == 1
  assert rewritten.count('"stablehlo.convolution"') == 1
  got = revax.jit(two)(x, w)
  want = jax.jit(lambda x, w: (jax.lax.conv_general_dilated(x, w, (1, 1), "SAME"),
                               jax.lax.conv_general_dilated(x[:, :, :4], w, (1, 1), "SAME")))(x, w)
  for g, j in zip(got, want, strict=True):
    np.testing.assert_allclose(np.asarray(g), np.asarray(j), rtol=1e-5)


@needs_conv
def test_nan_and_inf_propagate_as_in_jax():
  x, w = _operands(2, 2, "channels_last", np.float32)
  x[0, 2, 3, 1], x[1, 0, 0, 2] = np.nan, np.inf
  f = lambda lib: lambda x, w: lib.lax.conv_general_dilated(
      x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2)
  assert "revax_lapack_conv" in _rewrite(revax.jit(_busy(f(revax))).lower(x, w, Z).as_text())
  got, want = revax.jit(_busy(f(revax)))(x, w, Z)[0], jax.jit(f(jax))(x, w)
  got, want = np.asarray(got), np.asarray(want)
  np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
  np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
  finite = np.isfinite(want)
  np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-4)


@needs_conv
def test_per_example_cnn_gradients_match_jax():
  """vmap(grad) of a small CNN: the weight gradients are grouped convolutions (rewritten by
  default), the first layer has one input channel."""
  rng = np.random.default_rng(0)
  params = {"w1": rng.standard_normal((3, 3, 1, 8)).astype(np.float32) * 0.3,
            "w2": rng.standard_normal((3, 3, 8, 16)).astype(np.float32) * 0.1,
            "d": rng.standard_normal((16, 10)).astype(np.float32) * 0.2}
  images = rng.standard_normal((6, 12, 12, 1)).astype(np.float32)
  labels = rng.integers(0, 10, 6)

  def per_example(lib):
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(p, x, y):
      h = lib.nn.relu(lib.lax.conv_general_dilated(x[None], p["w1"], (1, 1), "SAME",
                                                   dimension_numbers=dn))
      h = lib.nn.relu(lib.lax.conv_general_dilated(h, p["w2"], (2, 2), "SAME",
                                                   dimension_numbers=dn))
      logits = h.mean(axis=(1, 2)) @ p["d"]
      return -lib.nn.log_softmax(logits)[0, y]
    return lib.jit(lib.vmap(lib.grad(loss), in_axes=(None, 0, 0)))

  f = per_example(revax)
  rewritten = _rewrite(f.lower(params, images, labels).as_text())
  assert rewritten.count("revax_lapack_conv") >= 2
  got, want = f(params, images, labels), per_example(jax)(params, images, labels)
  for k in params:
    np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=2e-4, atol=2e-5)


@needs_conv
def test_attributes_that_disagree_with_the_buffers_are_an_error_not_a_crash():
  from revax._src.runtime import client
  x, w = _operands(2, 2, "channels_last", np.float32)
  f = _busy(_conv(revax, 2, 1, "SAME", 1, 1, 2, "channels_last"))
  rewritten = _rewrite(revax.jit(f).lower(x, w, Z).as_text())
  assert "n = 2 : i64" in rewritten
  backend = client.get_backend("cpu")
  exe = backend.compile(rewritten.replace("n = 2 : i64", "n = 3 : i64"))
  with pytest.raises(JaxRuntimeError, match="buffer sizes differ from the size attributes"):
    outs = exe.execute([backend.buffer_from_numpy(a) for a in (x, w, Z)])
    outs[0].to_numpy()


@needs_conv
@pytest.mark.parametrize("batch", [64, 40], ids=["even_chunks", "odd_chunks"])
def test_large_convolutions_on_two_threads_match_one_thread_jax_and_xla(batch, monkeypatch):
  """With REVAX_CPU_CONV_THREADS=2, work of >= 4e6 flops in several chunks is shared by two
  threads (conv_handler); the result is the one thread's, bit for bit."""
  rng = np.random.default_rng(0)
  x = rng.standard_normal((batch, 28, 28, 1)).astype(np.float32)
  w = rng.standard_normal((3, 3, 1, 32)).astype(np.float32)
  f = lambda lib: lambda x, w: lib.lax.conv_general_dilated(
      x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
  monkeypatch.setenv("REVAX_CPU_CONV_THREADS", "2")
  text, got, xla = _both(f(revax), (x, w), monkeypatch)
  monkeypatch.setenv("REVAX_CPU_CONV", "all")
  assert "threads = 2 : i64" in _rewrite(text)
  monkeypatch.delenv("REVAX_CPU_CONV_THREADS")
  assert "threads" not in _rewrite(text)
  one = _run(f(revax), (x, w))
  want = np.asarray(jax.jit(f(jax))(x, w))
  np.testing.assert_array_equal(got, one)
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(got, xla, rtol=1e-4, atol=1e-4)


@needs_conv
def test_convolutions_inside_checkpoint_conditionals_match_jax():
  """revax.checkpoint's backward pass sits in a conditional's region: the rewritten calls are
  there too."""
  x, w = _operands(2, 2, "channels_last", np.float32)
  conv = lambda lib: lambda x, w: lib.lax.conv_general_dilated(
      x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2)
  loss = lambda lib: lambda w, x: (lib.numpy.tanh(lib.checkpoint(conv(lib))(x, w)) ** 2).sum()
  f = revax.jit(revax.grad(loss(revax)))
  text = f.lower(w, x).as_text()
  assert "stablehlo.case" in text or "stablehlo.if" in text or "stablehlo.while" in text
  rewritten = _rewrite(text)  # the batch-grouped weight gradient (the input gradient is the
  assert rewritten.count("revax_lapack_conv") == 1  # largest: kept, the program is cheap)
  assert "batch_groups = 2" in rewritten.split("revax_lapack_conv")[0].rsplit("\n", 1)[-1]
  want = jax.jit(jax.grad(loss(jax)))(w, x)
  np.testing.assert_allclose(np.asarray(f(w, x)), np.asarray(want), rtol=1e-4, atol=1e-4)


def test_multi_device_programs_keep_xlas_convolution():
  """The SPMD partitioner cannot split a custom call: a program of two devices is not
  rewritten (client.py, as for gemm.py's dots), and computes jax's values."""
  import subprocess
  import sys
  import textwrap

  from tests.child_env import child_env
  code = textwrap.dedent("""
      import numpy as np, revax
      from revax._src.runtime import im2col
      from revax.sharding import NamedSharding, PartitionSpec as P
      seen = []
      original = im2col.rewrite_program
      im2col.rewrite_program = lambda code, targets: seen.append(1) or original(code, targets)
      conv = lambda x, w: revax.lax.conv_general_dilated(
          x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
          feature_group_count=2)
      rng = np.random.default_rng(0)
      x = rng.standard_normal((4, 6, 6, 4)).astype(np.float32)
      w = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
      mesh = revax.make_mesh((2,), ("d",))
      xs = revax.device_put(x, NamedSharding(mesh, P("d")))
      sharded = np.asarray(revax.jit(conv)(xs, w))
      assert not seen, "a two-device program went through the rewrite"
      single = np.asarray(revax.jit(lambda x, w, z: (conv(x, w), z * z))(
          x, w, np.ones(4096, np.float32))[0])
      assert seen, "a one-device program did not"
      np.testing.assert_allclose(sharded, single, rtol=1e-5, atol=1e-5)
      print("OK")
  """)
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=child_env(REVAX_CPU_DEVICE_COUNT="2", REVAX_CPU_CONV="all"),
                       timeout=300)
  assert out.returncode == 0 and "OK" in out.stdout, out.stderr[-3000:]



@needs_conv
def test_poly_of_nan_roots_as_jax(monkeypatch):
  """Where a filter holds NaN or inf, XLA leaves padding out of some convolutions' sums
  (jnp.poly of NaN roots starts with 1) and multiplies it in others, where the patches' zeros
  always meet the filter (0 * nan = nan): the default (the handler, following conv_nonfinite.py)
  gives jax's answer (all but the largest of poly's convolutions are the handler's: a program of
  nothing else keeps that one XLA's)."""
  monkeypatch.delenv("REVAX_CPU_CONV", raising=False)
  roots = np.array([np.nan, 1.0, 2.0, np.nan, 3.0], np.float32)
  text = revax.jit(revax.numpy.poly).lower(roots).as_text()
  assert _rewrite(text).count("revax_lapack_conv") == text.count('"stablehlo.convolution"') - 1
  got = np.asarray(revax.jit(revax.numpy.poly)(roots))
  want = np.asarray(jax.jit(jax.numpy.poly)(roots))
  np.testing.assert_array_equal(got, want)
