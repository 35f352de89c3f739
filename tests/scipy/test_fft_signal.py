"""revax.scipy.fft and revax.scipy.signal against jax.scipy (and SciPy for values): values and
dtypes eager and jitted, gradients, vmap, and bad arguments (JAX's exception types)."""
import numpy as np
import pytest
import scipy.fft
import scipy.signal

import revax
import revax.scipy.fft as rfft
import revax.scipy.signal as rsig

jax = pytest.importorskip("jax")
jfft = pytest.importorskip("jax.scipy.fft")
jsig = pytest.importorskip("jax.scipy.signal")

_RNG = np.random.default_rng(0)


def _data(shape, complex_=False):
  x = _RNG.standard_normal(shape)
  if complex_:
    return (x + 1j * _RNG.standard_normal(shape)).astype(np.complex64)
  return x.astype(np.float32)


def _close(actual, expected, msg, rtol=2e-5, atol=2e-5, check_dtype=True):
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.shape == expected.shape, f"{msg}: shape {actual.shape} != {expected.shape}"
  if check_dtype:
    assert actual.dtype == expected.dtype, f"{msg}: dtype {actual.dtype} != {expected.dtype}"
  scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
  np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale, err_msg=msg)


# --- scipy.fft -----------------------------------------------------------------------------------
DCT_CASES = [
    ("dct", {}, (3, 6), False), ("dct", {"axis": 0, "norm": "ortho"}, (5, 2), False),
    ("dct", {"n": 7}, (2, 5), False), ("dct", {"n": 3, "norm": "ortho"}, (6,), True),
    ("idct", {}, (3, 5), False), ("idct", {"axis": 0, "norm": "ortho", "n": 6}, (4, 3), False),
    ("idct", {}, (7,), True),
    ("dctn", {}, (3, 4, 5), False), ("dctn", {"axes": (0, 2), "norm": "ortho"}, (3, 2, 4), False),
    ("dctn", {"s": (5, 3)}, (2, 4, 4), True),
    ("idctn", {}, (3, 4), False), ("idctn", {"s": 6, "norm": "ortho"}, (2, 5), False),
    ("idctn", {"axes": (1,)}, (3, 4), True),
]
DCT_IDS = [f"{n}_{'x'.join(map(str, s))}{'_c' if c else ''}_{i}"
           for i, (n, _, s, c) in enumerate(DCT_CASES)]


@pytest.mark.parametrize("name,kw,shape,cplx", DCT_CASES, ids=DCT_IDS)
def test_dct_values_grad_vmap(name, kw, shape, cplx):
  x = _data(shape, cplx)
  f = lambda v: getattr(rfft, name)(v, **kw)
  g = lambda v: getattr(jfft, name)(v, **kw)
  out_shape = jax.eval_shape(g, x).shape
  w = _data(out_shape)
  xs = np.stack([x, 2 * x, -x], axis=-1)
  real = (lambda v: v) if not cplx else (lambda v: v.real)
  loss = lambda fn: (lambda v: (real(fn(v)) * w).sum())

  @jax.jit
  def oracle(x, xs):  # one program (one compile) for value, gradient and vmap
    return g(x), jax.grad(loss(g))(x), jax.vmap(g, in_axes=-1)(xs)
  expected, expected_grad, expected_vmap = oracle(x, xs)
  _close(f(x), expected, "eager")
  _close(revax.jit(f)(x), expected, "jit")
  _close(f(x), getattr(scipy.fft, name)(x, **kw), "scipy", rtol=1e-4, atol=1e-4,
         check_dtype=False)
  _close(revax.grad(loss(f))(x), expected_grad, "grad", rtol=1e-4, atol=1e-4)
  _close(revax.vmap(f, in_axes=-1)(xs), expected_vmap, "vmap")


def test_dct_round_trip():
  x = _data((4, 6))
  for norm in (None, "ortho"):
    _close(rfft.idctn(rfft.dctn(x, norm=norm), norm=norm), x, f"idctn(dctn) {norm}", atol=1e-5)


