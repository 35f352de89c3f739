"""Unary elementwise primitives: error paths, weak types, params, the StableHLO they emit, the
float64 numerics of the NumPy special functions, and differential checks against jax.lax."""
import math
import warnings

import ml_dtypes
import numpy as np
import pytest

import revax
import revax.lax as lax
from revax._src.interpreters import dispatch
from tests.plugin_differences import skip_on_plugins_that_differ
from tests.platform_tolerances import tolerance

f32 = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
i32 = np.arange(6, dtype=np.int32).reshape(2, 3)
u8 = np.arange(6, dtype=np.uint8)
c64 = (f32 + 1j * f32[::-1]).astype(np.complex64)


def _text(fun, *args):
  return revax.jit(fun).lower(*args).as_text()


def _out_aval(fun, *args):
  (out,) = revax.make_jaxpr(fun)(*args).jaxpr.outvars
  return out.aval


# --- dtype errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("fun,name,arg,kind", [
    (lax.exp, "exp", i32, "floating or complex"),
    (lax.log, "log", np.ones(3, np.bool_), "floating or complex"),
    (lax.tanh, "tanh", u8, "floating or complex"),
    (lax.asin, "asin", i32, "floating or complex"),
    (lax.floor, "floor", i32, "floating-point"),
    (lax.round, "round", c64, "floating-point"),
    (lax.is_finite, "is_finite", i32, "floating-point"),
    (lax.cbrt, "cbrt", c64, "floating-point"),
    (lax.erf, "erf", c64, "floating-point"),
    (lax.erf_inv, "erf_inv", i32, "floating-point"),
    (lax.lgamma, "lgamma", i32, "floating-point"),
    (lax.digamma, "digamma", c64, "floating-point"),
    (lax.neg, "neg", np.ones(3, np.bool_), "numeric \\(non-bool\\)"),
    (lax.sign, "sign", np.ones(3, np.bool_), "numeric \\(non-bool\\)"),
    (lax.abs, "abs", u8, "signed integer, floating or complex"),
    (lax.bitwise_not, "not", f32, "integer or bool"),
    (lax.square, "square", np.ones(3, np.bool_), "numeric \\(non-bool\\)"),
    (lax.real, "real", f32, "complex"),
    (lax.imag, "imag", i32, "complex"),
])
def test_rejects_dtype_and_names_it(fun, name, arg, kind):
  with pytest.raises(TypeError, match=rf"^{name} does not accept dtype {arg.dtype.name}; it takes "
                                      rf"{kind} arguments"):
    fun(arg)


def test_rejected_dtype_under_jit_too():
  with pytest.raises(TypeError, match="exp does not accept dtype int32"):
    revax.jit(lax.exp)(i32)


def test_conj_rejects_16_bit_floats_and_ints():
  with pytest.raises(TypeError, match="conj does not accept dtype float16; it takes float32, "
                                      "float64, complex64 or complex128 arguments"):
    lax.conj(f32.astype(np.float16))
  with pytest.raises(TypeError, match="conj does not accept dtype int32"):
    lax.conj(i32)


def test_integer_pow_negative_exponent_of_integers():
  with pytest.raises(TypeError, match=r"Integers cannot be raised to negative powers, got "
                                      r"integer_pow\(i32\[2,3\], -2\)"):
    lax.integer_pow(i32, -2)


def test_integer_pow_needs_an_int_exponent():
  with pytest.raises(TypeError, match=r"integer_pow requires an integer exponent, got 1.5"):
    lax.integer_pow(f32, 1.5)
  np.testing.assert_array_equal(lax.integer_pow(i32, np.int64(2)), i32 ** 2)  # NumPy ints are fine


def test_round_rejects_unknown_method():
  with pytest.raises(ValueError, match="5 is not a valid RoundingMethod"):
    lax.round(f32, 5)


# --- params, jaxprs and weak types ---------------------------------------------------------------
def test_round_param_is_the_enum():
  closed = revax.make_jaxpr(lambda x: lax.round(x, 1))(f32)
  (eqn,) = closed.jaxpr.eqns
  assert eqn.primitive.name == "round"
  assert eqn.params == {"rounding_method": lax.RoundingMethod.TO_NEAREST_EVEN}
  assert type(eqn.params["rounding_method"]) is lax.RoundingMethod


