"""jnp.add, jnp.maximum, ... are ufunc objects as in JAX (revax had plain functions, so a
program's `jnp.maximum.accumulate(x)` raised AttributeError): their attributes and methods
against jax's, and the operators they back stay plain and bound."""
import jax.numpy as jjnp
import numpy as np

import revax
import revax.numpy as rnp

NAMES = ["add", "subtract", "multiply", "negative", "maximum", "minimum", "logaddexp",
         "logaddexp2", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
         "bitwise_xor"]


def test_attributes_match_jax():
  for name in NAMES:
    ours, theirs = getattr(rnp, name), getattr(jjnp, name)
    assert isinstance(ours, rnp.ufunc), name
    assert (ours.nin, ours.nout, ours.nargs, ours.__name__, repr(ours)) == \
        (theirs.nin, theirs.nout, theirs.nargs, theirs.__name__, repr(theirs))
    assert ours.identity == theirs.identity, name


def test_methods_match_jax():
  x = np.array([[3, 1, 4], [1, 5, 9]], np.int32)
  f = np.array([0.5, -1.0, 2.0], np.float32)
  cases = [
      lambda m: m.maximum.accumulate(m.asarray(f)), lambda m: m.add.accumulate(x, axis=1),
      lambda m: m.multiply.accumulate(x), lambda m: m.minimum.accumulate(x, axis=1),
      lambda m: m.add.reduce(x), lambda m: m.maximum.reduce(x, axis=1),
      lambda m: m.logaddexp.reduce(f), lambda m: m.bitwise_or.reduce(x, axis=None),
      lambda m: m.logical_and.reduce(x > 1, axis=0), lambda m: m.subtract.reduce(x, axis=1),
      lambda m: m.add.outer(f, f[:2]), lambda m: m.multiply.outer(x[0], x[1]),
      lambda m: m.add.at(m.zeros(3), m.array([0, 0, 2]), 1.0, inplace=False),
      lambda m: m.subtract.at(m.zeros(3), m.array([1, 1]), 2.0, inplace=False),
      lambda m: m.add.reduceat(m.arange(6), m.array([0, 2, 5])),
      lambda m: m.negative(f), lambda m: m.add(1, 2.5),
  ]
  for case in cases:
    got, want = case(rnp), case(jjnp)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_ufuncs_under_transformations_and_as_operators():
  assert float(revax.jit(rnp.add)(1.0, 2.0)) == 3.0
  assert float(revax.grad(rnp.multiply)(2.0, 3.0)) == 3.0
  np.testing.assert_array_equal(revax.vmap(rnp.maximum.accumulate)(np.array([[1, 3, 2]])),
                                [[1, 3, 3]])
  x = rnp.arange(3.0)
  np.testing.assert_array_equal(-x, [0, -1, -2])
  np.testing.assert_array_equal(x - 1, [-1, 0, 1])
  assert not isinstance(type(x).__neg__, rnp.ufunc) and not isinstance(type(x).__add__, rnp.ufunc)
