"""revax.numpy.fft against jax.numpy.fft: values and dtypes (eager and jitted), gradients of a
real loss, vmap at two batch positions, bad arguments (same exception types as JAX), and the
program structure (one fft per group of at most three dims, none for fftshift)."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.numpy.helpers import jax, jnp

_RNG = np.random.default_rng(0)


def _data(kind, shape):
  x = _RNG.standard_normal(shape)
  if kind == "c":
    x = x + 1j * _RNG.standard_normal(shape)
    return x.astype(np.complex64)
  if kind == "i":
    return np.round(3 * x).astype(np.int32)
  return x.astype(np.float32)


# (function name, keyword arguments, input kind: r real / c complex / i int, input shape)
CASES = [
    ("fft", {}, "c", (6,)), ("fft", {"n": 4, "axis": 0}, "r", (5, 3)),
    ("fft", {"n": 8, "norm": "ortho"}, "c", (2, 5)), ("fft", {}, "i", (4,)),
    ("ifft", {"axis": 1, "norm": "forward"}, "c", (2, 5, 3)), ("ifft", {"n": 3}, "c", (4, 6)),
    ("rfft", {}, "r", (3, 8)), ("rfft", {"n": 7, "axis": 0, "norm": "ortho"}, "r", (5, 2)),
    ("irfft", {}, "c", (2, 5)), ("irfft", {"n": 7, "norm": "forward"}, "c", (3, 4)),
    ("hfft", {}, "c", (2, 5)), ("hfft", {"n": 5, "axis": 0, "norm": "ortho"}, "c", (3, 2)),
    ("ihfft", {}, "r", (2, 6)), ("ihfft", {"n": 5, "norm": "forward"}, "r", (7,)),
    ("fftn", {}, "c", (2, 3, 4)), ("fftn", {"s": (4, 3), "axes": (2, 0)}, "r", (3, 2, 5)),
    ("fftn", {}, "c", (2, 2, 3, 2)), ("fftn", {"norm": "ortho"}, "r", (2, 2, 2, 3, 2)),
    ("ifftn", {"axes": (0, 2)}, "c", (3, 2, 4)), ("ifftn", {}, "c", (2, 3, 2, 2)),
    ("rfftn", {}, "r", (3, 4, 6)), ("rfftn", {"s": (3, 5)}, "r", (2, 4, 4)),
    ("rfftn", {}, "r", (2, 2, 3, 4)),
    ("irfftn", {}, "c", (3, 4, 4)), ("irfftn", {"s": (2, 2, 3, 6)}, "c", (2, 2, 3, 4)),
    ("irfftn", {"axes": (0, 1), "norm": "ortho"}, "c", (4, 3, 2)),
    ("fft2", {}, "c", (2, 3, 4)), ("fft2", {"axes": (0, 2), "s": (3, 3)}, "r", (2, 3, 4)),
    ("ifft2", {"norm": "forward"}, "c", (3, 4)), ("rfft2", {}, "r", (2, 4, 6)),
    ("irfft2", {}, "c", (3, 4)), ("irfft2", {"s": (3, 5), "axes": (1, 0)}, "c", (4, 3)),
    ("fftshift", {}, "r", (4, 5)), ("fftshift", {"axes": 1}, "c", (3, 4)),
    ("ifftshift", {"axes": (0, 2)}, "r", (3, 2, 5)), ("ifftshift", {}, "c", (5,)),
]
IDS = [f"{name}_{kind}{'x'.join(map(str, shape))}_{'_'.join(f'{k}{v}' for k, v in kw.items())}"
       for name, kw, kind, shape in CASES]


def _both(name, kw):
  return (lambda x: getattr(rnp.fft, name)(x, **kw)), (lambda x: getattr(jnp.fft, name)(x, **kw))


def _close(actual, expected, msg, rtol=2e-5, atol=2e-5):
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.shape == expected.shape, f"{msg}: shape {actual.shape} != {expected.shape}"
  assert actual.dtype == expected.dtype, f"{msg}: dtype {actual.dtype} != {expected.dtype}"
  scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
  np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale, err_msg=msg)


@pytest.mark.parametrize("name,kw,kind,shape", CASES, ids=IDS)
def test_values_eager_and_jit(name, kw, kind, shape):
  x = _data(kind, shape)
  f, g = _both(name, kw)
  expected = jax.jit(g)(x)
  _close(f(x), expected, "eager")
  _close(revax.jit(f)(x), expected, "jit")


def _loss(fun, real, imag, np_):
  def loss(x):
    y = fun(x)
    return (np_.real(y) * real).sum() + (np_.imag(y) * imag).sum()
  return loss


@pytest.mark.parametrize("name,kw,kind,shape", [c for c in CASES if c[2] != "i"],
                         ids=[i for i, c in zip(IDS, CASES) if c[2] != "i"])
def test_grad_of_a_real_loss(name, kw, kind, shape):
  """Gradients against jax's (complex inputs: JAX's convention, the conjugate of df/dz*)."""
  x = _data(kind, shape)
  f, g = _both(name, kw)
  out_shape = jax.eval_shape(g, x).shape
  real = _RNG.standard_normal(out_shape).astype(np.float32)
  imag = _RNG.standard_normal(out_shape).astype(np.float32)
  expected = jax.jit(jax.grad(_loss(g, real, imag, jnp)))(x)
  _close(revax.grad(_loss(f, real, imag, rnp))(x), expected, "grad", rtol=1e-4, atol=1e-4)
  if name in ("fft", "rfft", "irfft", "hfft", "fftn", "irfftn"):  # a sample, for time
    _close(revax.jit(revax.grad(_loss(f, real, imag, rnp)))(x), expected, "jit(grad)",
           rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name,kw,kind,shape", CASES, ids=IDS)
@pytest.mark.parametrize("in_axis", [0, -1])
def test_vmap(name, kw, kind, shape, in_axis):
  """A batch axis in front of, or behind, the transformed axes."""
  x = np.stack([_data(kind, shape) for _ in range(3)], axis=in_axis)
  f, g = _both(name, kw)
  _close(revax.vmap(f, in_axes=in_axis)(x), jax.jit(jax.vmap(g, in_axes=in_axis))(x), "vmap")


@pytest.mark.parametrize("fn", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("args,kw", [((8,), {}), ((7, 0.5), {}), ((1,), {}),
                                     ((6, 0.1), {"dtype": np.complex64}),
                                     ((5, np.float32(2.0)), {})])
def test_frequencies(fn, args, kw):
  _close(getattr(rnp.fft, fn)(*args, **kw), getattr(jnp.fft, fn)(*args, **kw), fn, rtol=1e-6)


@pytest.mark.parametrize("fn", ["fftfreq", "rfftfreq"])
def test_frequencies_with_traced_spacing(fn):
  f = revax.jit(lambda d: getattr(rnp.fft, fn)(6, d))
  _close(f(np.float32(0.25)), getattr(jnp.fft, fn)(6, 0.25), fn, rtol=1e-6)


_X = np.ones((4, 4), np.float32)
BAD = [
    ("fft", ([1.0, 2.0],), {}), ("fft", (_X,), {"n": 0}), ("fft", (_X,), {"axis": (0, 1)}),
    ("fft", (_X,), {"norm": "bad"}), ("rfft", (_X.astype(np.complex64),), {}),
    ("rfft", (_X.astype(np.float16),), {}), ("fft2", (_X,), {"axes": (0, 1, 1)}),
    ("fftn", (_X,), {"axes": (0, 0)}), ("fft", (_X,), {"axis": 5}),
    ("fftn", (_X,), {"s": (2, 2), "axes": (0,)}), ("fftn", (_X,), {"s": (2.5,)}),
    ("fftshift", ([1, 2],), {}), ("fftfreq", ([1, 2],), {}), ("rfftfreq", (4, [1.0]), {}),
]


@pytest.mark.parametrize("name,args,kw", BAD, ids=[f"{n}_{i}" for i, (n, _, _) in enumerate(BAD)])
def test_bad_arguments_raise_jax_exception_types(name, args, kw):
  with pytest.raises((TypeError, ValueError)) as jax_err:
    getattr(jnp.fft, name)(*args, **kw)
  with pytest.raises(jax_err.type):
    getattr(rnp.fft, name)(*args, **kw)


def test_four_and_five_dims_compose_transforms_of_at_most_three():
  """XLA transforms at most three dims: 4 dims are two 2-d ffts, 5 dims a 3-d and a 2-d."""
  for shape, groups in (((2, 2, 3, 2), [2, 2]), ((2, 2, 2, 3, 2), [3, 2])):
    jaxpr = revax.make_jaxpr(rnp.fft.fftn)(np.ones(shape, np.complex64))
    lengths = [len(e.params["fft_lengths"]) for e in jaxpr.jaxpr.eqns if e.primitive.name == "fft"]
    assert lengths == groups


def test_fftshift_moves_data_without_an_fft():
  jaxpr = revax.make_jaxpr(rnp.fft.fftshift)(np.ones((4, 5), np.float32))
  assert "fft" not in {e.primitive.name for e in jaxpr.jaxpr.eqns}
