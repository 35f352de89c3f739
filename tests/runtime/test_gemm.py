"""CPU dots as BLAS GEMM calls (revax/_src/runtime/gemm.py, `_lapack.c`'s gemm_handler): the
rewrite of the compiled text, over a generated family of dot_general dimension numbers (plain,
transposed operands, batch dimensions anywhere, several free and contracting dimensions,
vectors, outer products, zero sizes) and every float/complex dtype, matches jax and XLA's own
dot; the size rule leaves large row-major and matrix-vector dots to XLA; transposes of a GEMM
result fold into the GEMM; NaN/inf propagate as in jax; REVAX_CPU_GEMM=0 and dtypes without a
handler leave the text alone."""
import itertools

import numpy as np
import pytest

import revax
from revax import lax
from revax._src.runtime import gemm, lapack
from tests import platform_tolerances

jax = pytest.importorskip("jax")
pytestmark = platform_tolerances.skip_on_tpu(platform_tolerances.NO_FFI)

needs_gemm = pytest.mark.skipif(lapack.target("gemm", np.float32) is None,
                                reason="no _lapack extension or no cblas_sgemm")
TARGETS = {dt: lapack.target("gemm", dt) for dt in ("float32", "float64", "complex64",
                                                    "complex128")}


def _rewrite(text: str) -> str:
  return gemm.rewrite_program(text.encode(), TARGETS).decode()

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-5, np.float64: 1e-12, np.complex64: 2e-5, np.complex128: 1e-12}


def _cases():
  """(name, lhs shape, rhs shape, dimension numbers): every placement of the groups."""
  out = []
  m, k, n = 4, 5, 6
  for ta, tb in itertools.product((False, True), repeat=2):  # NN, NT, TN, TT
    out.append((f"2d_ta{int(ta)}_tb{int(tb)}", (k, m) if ta else (m, k), (n, k) if tb else (k, n),
                (((0,) if ta else (1,), (1,) if tb else (0,)), ((), ()))))
  out += [
      ("batch_leading", (3, m, k), (3, k, n), (((2,), (1,)), ((0,), (0,)))),
      ("batch_odd_positions", (m, 3, k), (k, n, 3), (((2,), (0,)), ((1,), (2,)))),
      ("vmapped_lhs_only", (m, 2, 3, k), (k, n, 2), (((3,), (0,)), ((1,), (2,)))),
      ("two_batch_dims", (2, 3, m, k), (3, 2, k, n), (((3,), (2,)), ((0, 1), (1, 0)))),
      ("two_contracting", (2, 3, m), (m, 2, 3, n), (((0, 1), (1, 2)), ((), ()))),
      ("two_free_each", (2, m, k, 3), (k, n, 2), (((2,), (0,)), ((), ()))),
      ("contracting_between_free", (m, k, 3), (n, k), (((1,), (1,)), ((), ()))),
      ("matrix_vector", (m, k), (k,), (((1,), (0,)), ((), ()))),
      ("vector_matrix", (k,), (k, n), (((0,), (0,)), ((), ()))),
      ("inner", (k,), (k,), (((0,), (0,)), ((), ()))),
      ("outer", (m,), (n,), (((), ()), ((), ()))),
      ("outer_of_matrices", (2, 3), (m, n), (((), ()), ((), ()))),
      ("batched_inner", (3, k), (3, k), (((1,), (1,)), ((0,), (0,)))),
      ("zero_m", (0, k), (k, n), (((1,), (0,)), ((), ()))),
      ("zero_k", (m, 0), (0, n), (((1,), (0,)), ((), ()))),
      ("zero_batch", (0, m, k), (0, k, n), (((2,), (1,)), ((0,), (0,)))),
      ("unit_dims", (1, 1), (1, 1), (((1,), (0,)), ((), ()))),
  ]
  return out


CASES = _cases()


@pytest.fixture(autouse=True)
def gemm_on(monkeypatch):
  """The rewrite is opt-in (gemm.DOTS_BY_DEFAULT): these tests turn it on."""
  monkeypatch.setenv("REVAX_CPU_GEMM", "1")


def _rand(shape, dtype, seed):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(shape)
  if np.issubdtype(dtype, np.complexfloating):
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


def _compiled(f, *args):
  return revax.jit(f).lower(*args).compile()


Z = np.ones(gemm.CHEAP_MARGIN, np.float32)


