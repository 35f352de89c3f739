"""Comparisons, select_n and clamp: error paths, weak types, the StableHLO they emit, and a few
differential checks against jax.lax."""
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.lax as lax

f32 = np.arange(6, dtype=np.float32).reshape(2, 3)
i32 = f32.astype(np.int32)
c64 = f32.astype(np.complex64)


# --- comparisons ---------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [lax.lt, lax.le, lax.gt, lax.ge])
def test_ordered_comparisons_reject_complex(op):
  with pytest.raises(TypeError, match=r"does not accept dtype complex64 at position 0"):
    op(c64, c64)


@pytest.mark.parametrize("op", [lax.eq, lax.ne, lax.lt])
def test_comparison_dtype_mismatch(op):
  with pytest.raises(TypeError, match=r"requires arguments to have the same dtypes, got "
                                      r"float32, int32"):
    op(f32, i32)


def test_comparison_shape_mismatch_names_shapes():
  with pytest.raises(TypeError, match=r"^eq got incompatible shapes for broadcasting: "
                                      r"\(2, 3\), \(1, 2\)\.$"):
    lax.eq(f32, np.ones((1, 2), np.float32))


def test_python_float_does_not_fit_int_operand():
  with pytest.raises(TypeError, match="same dtypes, got int32, float32"):
    lax.lt(i32, 0.5)


def test_comparison_output_is_weak_exactly_when_both_operands_are():
  # jax's standard weak-type rule holds for the fixed bool dtype too: `jnp.array(3) > 2.5`
  # (two weak operands) is a weak bool, `x > 2.5` with a float32 array x a strong one
  import jax
  import jax.numpy as jnp
  import revax.numpy as rnp
  for x, y in [(1.0, 2.0), (np.float32(1), 2.0), (np.ones(2, np.float32), 2.0), (1, 2)]:
    for name in ["lt", "eq"]:
      (out,) = revax.make_jaxpr(getattr(lax, name))(x, y).out_avals
      (want,) = jax.make_jaxpr(getattr(jax.lax, name))(x, y).out_avals
      assert out.dtype == np.bool_ and out.weak_type == want.weak_type, (name, x, y)
  assert repr(rnp.array(3) > 2.5) == repr(jnp.array(3) > 2.5)
  assert repr(rnp.isfinite(2.0)) == repr(jnp.isfinite(2.0))


@pytest.mark.parametrize("dtype,compare_type", [
    (np.float32, "FLOAT"), (ml_dtypes.bfloat16, "FLOAT"), (np.complex64, "FLOAT"),
    (np.int32, "SIGNED"), (np.int8, "SIGNED"), (np.uint32, "UNSIGNED"), (np.bool_, "UNSIGNED")])
def test_compare_type_in_stablehlo(dtype, compare_type):
  x = np.zeros(3, dtype)
  text = revax.jit(lax.ne).lower(x, x).as_text()
  assert f"#stablehlo<comparison_type {compare_type}>" in text
  assert "#stablehlo<comparison_direction NE>" in text


def test_nan_semantics_match_jax():
  import jax
  x = np.array([np.nan, 1.0, np.nan, -np.inf], np.float32)
  y = np.array([1.0, np.nan, np.nan, -np.inf], np.float32)
  for name in ["eq", "ne", "lt", "le", "gt", "ge"]:
    expected = np.asarray(jax.jit(getattr(jax.lax, name))(x, y))
    np.testing.assert_array_equal(revax.jit(getattr(lax, name))(x, y), expected, err_msg=name)
    np.testing.assert_array_equal(getattr(lax, name)(x, y), expected, err_msg=name)


def test_unsigned_comparison_is_unsigned():
  big = np.array([2**32 - 1], np.uint32)
  one = np.array([1], np.uint32)
  np.testing.assert_array_equal(revax.jit(lax.gt)(big, one), [True])
  np.testing.assert_array_equal(lax.gt(big, one), [True])


# --- select_n ------------------------------------------------------------------------------------
def test_select_n_needs_a_case():
  with pytest.raises(ValueError, match="select_n\\(\\) must have at least one case"):
    lax.select_n(True)


def test_select_n_bool_which_takes_two_cases():
  with pytest.raises(TypeError, match="boolean `which` cannot have > 2 cases"):
    lax.select_n(np.bool_(True), f32, f32, f32)


def test_select_n_float_which():
  with pytest.raises(TypeError, match="`which` must be boolean or integer type, got float32"):
    lax.select_n(np.float32(1), f32, f32)