def test_integer_pow_param():
  (eqn,) = revax.make_jaxpr(lambda x: lax.integer_pow(x, -3))(f32).jaxpr.eqns
  assert eqn.primitive.name == "integer_pow" and eqn.params == {"y": -3}


def test_bitwise_not_binds_not():
  (eqn,) = revax.make_jaxpr(lax.bitwise_not)(i32).jaxpr.eqns
  assert eqn.primitive.name == "not"


def test_conj_records_input_dtype():
  (eqn,) = revax.make_jaxpr(lax.conj)(f32).jaxpr.eqns
  assert eqn.params == {"input_dtype": np.dtype(np.float32)}
  assert eqn.outvars[0].aval.dtype == np.complex64


@pytest.mark.parametrize("fun", [lax.exp, lax.neg, lax.sin, lambda x: lax.integer_pow(x, 3),
                                 lax.square, lax.abs, lax.erf])
def test_weak_type_is_kept(fun):
  aval = _out_aval(fun, 1.5)
  assert aval.dtype == np.float32 and aval.weak_type
  assert not _out_aval(fun, np.float32(1.5)).weak_type


def test_weak_complex_abs_and_real_give_weak_float():
  for fun in (lax.abs, lax.real, lax.imag):
    aval = _out_aval(fun, 1 + 2j)
    assert aval.dtype == np.float32 and aval.weak_type


def test_is_finite_gives_bool_weak_as_its_operand():
  # as jax's standard weak-type rule: a weak operand gives a weak bool
  aval = _out_aval(lax.is_finite, 1.5)
  assert aval.dtype == np.bool_ and aval.weak_type
  aval = _out_aval(lax.is_finite, np.float32(1.5))
  assert aval.dtype == np.bool_ and not aval.weak_type


# --- lowering ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fun,op", [
    (lax.erf, "chlo.erf"), (lax.lgamma, "chlo.lgamma"),
    (lax.digamma, "chlo.digamma"), (lax.asin, "chlo.asin"), (lax.acosh, "chlo.acosh"),
    (lax.tan, "stablehlo.tan"), (lax.logistic, "stablehlo.divide"),  # 1 / (1 + exp(-x)): jax's
    (lax.round, "stablehlo.round_nearest_afz"),
    (lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), "stablehlo.round_nearest_even"),
    (lax.square, "chlo.square"), (lax.rsqrt, "stablehlo.rsqrt"), (lax.expm1,
                                                                  "stablehlo.exponential_minus_one"),
])
def test_lowers_to(fun, op):
  assert f'"{op}"' in _text(fun, f32)


def test_erf_inv_lowers_as_jaxlibs_xla_evaluates_it_on_the_cpu():
  """float32 erf_inv on the CPU: the polynomial jaxlib's XLA evaluates (the normal samplers'
  draws are jax's bit for bit); other dtypes, and a TPU, chlo.erf_inv as jax lowers it."""
  from revax._src.core.jaxpr import ClosedJaxpr
  from revax._src.interpreters import mlir

  def lowered(x, platform):
    closed = revax.make_jaxpr(lax.erf_inv)(x)
    return mlir.lower_jaxpr_to_module(ClosedJaxpr(closed.jaxpr, closed.consts), "main",
                                      platform=platform)
  text = lowered(f32, "cpu")
  assert '"chlo.erf_inv"' not in text and '"stablehlo.log_plus_one"' in text, text
  assert '"chlo.erf_inv"' in lowered(np.float16(0.5), "cpu")
  assert '"chlo.erf_inv"' in lowered(f32, "tpu")


def test_integer_pow_lowers_to_repeated_squaring():
  text = _text(lambda x: lax.integer_pow(x, 12), f32)  # x^2, x^4, x^8, x^8 * x^4
  assert text.count('"stablehlo.multiply"') == 4
  assert "power" not in text
  neg = _text(lambda x: lax.integer_pow(x, -5), f32)
  assert neg.count('"stablehlo.multiply"') == 3 and neg.count('"stablehlo.divide"') == 1
  assert '"stablehlo.multiply"' not in _text(lambda x: lax.integer_pow(x, 0), f32)