# --- scipy.signal --------------------------------------------------------------------------------
SHAPES = [((3,), (8,)), ((6,), (4,)), ((5, 6), (2, 3)), ((2, 3), (4, 5)), ((3, 4, 5), (2, 2, 3))]
CONV_CASES = [(fn, mode, s1, s2, method) for fn, method in (("convolve", "direct"),
                                                            ("correlate", "direct"),
                                                            ("convolve", "fft"))
              for mode in ("full", "same", "valid") for s1, s2 in SHAPES
              if method == "direct" or len(s1) != 2]


def _conv_id(case):
  fn, mode, s1, s2, method = case
  return f"{fn}_{mode}_{'x'.join(map(str, s1))}_{'x'.join(map(str, s2))}_{method}"


@pytest.mark.parametrize("fn,mode,s1,s2,method", CONV_CASES, ids=map(_conv_id, CONV_CASES))
def test_convolve_correlate_values(fn, mode, s1, s2, method):
  a, b = _data(s1), _data(s2)
  kw = dict(mode=mode, method=method)
  expected = jax.jit(lambda u, v: getattr(jsig, fn)(u, v, **kw))(a, b)
  _close(getattr(rsig, fn)(a, b, **kw), expected, "eager", rtol=1e-4, atol=1e-5)
  _close(getattr(scipy.signal, fn)(a, b, **kw), expected, "scipy", rtol=1e-4, atol=1e-5,
         check_dtype=False)


