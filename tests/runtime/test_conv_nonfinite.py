"""NaN and inf through the patch-GEMM convolution handler (im2col.py, conv_nonfinite.py) as jax's:
a generated family of convolutions (1-3 spatial dims; float32, float64, complex64, complex128;
feature groups, depthwise ones included, and batch groups of both of XLA's rewrites; 1 to 40 input
channels; paddings of both signs; strides; lhs and rhs dilation; both layouts) with NaN, inf and
-inf in the filter (and in the input for some), every convolution the handler's, against jax
0.10.2 live: the same NaN, +inf and -inf everywhere, the finite values close. Each dtype's
cases run as one program per library (one compilation). With the rule off (the handler's patches'
zeros always multiplied by the filter, as before), the same comparison fails: the test can
fail."""
import dataclasses

import numpy as np
import pytest

import revax
from revax._src.runtime import conv_nonfinite, gemm, im2col, lapack
from tests import platform_tolerances

jax = pytest.importorskip("jax")
pytestmark = [platform_tolerances.skip_on_tpu(platform_tolerances.NO_FFI),
              pytest.mark.skipif(lapack.target("conv", np.float32) is None,
                                 reason="no _lapack extension with conv_handler or no cblas")]

TARGETS = {dt: lapack.target("conv", dt) for dt in ("float32", "float64", "complex64",
                                                    "complex128")}
SPATIAL = "DHW"


@dataclasses.dataclass(frozen=True)
class Case:
  dtype: str
  lhs: tuple  # (n, *spatial, c): channels last
  rhs: tuple  # (*window, c // groups, o)
  strides: tuple
  padding: tuple
  ldil: tuple
  rdil: tuple
  groups: int = 1
  batch_groups: int = 1
  channels_first: bool = False
  seed: int = 0
  bad_lhs: bool = False

  def __str__(self):
    return (f"{self.dtype} lhs{self.lhs} rhs{self.rhs} s{self.strides} p{self.padding} "
            f"ld{self.ldil} rd{self.rdil} g{self.groups} bg{self.batch_groups}"
            f"{' NCHW' if self.channels_first else ''}{' bad-lhs' if self.bad_lhs else ''}")


def _out(i, k, s, lo, hi, ld, rd):
  di, dk = (i - 1) * ld + 1, (k - 1) * rd + 1
  return (di + lo + hi - dk) // s + 1 if di + lo + hi >= dk else 0


# Chosen by hand: each of XLA's algorithms and rewrites (conv_nonfinite.py's list).
HAND = [
    Case("float32", (1, 2, 1), (2, 1, 1), (1,), ((1, 1),), (1,), (1,)),  # jnp.poly's: tiny
    Case("float32", (1, 8, 1), (3, 1, 1), (1,), ((2, 2),), (1,), (1,)),  # Eigen
    Case("float32", (1, 3, 1), (4, 1, 1), (1,), ((3, 3),), (1,), (1,)),  # swapped operands
    Case("float32", (2, 6, 6, 20), (3, 3, 20, 4), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1)),
    Case("float64", (2, 6, 6, 20), (3, 3, 20, 4), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1)),
    Case("float64", (2, 6, 6, 8), (3, 3, 8, 4), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1)),
    Case("float32", (1, 6, 9), (2, 9, 3), (1,), ((0, 1),), (2,), (1,)),  # transposed conv
    Case("float32", (2, 5, 5, 4), (3, 3, 4, 3), (2, 1), ((1, 1), (1, 1)), (2, 2), (1, 1)),
    Case("float32", (2, 6, 6, 4), (3, 3, 2, 6), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 2),
    Case("float64", (2, 6, 6, 4), (3, 3, 1, 8), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 4,
         bad_lhs=True),  # depthwise float64: the input's NaN reaches the other groups
    Case("float64", (2, 6, 6, 20), (3, 3, 1, 40), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 20,
         bad_lhs=True),
    Case("float64", (2, 6, 6, 4), (3, 3, 2, 4), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 2),
    Case("float32", (4, 6, 2), (1, 2, 10), (2,), ((0, 3),), (1,), (1,), 1, 2),  # dilated rewrite
    Case("float32", (2, 2, 17), (3, 17, 2), (1,), ((2, 0),), (1,), (1,), 1, 2),  # select rewrite
    Case("float32", (6, 5, 5, 3), (3, 3, 3, 6), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 1, 3),
    Case("float64", (4, 6, 6, 2), (3, 3, 2, 4), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 1, 2),
    Case("float32", (2, 7, 7, 1), (3, 3, 1, 4), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1),
         channels_first=True),
    Case("complex64", (2, 6, 6, 2), (3, 3, 2, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1)),
    Case("complex128", (2, 6, 3), (3, 3, 3), (1,), ((2, 2),), (1,), (1,)),
    Case("float32", (2, 6, 6, 3), (3, 3, 3, 2), (2, 2), ((-1, 2), (1, -1)), (1, 1), (1, 1)),
    Case("float32", (2, 5, 5, 5, 2), (2, 2, 2, 2, 3), (1, 1, 1), ((1, 1),) * 3, (1, 1, 1),
         (1, 1, 1)),
]


