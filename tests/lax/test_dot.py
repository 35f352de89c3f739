"""dot_general's shape rule errors name the offending dims and shapes."""
import numpy as np
import pytest

import revax.lax as lax

x = np.ones((3, 2, 4), np.float32)
y = np.ones((4, 2, 5), np.float32)


@pytest.mark.parametrize("dims,match", [
    ((((3,), (0,)), ((), ())), "contracting dimensions to be in range for lhs"),
    ((((2,), (0,)), ((1,), ())), "equal numbers of lhs_batch and rhs_batch"),
    ((((2, 0), (0,)), ((), ())), "equal numbers of lhs and rhs contracting"),
    ((((2,), (0,)), ((1, 1), (1, 1))), "lhs batch dimensions to be distinct"),
    ((((2, 2), (0, 0)), ((), ())), "contracting dimensions to be distinct"),
    ((((1,), (1,)), ((1,), (1,))), "batch dimensions and contracting dimensions to be distinct"),
    ((((0,), (0,)), ((), ())), r"contracting dimension sizes.*sizes \(3,\).*sizes \(4,\)"),
    ((((2,), (0,)), ((0,), (2,))), r"batch dimension sizes"),
])
def test_shape_errors(dims, match):
  with pytest.raises(TypeError, match=match):
    lax.dot_general(x, y, dims)


def test_dtype_mismatch():
  with pytest.raises(TypeError, match="same dtype, got float32 and int32"):
    lax.dot_general(x, y.astype(np.int32), (((2,), (0,)), ((1,), (1,))))


def test_output_shape_is_batch_then_lhs_free_then_rhs_free():
  out = lax.dot_general(x, y, (((2,), (0,)), ((1,), (1,))))
  assert out.shape == (2, 3, 5)


def test_params_are_tuples_and_precision_reaches_stablehlo():
  import revax
  f = lambda a, b: lax.dot_general(a, b, [[[2], [0]], [[1], [1]]], precision=lax.Precision.HIGHEST)
  closed = revax.make_jaxpr(f)(x, y)
  params = closed.eqns[0].params
  assert params["dimension_numbers"] == (((2,), (0,)), ((1,), (1,)))
  assert params["precision"] == ("HIGHEST", "HIGHEST")
  text = revax.jit(f).lower(x, y).as_text()
  assert "#stablehlo<precision HIGHEST>" in text


def test_preferred_element_type_sets_the_result_type():
  import revax
  a = np.ones((2, 3), np.int8)
  out = lax.dot_general(a, a.T, (((1,), (0,)), ((), ())), preferred_element_type=np.int32)
  assert out.dtype == np.int32
  assert "tensor<2x2xi32>" in revax.jit(
      lambda p, q: lax.dot_general(p, q, (((1,), (0,)), ((), ())), preferred_element_type=np.int32)
  ).lower(a, a.T).as_text()
