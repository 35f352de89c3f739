"""revax.nn activations, softmax family, logsumexp, one_hot and standardize against jax.nn:
values (eager and jitted, edge values included), dtypes, first and second derivatives (custom
derivatives at relu's and relu6's kinks included), masks, and error messages."""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.nn as nn
import revax.scipy.special
from tests.gradcheck import check_grads
from tests.platform_tolerances import ON_TPU, tolerance

EDGES = np.array([-np.inf, -7.0, -3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 6.0, 7.5, np.inf,
                  np.nan], np.float32)
KINKS = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 7.5], np.float32)

ELEMENTWISE = ["relu", "relu6", "sigmoid", "silu", "swish", "softplus", "elu", "leaky_relu",
               "gelu", "log_sigmoid", "selu", "celu", "hard_tanh", "hard_sigmoid", "hard_silu",
               "hard_swish", "mish", "soft_sign", "squareplus", "identity"]


def _same(actual, expected, rtol=1e-6, atol=1e-6):
  """Same dtype, shape, values to the tolerance and signs (of zeros too). The activations are
  built on exp/log/tanh/erf: on a TPU, the chip's own (platform_tolerances.TRANSCENDENTAL), so
  values compare to its tolerance there and signs where the value is beyond it."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
  assert actual.shape == expected.shape
  rtol, atol = tolerance(rtol, atol)
  a64, e64 = actual.astype(np.float64), expected.astype(np.float64)
  np.testing.assert_allclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True)
  signed = ~np.isnan(e64) & ((np.abs(e64) > atol) if ON_TPU else True)
  np.testing.assert_array_equal(np.signbit(a64[signed]), np.signbit(e64[signed]))


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_values_and_derivatives_match_jax(name):
  """Values at edge values (eager and jitted); first and second derivatives at kinks and smooth
  points (jitted; eager is covered by check_grads), and at NaN (0 where JAX's custom derivatives
  say so). The jax side runs under one jit per function."""
  f, jf = getattr(nn, name), getattr(jax.nn, name)

  def values_and_derivatives(grad, vmap, fun, edges, points, nan):
    g = grad(fun)
    return fun(edges), vmap(g)(points), vmap(grad(g))(points), g(nan)

  args = (EDGES, KINKS, np.float32(np.nan))
  expected = jax.jit(lambda *a: values_and_derivatives(jax.grad, jax.vmap, jf, *a))(*args)
  got = revax.jit(lambda *a: values_and_derivatives(revax.grad, revax.vmap, f, *a))(*args)
  _same(f(EDGES), expected[0])
  _same(got[0], expected[0])
  _same(got[1], expected[1], rtol=1e-5, atol=1e-6)
  _same(got[2], expected[2], rtol=1e-4, atol=1e-5)
  _same(got[3], expected[3])


def test_relu_derivative_is_zero_at_zero_and_relu6_at_both_kinks():
  assert float(revax.grad(nn.relu)(0.0)) == 0.0
  assert float(revax.grad(nn.relu)(1e-30)) == 1.0
  assert float(revax.grad(nn.relu6)(0.0)) == 0.0 and float(revax.grad(nn.relu6)(6.0)) == 0.0
  assert float(revax.grad(nn.relu6)(5.9)) == 1.0


@pytest.mark.parametrize("name", ["sigmoid", "silu", "softplus", "elu", "gelu", "mish", "selu",
                                  "log_sigmoid", "squareplus"])
def test_smooth_activations_check_grads(name):
  x = np.random.default_rng(0).uniform(-3, 3, (7,)).astype(np.float32)
  check_grads(getattr(nn, name), (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_gelu_forms_and_dtypes(dtype):
  x = np.linspace(-4, 4, 17).astype(dtype)
  both = lambda gelu, v: (gelu(v, approximate=True), gelu(v, approximate=False))
  expected = jax.jit(lambda v: both(jax.nn.gelu, v))(x)
  tol = 1e-6 if dtype == np.float32 else 1e-2
  for got in (both(nn.gelu, x), revax.jit(lambda v: both(nn.gelu, v))(x)):
    _same(got[0], expected[0], tol, tol)
    _same(got[1], expected[1], tol, tol)


def test_gelu_default_is_tanh_form():
  x = np.linspace(-3, 3, 9).astype(np.float32)
  _same(nn.gelu(x), jax.nn.gelu(x, approximate=True))
  assert not np.allclose(nn.gelu(x), nn.gelu(x, approximate=False), rtol=1e-6, atol=1e-6)


def test_integer_inputs_follow_jax():
  """relu and leaky_relu keep integers, relu6/gelu/softplus make them float (as jax); sigmoid
  and silu refuse them (lax.logistic takes floats only, in both)."""
  x = np.arange(-3, 4, dtype=np.int32)
  for name in ["relu", "relu6", "leaky_relu", "gelu", "softplus", "log_sigmoid", "elu"]:
    _same(getattr(nn, name)(x), jax.jit(getattr(jax.nn, name))(x), 1e-6, 1e-6)
  for name in ["sigmoid", "silu"]:
    with pytest.raises(TypeError, match="logistic does not accept dtype int32"):
      getattr(nn, name)(x)
    with pytest.raises(TypeError):
      getattr(jax.nn, name)(x)


def test_leaky_relu_and_elu_parameters():
  x = np.linspace(-3, 3, 13).astype(np.float32)
  _same(nn.leaky_relu(x, 0.2), jax.nn.leaky_relu(x, 0.2))
  _same(nn.elu(x, 0.5), jax.nn.elu(x, 0.5))
  _same(nn.celu(x, 2.0), jax.nn.celu(x, 2.0))
  _same(revax.vmap(revax.grad(lambda v: nn.elu(v, 0.5)))(x),
        jax.vmap(jax.grad(lambda v: jax.nn.elu(v, 0.5)))(x))


def test_glu():
  x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
  _same(nn.glu(x), jax.nn.glu(x), 1e-6, 1e-6)
  y = np.random.default_rng(2).standard_normal((4, 3)).astype(np.float32)
  _same(nn.glu(y, axis=0), jax.nn.glu(y, 0), 1e-6, 1e-6)
  with pytest.raises(ValueError, match="axis size must be divisible by 2, got 3"):
    nn.glu(x, axis=0)


# --- softmax, log_softmax, logsumexp --------------------------------------------------------------
X = np.random.default_rng(2).uniform(-3, 3, (3, 4, 5)).astype(np.float32)
MASK = np.random.default_rng(3).random((3, 4, 5)) < 0.7
MASK[..., 0] = True  # no all-masked row


def _compare(f, jf, x, rtol=1e-5, atol=1e-6, grad_tol=1e-5):
  """f(x) eager and jitted against jax; its VJP (at a random cotangent, zero where the output is
  infinite) eager and jitted against jax's. The jax side runs under one jit."""
  def value_and_vjp(vjp, fun, v, ct):
    out, f_vjp = vjp(fun, v)
    return out, f_vjp(ct)[0]
  out = np.asarray(f(x))
  ct = np.random.default_rng(4).standard_normal(out.shape).astype(out.dtype)
  ct = np.where(np.isfinite(out), ct, 0).astype(out.dtype)
  expected = jax.jit(lambda v, c: value_and_vjp(jax.vjp, jf, v, c))(x, ct)
  eager = value_and_vjp(revax.vjp, f, x, ct)
  jitted = revax.jit(lambda v, c: value_and_vjp(revax.vjp, f, v, c))(x, ct)
  for got in (eager, jitted):
    _same(got[0], expected[0], rtol, atol)
    np.testing.assert_allclose(got[1], expected[1], *tolerance(grad_tol, grad_tol))


