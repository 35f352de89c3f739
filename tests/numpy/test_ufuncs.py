"""Elementwise functions: values against NumPy, result dtypes (and weak types) against jax.numpy,
jit against eager, JAX's semantics at the edges (integer division by zero, NaN, inf), errors."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests import platform_tolerances
from tests.numpy.helpers import (BF16, DTYPES, assert_close, jax_result, jnp, revax_result,
                                 values, weak)

# name, NumPy reference, input domain
UNARY = [
    ("negative", np.negative, "real"), ("positive", lambda x: x, "real"),
    ("absolute", np.absolute, "real"), ("abs", np.abs, "real"), ("fabs", np.fabs, "real"),
    ("sign", np.sign, "real"), ("square", np.square, "real"),
    ("reciprocal", lambda x: 1 / x, "nonzero"),
    ("floor", np.floor, "real"), ("ceil", np.ceil, "real"), ("trunc", np.trunc, "real"),
    ("round", np.round, "real"), ("around", np.round, "real"),
    ("rint", np.rint, "real"),
    ("exp", np.exp, "real"), ("exp2", np.exp2, "real"), ("expm1", np.expm1, "real"),
    ("log", np.log, "pos"), ("log2", np.log2, "pos"), ("log10", np.log10, "pos"),
    ("log1p", np.log1p, "pos"), ("sqrt", np.sqrt, "pos"), ("cbrt", np.cbrt, "real"),
    ("sin", np.sin, "real"), ("cos", np.cos, "real"), ("tan", np.tan, "open"),
    ("arcsin", np.arcsin, "unit"), ("arccos", np.arccos, "unit"), ("arctan", np.arctan, "real"),
    ("sinh", np.sinh, "real"), ("cosh", np.cosh, "real"), ("tanh", np.tanh, "real"),
    ("arcsinh", np.arcsinh, "real"), ("arccosh", np.arccosh, "ge1"),
    ("arctanh", np.arctanh, "open"),
    ("deg2rad", lambda x: x * (np.pi / 180), "real"),
    ("rad2deg", lambda x: x * (180 / np.pi), "real"), ("sinc", np.sinc, "real"),
    ("real", np.real, "real"), ("imag", np.imag, "real"), ("conjugate", np.conjugate, "real"),
    ("conj", np.conj, "real"), ("angle", np.angle, "real"),
    ("logical_not", np.logical_not, "real"), ("bitwise_not", np.invert, "real"),
    ("invert", np.invert, "real"),
    ("isfinite", np.isfinite, "real"), ("isinf", np.isinf, "real"), ("isnan", np.isnan, "real"),
    ("isposinf", np.isposinf, "real"), ("isneginf", np.isneginf, "real"),
    ("signbit", np.signbit, "real"),
]

# name, NumPy reference, domain of x, domain of y, compute the reference in the result dtype
BINARY = [
    ("add", np.add, "real", "real", False), ("subtract", np.subtract, "real", "real", False),
    ("multiply", np.multiply, "real", "real", False),
    ("true_divide", np.true_divide, "real", "nonzero", False),
    ("divide", np.divide, "real", "nonzero", False),
    ("floor_divide", np.floor_divide, "real", "nonzero", True),
    ("remainder", np.remainder, "real", "nonzero", True),
    ("mod", np.mod, "real", "nonzero", True), ("fmod", np.fmod, "real", "nonzero", True),
    ("power", np.power, "real", "small", False),
    ("float_power", np.float_power, "pos", "real", False),
    ("maximum", np.maximum, "real", "real", False), ("minimum", np.minimum, "real", "real", False),
    ("fmax", np.fmax, "real", "real", False), ("fmin", np.fmin, "real", "real", False),
    ("arctan2", np.arctan2, "real", "real", False), ("hypot", np.hypot, "real", "real", False),
    ("nextafter", np.nextafter, "real", "real", True),
    ("copysign", np.copysign, "real", "real", False),
    ("heaviside", np.heaviside, "real", "real", False),
    ("logaddexp", np.logaddexp, "real", "real", False),
    ("equal", np.equal, "real", "real", False), ("not_equal", np.not_equal, "real", "real", False),
    ("less", np.less, "real", "real", False), ("less_equal", np.less_equal, "real", "real", False),
    ("greater", np.greater, "real", "real", False),
    ("greater_equal", np.greater_equal, "real", "real", False),
    ("logical_and", np.logical_and, "real", "real", False),
    ("logical_or", np.logical_or, "real", "real", False),
    ("logical_xor", np.logical_xor, "real", "real", False),
    ("bitwise_and", np.bitwise_and, "real", "real", False),
    ("bitwise_or", np.bitwise_or, "real", "real", False),
    ("bitwise_xor", np.bitwise_xor, "real", "real", False),
    ("left_shift", np.left_shift, "real", "small", True),
    ("right_shift", np.right_shift, "real", "small", True),
    ("isclose", np.isclose, "real", "real", False),
]


def _inexact(dtype) -> bool:
  return np.dtype(dtype).kind in "fc" or np.dtype(dtype) == BF16


def _reference(np_fn, args, out_dtype, native):
  """NumPy's answer: in the result dtype for `native` functions (nextafter, floor_divide, ...),
  in float64/complex128 for the other inexact ones, and as is for exact results."""
  with np.errstate(all="ignore"):
    if native:
      return np.asarray(np_fn(*[a.astype(out_dtype) for a in args])).astype(out_dtype)
    if not _inexact(out_dtype):
      return np.asarray(np_fn(*args)).astype(out_dtype)
    wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) for a in args]
    return np.asarray(np_fn(*wide))


# where revax refuses what JAX computes (none now: complex logaddexp is computed as jax's)
REFUSED = {}
# NumPy has no complex arctan2 or logaddexp: jax's (lax.atan2's complex angle, logaddexp's
# imaginary part wrapped into [-pi, pi]) is the reference
JAX_ONLY = {("arctan2", "c"), ("logaddexp", "c")}


def _bool_weak_free(types):
  """Result types with the weak flag of bools dropped: weak bools promote like strong ones, and
  revax's comparisons (lax) never mark their results weak."""
  return [(d, w and d != np.bool_) for d, w in types]