@pytest.mark.parametrize("fn", ["convolve2d", "correlate2d", "fftconvolve"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("cplx", [False, True])
def test_2d_and_fftconvolve_values_and_jit(fn, mode, cplx):
  for s1, s2 in [((5, 6), (2, 3)), ((2, 3), (4, 5))] + [((4, 4), (4, 4))] * (mode == "valid"):
    a, b = _data(s1, cplx), _data(s2, cplx)
    expected = jax.jit(lambda u, v: getattr(jsig, fn)(u, v, mode=mode))(a, b)
    _close(getattr(rsig, fn)(a, b, mode=mode), expected, f"{s1} {s2} eager", rtol=1e-4,
           atol=1e-5)
    _close(revax.jit(lambda u, v: getattr(rsig, fn)(u, v, mode=mode))(a, b), expected,
           f"{s1} {s2} jit", rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_fftconvolve_over_axes(mode):
  for s1, s2, axes, cplx in [((3, 7), (3, 4), 1, False), ((5, 2, 7), (3, 2, 4), (0, -1), True)]:
    a, b = _data(s1, cplx), _data(s2, cplx)
    _close(rsig.fftconvolve(a, b, mode=mode, axes=axes),
           jax.jit(lambda u, v: jsig.fftconvolve(u, v, mode=mode, axes=axes))(a, b), f"{s1} {s2} {axes}", rtol=1e-4,
           atol=1e-5)


@pytest.mark.parametrize("fn,method", [("convolve", "direct"), ("correlate", "direct"),
                                       ("convolve", "fft"), ("correlate2d", None),
                                       ("fftconvolve", None)])
def test_signal_grad_and_vmap(fn, method):
  a, b = _data((6, 5)), _data((3, 2))
  kw = {} if method is None else {"method": method}
  f = lambda u, v: getattr(rsig, fn)(u, v, mode="same", **kw)
  g = lambda u, v: getattr(jsig, fn)(u, v, mode="same", **kw)
  w = _data((6, 5))
  loss = lambda fn: (lambda u, v: (fn(u, v) * w).sum())
  a_batch = np.stack([a, -a, 2 * a], axis=1)

  @jax.jit
  def oracle(a, b, a_batch):  # one program (one compile) for the gradients and vmap
    return jax.grad(loss(g), argnums=(0, 1))(a, b), jax.vmap(g, in_axes=(1, None))(a_batch, b)
  expected_grads, expected_vmap = oracle(a, b, a_batch)
  for r, j in zip(revax.grad(loss(f), argnums=(0, 1))(a, b), expected_grads, strict=True):
    _close(r, j, "grad", rtol=1e-4, atol=1e-4)
  _close(revax.vmap(f, in_axes=(1, None))(a_batch, b), expected_vmap, "vmap", rtol=1e-4,
         atol=1e-5)


@pytest.mark.parametrize("kw", [{"type": "constant"}, {}, {"axis": 0}, {"bp": [1, 3]},
                                {"bp": [3, 5], "axis": 0}, {"bp": 9, "axis": 0}])
def test_detrend(kw):
  x = _data((10, 4))
  expected = jax.jit(lambda v: jsig.detrend(v, **kw))(x)
  _close(rsig.detrend(x, **kw), expected, "eager", atol=1e-5)
  _close(revax.jit(lambda v: rsig.detrend(v, **kw))(x), expected, "jit", atol=1e-5)
  _close(rsig.detrend(x, **kw), scipy.signal.detrend(x, **kw), "scipy", atol=1e-5,
         check_dtype=False)


_X = np.ones((4, 4), np.float32)
BAD = [
    (rfft.dct, jfft.dct, (_X,), {"type": 3}), (rfft.dct, jfft.dct, (_X,), {"norm": "forward"}),
    (rfft.idctn, jfft.idctn, (_X,), {"s": (2, 2, 2)}),
    (rsig.convolve, jsig.convolve, (_X, _X), {"mode": "bad"}),
    (rsig.convolve, jsig.convolve, (_X, _X), {"method": "bad"}),
    (rsig.convolve, jsig.convolve, (_X, _X[0]), {}),
    (rsig.convolve, jsig.convolve, (_X, np.ones((2, 6), np.float32)), {}),
    (rsig.convolve, jsig.convolve, (_X, np.ones((0, 2), np.float32)), {}),
    (rsig.convolve2d, jsig.convolve2d, (_X[0], _X[0]), {}),
    (rsig.convolve2d, jsig.convolve2d, (_X, _X), {"boundary": "wrap"}),
    (rsig.correlate2d, jsig.correlate2d, (_X, _X), {"fillvalue": 1}),
    (rsig.fftconvolve, jsig.fftconvolve, (_X, _X[0]), {}),
    (rsig.fftconvolve, jsig.fftconvolve, (_X, np.ones((3, 4), np.float32)), {"axes": 1}),
    (rsig.fftconvolve, jsig.fftconvolve, (_X, np.ones((2, 6), np.float32)), {"mode": "valid"}),
    (rsig.detrend, jsig.detrend, (_X,), {"type": "quadratic"}),
    (rsig.detrend, jsig.detrend, (_X,), {"bp": 7}),
    (rsig.detrend, jsig.detrend, (_X,), {"overwrite_data": True}),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_arguments_raise_jax_exception_types(case):
  ours, theirs, args, kw = BAD[case]
  with pytest.raises((TypeError, ValueError, NotImplementedError)) as jax_err:
    theirs(*args, **kw)
  with pytest.raises(jax_err.type):
    ours(*args, **kw)


# --- spectral analysis ---------------------------------------------------------------------------
_X = _data((2, 64))
_Y = _data((2, 64))
_XC = (_X + 1j * _Y).astype(np.complex64)
SPECTRAL = [
    ("stft", (_X,), {"nperseg": 16}),
    ("stft", (_X,), {"nperseg": 15, "noverlap": 5, "nfft": 20, "boundary": "even",
                     "padded": False}),
    ("stft", (_X.T,), {"nperseg": 8, "axis": 0, "boundary": "odd", "detrend": "linear"}),
    ("stft", (_XC,), {"nperseg": 16, "boundary": "constant"}),
    ("stft", (_X,), {"fs": 10.0, "window": "hamming", "nperseg": 12, "boundary": None}),
    ("welch", (_X,), {"nperseg": 16}),
    ("welch", (_X,), {"nperseg": 20, "noverlap": 4, "scaling": "spectrum",
                      "average": "median"}),
    ("welch", (_X.T,), {"axis": 0, "nperseg": 32, "fs": 3.0, "detrend": False, "nfft": 40}),
    ("csd", (_X, _Y), {"nperseg": 16}),
    ("csd", (_X, _Y[:1, :50]), {"nperseg": 16, "average": "median"}),
]


@pytest.mark.parametrize("case", range(len(SPECTRAL)),
                         ids=[f"{n}_{i}" for i, (n, _, _) in enumerate(SPECTRAL)])
@pytest.mark.filterwarnings("ignore:Input data is complex")
def test_spectral_values_and_jit(case):
  name, args, kw = SPECTRAL[case]
  expected = jax.jit(lambda *a: getattr(jsig, name)(*a, **kw))(*args)
  for got, how in ((getattr(rsig, name)(*args, **kw), "eager"),
                   (revax.jit(lambda *a: getattr(rsig, name)(*a, **kw))(*args), "jit")):
    for r, j in zip(got, expected, strict=True):
      _close(r, j, f"{name} {how}", rtol=1e-4, atol=1e-5)
  if len({np.shape(a) for a in args}) == 1:  # SciPy does not broadcast csd's x against y
    reference = getattr(scipy.signal, name)(*args, **kw)
    _close(got[-1], reference[-1], f"{name} scipy", rtol=1e-3, atol=1e-5, check_dtype=False)


@pytest.mark.parametrize("kw", [{"nperseg": 16}, {"nperseg": 16, "noverlap": 4},
                                {"boundary": False, "window": "hamming"}])
def test_istft_values_and_round_trip(kw):
  z = np.asarray(jax.jit(lambda v: jsig.stft(v, nperseg=16)[2])(_X))
  expected = jax.jit(lambda v: jsig.istft(v, **kw))(z)
  for r, j in zip(rsig.istft(z, **kw), expected, strict=True):
    _close(r, j, "istft", rtol=1e-4, atol=1e-5)
  if kw == {"nperseg": 16}:
    rebuilt = revax.jit(lambda v: rsig.istft(rsig.stft(v, nperseg=16)[2], nperseg=16)[1])(_X)
    _close(np.asarray(rebuilt)[:, :64], _X, "istft(stft(x))", atol=1e-5)


def test_welch_grad_and_vmap():
  loss = lambda fn: (lambda v: fn(v, nperseg=16)[1].sum())
  xs = np.stack([_X[0], _X[1], -_X[0]])

  @jax.jit
  def oracle(x, xs):
    return jax.grad(loss(jsig.welch))(x), jax.vmap(lambda v: jsig.welch(v, nperseg=16)[1])(xs)
  expected_grad, expected_vmap = oracle(_X[0], xs)
  _close(revax.grad(loss(rsig.welch))(_X[0]), expected_grad, "grad", rtol=1e-4, atol=1e-4)
  _close(revax.vmap(lambda v: rsig.welch(v, nperseg=16)[1])(xs), expected_vmap, "vmap",
         rtol=1e-4, atol=1e-5)


SPECTRAL_BAD = [
    (rsig.stft, jsig.stft, (_X,), {"nperseg": 0}),
    (rsig.stft, jsig.stft, (_X,), {"nperseg": 16, "noverlap": 16}),
    (rsig.stft, jsig.stft, (_X,), {"nperseg": 16, "nfft": 8}),
    (rsig.stft, jsig.stft, (_X,), {"nperseg": 16, "boundary": "wrap"}),
    (rsig.welch, jsig.welch, (_X,), {"nperseg": 16, "scaling": "bad"}),
    (rsig.welch, jsig.welch, (_X,), {"nperseg": 16, "average": "mode"}),
    (rsig.welch, jsig.welch, (_X,), {"window": np.ones((2, 2))}),
    (rsig.csd, jsig.csd, (_X, _Y[0]), {"nperseg": 16}),
    (rsig.istft, jsig.istft, (_X[0],), {}),
    (rsig.istft, jsig.istft, (np.ones((9, 5), np.complex64),), {"time_axis": 0,
                                                                  "freq_axis": 0}),
]


@pytest.mark.parametrize("case", range(len(SPECTRAL_BAD)))
def test_spectral_bad_arguments_raise_jax_exception_types(case):
  ours, theirs, args, kw = SPECTRAL_BAD[case]
  with pytest.raises((TypeError, ValueError)) as jax_err:
    theirs(*args, **kw)
  with pytest.raises(jax_err.type):
    ours(*args, **kw)
