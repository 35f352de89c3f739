"""Binary elementwise primitives: error paths, Python-scalar operands and weak types, the
StableHLO they emit, XLA's integer and NaN semantics, and differential checks against jax.lax."""
import numpy as np
import pytest

import revax
import revax.lax as lax
from tests.platform_tolerances import ON_TPU, allclose_tol

f32 = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
f16 = f32.astype(np.float16)
i32 = np.arange(-3, 3, dtype=np.int32).reshape(2, 3)
u8 = np.arange(6, dtype=np.uint8)
c64 = (f32 + 1j).astype(np.complex64)
b = np.array([True, False, True])


def _text(fun, *args):
  return revax.jit(fun).lower(*args).as_text()


def _out_aval(fun, *args):
  (out,) = revax.make_jaxpr(fun)(*args).jaxpr.outvars
  return out.aval


def _both(fun, *args):
  """Eager (NumPy) and jitted (XLA) results."""
  return np.asarray(fun(*args)), np.asarray(revax.jit(fun)(*args))


# --- dtype and shape errors ----------------------------------------------------------------------
@pytest.mark.parametrize("fun,name", [(lax.add, "add"), (lax.sub, "sub"), (lax.mul, "mul"),
                                      (lax.div, "div"), (lax.max, "max"),
                                      (lax.bitwise_and, "and"), (lax.shift_left, "shift_left")])
def test_mismatched_dtypes(fun, name):
  x = i32 if name in ("and", "shift_left") else f32
  y = x.astype(np.int8 if x.dtype == np.int32 else np.int32)
  with pytest.raises(TypeError, match=rf"^{name} requires arguments to have the same dtypes, got "
                                      rf"{x.dtype.name}, {y.dtype.name}"):
    fun(x, y)


@pytest.mark.parametrize("fun,name", [(lax.add, "add"), (lax.rem, "rem"), (lax.atan2, "atan2"),
                                      (lax.complex, "complex"), (lax.pow, "pow")])
def test_incompatible_shapes_are_named(fun, name):
  with pytest.raises(TypeError, match=rf"^{name} got incompatible shapes for broadcasting: "
                                      r"\(2, 3\), \(3, 2\)\.$"):
    fun(f32, np.ones((3, 2), np.float32))
  with pytest.raises(TypeError, match=rf"^{name}: arrays must have the same number of "
                                      r"dimensions, got \{1, 2\}$"):
    fun(f32, np.ones(2, np.float32))


@pytest.mark.parametrize("fun,name,arg,kind", [
    (lax.add, "add", b, "numeric \\(non-bool\\)"),
    (lax.mul, "mul", b, "numeric \\(non-bool\\)"),
    (lax.div, "div", b, "numeric \\(non-bool\\)"),
    (lax.rem, "rem", c64, "floating-point or integer"),
    (lax.atan2, "atan2", i32, "floating or complex"),
    (lax.nextafter, "nextafter", i32, "floating-point"),
    (lax.bitwise_or, "or", f32, "integer or bool"),
    (lax.bitwise_xor, "xor", c64, "integer or bool"),
    (lax.shift_left, "shift_left", f32, "integer"),
    (lax.shift_right_logical, "shift_right_logical", b, "integer"),
    (lax.shift_right_arithmetic, "shift_right_arithmetic", f32, "integer"),
    (lax.pow, "pow", i32, "floating or complex"),
])
def test_rejects_dtype_and_names_it(fun, name, arg, kind):
  with pytest.raises(TypeError, match=rf"^{name} does not accept dtype {arg.dtype.name}; it takes "
                                      rf"{kind} arguments"):
    fun(arg, arg)


def test_pow_exponent_dtype():
  with pytest.raises(TypeError, match=r"pow requires an exponent of the dtype of the base "
                                      r"\(float32\) or of an integer dtype, got float32, float16"):
    lax.pow(f32, f16)


def test_complex_takes_only_32_and_64_bit_floats():
  with pytest.raises(TypeError, match="complex does not accept dtype float16; it takes float32 or "
                                      "float64 arguments"):
    lax.complex(f16, f16)
  with pytest.raises(TypeError, match="complex does not accept dtype int32"):
    lax.complex(f32, i32)


def test_python_float_does_not_fit_an_int_operand():
  with pytest.raises(TypeError, match="add requires arguments to have the same dtypes, got "
                                      "int32, float32"):
    lax.add(i32, 0.5)