def _check(name, np_fn, args, native=False):
  if (name, args[0].dtype.kind) in REFUSED:
    with pytest.raises(TypeError, match="does not support complex-valued inputs"):
      getattr(rnp, name)(*args)
    return None
  if (name, args[0].dtype.kind) in JAX_ONLY:
    got, want = getattr(rnp, name)(*args), getattr(jnp, name)(*args)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    return None
  expected_type = jax_result(getattr(jnp, name), *args)
  if isinstance(expected_type, type):  # jax refuses this dtype: so must revax
    with pytest.raises((TypeError, ValueError, NotImplementedError)):
      getattr(rnp, name)(*args)
      pytest.fail(f"{name} accepted {args[0].dtype}, which jax.numpy refuses")
    return None
  out = getattr(rnp, name)(*args)
  assert isinstance(out, revax.Array)
  assert _bool_weak_free(revax_result(out)) == _bool_weak_free(expected_type), \
      f"{name}{tuple(a.dtype for a in args)}"
  ref = _reference(np_fn, [np.asarray(a) for a in args], out.dtype, native)
  assert_close(out, ref, out.dtype, msg=f"{name}({args[0].dtype})")
  return out


@pytest.mark.parametrize("name,np_fn,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_against_numpy_and_jax_dtypes(name, np_fn, domain):
  for dtype in DTYPES:
    _check(name, np_fn, [values(dtype, domain)])


@pytest.mark.parametrize("name,np_fn,dx,dy,native", BINARY, ids=[b[0] for b in BINARY])
def test_binary_against_numpy_and_jax_dtypes(name, np_fn, dx, dy, native):
  for dtype in DTYPES:
    _check(name, np_fn, [values(dtype, dx), values(dtype, dy, shift=3)], native)


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), np.dtype(np.float32),
                                   np.dtype(np.complex64)], ids=str)
def test_jit_matches_eager(dtype):
  """One jitted program per dtype holding every function that accepts it: XLA vs NumPy impls."""
  x, y = values(dtype, "pos"), values(dtype, "pos", shift=2)
  unary = [u[0] for u in UNARY if not isinstance(jax_result(getattr(jnp, u[0]), x), type)]
  binary = [b[0] for b in BINARY if not isinstance(jax_result(getattr(jnp, b[0]), x, y), type)
            and (b[0], x.dtype.kind) not in REFUSED]

  def all_fns(a, b):
    return ([getattr(rnp, n)(a) for n in unary] + [getattr(rnp, n)(a, b) for n in binary])

  eager = all_fns(x, y)
  jitted = revax.jit(all_fns)(x, y)
  for name, e, j in zip(unary + binary, eager, jitted, strict=True):
    assert e.dtype == j.dtype, name
    # jit runs XLA's transcendental functions: a TPU's own (tests/platform_tolerances.py)
    rtol, atol = platform_tolerances.tolerance(0.0, 0.0) if platform_tolerances.ON_TPU else (
        None, None)
    assert_close(j, e, rtol=rtol, atol=atol, msg=name)


