"""Error paths of the reductions, and differential checks against jax.lax."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.lax as lax

jax.config.update("jax_platforms", "cpu")


# --- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [lax.reduce_sum, lax.reduce_max, lax.reduce_and])
def test_out_of_range_axes(fn):
  x = np.zeros((2, 3), np.int32)
  with pytest.raises(ValueError, match=r"axes \(2,\) contains out-of-bounds indices for operand "
                                       r"of shape \(2, 3\)"):
    fn(x, (2,))
  with pytest.raises(ValueError, match=r"axes \(-3,\) contains out-of-bounds"):
    fn(x, (-3,))


def test_duplicate_axes():
  with pytest.raises(ValueError, match=r"duplicate value in 'axes' of reduce_sum: \(1, 1\)"):
    lax.reduce_sum(np.zeros((2, 3)), (1, -1))


def test_axes_must_be_integers():
  with pytest.raises(TypeError, match="reduce_max axes must be a sequence of integers"):
    lax.reduce_max(np.zeros((2, 3)), (0.5,))


@pytest.mark.parametrize("fn,name", [(lax.reduce_sum, "reduce_sum"),
                                     (lax.reduce_prod, "reduce_prod")])
def test_sum_prod_reject_bool(fn, name):
  with pytest.raises(TypeError, match=f"{name} does not accept dtype bool"):
    fn(np.ones((3,), np.bool_), (0,))


@pytest.mark.parametrize("fn,name", [(lax.reduce_and, "reduce_and"), (lax.reduce_or, "reduce_or")])
def test_logical_reject_floats(fn, name):
  with pytest.raises(TypeError, match=f"{name} does not accept dtype float32. Accepted dtypes "
                                      "are bool or integer"):
    fn(np.ones((3,), np.float32), (0,))


def test_argmax_errors():
  with pytest.raises(ValueError, match=r"require non-empty reduced dimension. "
                                       r"operand.shape=\(2, 0\) axis=1"):
    lax.argmax(np.zeros((2, 0), np.float32), 1, np.int32)
  with pytest.raises(TypeError, match="argmin does not accept dtype complex64"):
    lax.argmin(np.zeros((3,), np.complex64), 0, np.int32)
  with pytest.raises(TypeError, match="argmax index_dtype must be an integer type, got float32"):
    lax.argmax(np.zeros((3,), np.float32), 0, np.float32)
  with pytest.raises(ValueError, match=r"argmax axes \(1,\) contains out-of-bounds indices"):
    lax.argmax(np.zeros((3,), np.float32), 1, np.int32)


# --- properties ----------------------------------------------------------------------------------
def test_weak_type_follows_the_operand():
  assert lax.reduce_sum(2.0, ()).aval.weak_type is True
  assert lax.reduce_max(np.zeros((3,), np.float32), (0,)).aval.weak_type is False
  assert lax.argmax(np.zeros((3,), np.float32), 0, np.int32).aval.weak_type is False


def test_jaxpr_params_are_tuples():
  closed = revax.make_jaxpr(lambda x: lax.reduce_sum(x, [1, -3]))(np.zeros((2, 3, 4)))
  (eqn,) = closed.jaxpr.eqns
  assert eqn.primitive.name == "reduce_sum" and eqn.params["axes"] == (1, 0)
  closed = revax.make_jaxpr(lambda x: lax.argmax(x, -1, np.int32))(np.zeros((2, 3)))
  (eqn,) = closed.jaxpr.eqns
  assert eqn.primitive.name == "argmax" and eqn.params["axes"] == (1,)


def test_reduce_max_keeps_nan_under_jit():
  """XLA:CPU's raw maximum drops NaNs; the reduction region must not."""
  x = np.array([1.0, np.nan, 3.0, -np.inf], np.float32)
  for f in (lambda v: lax.reduce_max(v, (0,)), lambda v: lax.reduce_min(v, (0,))):
    assert np.isnan(np.asarray(revax.jit(f)(x)))


def test_argmax_of_several_nans_is_the_first():
  x = np.array([1.0, np.nan, 5.0, np.nan, np.inf], np.float32)
  for f in (lambda v: lax.argmax(v, 0, np.int32), lambda v: lax.argmin(v, 0, np.int32)):
    assert int(np.asarray(f(x))) == 1
    assert int(np.asarray(revax.jit(f)(x))) == 1


# --- differential checks against jax -------------------------------------------------------------
_DIFF = [
    ("reduce_sum", lambda m, x: m.reduce_sum(x, (0, 2))),
    ("reduce_prod", lambda m, x: m.reduce_prod(x, (1,))),
    ("reduce_max", lambda m, x: m.reduce_max(x, (2,))),
    ("reduce_min", lambda m, x: m.reduce_min(x, (0, 1))),
    ("argmax", lambda m, x: m.argmax(x, 1, np.int32)),
    ("argmin", lambda m, x: m.argmin(x, 2, np.int32)),
]


@pytest.mark.parametrize("name,f", _DIFF, ids=[n for n, _ in _DIFF])
def test_matches_jax(name, f):
  rng = np.random.default_rng(0)
  x = rng.integers(-3, 4, (3, 4, 5)).astype(np.float32)  # ties
  x[0, 1, 2] = x[2, 3, 0] = np.nan
  expected = np.asarray(jax.jit(lambda v: f(jax.lax, v))(x))
  np.testing.assert_allclose(np.asarray(f(lax, x)), expected, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(revax.jit(lambda v: f(lax, v))(x)), expected, rtol=1e-6)


def test_int_reductions_match_jax():
  x = np.random.default_rng(1).integers(-2**31, 2**31 - 1, (4, 6), dtype=np.int64).astype(np.int32)
  for name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_and", "reduce_or"):
    expected = np.asarray(getattr(jax.lax, name)(jnp.asarray(x), (1,)))
    np.testing.assert_array_equal(np.asarray(getattr(lax, name)(x, (1,))), expected, err_msg=name)
    np.testing.assert_array_equal(np.asarray(revax.jit(lambda v: getattr(lax, name)(v, (1,)))(x)),
                                  expected, err_msg=name)