def _busy(f):
  """f with other work beside it (z * z on CHEAP_MARGIN elements): a program of dots only keeps
  its largest dot XLA's (see test_a_program_of_dots_only_keeps_its_largest_dot)."""
  return lambda x, y, z: (f(x, y), z * z)


@needs_gemm
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,ls,rs,dims", CASES, ids=[c[0] for c in CASES])
def test_gemm_matches_jax_and_xlas_dot(name, ls, rs, dims, dtype, monkeypatch, request):
  if dtype in (np.float64, np.complex128):
    request.getfixturevalue("x64")
  a, b = _rand(ls, dtype, 0), _rand(rs, dtype, 1)
  f = _busy(lambda x, y: lax.dot_general(x, y, dims))
  text = revax.jit(f).lower(a, b, Z).as_text()
  rewritten = _rewrite(text)
  assert "revax_lapack_gemm" in rewritten and "stablehlo.dot_general" not in rewritten
  assert "stablehlo.dot_general" in text  # the lowered text stays jax's
  got = np.asarray(_compiled(f, a, b, Z)(a, b, Z)[0])
  want = np.asarray(jax.jit(lambda x, y: jax.lax.dot_general(x, y, dims))(a, b))
  assert got.shape == want.shape and got.dtype == want.dtype
  np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])
  monkeypatch.setenv("REVAX_CPU_GEMM", "0")
  assert gemm.rewrite_program(text.encode(), TARGETS) == text.encode()
  xla = np.asarray(_compiled(f, a, b, Z)(a, b, Z)[0])
  np.testing.assert_allclose(got, xla, rtol=TOL[dtype], atol=TOL[dtype])


@needs_gemm
@pytest.mark.parametrize("ls,rs,dims,expected", [
    ((256, 512), (512, 512), (((1,), (0,)), ((), ())), False),  # large, rhs row-major: Eigen
    ((512, 256), (512, 512), (((0,), (0,)), ((), ())), False),  # large x.T @ g: Eigen
    ((256, 512), (512, 512), (((1,), (1,)), ((), ())), True),   # large x @ w.T: GEMM
    ((256, 512), (512, 256), (((1,), (0,)), ((), ())), True),   # below LARGE_FLOPS: GEMM
    ((1024, 1024), (1024,), (((1,), (0,)), ((), ())), False),   # large matrix-vector: XLA's
    ((256, 256), (256,), (((1,), (0,)), ((), ())), True),       # small matrix-vector: GEMM
], ids=["large_nn", "large_tn", "large_nt", "medium_nn", "large_matvec", "small_matvec"])
def test_size_rule(ls, rs, dims, expected):
  text = revax.jit(_busy(lambda x, y: lax.dot_general(x, y, dims))).lower(
      np.ones(ls, np.float32), np.ones(rs, np.float32), Z).as_text()
  assert ("revax_lapack_gemm" in _rewrite(text)) == expected


@needs_gemm
@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16, "bfloat16"])
def test_other_dtypes_keep_xlas_dot(dtype):
  x = np.ones((8, 8), dtype) if dtype != "bfloat16" else revax.numpy.ones((8, 8), "bfloat16")
  text = revax.jit(lambda a, b: a @ b).lower(x, x).as_text()
  assert gemm.rewrite_program(text.encode(), TARGETS) == text.encode()


@needs_gemm
@pytest.mark.usefixtures("x64")
def test_mixed_operand_dtypes_are_converted_first_then_rewritten():
  a, b = _rand((4, 5), np.float32, 0), _rand((5, 6), np.float64, 1)
  f = _busy(lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))))
  text = revax.jit(f).lower(a, b, Z).as_text()
  assert "revax_lapack_gemm" in _rewrite(text)
  want = jax.jit(lambda x, y: jax.lax.dot_general(x, y, (((1,), (0,)), ((), ()))))(a, b)
  got = np.asarray(_compiled(f, a, b, Z)(a, b, Z)[0])
  assert got.dtype == np.float64
  np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12)


def test_dtypes_without_a_target_and_texts_without_dots_are_left_alone():
  text = revax.jit(lambda a, b: a @ b).lower(np.ones((4, 5), np.float32),
                                               np.ones((5, 6), np.float32)).as_text().encode()
  assert gemm.rewrite_program(text, {}) == text
  assert gemm.rewrite_program(text, {"float64": "f64_gemm"}) == text
  plain = revax.jit(lambda a: a + 1).lower(np.ones(3, np.float32)).as_text().encode()
  assert gemm.rewrite_program(plain, {"float32": "f32_gemm"}) == plain