# --- promotion with weak types ---------------------------------------------------------------------
_OPERANDS = {f"{d}": np.ones(2, d) for d in DTYPES}
_OPERANDS.update({"i32w": weak(np.ones(2), np.int32), "f32w": weak(np.ones(2), np.float32),
                  "c64w": weak(np.ones(2), np.complex64),
                  "int": 2, "float": 2.0, "complex": 2j, "bool": True})


@pytest.mark.parametrize("name", ["add", "multiply", "true_divide", "maximum", "power",
                                  "floor_divide", "equal", "arctan2", "where"])
def test_promotion_table_matches_jax(name):
  """Every pair of (dtype, weak) operands: the result dtype and weak type are JAX's.

  power's weak types are JAX's accidents of implementation (an int exponent keeps lax.pow from
  promoting), so only its dtypes are compared."""
  keys = sorted(k for k in _OPERANDS if name != "arctan2" or not k.startswith("c"))
  mismatches = []
  for ka in keys:
    for kb in keys:
      a, b = _OPERANDS[ka], _OPERANDS[kb]
      args = (True, a, b) if name == "where" else (a, b)
      expected = jax_result(getattr(jnp, name), *args)
      try:
        got = revax_result(getattr(rnp, name)(*args))
      except (TypeError, ValueError) as e:
        got = type(e)
      if isinstance(expected, type) or isinstance(got, type):
        ok = isinstance(expected, type) and isinstance(got, type)
      elif name == "power":
        ok = [d for d, _ in got] == [d for d, _ in expected]
      else:
        ok = _bool_weak_free(got) == _bool_weak_free(expected)
      if not ok:
        mismatches.append((ka, kb, got, expected))
  assert not mismatches, mismatches[:10]


@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "true_divide", "maximum",
                                  "power", "exp", "sin", "sqrt", "negative", "square",
                                  "floor_divide", "remainder", "arctan2", "abs", "floor"])
def test_python_scalars_are_weak(name):
  nargs = 1 if name in ("exp", "sin", "sqrt", "negative", "square", "abs", "floor") else 2
  for args in ([2] * nargs, [2.0] * nargs, [np.float16(2)] + [3] * (nargs - 1)):
    out = getattr(rnp, name)(*args)
    expected = getattr(jnp, name)(*args)  # eagerly: power's static-exponent path needs values
    assert revax_result(out) == revax_result(expected), (name, args)


# --- JAX's semantics at the edges ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32], ids=str)
def test_integer_division_by_zero_matches_jax(dtype):
  if np.dtype(dtype).kind == "i":
    x = np.array([7, -7, 0, 5, -1, 3], dtype=dtype)
    y = np.array([0, 0, 0, -2, 2, 2], dtype=dtype)
  else:
    x = np.array([7, 200, 0, 5, 1, 3], dtype=dtype)
    y = np.array([0, 0, 0, 2, 2, 4], dtype=dtype)
  for name in ("floor_divide", "remainder", "fmod"):
    expected = np.asarray(getattr(jnp, name)(x, y))
    np.testing.assert_array_equal(getattr(rnp, name)(x, y), expected, err_msg=name)
    np.testing.assert_array_equal(revax.jit(getattr(rnp, name))(x, y), expected, err_msg=name)


def test_float_floor_divide_and_remainder_follow_python():
  x = np.array([7.5, -7.5, 7.5, -7.5, 0.0, -0.0, np.inf, 1.0], np.float32)
  y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 2.0, 0.0], np.float32)
  for name in ("floor_divide", "remainder"):
    expected = np.asarray(getattr(jnp, name)(x, y))
    assert_close(getattr(rnp, name)(x, y), expected, msg=name)
    assert_close(revax.jit(getattr(rnp, name))(x, y), expected, msg=name)
  np.testing.assert_array_equal(rnp.divmod(x, y)[0], np.asarray(jnp.floor_divide(x, y)))