@pytest.mark.parametrize("name,axis", [("softmax", -1), ("softmax", (0, 2)), ("softmax", None),
                                       ("log_softmax", 0), ("log_softmax", None)])
def test_softmax_family_matches_jax(name, axis):
  f, jf = getattr(nn, name), getattr(jax.nn, name)
  _compare(lambda v: f(v, axis=axis), lambda v: jf(v, axis=axis), X)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_family_where_matches_jax(name):
  f, jf = getattr(nn, name), getattr(jax.nn, name)
  _compare(lambda v: f(v, -1, MASK), lambda v: jf(v, -1, MASK), X)


def test_softmax_with_infinities_and_ties():
  x = np.array([[-np.inf, 0.0, 0.0], [1.0, 1.0, 1.0], [-np.inf, -np.inf, 2.0]], np.float32)
  _same(nn.log_softmax(x), jax.jit(jax.nn.log_softmax)(x))
  _compare(nn.softmax, jax.nn.softmax, x, grad_tol=1e-6)


def test_softmax_check_grads():
  check_grads(lambda v: nn.softmax(v, axis=1), (X[0],), order=2, modes=("fwd", "rev"))
  check_grads(lambda v: nn.log_softmax(v, axis=0), (X[0],), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("kwargs", [
    {}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"axis": -1, "where": MASK},
    {"axis": 2, "b": np.linspace(-1, 1, 5).astype(np.float32)},
    {"axis": 2, "b": np.linspace(-1, 1, 5).astype(np.float32), "return_sign": True},
    {"axis": 0, "b": np.abs(X[0]), "keepdims": True},
])
def test_logsumexp_matches_jax(kwargs):
  if kwargs.get("return_sign"):
    expected = jax.jit(lambda v: jax.nn.logsumexp(v, **kwargs))(X)
    for fun in (nn.logsumexp, revax.scipy.special.logsumexp):
      for got in (fun(X, **kwargs), revax.jit(lambda v: fun(v, **kwargs))(X)):
        _same(got[0], expected[0], 1e-5, 1e-6)
        _same(got[1], expected[1])
    return
  _compare(lambda v: nn.logsumexp(v, **kwargs), lambda v: jax.nn.logsumexp(v, **kwargs), X)
  _same(revax.scipy.special.logsumexp(X, **kwargs), nn.logsumexp(X, **kwargs))


