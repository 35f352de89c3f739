"""revax.scipy.special against jax.scipy.special (the oracle) and SciPy: values over grids with
edge values (eager, and jitted for a subset), dtypes, first derivatives where JAX defines them,
vmap on a subset, and the error paths JAX has."""
import warnings

import jax
import jax.scipy.special as jss
import numpy as np
import pytest
import scipy.special as sps

import revax
import revax.scipy.special as rss
from tests.platform_tolerances import ON_TPU, allclose_tol

warnings.filterwarnings("ignore", category=RuntimeWarning)

F32 = np.float32
GRID = np.array([-4.5, -2.0, -1.5, -1.0, -0.5, -0.0, 0.0, 1e-3, 0.3, 0.5, 1.0, 2.5, 7.0, 30.0,
                 np.inf, -np.inf, np.nan], F32)
PROB = np.array([0.0, 1e-30, 1e-8, 1e-4, 0.02, 0.3, 0.5, 0.7, 0.98, 1 - 1e-7, 1.0, -0.1, 1.5,
                 np.nan], F32)
WIDE = np.linspace(-40, 12, 105).astype(F32)


def _close(actual, expected, rtol=2e-5, atol=1e-6):
  """Equal dtypes and shapes, values to the tolerance (on a TPU at least the chip's: its lgamma,
  log and exp run in the compiled special functions, eagerly too where they compile)."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                             **allclose_tol(rtol, atol), equal_nan=True)


def _off_the_chip(x, where):
  """`x` without the elements at `where` on a TPU (elements whose float32 evaluation is
  ill-conditioned or at a pole, where the chip's transcendental functions give other digits or
  another non-finite class: platform_tolerances.TRANSCENDENTAL); `x` on the CPU."""
  return np.delete(np.asarray(x), where) if ON_TPU else np.asarray(x)


# name -> (inputs, scipy reference or None, rtol against jax)
UNARY = {
  "gammaln": (GRID, sps.gammaln, 2e-5), "gamma": (GRID, sps.gamma, 2e-5),
  "gammasgn": (GRID, None, 0), "loggamma": (GRID[GRID > 0], sps.loggamma, 2e-5),
  "digamma": (GRID, None, 2e-5), "erf": (WIDE / 5, sps.erf, 1e-6),
  "erfc": (WIDE / 4, sps.erfc, 2e-5), "erfinv": (PROB * 2 - 1, sps.erfinv, 2e-5),
  "erfcx": (np.concatenate([WIDE, GRID]), sps.erfcx, 5e-5), "expit": (GRID, sps.expit, 1e-6),
  "logit": (PROB, sps.logit, 2e-5), "ndtr": (np.concatenate([WIDE, GRID]), sps.ndtr, 2e-5),
  "log_ndtr": (np.concatenate([WIDE, GRID]), sps.log_ndtr, 2e-5),
  "ndtri": (PROB, sps.ndtri, 1e-4), "entr": (GRID, sps.entr, 1e-6),
  "i0": (GRID, sps.i0, 2e-5), "i0e": (np.concatenate([WIDE, GRID]), sps.i0e, 2e-5),
  "i1": (GRID, sps.i1, 2e-5), "i1e": (np.concatenate([WIDE, GRID]), sps.i1e, 2e-5),
  "factorial": (GRID, None, 2e-5),
}


@pytest.fixture(scope="module")
def jax_unary():
  """jax's values for every UNARY case, from one jitted call (jax compiles each eager op
  separately, which would dominate this file's run time)."""
  fn = jax.jit(lambda xs: {n: getattr(jss, n)(xs[n]) for n in UNARY})
  return jax.device_get(fn({n: UNARY[n][0] for n in UNARY}))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_jax_and_scipy(name, jax_unary):
  x, scipy_fn, rtol = UNARY[name]
  out = getattr(rss, name)(x)
  _close(out, jax_unary[name], rtol=rtol, atol=1e-6)
  if scipy_fn is not None:
    finite = np.isfinite(np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
      ref = scipy_fn(x.astype(np.float64)).astype(F32).astype(np.float64)  # overflows as f32
    np.testing.assert_allclose(np.asarray(out, np.float64)[finite], ref[finite],
                               **allclose_tol(max(rtol, 1e-5) * 10, 1e-6), equal_nan=True)


BINARY = {
  "xlogy": ([0.0, 0.0, 1.0, 2.0, 0.0, 3.0], [0.0, np.nan, 0.0, 0.5, -1.0, 4.0], sps.xlogy),
  "xlog1py": ([0.0, 0.0, 1.0, 2.0, 0.0, 3.0], [-1.0, np.nan, -1.0, 0.5, -1.5, 4.0], sps.xlog1py),
  "kl_div": ([0.0, 0.0, 1.0, -1.0, 1.0, 0.0, 2.0, 0.5], [0.0, 1.0, 0.0, 1.0, -1.0, -1.0, 3.0, 0.25],
             sps.kl_div),
  "rel_entr": ([0.0, 0.0, 1.0, -1.0, 1.0, 0.0, 2.0, 0.5],
               [0.0, 1.0, 0.0, 1.0, -1.0, -1.0, 3.0, 0.25], sps.rel_entr),
  "beta": ([0.5, 2.0, 3.0, -0.5, 10.0], [1.2, 3.0, 0.7, 1.2, 20.0], sps.beta),
  "betaln": ([0.5, 2.0, 3.0, 10.0], [1.2, 3.0, 0.7, 20.0], sps.betaln),
  "poch": ([1.0, -1.0, 2.0, 0.0, -2.5, 3.5], [2.0, 1.0, 0.0, 3.0, 1.0, 2.5], None),
  "comb": ([5.0, 5.0, 3.0, -1.0, 5.0, 10.0], [2.0, 0.0, 4.0, 1.0, -1.0, 3.0], None),
  "boxcox": ([1.0, 2.0, 2.0, 0.5, 3.0], [0.0, 0.0, 0.5, -1.0, 2.0], sps.boxcox),
  "boxcox1p": ([0.0, 1.0, 2.0, -0.5, 3.0], [0.0, 0.0, 0.5, -1.0, 2.0], sps.boxcox1p),
  "gammainc": ([0.5, 1.0, 2.0, 5.0, 30.0, 0.1, 3.0, 2.0], [0.3, 1.0, 4.0, 5.0, 25.0, 2.0, 0.0, np.inf],
               sps.gammainc),
  "gammaincc": ([0.5, 1.0, 2.0, 5.0, 30.0, 0.1, 3.0, 2.0], [0.3, 1.0, 4.0, 5.0, 25.0, 2.0, 0.0, np.inf],
                sps.gammaincc),
  "zeta": ([2.0, 3.0, 1.5, 4.0, 1.0, 0.5], [1.0, 0.5, 2.0, 10.0, 1.0, 1.0], sps.zeta),
  "polygamma": ([0.0, 1.0, 2.0, 3.0, 4.0], [0.3, 1.0, 2.5, 5.0, 0.7], None),
}


def _binary_args(name):
  a, b, _ = BINARY[name]
  return np.asarray(a, np.int32 if name == "polygamma" else F32), np.asarray(b, F32)


@pytest.fixture(scope="module")
def jax_binary():
  fn = jax.jit(lambda args: {n: getattr(jss, n)(*args[n]) for n in BINARY})
  return jax.device_get(fn({n: _binary_args(n) for n in BINARY}))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_matches_jax_and_scipy(name, jax_binary):
  a, b = _binary_args(name)
  scipy_fn = BINARY[name][2]
  out = getattr(rss, name)(a, b)
  _close(out, jax_binary[name], rtol=1e-4, atol=1e-6)
  if scipy_fn is not None:
    with np.errstate(all="ignore"):
      ref = scipy_fn(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(np.asarray(out, np.float64), ref, **allclose_tol(1e-4, 1e-6),
                               equal_nan=True)


def test_betainc_matches_jax_and_scipy():
  a = np.array([0.5, 2.0, 3.0, 1.0, 10.0, 0.2, 1.0], F32)
  b = np.array([0.5, 2.0, 3.0, 1.0, 10.0, 0.2, 1.0], F32)[::-1].copy()
  x = np.array([0.1, 0.5, 0.9, 0.3, 0.7, 0.99, 0.0], F32)
  out = rss.betainc(a, b, x)
  _close(out, jax.jit(jss.betainc)(a, b, x), rtol=2e-4)
  np.testing.assert_allclose(np.asarray(out, np.float64), sps.betainc(a, b, x),
                             **allclose_tol(2e-4, 1e-6))


def test_integer_inputs_promote_like_jax():
  cases = [("gammaln", (3,)), ("gammainc", (1, 2)), ("polygamma", (1, 2)),
           ("factorial", (np.arange(4),)), ("xlogy", (2, 3)), ("zeta", (2, 1))]
  refs = jax.device_get(jax.jit(lambda: [getattr(jss, n)(*a) for n, a in cases])())
  for (name, args), ref in zip(cases, refs, strict=True):
    _close(getattr(rss, name)(*args), ref, rtol=1e-5)


def test_small_functions_match_jax():
  x = np.array([[0.5, -1.0, 3.0], [2.0, 0.0, -np.inf]], F32)
  n, k = np.array([5.0, 3.0], F32), np.array([2.0, 4.0], F32)
  w = np.array([1.0, -2.0, 0.5], F32)
  axes = (None, 0, 1, (0, 1))

  def run(sp, np_):
    return dict(
        bern=sp.bernoulli(8), mgl=sp.multigammaln(np_.asarray([2.0, 3.5], F32), 3),
        comb=sp.comb(n, k, repetition=True),
        soft=[sp.softmax(x, axis=a) for a in axes], logsoft=[sp.log_softmax(x, axis=a) for a in axes],
        lse=sp.logsumexp(x, axis=1, b=w, return_sign=True))
  ref = jax.device_get(jax.jit(lambda: run(jss, jax.numpy))())
  out = run(rss, revax.numpy)
  for key in ref:
    for o, r in zip(jax.tree.leaves(out[key]), jax.tree.leaves(ref[key]), strict=True):
      _close(o, r, rtol=1e-5)


def test_log_ndtr_series_order_and_float64():
  x = np.linspace(-30, 10, 41).astype(F32)
  refs = jax.jit(lambda x: [jss.log_ndtr(x, series_order=o) for o in (0, 1, 5)])(x)
  for order, ref in zip((0, 1, 5), refs, strict=True):
    _close(rss.log_ndtr(x, series_order=order), ref, rtol=2e-5)
  with pytest.raises(ValueError):
    rss.log_ndtr(x, series_order=31)
  with pytest.raises(TypeError):
    rss.log_ndtr(x, series_order=1.5)


JIT_CASES = [("gammainc", 2), ("betainc", 3), ("ndtri", 1), ("i0e", 1), ("polygamma", 2)]


def _jit_args(name, nargs):
  rng = np.random.default_rng(0)
  args = [rng.uniform(0.2, 4.0, (6,)).astype(F32) for _ in range(nargs)]
  if name == "betainc":
    args[2] = args[2] / 4.2
  if name in ("ndtri",):
    args[0] = args[0] / 4.2
  if name == "polygamma":
    args[0] = np.floor(args[0]).astype(np.int32)
  if name == "zeta":
    args[0] = args[0] + 1.0
  return args


_JIT_SCIPY = {"gammainc": sps.gammainc, "betainc": sps.betainc, "ndtri": sps.ndtri,
              "i0e": sps.i0e, "polygamma": sps.polygamma}


def test_jit_matches_eager_and_scipy():
  """One revax program computing all JIT_CASES (the lowerings: XLA's CHLO expansions and the
  loops written in revax), against eager revax (the values eager revax has against jax above)
  and SciPy."""
  inputs = {n: _jit_args(n, k) for n, k in JIT_CASES}
  jitted = revax.jit(lambda d: {n: getattr(rss, n)(*d[n]) for n, _ in JIT_CASES})(inputs)
  for name, _ in JIT_CASES:
    _close(jitted[name], getattr(rss, name)(*inputs[name]), rtol=2e-5, atol=1e-6)
    ref = _JIT_SCIPY[name](*[a.astype(np.float64) if a.dtype == F32 else a for a in inputs[name]])
    np.testing.assert_allclose(np.asarray(jitted[name], np.float64), ref,
                               **allclose_tol(2e-4, 1e-6))


# (name, args, argnums): first derivatives against jax.grad of the same function
GRAD_CASES = [
  ("gammaln", (2.5,), 0), ("digamma", (1.7,), 0), ("erfinv", (0.3,), 0), ("ndtri", (0.2,), 0),
  ("log_ndtr", (-12.0,), 0), ("log_ndtr", (1.0,), 0), ("logit", (0.3,), 0), ("expit", (0.4,), 0),
  ("gammainc", (2.0, 1.5), 0), ("gammainc", (2.0, 1.5), 1), ("gammaincc", (0.7, 3.0), 0),
  ("gammaincc", (0.7, 3.0), 1), ("betainc", (2.0, 3.0, 0.4), 2), ("zeta", (3.0, 1.5), 1),
  ("polygamma", (2.0, 1.5), 1), ("i0e", (1.3,), 0), ("i1e", (-0.8,), 0), ("i1e", (0.0,), 0),
  ("xlogy", (0.0, 2.0), 0), ("xlogy", (0.0, 2.0), 1), ("xlog1py", (1.5, 0.5), 1),
  ("entr", (0.5,), 0), ("betaln", (1.5, 2.5), 0), ("erfcx", (3.0,), 0), ("gamma", (3.3,), 0),
]


def _grad_args(name, args):
  return tuple(np.int32(a) if name == "polygamma" and i == 0 else F32(a)
               for i, a in enumerate(args))


@pytest.fixture(scope="module")
def jax_grads():
  def all_grads(_):
    return [jax.grad(getattr(jss, n), argnums=k)(*_grad_args(n, a)) for n, a, k in GRAD_CASES]
  return jax.device_get(jax.jit(all_grads)(0))


@pytest.mark.parametrize("case", range(len(GRAD_CASES)),
                         ids=[f"{n}-{k}-{a}" for n, a, k in GRAD_CASES])
def test_grad_matches_jax(case, jax_grads):
  name, args, argnum = GRAD_CASES[case]
  g = revax.grad(getattr(rss, name), argnums=argnum)(*_grad_args(name, args))
  _close(g, jax_grads[case], rtol=2e-3, atol=1e-5)


def test_grad_errors_where_jax_has_no_derivative():
  with pytest.raises(ValueError, match="Betainc gradient"):
    revax.grad(rss.betainc)(F32(2.0), F32(3.0), F32(0.4))
  with pytest.raises(ValueError, match="integer type"):
    rss.polygamma(F32(2.0), F32(1.5))


def test_vmap_matches_batched_call():
  a = np.array([0.5, 1.0, 3.0], F32)
  x = np.array([[0.3, 1.0], [2.0, 4.0], [0.1, 9.0]], F32)
  out = revax.vmap(rss.gammainc, in_axes=(0, 0))(a, x)
  _close(out, rss.gammainc(a[:, None], x), rtol=1e-6)
  out = revax.vmap(lambda v: rss.logsumexp(v, b=np.array([1.0, 2.0], F32)))(x)
  _close(out, rss.logsumexp(x, axis=1, b=np.array([1.0, 2.0], F32)), rtol=1e-6)
  out = revax.vmap(rss.ndtri)(a / 4)
  _close(out, rss.ndtri(a / 4), rtol=1e-6)


def test_errors_like_jax():
  with pytest.raises(NotImplementedError, match="Riemann zeta"):
    rss.zeta(2.0)
  with pytest.raises(NotImplementedError, match="exact=True"):
    rss.factorial(3, exact=True)
  with pytest.raises(TypeError):
    rss.gammaln([1.0, 2.0])


# --- exponential integrals, spence, bessel_jn ------------------------------------------------------
POS = np.array([1e-3, 0.2, 0.5, 1.0, 1.5, 2.0, 5.0, 12.0, 30.0, 39.0, 41.0, 80.0], F32)
EDGES = np.array([-2.0, -0.5, 0.0, np.inf, np.nan], F32)


@pytest.mark.parametrize("name", ["exp1", "expi", "spence"])
def test_integrals_match_scipy_and_jax(name):
  """Against jax everywhere, edges included (jax gives NaN for exp1(inf), expi(0) and
  expi(+-inf), where SciPy gives 0, -inf and +-inf: revax follows jax); against SciPy where
  jax's value is finite."""
  x = np.concatenate([POS, -POS[:6], EDGES, [-np.inf]]).astype(F32)
  out = np.asarray(getattr(rss, name)(x))
  assert out.dtype == F32
  expected = np.asarray(jax.jit(getattr(jss, name))(x))
  _close(out, expected, rtol=2e-6, atol=1e-30)
  _close(revax.jit(getattr(rss, name))(x), expected, rtol=2e-6, atol=1e-30)
  with np.errstate(all="ignore"):
    ref = getattr(sps, name)(x.astype(np.float64)).astype(F32)
  finite = np.isfinite(expected)
  np.testing.assert_allclose(out[finite], ref[finite], **allclose_tol(1e-5, 1e-30))


def test_expn_matches_scipy_and_jax():
  """jax's (Cephes') branches, last match winning: E_n(0) for n >= 2 is 1 / n (SciPy: 1 / (n -
  1)), E_0(-0.) is -inf, E_n(inf) NaN; elsewhere SciPy's values."""
  n = np.array([0, 1, 2, 3, 5, 1, 4, 2, 10, 0, 3, -1, 0, 6000, 7])
  x = np.array([0.5, 0.5, 0.0, 2.0, 10.0, 3.0, 0.2, 1.0, 0.9, 0.0, np.inf, 1.0, -0.0, 2.0, 0.0],
               F32)
  out = np.asarray(rss.expn(n, x))
  expected = np.asarray(jax.jit(jss.expn)(n, x))
  _close(out, expected, rtol=2e-6)
  _close(revax.jit(rss.expn)(n, x), expected, rtol=2e-6)
  ref = sps.expn(n, x.astype(np.float64)).astype(F32)
  same = np.isfinite(expected) & (x != 0)
  np.testing.assert_allclose(out[same], ref[same], **allclose_tol(2e-6))
  with pytest.raises(ValueError, match="integer type"):
    rss.expn(np.array([1.5], F32), x[:1])


def test_integral_grads_match_jax():
  cases = [("exp1", 0.7), ("exp1", 3.0), ("expi", 2.0), ("expi", -1.5), ("spence", 0.3),
           ("spence", 3.0)]
  refs = jax.jit(lambda: [jax.grad(getattr(jss, n))(F32(x)) for n, x in cases])()
  for (name, x), ref in zip(cases, refs, strict=True):
    _close(revax.grad(getattr(rss, name))(F32(x)), ref, rtol=1e-4)


def test_bessel_jn_matches_scipy_and_jax():
  # revax computes jax's recurrence exactly: in float32 it overflows to NaN for small |z| (and
  # divides by z = 0); where it is finite it is scipy's J_v
  z = np.array([-7.0, 0.0, 0.1, 1.0, 5.0, 20.0, 30.0], F32)
  out = rss.bessel_jn(z, v=4)
  assert out.shape == (5, 7) and out.dtype == F32
  expected = jax.jit(lambda z: jss.bessel_jn(z, v=4))(z)
  _close(out, expected, rtol=1e-4, atol=1e-5)
  finite = np.isfinite(np.asarray(expected))
  assert finite[:, [0, 4, 5, 6]].all()
  ref = np.stack([sps.jv(k, z.astype(np.float64)) for k in range(5)])
  np.testing.assert_allclose(np.asarray(out)[finite], ref[finite], atol=2e-6)
  _close(revax.jit(lambda z: rss.bessel_jn(z, v=4))(z), out, rtol=1e-5, atol=1e-6)
  assert rss.bessel_jn(z, v=60, n_iter=10).shape == (11, 7)  # as jax's: orders up to n_iter


# --- dawsn, sici, fresnel ------------------------------------------------------------------------
TRIG_X = np.concatenate([np.linspace(-8, 30, 39), [0.0, 1.49, 1.5, 1.99, 2.0, 4.99, 5.01, np.inf,
                                                   np.nan]]).astype(F32)


@pytest.fixture(scope="module")
def jax_trig():
  def run(x):
    vals = {n: getattr(jss, n)(x) for n in ("dawsn", "sici", "fresnel")}
    grads = {n: [jax.grad(lambda v, n=n, i=i: getattr(jss, n)(v)[i] if i is not None
                          else getattr(jss, n)(v))(F32(p)) for i in idx for p in (0.7, 3.0)]
             for n, idx in (("dawsn", (None,)), ("sici", (0, 1)), ("fresnel", (0, 1)))}
    return vals, grads
  return jax.device_get(jax.jit(run)(TRIG_X))


@pytest.mark.parametrize("name", ["dawsn", "sici", "fresnel"])
def test_trig_integrals_match_jax_and_scipy(name, jax_trig):
  vals, grads = jax_trig
  out = getattr(rss, name)(TRIG_X)
  outs = out if isinstance(out, tuple) else (out,)
  refs = vals[name] if isinstance(vals[name], tuple) else (vals[name],)
  with np.errstate(all="ignore"):
    sp = getattr(sps, name)(TRIG_X.astype(np.float64))
  sps_outs = sp if isinstance(sp, tuple) else (sp,)
  for o, r, s_ref in zip(outs, refs, sps_outs, strict=True):
    _close(o, r, rtol=1e-5, atol=3e-6)
    finite = np.isfinite(TRIG_X) & (TRIG_X > 0)
    np.testing.assert_allclose(np.asarray(o)[finite], np.real(s_ref)[finite], rtol=1e-5,
                               atol=3e-6)
  idx = (None,) if name == "dawsn" else (0, 1)
  mine = [revax.grad(lambda v, i=i: getattr(rss, name)(v)[i] if i is not None
                     else getattr(rss, name)(v))(F32(p)) for i in idx for p in (0.7, 3.0)]
  for g, r in zip(mine, grads[name], strict=True):
    _close(g, r, rtol=1e-4, atol=1e-5)


def test_hyp1f1_matches_scipy_and_jax():
  """jax's algorithm: values equal jax's everywhere (x = -20 too, where its float32 series has
  lost digits against SciPy, and NaN parameters, where its loop stops at the first term and
  gives 1), SciPy's where the series is well conditioned; the three derivatives against jax;
  jit and vmap."""
  a = np.array([0.5, 1.0, 2.0, -1.5, 3.0, 0.5, 2.0, np.nan, 1.0, 0.0], F32)
  b = np.array([1.5, 2.0, 0.5, 2.5, 4.0, 3.0, 1.0, 1.0, 0.0, 0.0], F32)
  x = np.array([0.3, -2.0, 5.0, 1.0, 40.0, -20.0, 0.0, 1.0, 2.0, np.nan], F32)
  out = rss.hyp1f1(a, b, x)
  _close(out, jax.jit(jss.hyp1f1)(a, b, x), rtol=2e-6)
  well = np.array([0, 1, 2, 3, 4, 6])
  np.testing.assert_allclose(np.asarray(out)[well], sps.hyp1f1(a, b, x)[well].astype(F32),
                             rtol=2e-6)
  cond = [5]  # (x = -20: the float32 series has lost digits there; on a TPU other ones)
  _close(_off_the_chip(revax.jit(rss.hyp1f1)(a, b, x), cond), _off_the_chip(out, cond), rtol=1e-6)
  _close(_off_the_chip(revax.vmap(rss.hyp1f1)(a, b, x), cond), _off_the_chip(out, cond),
         rtol=1e-6)
  point = (F32(0.7), F32(1.8), F32(-1.3))
  refs = jax.jit(lambda p: [jax.grad(jss.hyp1f1, argnums=k)(*p) for k in range(3)])(point)
  for k in range(3):
    _close(revax.grad(rss.hyp1f1, argnums=k)(*point), refs[k], rtol=1e-4)


def test_owens_t_matches_scipy_and_jax():
  h = np.array([0.0, 0.5, 2.0, -1.0, 10.0, 0.3, 1.0, 0.0, 3.0, 1.5, 0.7], F32)
  a = np.array([0.5, 1.0, 0.3, 2.0, 1.0, 5.0, -3.0, 2.0, 10.0, np.inf, 0.0], F32)
  out = rss.owens_t(h, a)
  np.testing.assert_allclose(np.asarray(out), sps.owens_t(h.astype(np.float64), a.astype(np.float64)),
                             **allclose_tol(1e-5, 1e-8))
  finite = np.isfinite(a)
  _close(rss.owens_t(h[finite], a[finite]), jax.jit(jss.owens_t)(h[finite], a[finite]), rtol=1e-5,
         atol=1e-8)
  _close(revax.jit(rss.owens_t)(h, a), out, rtol=1e-6, atol=1e-9)
  refs = jax.jit(lambda: [jax.grad(jss.owens_t, argnums=k)(F32(0.8), F32(0.6)) for k in (0, 1)])()
  for k in (0, 1):
    _close(revax.grad(rss.owens_t, argnums=k)(F32(0.8), F32(0.6)), refs[k], rtol=1e-4)


def test_wofz_matches_scipy_and_jax():
  z = np.array([2.0, 2 + 0.1j, 2j, 1.5 + 1.5j, -2 + 0.5j, 3.0, 5 + 0.01j, 0.01 + 2j, 0.0, 1 - 1j,
                -3 - 0.2j, 20 + 5j, 0.3], np.complex64)
  out = rss.wofz(z)
  assert out.dtype == np.complex64
  ref = sps.wofz(z.astype(np.complex128))
  np.testing.assert_allclose(np.asarray(out), ref, rtol=2e-5, atol=1e-7)
  _close(out, jax.jit(jss.wofz)(z), rtol=2e-5, atol=1e-6)
  x = np.array([0.0, 0.5, 3.0], F32)
  _close(rss.wofz(x), jax.jit(jss.wofz)(x), rtol=2e-5, atol=1e-6)
  _close(revax.jit(rss.wofz)(z), out, rtol=1e-6, atol=1e-7)


def test_sph_harm_y_matches_scipy_and_jax():
  rng = np.random.default_rng(0)
  n = rng.integers(0, 9, 40)
  m = np.array([rng.integers(-k, k + 1) for k in n])
  theta = rng.uniform(0, np.pi, 40).astype(F32)
  phi = rng.uniform(-3, 3, 40).astype(F32)
  out = rss.sph_harm_y(n, m, theta, phi)
  assert out.dtype == np.complex64
  np.testing.assert_allclose(np.asarray(out), sps.sph_harm_y(n, m, theta.astype(np.float64),
                                                             phi.astype(np.float64)), atol=2e-6)
  _close(out, jax.jit(lambda *a: jss.sph_harm_y(*a, n_max=8))(n, m, theta, phi), rtol=1e-5,
         atol=1e-6)
  jitted = revax.jit(lambda *a: rss.sph_harm_y(*a, n_max=8))(n, m, theta, phi)
  _close(jitted, out, rtol=1e-5, atol=1e-6)
  # |m| > n: undefined, jax's table holds a value there (revax reads the same table)
  _close(rss.sph_harm_y(np.array([1]), np.array([3]), theta[:1], phi[:1]),
         jss.sph_harm_y(np.array([1]), np.array([3]), theta[:1], phi[:1]), atol=1e-6)
  with pytest.raises(NotImplementedError, match="diff_n"):
    rss.sph_harm_y(n, m, theta, phi, diff_n=1)


def test_sph_harm_y_is_jax_outside_0_pi_and_near_the_poles():
  """jax's Legendre table is a function of cos(theta) (sin(theta) as sqrt(1 - cos^2) >= 0):
  angles outside [0, pi] fold back, and within 1e-3 of the poles float32 rounds as jax's."""
  rng = np.random.default_rng(1)
  n = rng.integers(0, 9, 200)
  m = np.array([rng.integers(-k, k + 1) for k in n])
  theta = rng.uniform(-7, 7, 200).astype(F32)
  theta[:20] = rng.uniform(0, 1e-3, 20)
  phi = rng.uniform(-3, 3, 200).astype(F32)
  want = jax.jit(lambda *a: jss.sph_harm_y(*a, n_max=8))(n, m, theta, phi)
  _close(rss.sph_harm_y(n, m, theta, phi, n_max=8), want, rtol=1e-4, atol=2e-6)
  _close(revax.jit(lambda *a: rss.sph_harm_y(*a, n_max=8))(n, m, theta, phi), want, rtol=1e-4,
         atol=2e-6)


def _sph_harm_calls():
  """Every calling form of sph_harm_y: jax reads its Legendre table at [|m|, n, arange(len(n))],
  so the k-th (n, m) pair meets the k-th angle, one n with many angles reads the first angle's
  column, degrees and orders beyond n_max are clipped; the errors of 0-d or float degrees,
  2-d angles, diff_n and a traced n without n_max. (Each shape and n_max is a program jax
  compiles for seconds: the forms share a few; revax.jit is compared in the tests above.)"""
  nan, inf = np.nan, np.inf
  v = np.array([nan, inf, -inf, 0., -0., 1., -1., 0.5, 2.5, -2.5, 1e30, 3.], F32)
  ta, tb = (g.ravel().astype(F32) for g in np.meshgrid(v, v, indexing="ij"))
  rng = np.random.default_rng(2)
  th, ph = rng.uniform(-1, 4, 50).astype(F32), rng.uniform(-1, 7, 50).astype(F32)
  n, m = rng.integers(0, 6, 50), rng.integers(-6, 7, 50)
  one = (np.array([2]), np.array([1]))
  two = (np.array([2, 3]), np.array([1, -2]))
  p2 = np.array([0.3, 1.], F32)
  return {
      "one n, special angles": lambda s: s.sph_harm_y(np.array([1]), np.array([1]), ta, tb,
                                                       n_max=2),
      "n_max from n": lambda s: s.sph_harm_y(n % 4, m, th, ph),  # (n_max 3: one program)
      "n_max clips": lambda s: s.sph_harm_y(n, m, th, ph, n_max=3),
      "n_max 0": lambda s: s.sph_harm_y(np.array([0]), np.array([0]), th[:2], ph[:2]),
      "scalar theta": lambda s: s.sph_harm_y(*two, 0.7, p2),
      "integer angles": lambda s: s.sph_harm_y(n % 4, m, np.arange(50), np.arange(50) % 7),
      "short n": lambda s: s.sph_harm_y(*two, th[:5], ph[:5]),
      "0-d n": lambda s: s.sph_harm_y(2, 1, th[:2], p2),
      "float n": lambda s: s.sph_harm_y(np.array([2.]), np.array([1]), th[:2], p2),
      "2-d theta": lambda s: s.sph_harm_y(*one, np.ones((2, 2), F32), p2),
      "diff_n": lambda s: s.sph_harm_y(*one, th[:2], p2, diff_n=1),
      "jit traced n": lambda s: _JIT[s](lambda n: s.sph_harm_y(n, m, th, ph))(n),
  }


_JIT = {jss: jax.jit, rss: revax.jit}



def test_sph_harm_y_is_jax_in_every_calling_form():
  from tests.edges.harness import difference, outcome
  found = []
  for name, call in _sph_harm_calls().items():
    d = difference(outcome(call, jss), outcome(call, rss), rtol=1e-5)
    if d:
      found.append(f"{name}: {d}")
  assert not found, "\n".join(found)


def test_hyp2f1_matches_scipy_and_jax():
  """jax's algorithm: values equal jax's everywhere (x < -1 too, where its float32 answer is
  -inf, x = 0.99, where it is 7e-4 off, and NaN parameters), SciPy's where the series converges
  fast; all four derivatives against jax on both sides of 0; jit."""
  a = np.array([0.5, 1.0, 2.0, -1.5, 3.0, 0.5, 1.0, 1.0, np.nan, -1.0], F32)
  b = np.array([1.5, 2.0, 0.5, 2.5, 1.0, 3.0, 1.0, 1.0, np.nan, 2.5], F32)
  c = np.array([2.0, 3.0, 4.0, 1.5, 5.0, 4.0, 2.5, 2.0, 0.5, 0.5], F32)
  x = np.array([0.3, -2.0, 0.9, 0.5, 1.0, -0.5, 0.99, 1.5, 0.5, 1.0], F32)
  out = rss.hyp2f1(a, b, c, x)
  poles = [9]  # (x = 1, c - a - b = -1: a pole of Gamma (inf); the chip's lgamma gave NaN)
  _close(_off_the_chip(out, poles), _off_the_chip(jax.jit(jss.hyp2f1)(a, b, c, x), poles),
         rtol=2e-5)
  _close(revax.jit(rss.hyp2f1)(a, b, c, x), out, rtol=2e-6)
  sel = np.array([0, 2, 3, 4])
  np.testing.assert_allclose(np.asarray(out)[sel], sps.hyp2f1(a, b, c, x)[sel].astype(F32),
                             **allclose_tol(rtol=2e-5, atol=1e-7))
  points = [(F32(0.5), F32(1.5), F32(2.0), F32(0.3)), (F32(0.5), F32(1.5), F32(2.0), F32(-0.7))]
  refs = jax.jit(lambda: [[jax.grad(jss.hyp2f1, argnums=k)(*p) for k in range(4)]
                          for p in points])()
  for p, ref in zip(points, refs, strict=True):
    for k in range(4):
      _close(revax.grad(rss.hyp2f1, argnums=k)(*p), ref[k], rtol=1e-4)