def _generated(count, seed):
  """`count` random cases (small sizes; configurations jax 0.10.2's XLA aborts on left out)."""
  rng = np.random.default_rng(seed)
  cases = []
  while len(cases) < count:
    dims = int(rng.integers(1, 4))
    dtype = str(rng.choice(["float32"] * 3 + ["float64"] * 2 + ["complex64", "complex128"]))
    kind = int(rng.integers(0, 4))
    groups = int(rng.choice([2, 3, 4])) if kind == 1 else 1
    batch_groups = int(rng.choice([2, 3])) if kind == 2 else 1
    cg = int(rng.choice([1, 1, 2, 3, 5, 17]))
    og = int(rng.choice([1, 2, 3, 18]))
    n = batch_groups * int(rng.integers(1, 3))
    spatial = tuple(int(rng.integers(1, 7)) for _ in range(dims))
    window = tuple(int(rng.integers(1, 4)) for _ in range(dims))
    strides = tuple(int(rng.choice([1, 1, 2, 3])) for _ in range(dims))
    ldil = tuple(int(rng.choice([1, 1, 2])) for _ in range(dims))
    rdil = tuple(int(rng.choice([1, 1, 2])) for _ in range(dims))
    padding = tuple((int(rng.integers(-1, 4)), int(rng.integers(-1, 4))) for _ in range(dims))
    if batch_groups > 1 and max(ldil) > 1:
      continue  # jax 0.10.2 aborts (XLA's algebraic simplifier check-fails) on some of these
    if dtype != "float32" and (groups > 1 or batch_groups > 1) and max(rdil) > 1:
      continue  # (the same)
    if 0 in [_out(*a) for a in zip(spatial, window, strides, *zip(*padding), ldil, rdil)]:
      continue
    c, o = cg * groups, og * groups * batch_groups
    cases.append(Case(dtype, (n, *spatial, c), (*window, cg, o), strides, padding, ldil, rdil,
                      groups, batch_groups, bool(rng.random() < 0.2), int(rng.integers(1 << 30)),
                      bool(rng.random() < 0.3)))
  return cases


CASES = HAND + _generated(60, 36)


def _operands(case):
  rng = np.random.default_rng(case.seed)
  real = np.finfo(np.dtype(case.dtype)).dtype

  def make(shape):
    v = rng.uniform(-2, 2, shape).astype(real)
    return v + 1j * rng.uniform(-2, 2, shape).astype(real) if case.dtype.startswith("c") else v

  x, w = make(case.lhs).astype(case.dtype), make(case.rhs).astype(case.dtype)
  bad = [np.nan, np.inf, -np.inf]
  for _ in range(int(rng.integers(1, 4))):
    at = tuple(int(rng.integers(s)) for s in w.shape)
    w[at] = bad[int(rng.integers(3))] * (1j if case.dtype.startswith("c") and rng.random() < 0.5
                                         else 1)
  if case.bad_lhs:
    x[tuple(int(rng.integers(s)) for s in x.shape)] = bad[int(rng.integers(3))]
  if case.channels_first:
    x, w = np.moveaxis(x, -1, 1), np.moveaxis(np.moveaxis(w, -1, 0), -1, 1)
  return np.ascontiguousarray(x), np.ascontiguousarray(w)


def _spec(case):
  sp = SPATIAL[-(len(case.lhs) - 2):]
  if case.channels_first:
    return ("NC" + sp, "OI" + sp, "NC" + sp)
  return ("N" + sp + "C", sp + "IO", "N" + sp + "C")


def _program(lib, cases):
  def f(*args):
    outs = []
    for case, x, w in zip(cases, args[0::2], args[1::2], strict=True):
      outs.append(lib.lax.conv_general_dilated(
          x, w, case.strides, case.padding, case.ldil, case.rdil, _spec(case),
          feature_group_count=case.groups, batch_group_count=case.batch_groups))
    return outs
  return f