def test_square_of_integers_is_a_multiply():
  text = _text(lax.square, i32)
  assert '"stablehlo.multiply"' in text and "chlo.square" not in text


def test_sign_of_unsigned_avoids_stablehlo_sign():
  text = _text(lax.sign, u8)
  assert "stablehlo.sign" not in text and '"stablehlo.select"' in text
  np.testing.assert_array_equal(revax.jit(lax.sign)(u8), [0, 1, 1, 1, 1, 1])


def test_exp2_of_16_bit_floats_computes_in_float32():
  text = _text(lax.exp2, f32.astype(np.float16))
  assert "tensor<2x3xf32>" in text
  x = np.array([10.0, -3.5, 7.25, 0.1], np.float16)
  np.testing.assert_array_equal(revax.jit(lax.exp2)(x), np.exp2(x))  # correctly rounded


# --- edge semantics ------------------------------------------------------------------------------
def test_no_floating_point_warnings_in_eager():
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    lax.log(np.array([-1.0, 0.0], np.float32))
    lax.sqrt(np.array([-1.0], np.float32))
    lax.lgamma(np.array([0.0, -1.0], np.float32))
    lax.digamma(np.array([0.0, -2.0], np.float32))
    lax.erf_inv(np.array([1.0, 2.0], np.float32))
    lax.integer_pow(np.array([0.0], np.float32), -1)
    lax.exp(np.array([100.0], np.float32))


def test_round_ties():
  x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -0.49999997], np.float32)
  afz = [1, 2, 3, -1, -3, 0, 0]
  even = [0, 2, 2, -0, -2, 0, 0]
  for fun in (lax.round, revax.jit(lax.round, static_argnums=1)):
    np.testing.assert_array_equal(fun(x), afz)
    np.testing.assert_array_equal(fun(x, lax.RoundingMethod.TO_NEAREST_EVEN), even)


@pytest.mark.parametrize("fun", [
    lax.lgamma,
    pytest.param(lax.digamma, marks=skip_on_plugins_that_differ("digamma_at_zero"))],
    ids=["lgamma", "digamma"])
def test_special_function_poles_jit_matches_eager(fun):
  x = np.array([0.0, -1.0, -2.0, np.inf, -np.inf, np.nan], np.float32)
  np.testing.assert_array_equal(fun(x), revax.jit(fun)(x))


def test_special_function_poles_match_xla():
  x = np.array([0.0, -1.0, -2.0, np.inf, -np.inf, np.nan], np.float32)
  np.testing.assert_array_equal(lax.lgamma(x), [np.inf, np.inf, np.inf, np.inf, np.inf, np.nan])
  np.testing.assert_array_equal(lax.digamma(x), [np.nan, np.nan, np.nan, np.inf, np.nan, np.nan])
  y = np.array([1.0, -1.0, 1.5, -1.5, np.nan, 0.0, -0.0], np.float32)
  expected = [np.inf, -np.inf, np.nan, np.nan, np.nan, 0.0, -0.0]
  np.testing.assert_array_equal(lax.erf_inv(y), expected)
  np.testing.assert_array_equal(revax.jit(lax.erf_inv)(y), expected)


# --- float64 numerics of the NumPy special functions ---------------------------------------------
def _numpy_impl(prim):
  return dispatch.numpy_impls[prim]


def test_erf_inv_float64_inverts_erf_to_rounding_error():
  impl = _numpy_impl(lax.erf_inv_p)
  rng = np.random.default_rng(0)
  center = rng.uniform(-0.5, 0.5, 2000)
  np.testing.assert_allclose(np.vectorize(math.erf)(impl(center)), center, rtol=4e-16, atol=1e-300)
  y = 1 - 10.0 ** -rng.uniform(0.31, 15, 2000)  # tails: 1 - |y| from 0.49 down to 1e-15
  q = 1 - y  # exact
  for sign in (1, -1):
    x = impl(sign * y)
    np.testing.assert_allclose(np.vectorize(math.erfc)(sign * x), q, rtol=1e-14)