@needs_gemm
def test_a_transposed_gemm_result_becomes_the_swapped_gemm():
  """dot_general(g, x) then a transpose (jax's weight gradient) is one GEMM of the swapped
  operands; a result with another user keeps its transpose."""
  x, w = _rand((64, 32), np.float32, 0), _rand((32, 16), np.float32, 1)
  loss = lambda w, x, np_: (np_.tanh(x @ w) ** 2).sum()
  text = revax.jit(revax.grad(lambda w, x: loss(w, x, revax.numpy))).lower(w, x).as_text()
  assert "stablehlo.transpose" in text
  rewritten = _rewrite(text)
  assert "stablehlo.transpose" not in rewritten and "stablehlo.dot_general" not in rewritten
  got = revax.jit(revax.grad(lambda w, x: loss(w, x, revax.numpy)))(w, x)
  want = jax.jit(jax.grad(lambda w, x: loss(w, x, jax.numpy)))(w, x)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5)

  both = _busy(lambda a, b: (lambda c: (c, c.T))(lax.dot_general(a, b, (((0,), (0,)), ((), ())))))
  text = revax.jit(both).lower(x, x, Z).as_text()
  assert "stablehlo.transpose" in _rewrite(text) and "revax_lapack_gemm" in _rewrite(text)
  (c, ct), _ = revax.jit(both)(x, x, Z)
  np.testing.assert_allclose(np.asarray(ct), np.asarray(c).T)
  np.testing.assert_allclose(np.asarray(c), x.T @ x, rtol=2e-5, atol=2e-5)


@needs_gemm
@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("dtype", [np.float32, np.complex128], ids=["f32", "c128"])
def test_nan_and_inf_propagate_as_in_jax(dtype):
  a, b = _rand((6, 5), dtype, 0), _rand((5, 7), dtype, 1)
  a[1, 2], a[3, 0], b[4, 4] = np.nan, np.inf, -np.inf
  f = lambda x, y: x @ y
  assert "revax_lapack_gemm" in _rewrite(revax.jit(_busy(f)).lower(a, b, Z).as_text())
  got, want = np.asarray(revax.jit(_busy(f))(a, b, Z)[0]), np.asarray(jax.jit(f)(a, b))
  np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
  np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
  finite = np.isfinite(want)
  np.testing.assert_allclose(got[finite], want[finite], rtol=TOL[dtype], atol=TOL[dtype])


@needs_gemm
def test_vmap_and_grad_of_a_dense_network_match_jax():
  rng = np.random.default_rng(0)
  ws = [rng.standard_normal((16, 32)).astype(np.float32),
        rng.standard_normal((32, 8)).astype(np.float32)]
  xs = rng.standard_normal((5, 3, 16)).astype(np.float32)

  def per_example(lib):
    def loss(ws, x):
      h = lib.numpy.tanh(x @ ws[0])
      return ((h @ ws[1]) ** 2).sum()
    return lib.jit(lib.vmap(lib.grad(loss), in_axes=(None, 0)))
  got = per_example(revax)(ws, xs)
  want = per_example(jax)(ws, xs)
  for g, w in zip(got, want, strict=True):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-4)


@needs_gemm
def test_a_program_of_dots_only_keeps_its_largest_dot():
  """XLA runs a program it counts under 1000 flops inline (custom calls count none): a program of
  dots keeps its largest dot XLA's, so that it is still dispatched asynchronously
  (tests/runtime/test_async_dispatch.py times a loop of products)."""
  x, y = np.ones((8, 16), np.float32), np.ones((16, 32), np.float32)
  two = lambda a, b: (a @ b, (a @ b[:, :4]).sum())
  text = _rewrite(revax.jit(two).lower(x, y).as_text())
  assert text.count("stablehlo.dot_general") == 1 and text.count("revax_lapack_gemm") == 1
  assert "tensor<16x32xf32>) -> tensor<8x32xf32>" in [
      line for line in text.splitlines() if "stablehlo.dot_general" in line][0]
  busy = _rewrite(revax.jit(_busy(two)).lower(x, y, Z).as_text())
  assert "stablehlo.dot_general" not in busy and busy.count("revax_lapack_gemm") == 2
  out = revax.jit(two)(x, y)
  np.testing.assert_allclose(np.asarray(out[0]), x @ y)
  assert float(out[1]) == float((x @ y[:, :4]).sum())