def _args(cases):
  return [a for case in cases for a in _operands(case)]


def _differences(got, want, cases):
  """The cases whose NaN, +inf, -inf (real and imaginary parts apart) differ, or whose finite
  values are not close."""
  bad = []
  for case, g, j in zip(cases, got, want, strict=True):
    g, j = np.asarray(g), np.asarray(j)
    parts = (g.real, j.real, g.imag, j.imag) if np.iscomplexobj(j) else (g, j)
    for a, b in zip(parts[0::2], parts[1::2]):
      same = (np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(a == np.inf, b == np.inf)
              and np.array_equal(a == -np.inf, b == -np.inf))
      finite = np.isfinite(b) & np.isfinite(a)
      tol = 1e-3 if np.finfo(b.dtype).bits == 32 else 1e-9
      if not same or not np.allclose(a[finite], b[finite], rtol=tol, atol=tol):
        bad.append(str(case))
        break
  return bad


def _revax_outputs(cases, monkeypatch):
  """revax's results with every convolution the handler's (beside z * z on CHEAP_MARGIN
  elements: a program of nothing but convolutions keeps its largest one XLA's)."""
  monkeypatch.setenv("REVAX_CPU_CONV", "all")
  args = [*_args(cases), np.ones(gemm.CHEAP_MARGIN, np.float32)]
  f = revax.jit(lambda *a: (_program(revax, cases)(*a[:-1]), a[-1] * a[-1]))
  text = f.lower(*args).as_text()
  rewritten = im2col.rewrite_program(text.encode(), TARGETS).decode()
  convs = text.count('"stablehlo.convolution"')
  assert convs >= len(cases) and rewritten.count("revax_lapack_conv") == convs
  return f(*args)[0]


GROUPS = {"32-bit": [c for c in CASES if c.dtype in ("float32", "complex64")],
          "64-bit": [c for c in CASES if c.dtype in ("float64", "complex128")]}


@pytest.mark.parametrize("which", sorted(GROUPS))
def test_nonfinite_results_as_jax(which, monkeypatch, request):
  if which == "64-bit":
    request.getfixturevalue("x64")
  cases = GROUPS[which]
  got = _revax_outputs(cases, monkeypatch)
  want = jax.jit(_program(jax, cases))(*_args(cases))
  assert _differences(got, want, cases) == []


def test_without_the_rule_the_comparison_fails(monkeypatch):
  """The patches' zeros multiplied by every filter (the handler before the rule): the float32
  cases chosen for XLA's other algorithms and rewrites differ, and the comparison sees it."""
  cases = [c for c in HAND if c.dtype == "float32"]
  monkeypatch.setattr(conv_nonfinite, "rule", lambda conv, generic_loop=False: (0, 0))
  got = _revax_outputs(cases, monkeypatch)
  want = jax.jit(_program(jax, cases))(*_args(cases))
  assert len(_differences(got, want, cases)) >= 4


def test_rule_is_the_handlers_attributes():
  """The rewritten call carries the rule's answer for its convolution."""
  f = lambda x, w: revax.lax.conv_general_dilated(x, w, (1,), ((1, 1),))
  x, w = np.ones((1, 1, 8), np.float32), np.ones((1, 1, 2), np.float32)
  text = revax.jit(f).lower(x, w).as_text()
  line = next(l for l in text.split("\n") if '"stablehlo.convolution"' in l)
  conv = im2col.parse(line)
  assert conv_nonfinite.rule(conv) == (1, 0)  # a 2-element filter: XLA's generic loop
  assert "skip_pad = 1 : i64, spread = 0 : i64" in im2col._call(conv, "t")


# In a loop's body or a conditional's branch XLA canonicalises no layout: jax's convolution of
# other dimension numbers than NHWC x HWIO there runs in XLA's generic loop.
FLOW = [Case("float32", (2, 6, 6, 1), (3, 3, 1, 2), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1),
             channels_first=cf) for cf in (False, True)] + [
    Case("float32", (2, 6, 6, 4), (3, 3, 2, 4), (1, 1), ((-1, 1), (1, 1)), (1, 1), (1, 1), 2,
         channels_first=True),
    Case("float32", (4, 6, 2), (1, 2, 10), (2,), ((0, 3),), (1,), (1,), 1, 2, channels_first=True),
    Case("float32", (2, 8, 6, 20), (3, 3, 20, 4), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1),
         channels_first=True)]