def test_special_float_values():
  x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32)
  for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"):
    np.testing.assert_array_equal(getattr(rnp, name)(x), getattr(np, name)(x), err_msg=name)
    np.testing.assert_array_equal(revax.jit(getattr(rnp, name))(x), getattr(np, name)(x))
  c = np.array([complex(np.nan, 0), complex(0, np.inf), 1 + 1j], np.complex64)
  for name in ("isnan", "isinf", "isfinite"):
    np.testing.assert_array_equal(getattr(rnp, name)(c), getattr(np, name)(c), err_msg=name)
  y = np.array([1.0, np.nan, 2.0, np.nan, -1.0, 0.0], np.float32)
  for name in ("fmax", "fmin", "maximum", "minimum", "hypot", "logaddexp", "copysign"):
    assert_close(getattr(rnp, name)(x, y), getattr(np, name)(x, y), msg=name)
    assert_close(revax.jit(getattr(rnp, name))(x, y), getattr(np, name)(x, y), msg=name)


def test_isclose_matches_numpy():
  a = np.array([1.0, 1.0 + 1e-6, np.inf, np.inf, np.nan, 1e10, 0.0], np.float32)
  b = np.array([1.0, 1.0, np.inf, -np.inf, np.nan, 1.0001e10, 1e-9], np.float32)
  np.testing.assert_array_equal(rnp.isclose(a, b), np.isclose(a, b))
  np.testing.assert_array_equal(rnp.isclose(a, b, equal_nan=True), np.isclose(a, b, equal_nan=True))
  np.testing.assert_array_equal(rnp.isclose(a, 1.0), np.isclose(a, 1.0))


def test_power_with_static_and_traced_exponents():
  x = np.array([-3, -1, 0, 2, 5], np.int32)
  y = np.array([3, 0, 2, 10, 4], np.int32)
  np.testing.assert_array_equal(rnp.power(x, y), np.power(x, y))
  np.testing.assert_array_equal(revax.jit(rnp.power)(x, y), np.power(x, y))
  jaxpr = revax.make_jaxpr(lambda a: a ** 3)(x.astype(np.float32))
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["integer_pow"]
  assert jaxpr.jaxpr.eqns[0].params["y"] == 3
  f = np.array([0.5, 2.0, 3.0], np.float32)
  assert_close(rnp.power(f, -2), f ** -2.0)
  assert_close(rnp.power(f, 0.5), np.sqrt(f))


@pytest.mark.parametrize("decimals", [-1, 0, 1, 2])
def test_round_decimals(decimals):
  x = np.array([1.25, -2.675, 123.456, 0.5, 1.5, -0.5], np.float32)
  assert_close(rnp.round(x, decimals), np.round(x, decimals), rtol=1e-6)
  assert_close(revax.jit(lambda a: rnp.round(a, decimals))(x), np.round(x, decimals), rtol=1e-6)
  np.testing.assert_array_equal(rnp.round(np.array([15, -25], np.int32)), [15, -25])


def test_where_and_clip():
  c = np.array([True, False, True])
  np.testing.assert_array_equal(rnp.where(c, 1, np.zeros((2, 3), np.float32)),
                                np.where(c, 1, np.zeros((2, 3), np.float32)))
  assert rnp.where(c, 1, 2.0).dtype == np.float32
  np.testing.assert_array_equal(rnp.where(np.array([0, 3, 0]), 1, 2), [2, 1, 2])
  (idx,) = rnp.where(np.array([0, 3, 0, 1]))
  np.testing.assert_array_equal(idx, [1, 3])
  x = np.arange(-3, 4, dtype=np.float32)
  np.testing.assert_array_equal(rnp.clip(x, -1, 2), np.clip(x, -1, 2))
  np.testing.assert_array_equal(rnp.clip(x, max=0), np.clip(x, None, 0))
  np.testing.assert_array_equal(revax.jit(lambda a: rnp.clip(a, 0.5))(x), np.clip(x, 0.5, None))
  np.testing.assert_array_equal(rnp.clip(x, np.zeros((2, 1), np.float32), 1.0),
                                np.clip(x, np.zeros((2, 1)), 1.0))


