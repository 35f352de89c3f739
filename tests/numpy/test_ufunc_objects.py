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


def _bitwise_reduce_outcomes(m):
  """bitwise_and/or/xor.reduce and logical_xor.reduce over dtypes and arguments: the value's
  dtype, shape and elements, or the exception's type; and the primitives the jaxpr binds."""
  import jax
  rs = np.random.RandomState(0)
  i32 = rs.randint(-1000, 1000, (3, 4, 5)).astype(np.int32)
  arrays = [i32, rs.rand(3, 4) > 0.5, i32.astype(np.uint8),
            rs.randn(3, 4).astype(np.float32),
            (rs.randn(3, 4) + 1j * (rs.rand(3, 4) > .5)).astype(np.complex64)]
  out = []
  for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "logical_xor"):
    u = getattr(m, name)
    for x in arrays:
      mask = x.real > 0 if x.dtype != bool else x
      for kw in ({}, {"axis": 1}, {"axis": None}, {"axis": -1, "keepdims": True},
                 {"axis": 1, "initial": 5}, {"axis": 0, "where": mask},
                 {"axis": 1, "dtype": np.int16}, {"axis": 0, "where": x.astype(np.int32)}):
        try:
          v = np.asarray(u.reduce(x, **kw))
          out.append((name, v.dtype.name, v.shape, v.tolist()))
        except Exception as e:  # noqa: BLE001 (the exception's type is the outcome)
          out.append((name, type(e).__name__))
    lib = jax if m is jjnp else revax
    closed = lib.make_jaxpr(lambda x, u=u: u.reduce(x, axis=(0, 2)))(i32)
    inner = closed.jaxpr.eqns[0].params["jaxpr"].jaxpr if m is jjnp else closed.jaxpr
    out.append((name, [e.primitive.name for e in inner.eqns]))
  return out


def test_bitwise_reduce_methods_are_jax_s():
  """jax's fast paths: bitwise_and/or/xor.reduce bind reduce_and/or/xor (logical_xor.reduce
  reduce_xor of bools), taking dtype, initial and where; where must be bool."""
  assert _bitwise_reduce_outcomes(rnp) == _bitwise_reduce_outcomes(jjnp)