# --- Python scalars and weak types ---------------------------------------------------------------
def test_python_scalar_adopts_the_array_dtype_in_the_internal_wrappers():
  # revax's own libraries rely on it; the public revax.lax is strict as jax.lax
  # (tests/dtype_tables/test_lax_binary_table.py)
  from revax._src import lax as internal_lax
  for x in (f16, i32, u8, c64):
    aval = _out_aval(lambda v: internal_lax.mul(v, 2), x)
    assert aval.dtype == x.dtype and not aval.weak_type
    aval = _out_aval(lambda v: internal_lax.sub(3, v), x)
    assert aval.dtype == x.dtype and not aval.weak_type


def test_public_lax_types_python_scalars_as_jax_does():
  with pytest.raises(TypeError, match="same dtypes, got float16, int32"):
    lax.mul(f16, 2)
  with pytest.raises(TypeError, match="same dtypes, got float16, float32"):
    lax.add(f16, 2.0)
  assert _out_aval(lambda v: lax.add(v, 2.0), np.zeros(3, np.float32)).dtype == np.float32
  with pytest.raises(OverflowError, match="Python int 2147483648 too large to convert to int32"):
    lax.add(i32, 2**31)


def test_two_python_scalars_stay_weak():
  aval = _out_aval(lambda: lax.add(1.0, 2.0))
  assert aval.dtype == np.float32 and aval.weak_type
  aval = _out_aval(lambda: lax.max(1, 2))
  assert aval.dtype == np.int32 and aval.weak_type
  assert _out_aval(lambda: lax.complex(1.0, 2.0)).dtype == np.complex64


def test_pow_with_integer_exponent_keeps_base_dtype():
  aval = _out_aval(lax.pow, f16, i32)
  assert aval.dtype == np.float16 and aval.shape == (2, 3)
  text = _text(lax.pow, f16, np.int8(3))
  assert '"stablehlo.convert"' in text and '"stablehlo.power"' in text


# --- lowering ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fun,op", [
    (lax.sub, "stablehlo.subtract"), (lax.div, "stablehlo.divide"),
    (lax.rem, "stablehlo.remainder"), (lax.atan2, "stablehlo.atan2"),
    (lax.nextafter, "chlo.next_after"), (lax.pow, "stablehlo.power"),
    (lax.complex, "stablehlo.complex"),
])
def test_lowers_to(fun, op):
  assert f'"{op}"' in _text(fun, f32, f32)


def test_broadcasting_operands_get_broadcast_in_dim():
  text = _text(lax.add, f32, np.float32(1))
  assert text.count('"stablehlo.broadcast_in_dim"') == 1


def test_integer_max_is_a_single_maximum():
  text = _text(lax.max, i32, i32)
  assert '"stablehlo.maximum"' in text and '"stablehlo.select"' not in text


# --- integer semantics (as XLA computes them) ----------------------------------------------------
def test_integer_division_rounds_toward_zero_and_by_zero_gives_all_ones():
  x = np.array([7, -7, 7, -7, 5, -2**31, 0], np.int32)
  y = np.array([2, 2, -2, -2, 0, -1, 0], np.int32)
  for out in _both(lax.div, x, y):
    np.testing.assert_array_equal(out, [3, -3, -3, 3, -1, -2**31, -1])
  for out in _both(lax.div, np.array([9, 0], np.uint8), np.array([0, 0], np.uint8)):
    np.testing.assert_array_equal(out, [255, 255])


def test_integer_rem_has_the_sign_of_the_dividend():
  x = np.array([7, -7, 7, -7, 5, -2**31], np.int32)
  y = np.array([2, 2, -2, -2, 0, -1], np.int32)
  for out in _both(lax.rem, x, y):
    np.testing.assert_array_equal(out, [1, -1, 1, -1, 5, 0])


def test_shifts_out_of_range():
  x = np.full(6, -5, np.int32)
  n = np.array([0, 1, 31, 32, 33, -1], np.int32)
  expected = {lax.shift_left: [-5, -10, -2**31, 0, 0, 0],
              lax.shift_right_logical: [-5, 2**31 - 3, 1, 0, 0, 0],
              lax.shift_right_arithmetic: [-5, -3, -1, -1, -1, -1]}
  for fun, want in expected.items():
    for out in _both(fun, x, n):
      np.testing.assert_array_equal(out, want, err_msg=fun.__name__)