def test_broadcasting_of_operands():
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  b = np.arange(3, dtype=np.float32)
  np.testing.assert_array_equal(rnp.add(a, b), a + b)
  np.testing.assert_array_equal(rnp.add(b[:, None], b), b[:, None] + b)
  np.testing.assert_array_equal(revax.jit(rnp.multiply)(b[:, None], a[:1]), b[:, None] * a[:1])


# --- errors --------------------------------------------------------------------------------------
def test_lists_are_refused():
  with pytest.raises(TypeError, match=r"add requires ndarray or scalar arguments, but got list "
                                      r"at position 0.*revax.numpy.array"):
    rnp.add([1, 2], 1)
  with pytest.raises(TypeError, match="sin requires ndarray or scalar arguments, but got tuple"):
    rnp.sin((1.0,))
  with pytest.raises(TypeError, match="where requires ndarray or scalar arguments"):
    rnp.where([True], 1, 2)


def test_bool_and_complex_refusals():
  b = np.array([True, False])
  with pytest.raises(TypeError, match="subtract does not support bool inputs"):
    rnp.subtract(b, b)
  with pytest.raises(TypeError, match="negative does not support bool inputs"):
    rnp.negative(b)
  with pytest.raises(TypeError, match="sign does not support bool inputs"):
    rnp.sign(b)
  with pytest.raises(ValueError, match="round does not support bool inputs"):
    rnp.round(b)
  c = np.array([1 + 1j], np.complex64)
  with pytest.raises(TypeError, match="floor_divide does not support complex-valued inputs"):
    rnp.floor_divide(c, c)
  with pytest.raises(TypeError, match="floor does not support complex-valued inputs"):
    rnp.floor(c)
  with pytest.raises(TypeError, match=r"bitwise_and requires integer or boolean arguments, got "
                                      r"float32"):
    rnp.bitwise_and(np.ones(2, np.float32), 1)
  with pytest.raises(TypeError, match="left_shift requires integer or boolean arguments"):
    rnp.left_shift(1.0, 2)


def test_incompatible_shapes():
  """As jax.numpy: operands of different ranks that cannot broadcast are jax's ValueError
  (lax.broadcast_shapes'), of one rank lax's TypeError (with its final period)."""
  with pytest.raises(ValueError, match=r"^Incompatible shapes for broadcasting: "
                                       r"shapes=\[\(2, 3\), \(4,\)\]$"):
    rnp.add(np.ones((2, 3)), np.ones(4))
  with pytest.raises(TypeError, match=r"^add got incompatible shapes for broadcasting: "
                                      r"\(2,\), \(3,\)\.$"):
    rnp.add(np.ones(2), np.ones(3))
  with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: shapes=\[\(2, 3\), "
                                       r"\(2, 3\), \(4,\)\]"):
    rnp.where(np.ones((2, 3)), np.ones((2, 3)), np.ones(4))
  with pytest.raises(TypeError, match="Either both or neither of the x and y arguments"):
    rnp.where(True, 1)


def test_logaddexp_derivatives_match_jax_at_ties_and_infinities():
  import jax
  import jax.numpy as jnp
  for a, b in [(1.0, 1.0), (2.0, -3.0), (np.inf, 1.0), (np.inf, np.inf)]:
    a, b = np.float32(a), np.float32(b)
    got = revax.grad(lambda x, y: rnp.logaddexp(x, y), argnums=(0, 1))(a, b)
    want = jax.grad(lambda x, y: jnp.logaddexp(x, y), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_abs_derivative_at_python_scalars():
  assert float(revax.grad(rnp.abs)(0.0)) == 1.0 and float(revax.grad(rnp.abs)(-2.0)) == -1.0


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32])
def test_bitwise_count_is_population_count_as_in_jax(dtype):
  """jnp.bitwise_count is population_count(abs(x)) as uint8 (jax's program; a hand-written SWAR
  count in its place gave 16 for uint8 128 under jit on a TPU: tests/tpu/RESULTS.md)."""
  info = np.iinfo(dtype)
  x = np.array([0, 1, 3, 7, info.max, info.min, info.max // 3], dtype)
  names = [e.primitive.name for e in revax.make_jaxpr(rnp.bitwise_count)(x).jaxpr.eqns]
  assert "population_count" in names and "shift_right_logical" not in names
  for out in (rnp.bitwise_count(x), revax.jit(rnp.bitwise_count)(x)):
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, jnp.bitwise_count(x))
