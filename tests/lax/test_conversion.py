"""convert_element_type and bitcast_convert_type: error paths, weak types, and differential checks
of the saturating float -> int conversion against jax."""
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.lax as lax

_bf16 = ml_dtypes.bfloat16


# --- convert_element_type ------------------------------------------------------------------------
_EDGES = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 255.5, -0.5, 1e20, 2147483648.0],
                  np.float32)


@pytest.mark.parametrize("dst", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                 np.bool_, np.float16, _bf16])
@pytest.mark.parametrize("src", [np.float32, np.float16, _bf16])
def test_convert_matches_jax_at_the_edges(src, dst):
  import jax
  with np.errstate(over="ignore"):
    x = _EDGES.astype(src)
  expected = np.asarray(jax.jit(lambda a: jax.lax.convert_element_type(a, dst))(x))
  convert = lambda a: lax.convert_element_type(a, dst)
  for got in (convert(x), revax.jit(convert)(x)):
    got = np.asarray(got)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))


def test_convert_complex_to_real_takes_real_part_like_jax():
  import jax
  x = np.array([1j, 2.5 - 3j, complex(np.nan, 1), 0], np.complex64)
  for dst in (np.float32, np.int32, np.bool_):
    expected = np.asarray(jax.jit(lambda a: jax.lax.convert_element_type(a, dst))(x))
    np.testing.assert_array_equal(lax.convert_element_type(x, dst), expected)
    np.testing.assert_array_equal(revax.jit(lambda a: lax.convert_element_type(a, dst))(x),
                                  expected)


def test_convert_weak_type_and_identity():
  x = revax.jit(lambda a: a)(np.ones(3, np.float32))
  assert lax.convert_element_type(x, np.float32) is x
  weak = lax.convert_element_type(x, np.float32, weak_type=True)
  assert weak.weak_type and weak.dtype == np.float32
  closed = revax.make_jaxpr(lambda a: lax.convert_element_type(a, np.int32))(x)
  assert [e.primitive.name for e in closed.jaxpr.eqns] == ["convert_element_type"]
  assert closed.jaxpr.eqns[0].params == {"new_dtype": np.dtype(np.int32), "weak_type": False}


def test_convert_rejects_unsupported_dtype():
  with pytest.raises(TypeError, match="does not support dtype"):
    lax.convert_element_type(np.ones(2, np.float32), np.dtype("U3"))


def test_convert_canonicalizes_64_bit_without_x64():
  out = lax.convert_element_type(np.ones(2, np.float32), np.float64)
  assert out.dtype == np.float32


# --- bitcast_convert_type ------------------------------------------------------------------------
def test_bitcast_shape_rule_like_jax():
  import jax
  cases = [(np.float32, np.int8, (2, 3)), (np.int8, np.float32, (2, 4)), (np.float32, _bf16, ()),
           (np.uint8, np.int32, (4,)), (np.int16, np.uint8, (0,)), (np.float32, np.uint32, (5,))]
  for src, dst, shape in cases:
    x = np.arange(int(np.prod(shape)), dtype=np.int64).astype(src).reshape(shape)
    expected = np.asarray(jax.lax.bitcast_convert_type(x, dst))
    got = np.asarray(lax.bitcast_convert_type(x, dst))
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes()


def test_bitcast_widening_needs_matching_last_dim():
  with pytest.raises(ValueError, match=r"convert array of shape \(2, 3\) from int8 of size 8 bits "
                                       r"to float32 of size 32 bits, but 3 \* 8 != 32"):
    lax.bitcast_convert_type(np.ones((2, 3), np.int8), np.float32)
  with pytest.raises(ValueError, match=r"shape \(\) from int8"):
    lax.bitcast_convert_type(np.ones((), np.int8), np.float32)


@pytest.mark.parametrize("src,dst", [(np.int8, np.bool_), (np.bool_, np.int8),
                                     (np.complex64, np.int32), (np.uint32, np.complex64)])
def test_bitcast_bool_and_complex_only_to_themselves(src, dst):
  with pytest.raises(TypeError, match=r"does not support bool or complex values unless the "
                                      r"operand and destination types match"):
    lax.bitcast_convert_type(np.ones((2, 2), src), dst)


def test_bitcast_output_is_strong():
  (out,) = revax.make_jaxpr(lambda: lax.bitcast_convert_type(1.0, np.int32))().jaxpr.outvars
  assert out.aval.dtype == np.int32 and not out.aval.weak_type


def test_bitcast_round_trip_keeps_nan_payloads():
  bits = np.array([0x7FC00001, 0xFFF00000, 0x7F800000, 1], np.uint32)
  f = lambda b: lax.bitcast_convert_type(lax.bitcast_convert_type(b, np.float32), np.uint32)
  np.testing.assert_array_equal(f(bits), bits)
  np.testing.assert_array_equal(revax.jit(f)(bits), bits)