def test_arithmetic_shift_of_unsigned_reads_the_sign_bit():
  for out in _both(lax.shift_right_arithmetic, np.array([200, 100], np.uint8),
                   np.array([1, 1], np.uint8)):
    np.testing.assert_array_equal(out, [228, 50])


# --- floating-point semantics --------------------------------------------------------------------
def test_max_min_propagate_nan_under_jit():
  x = np.array([np.nan, 1.0, np.inf, 0.0, 2.0], np.float32)
  y = np.array([1.0, np.nan, np.nan, np.nan, 3.0], np.float32)
  for out in _both(lax.max, x, y):
    np.testing.assert_array_equal(out, [np.nan, np.nan, np.nan, np.nan, 3.0])
  for out in _both(lax.min, x, y):
    np.testing.assert_array_equal(out, [np.nan, np.nan, np.nan, np.nan, 2.0])


def test_complex_max_min_are_lexicographic():
  x = np.array([1 + 2j, 1 + 3j, 2, -1j], np.complex64)
  y = np.array([1 + 3j, 0 + 9j, 1, 1j], np.complex64)
  for out in _both(lax.max, x, y):
    np.testing.assert_array_equal(out, [1 + 3j, 1 + 3j, 2, 1j])
  for out in _both(lax.min, x, y):
    np.testing.assert_array_equal(out, [1 + 2j, 0 + 9j, 1, -1j])


def test_nextafter_reaches_subnormals():
  for out in _both(lax.nextafter, np.float32([0, 1]), np.float32([1, 0])):
    np.testing.assert_array_equal(out, [np.nextafter(np.float32(0), np.float32(1)),
                                        np.nextafter(np.float32(1), np.float32(0))])


# --- differential checks against jax.lax ---------------------------------------------------------
_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, 1e-30, -3.0], np.float32)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2",
                                  "nextafter"])
def test_float_specials_match_jax(name):
  import jax
  x, y = np.meshgrid(_SPECIAL, _SPECIAL)
  expected = np.asarray(jax.jit(getattr(jax.lax, name))(x, y))
  keep = np.ones(x.shape, bool)
  if ON_TPU and name == "rem":  # (REM_AT_INFINITY, REM_LARGE_QUOTIENT)
    with np.errstate(all="ignore"):
      keep = ~np.isinf(y) & ~(np.abs(x / y) > 2.0 ** 24)
  tol = allclose_tol(rtol=1e-6) if name == "pow" else {"rtol": 1e-6}  # (the chip's pow)
  for out in _both(getattr(lax, name), x, y):
    np.testing.assert_allclose(np.asarray(out)[keep], expected[keep], **tol, err_msg=name)


@pytest.mark.parametrize("name", ["div", "rem", "shift_left", "shift_right_logical",
                                  "shift_right_arithmetic", "bitwise_and", "bitwise_or",
                                  "bitwise_xor", "max", "min"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32])
def test_integer_ops_match_jax(name, dtype):
  import jax
  info = np.iinfo(dtype)
  vals = np.unique(np.array([info.min, info.min + 1, -9, -2, -1, 0, 1, 2, 7, 8, 31, 32, 33,
                             info.max - 1, info.max]).clip(info.min, info.max)).astype(dtype)
  x, y = np.meshgrid(vals, vals)
  expected = np.asarray(jax.jit(getattr(jax.lax, name))(x, y))
  for out in _both(getattr(lax, name), x, y):
    np.testing.assert_array_equal(out, expected, err_msg=f"{name} {np.dtype(dtype).name}")


def test_complex_arithmetic_matches_jax():
  import jax
  rng = np.random.default_rng(0)
  x = (rng.standard_normal((4, 5)) + 1j * rng.standard_normal((4, 5))).astype(np.complex64)
  y = (rng.standard_normal((4, 5)) + 1j * rng.standard_normal((4, 5))).astype(np.complex64)
  for name in ("add", "sub", "mul", "div", "pow", "max", "min"):
    expected = np.asarray(jax.jit(getattr(jax.lax, name))(x, y))
    tol = allclose_tol(rtol=1e-5, atol=1e-6) if name == "pow" else {"rtol": 1e-5, "atol": 1e-6}
    for out in _both(getattr(lax, name), x, y):
      np.testing.assert_allclose(out, expected, **tol, err_msg=name)  # (pow: the chip's log/exp)
  re, im = x.real.copy(), x.imag.copy()
  np.testing.assert_array_equal(revax.jit(lax.complex)(re, im), jax.lax.complex(re, im))