def test_dots_stay_xlas_unless_asked_for(monkeypatch):
  monkeypatch.delenv("REVAX_CPU_GEMM", raising=False)
  x = np.ones((64, 256), np.float32)
  f = _busy(lambda a, b: a @ b.T)
  text = revax.jit(f).lower(x, x, Z).as_text()
  assert not gemm.dots_enabled()
  assert gemm.rewrite_program(text.encode(), TARGETS) == text.encode()
  monkeypatch.setenv("REVAX_CPU_GEMM", "1")
  assert b"revax_lapack_gemm" in gemm.rewrite_program(text.encode(), TARGETS)


def test_on_by_default_only_for_plugins_as_old_as_the_one_measured(monkeypatch):
  monkeypatch.delenv("REVAX_CPU_GEMM", raising=False)
  assert gemm.enabled_for_plugin((0, 81)) and not gemm.enabled_for_plugin((0, 106))
  monkeypatch.setenv("REVAX_CPU_GEMM", "1")
  assert gemm.enabled_for_plugin((0, 115))
  monkeypatch.setenv("REVAX_CPU_GEMM", "0")
  assert not gemm.enabled_for_plugin((0, 81))


# ----------------------------------------------------------- the opt-in rules large, large-nt


def _gemm_lines(text: str) -> list[str]:
  return [line for line in text.splitlines() if "revax_lapack_gemm" in line]


@needs_gemm
@pytest.mark.parametrize("rule", gemm.RULES)
@pytest.mark.parametrize("ls,rs,dims,large,nt", [
    ((256, 1024), (1024, 1024), (((1,), (1,)), ((), ())), True, True),     # x @ w.T
    ((256, 1024), (1024, 1024), (((1,), (0,)), ((), ())), True, False),    # x @ w
    ((1024, 256), (1024, 1024), (((0,), (0,)), ((), ())), True, False),    # x.T @ g
    ((1024, 256), (1024, 1024), (((0,), (1,)), ((), ())), True, True),     # x.T @ w.T
    ((4, 256, 128), (4, 256, 128), (((2,), (2,)), ((0,), (0,))), True, True),  # batched NT
    ((64, 256), (256, 256), (((1,), (1,)), ((), ())), False, True),        # below the threshold
    ((64, 256), (256, 256), (((1,), (0,)), ((), ())), False, False),
    ((4096, 4096), (4096,), (((1,), (0,)), ((), ())), False, False),      # matrix-vector
    ((4096,), (4096, 4096), (((0,), (1,)), ((), ())), False, True),       # vector-matrix
], ids=["nt", "nn", "tn", "tt", "batched_nt", "small_nt", "small_nn", "matvec", "vecmat"])
def test_rules_pick_large_dots_and_thread_them(rule, ls, rs, dims, large, nt, monkeypatch):
  """`large` rewrites every dot of at least THREADED_FLOPS flops but matrix-vector products,
  `large-nt` only those whose rhs is contracted on its minor dimension; each GEMM call runs on
  as many OpenBLAS threads as the process may use CPUs; every other dot stays XLA's."""
  monkeypatch.setenv("REVAX_CPU_GEMM", rule)
  p = gemm.plan(ls, rs, dims)
  assert (2 * p["batch"] * p["m"] * p["n"] * p["k"] >= gemm.THREADED_FLOPS) == (
      large or min(p["m"], p["n"]) == 1)
  assert p["trans_b"] == nt
  text = revax.jit(_busy(lambda x, y: lax.dot_general(x, y, dims))).lower(
      np.ones(ls, np.float32), np.ones(rs, np.float32), Z).as_text()
  calls = _gemm_lines(_rewrite(text))
  expected = large and (rule == "large" or nt)
  assert len(calls) == int(expected)
  assert ("stablehlo.dot_general" in _rewrite(text)) == (not expected)
  if expected:
    assert f"threads = {gemm.gemm_threads()} : i64" in calls[0]
  # REVAX_CPU_GEMM=1's rule runs its calls on the handler's default, one thread
  monkeypatch.setenv("REVAX_CPU_GEMM", "1")
  assert all("threads" not in line for line in _gemm_lines(_rewrite(text)))