def test_logsumexp_edge_rows():
  x = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [0.0, 0.0], [np.nan, 1.0]], np.float32)
  edge, ints = jax.jit(lambda a, b: (jax.nn.logsumexp(a, axis=1), jax.nn.logsumexp(b, 0)))(
      x, np.arange(4))
  _same(nn.logsumexp(x, axis=1), edge)
  _same(nn.logsumexp(np.arange(4), 0), ints)
  assert nn.logsumexp(np.float32(2.0)).shape == ()


# --- one_hot, standardize ------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
def test_one_hot_matches_jax(axis):
  x = np.array([[0, 2, 5], [-1, 1, 3]], np.int32)
  expected = jax.nn.one_hot(x, 4, axis=axis)
  _same(nn.one_hot(x, 4, axis=axis), expected)
  _same(revax.jit(lambda v: nn.one_hot(v, 4, axis=axis))(x), expected)


def test_one_hot_dtype_and_errors():
  x = np.array([0, 3], np.int32)
  _same(nn.one_hot(x, 4, dtype=np.int32), jax.nn.one_hot(x, 4, dtype=jnp.int32))
  _same(nn.one_hot(x, 4, dtype=ml_dtypes.bfloat16), jax.nn.one_hot(x, 4, dtype=jnp.bfloat16))
  with pytest.raises(ValueError, match="axis 3 is out of bounds for array of dimension 2"):
    nn.one_hot(x, 4, axis=3)
  with pytest.raises(TypeError, match="num_classes must be a concrete integer"):
    revax.jit(lambda v, n: nn.one_hot(v, n))(x, 4)


@pytest.mark.parametrize("kwargs", [
    {}, {"axis": 0}, {"axis": (0, 2)}, {"axis": None}, {"algorithm": "stable"},
    {"epsilon": 0.5}, {"where": MASK}, {"axis": 1, "where": MASK, "algorithm": "stable"},
])
def test_standardize_matches_jax(kwargs):
  _compare(lambda v: nn.standardize(v, **kwargs), lambda v: jax.nn.standardize(v, **kwargs), X,
           rtol=1e-4, atol=1e-5, grad_tol=1e-3)


def test_standardize_given_statistics_and_errors():
  mean, var = X.mean(-1, keepdims=True), X.var(-1, keepdims=True)
  _same(nn.standardize(X, mean=mean, variance=var),
        jax.nn.standardize(X, mean=mean, variance=var), 1e-5, 1e-6)
  with pytest.raises(ValueError, match="Unknown algorithm 'slow'. Expected 'fast' or 'stable'."):
    nn.standardize(X, algorithm="slow")
  with pytest.raises(TypeError, match="standardize requires ndarray or scalar arguments"):
    nn.standardize([1.0, 2.0])


def test_list_inputs_are_refused():
  with pytest.raises(TypeError, match="relu requires ndarray or scalar arguments"):
    nn.relu([1.0, -1.0])