def test_select_n_which_shape():
  with pytest.raises(TypeError, match=r"`which` must be scalar or have the same shape as cases, "
                                      r"got `which` shape \(3,\) but case shape \(2, 3\)"):
    lax.select_n(np.ones(3, np.bool_), f32, f32)


def test_select_n_case_shapes():
  with pytest.raises(TypeError, match=r"cases must have the same shapes, got \[\(2, 3\), \(3,\)\]"):
    lax.select_n(np.int32(0), f32, np.ones(3, np.float32))


def test_select_n_case_dtypes():
  with pytest.raises(TypeError, match="same dtypes, got float32, int32"):
    lax.select_n(np.int32(0), f32, i32)


def test_select_n_out_of_range_which_clamps_like_xla():
  which = np.array([-5, 0, 1, 2, 9], np.int32)
  cases = [np.full(5, k, np.float32) for k in range(3)]
  expected = [0, 0, 1, 2, 2]
  np.testing.assert_array_equal(lax.select_n(which, *cases), expected)
  np.testing.assert_array_equal(revax.jit(lax.select_n)(which, *cases), expected)
  big = np.array([2**32 - 1, 1, 0, 7, 2**31], np.uint32)  # unsigned: huge values pick the last
  np.testing.assert_array_equal(lax.select_n(big, *cases), [2, 1, 0, 2, 2])
  np.testing.assert_array_equal(revax.jit(lax.select_n)(big, *cases), [2, 1, 0, 2, 2])


def test_select_n_lowering_is_a_tree_of_selects():
  text = revax.jit(lax.select_n).lower(np.zeros(3, np.int32), *[np.zeros(3, np.float32)] * 5).as_text()
  assert text.count('"stablehlo.select"') == 4
  assert text.count('"stablehlo.compare"') == 4
  two = revax.jit(lax.select_n).lower(np.zeros(3, np.bool_), *[np.zeros(3, np.float32)] * 2).as_text()
  assert two.count('"stablehlo.select"') == 1 and '"stablehlo.compare"' not in two


def test_select_n_matches_jax():
  import jax
  rng = np.random.default_rng(0)
  which = rng.integers(0, 4, (3, 5)).astype(np.int32)
  cases = [rng.standard_normal((3, 5)).astype(np.float32) for _ in range(4)]
  np.testing.assert_array_equal(revax.jit(lax.select_n)(which, *cases),
                                jax.lax.select_n(which, *cases))


def test_select_n_weak_type_only_if_all_cases_weak():
  f = lambda w: lax.select_n(w, 1.0, 2.0)
  (out,) = revax.make_jaxpr(f)(True).jaxpr.outvars
  assert out.aval.weak_type
  (out,) = revax.make_jaxpr(lambda w: lax.select_n(w, 1.0, np.float32(2)))(True).jaxpr.outvars
  assert not out.aval.weak_type


# --- clamp ---------------------------------------------------------------------------------------
def test_clamp_bound_shape():
  with pytest.raises(TypeError, match=r"clamp requires min.shape == operand.shape or "
                                      r"min.shape == \(\), got min.shape=\(3,\), "
                                      r"operand.shape=\(2, 3\)"):
    lax.clamp(np.zeros(3, np.float32), f32, 1.0)
  with pytest.raises(TypeError, match=r"max.shape=\(2,\)"):
    lax.clamp(0.0, f32, np.ones(2, np.float32))


def test_clamp_dtype_mismatch():
  with pytest.raises(TypeError, match="clamp requires arguments to have the same dtypes, got "
                                      "int32, float32, float32"):
    lax.clamp(np.int32(0), f32, 1.0)


def test_clamp_min_above_max_gives_max_like_xla():
  x = np.array([-3.0, 0.5, 3.0], np.float32)
  np.testing.assert_array_equal(lax.clamp(np.float32(2), x, np.float32(1)), [1, 1, 1])
  np.testing.assert_array_equal(revax.jit(lax.clamp)(np.float32(2), x, np.float32(1)), [1, 1, 1])


def test_clamp_propagates_nan_under_jit_like_jax():
  import jax
  x = np.array([np.nan, -5.0, 0.5, 5.0], np.float32)
  lo, hi = np.float32(-1), np.float32(1)
  expected = np.asarray(jax.jit(jax.lax.clamp)(lo, x, hi))
  np.testing.assert_array_equal(lax.clamp(lo, x, hi), expected)  # eager (NumPy) agrees with jax
  np.testing.assert_array_equal(revax.jit(lax.clamp)(lo, x, hi), expected)