def test_rule_threads_follow_the_cpu_affinity(monkeypatch):
  monkeypatch.setattr(gemm.os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
  assert gemm.gemm_threads() == 3
  monkeypatch.delattr(gemm.os, "sched_getaffinity", raising=False)
  monkeypatch.setattr(gemm.os, "cpu_count", lambda: 7)
  assert gemm.gemm_threads() == 7


def test_rule_names_and_threshold_are_checked(monkeypatch):
  for value, want in [("large", "large"), (" Large-NT ", "large-nt"), ("1", None), ("0", None),
                      ("", None)]:
    monkeypatch.setenv("REVAX_CPU_GEMM", value)
    assert gemm.rule() == want
  monkeypatch.setenv("REVAX_CPU_GEMM", "biggest")
  with pytest.raises(ValueError, match="REVAX_CPU_GEMM='biggest'"):
    gemm.rule()
  with pytest.raises(ValueError, match="unknown GEMM rule"):
    gemm.uses_gemm(gemm.plan((4, 5), (5, 6), (((1,), (0,)), ((), ()))), "biggest")
  assert gemm.threaded_flops() == gemm.THREADED_FLOPS
  monkeypatch.setenv("REVAX_CPU_GEMM_MIN_FLOPS", "1e6")
  assert gemm.threaded_flops() == 10 ** 6
  monkeypatch.setenv("REVAX_CPU_GEMM_MIN_FLOPS", "many")
  with pytest.raises(ValueError, match="REVAX_CPU_GEMM_MIN_FLOPS='many'"):
    gemm.threaded_flops()


@needs_gemm
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,ls,rs,dims", CASES, ids=[c[0] for c in CASES])
def test_rule_large_matches_jax_on_every_layout(name, ls, rs, dims, dtype, monkeypatch, request):
  """The whole family with the threshold at 0: every dot but matrix-vector ones becomes a GEMM
  call on gemm_threads() threads, and matches jax within the same tolerances."""
  if dtype in (np.float64, np.complex128):
    request.getfixturevalue("x64")
  monkeypatch.setenv("REVAX_CPU_GEMM", "large")
  monkeypatch.setenv("REVAX_CPU_GEMM_MIN_FLOPS", "0")
  a, b = _rand(ls, dtype, 0), _rand(rs, dtype, 1)
  f = _busy(lambda x, y: lax.dot_general(x, y, dims))
  p = gemm.plan(ls, rs, dims)
  calls = _gemm_lines(_rewrite(revax.jit(f).lower(a, b, Z).as_text()))
  assert len(calls) == int(min(p["m"], p["n"]) != 1)  # (zero sizes count 0 flops)
  assert all(f"threads = {gemm.gemm_threads()} : i64" in line for line in calls)
  got = np.asarray(_compiled(f, a, b, Z)(a, b, Z)[0])
  want = np.asarray(jax.jit(lambda x, y: jax.lax.dot_general(x, y, dims))(a, b))
  assert got.shape == want.shape and got.dtype == want.dtype
  np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])


@needs_gemm
@pytest.mark.parametrize("rule", gemm.RULES)
def test_rules_on_an_mlp_training_step_match_jax(rule, monkeypatch):
  """Large dots on OpenBLAS's threads (a dense network's backward pass holds NN, NT and TN
  dots of 2^25-2^26 flops): the gradients match jax's within the scale-relative tolerance of
  test_vmap_and_grad_of_a_dense_network_match_jax."""
  monkeypatch.setenv("REVAX_CPU_GEMM", rule)
  rng = np.random.default_rng(0)
  ws = [(rng.standard_normal((512, 256)) / 16).astype(np.float32),
        (rng.standard_normal((256, 256)) / 16).astype(np.float32),
        (rng.standard_normal((256, 10)) / 16).astype(np.float32)]
  x = rng.standard_normal((256, 512)).astype(np.float32)

  def step(lib):
    def loss(ws, x):
      h = x
      for w in ws[:-1]:
        h = lib.numpy.tanh(h @ w)
      return ((h @ ws[-1]) ** 2).mean()
    return lib.jit(lib.grad(loss))
  text = step(revax).lower(ws, x).as_text()
  calls = _gemm_lines(_rewrite(text))
  assert calls and all(f"threads = {gemm.gemm_threads()}" in line for line in calls)
  got, want = step(revax)(ws, x), step(jax)(ws, x)
  for g, w in zip(got, want, strict=True):
    scale = float(np.max(np.abs(np.asarray(w))))
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-4 * scale)