@pytest.mark.parametrize("flow", ["scan", "cond", "constant_cond", "checkpoint"])
def test_in_loops_and_branches_as_jax(flow, monkeypatch):
  """Inside lax.scan's body and lax.cond's branches as jax's; a cond of a constant predicate
  (XLA inlines the branch) and under checkpoint (revax fences its recomputation in a
  conditional, jax does not) as at the top level."""
  def wrap(lib):
    conv = _program(lib, FLOW)
    if flow == "scan":
      return lambda *a: lib.lax.scan(lambda c, _: (c, conv(*a)), 0.0, None, length=1)[1]
    if flow == "cond":  # (a predicate known at run time only)
      return lambda *a: lib.lax.cond(a[0][0, 0, 0, 0] < 9, conv, lambda *b: conv(*b), *a)
    if flow == "constant_cond":
      return lambda *a: lib.lax.cond(True, conv, lambda *b: conv(*b), *a)
    return lambda *a: lib.grad(lambda *b: sum(
        lib.numpy.sum(lib.numpy.nan_to_num(y)) for y in lib.checkpoint(conv)(*b)),
        argnums=tuple(range(len(a))))(*a)
  monkeypatch.setenv("REVAX_CPU_CONV", "all")
  args = [*_args(FLOW), np.ones(gemm.CHEAP_MARGIN, np.float32)]
  f = revax.jit(lambda *a: (wrap(revax)(*a[:-1]), a[-1] * a[-1]))
  text = f.lower(*args).as_text()
  assert "revax_lapack_conv" in im2col.rewrite_program(text.encode(), TARGETS).decode()
  got, want = f(*args)[0], jax.jit(wrap(jax))(*args[:-1])
  got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
  cases = FLOW if flow != "checkpoint" else [FLOW[k // 2] for k in range(2 * len(FLOW))]
  if flow == "scan":
    got, want = [g[0] for g in got], [w[0] for w in want]
  assert _differences(got, want, cases) == []


IN_LOOP = _generated(40, 3636)


@pytest.mark.parametrize("which", ["32-bit", "64-bit"])
def test_generated_in_a_loop_body_as_jax(which, monkeypatch, request):
  """Generated cases inside lax.scan's body: relaid convolutions and batch groups XLA dilates
  run in its generic loop there, the others as at the top level."""
  if which == "64-bit":
    request.getfixturevalue("x64")
  cases = [c for c in IN_LOOP if (c.dtype in ("float32", "complex64")) == (which == "32-bit")]

  def wrap(lib):
    conv = _program(lib, cases)
    return lambda *a: lib.lax.scan(lambda c, _: (c, conv(*a)), 0.0, None, length=1)[1]
  monkeypatch.setenv("REVAX_CPU_CONV", "all")
  args = [*_args(cases), np.ones(gemm.CHEAP_MARGIN, np.float32)]
  f = revax.jit(lambda *a: (wrap(revax)(*a[:-1]), a[-1] * a[-1]))
  text = f.lower(*args).as_text()
  rewritten = im2col.rewrite_program(text.encode(), TARGETS).decode()
  assert rewritten.count("revax_lapack_conv") == text.count('"stablehlo.convolution"')
  got = [g[0] for g in f(*args)[0]]
  want = [w[0] for w in jax.jit(wrap(jax))(*args[:-1])]
  assert _differences(got, want, cases) == []


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_convolutions_stay_xlas(dtype, monkeypatch, request):
  """Complex convolutions never reach XLA on the CPU (revax, as jax, lowers them as three real
  ones: so jax has no answer for a complex convolution there); in hand-written text they stay
  XLA's, whose complex products of inf OpenBLAS's complex GEMM does not share."""
  if dtype == "complex128":
    request.getfixturevalue("x64")
  real, element = ("float32", "f32") if dtype == "complex64" else ("float64", "f64")
  cases = [Case(real, (2, 6, 4), (3, 2, 6), (1,), ((2, 1),), (1,), (1,), 2)]
  args = [*_args(cases), np.ones(gemm.CHEAP_MARGIN, real)]
  f = lambda *a: (_program(revax, cases)(*a[:-1]), a[-1] * a[-1])
  text = revax.jit(f).lower(*args).as_text()
  monkeypatch.setenv("REVAX_CPU_CONV", "all")
  assert "revax_lapack_conv" in im2col.rewrite_program(text.encode(), TARGETS).decode()
  text = text.replace(f"x{element}>", f"xcomplex<{element}>>")
  assert im2col.rewrite_program(text.encode(), TARGETS) == text.encode()