def test_digamma_float64_identities():
  impl = _numpy_impl(lax.digamma_p)
  euler = 0.57721566490153286061
  np.testing.assert_allclose(impl(np.array([1.0, 0.5, 2.0])),
                             [-euler, -euler - 2 * math.log(2), 1 - euler], rtol=1e-15)
  rng = np.random.default_rng(1)
  x = rng.uniform(0.01, 30, 1000)
  np.testing.assert_allclose(impl(x + 1), impl(x) + 1 / x, rtol=1e-13, atol=1e-13)
  r = rng.uniform(-20, 20, 1000)
  r = r[np.abs(r - np.round(r)) > 0.01]
  np.testing.assert_allclose(impl(1 - r) - impl(r), math.pi / np.tan(math.pi * r), rtol=1e-11,
                             atol=1e-11)


def test_lgamma_float64_matches_math():
  x = np.array([0.1, 1.0, 2.5, -0.5, -2.5, 30.0, 1e5])
  np.testing.assert_allclose(_numpy_impl(lax.lgamma_p)(x), [math.lgamma(v) for v in x],
                             rtol=1e-15)


# --- differential checks against jax.lax ---------------------------------------------------------
_JAX_CASES = [
    ("erf_inv", np.linspace(-0.999, 0.999, 41, dtype=np.float32), 2e-6),
    ("digamma", np.linspace(-2.9, 6, 47, dtype=np.float32), 2e-5),
    ("lgamma", np.linspace(-2.9, 6, 47, dtype=np.float32), 1e-5),
    ("erf", np.linspace(-4, 4, 33, dtype=np.float32), 1e-6),
    ("erfc", np.linspace(-4, 9, 33, dtype=np.float32), 1e-5),
    ("logistic", np.linspace(-90, 90, 37, dtype=np.float32), 1e-6),
    ("exp2", np.linspace(-10, 10, 21, dtype=np.float32), 1e-6),
    ("cbrt", np.linspace(-27, 27, 21, dtype=np.float32), 1e-6),
    ("atanh", np.linspace(-0.99, 0.99, 21, dtype=np.float32), 1e-6),
    ("acosh", np.linspace(1, 50, 21, dtype=np.float32), 1e-6),
    ("tan", np.linspace(-1.5, 1.5, 21, dtype=np.float32), 1e-6),
    ("asin", (np.linspace(-1, 1, 6) + 0.5j).astype(np.complex64), 1e-6),
    ("erf_inv", np.linspace(-0.99, 0.99, 9).astype(ml_dtypes.bfloat16), 1e-2),
    ("lgamma", np.linspace(0.1, 5, 9).astype(np.float16), 2e-3),
]


@pytest.mark.parametrize("name,x,rtol", _JAX_CASES, ids=lambda v: v if isinstance(v, str) else "")
def test_matches_jax(name, x, rtol):
  import jax
  expected = np.asarray(jax.jit(getattr(jax.lax, name))(x))
  fun = getattr(lax, name)
  if name != "logistic":  # (the chip's functions; logistic is exp and a division, as jax's)
    rtol, _ = tolerance(rtol, rtol)
  for actual in (fun(x), revax.jit(fun)(x)):
    assert np.asarray(actual).dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(actual, np.float64 if x.dtype != np.complex64 else None),
                               np.asarray(expected, np.float64 if x.dtype != np.complex64 else None),
                               rtol=rtol, atol=rtol, err_msg=name)


def test_round_and_integer_pow_match_jax():
  import jax
  x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.7, -3.2], np.float32)
  for method in (0, 1):
    np.testing.assert_array_equal(revax.jit(lambda v: lax.round(v, method))(x),
                                  jax.lax.round(x, method))
  for y in (0, 1, 3, 7, -1, -4):
    np.testing.assert_allclose(revax.jit(lambda v: lax.integer_pow(v, y))(x),
                               jax.lax.integer_pow(x, y), rtol=1e-6)
  ints = np.array([-3, 5, 7, 100], np.int32)
  np.testing.assert_array_equal(lax.integer_pow(ints, 9), jax.lax.integer_pow(ints, 9))
