"""Indexing and `x.at[...]` updates: in-bound indices against NumPy, out-of-bound ones against
jax.numpy (reads clamp, updates drop), traced indices under jit, errors."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.numpy.helpers import jnp

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
I = np.array

INDICES = [
    1, -1, (0, 2), (1, -1, 3), slice(None), slice(1, None), slice(None, None, -1),
    (slice(None), slice(None, None, 2)), (Ellipsis, 1), (None, 0), (0, None, Ellipsis, None),
    (slice(None), slice(3, 0, -2)), (slice(-2, None), slice(None, -1)), (slice(2, 1),),
    (Ellipsis, slice(None, None, -3)), np.int32(1), (slice(None), I(2)),
    I([1, 0, 1]), I([[0], [1]]), (I([0, 1]), I([2, 0])), (slice(None), I([0, 2])),
    (I([0, 1]), slice(None), I([1, 3])), (0, slice(None), I([1, 3])),
    (slice(None), 0, I([1, 3])), (I([0, 1]), None, I([1, 2])), (Ellipsis, I([[3, 0], [-1, 1]])),
    (I([-1, 0]), slice(None, None, -1), 2), (I([], np.int32),), (I([1, 0], np.uint8), 1),
    (I([True, False]),), (X[..., 0] > 5,), (Ellipsis, I([True, False, True, True])),
    (slice(None), I([False, True, True]), 0), (X > 10,), True, (0, True), (1, False),
    (I([0, 1]), I([[0], [2]]), slice(1, 3)),
]


@pytest.mark.parametrize("idx", INDICES, ids=[repr(i) if not isinstance(i, np.ndarray) or
                                              i.size < 5 else f"mask{i.shape}" for i in INDICES])
def test_getitem_against_numpy(idx):
  out = rnp.asarray(X)[idx]
  assert isinstance(out, revax.Array)
  np.testing.assert_array_equal(out, X[idx])
  assert out.dtype == np.float32


def test_getitem_under_jit():
  """Static indices (arrays as constants), then index arrays passed as traced arguments."""
  def run(x):
    return [x[i] for i in INDICES]
  for i, e, j in zip(INDICES, run(rnp.asarray(X)), revax.jit(run)(X), strict=True):
    np.testing.assert_array_equal(j, e, err_msg=repr(i))
  traced = [i for i in INDICES if isinstance(i, np.ndarray) and i.dtype != bool] + \
      [(slice(None), I([0, 2])), (I([0, 1]), slice(None), I([1, 3]))]
  for idx in traced:
    parts = idx if isinstance(idx, tuple) else (idx,)
    arrays = [p for p in parts if isinstance(p, np.ndarray)]

    def f(x, *arrs, parts=parts):
      it = iter(arrs)
      return x[tuple(next(it) if isinstance(p, np.ndarray) else p for p in parts)]
    np.testing.assert_array_equal(revax.jit(f)(X, *arrays), X[idx], err_msg=repr(idx))


def test_traced_scalar_indices_match_jax():
  def f(x, i, j):
    return x[i], x[i, :, j], x[1:, i], x[..., j]
  for i, j in [(1, 2), (-1, -4), (5, 9), (-5, -9)]:
    got = revax.jit(f)(X, np.int32(i), np.int32(j))
    expected = f(jnp.asarray(X), i, j)
    for g, e in zip(got, expected, strict=True):
      np.testing.assert_array_equal(g, e, err_msg=f"{i}, {j}")
  jaxpr = revax.make_jaxpr(lambda x, i: x[i])(X, np.int32(0))
  assert "dynamic_slice" in [e.primitive.name for e in jaxpr.jaxpr.eqns]


def test_out_of_bound_reads_match_jax():
  x, jx = rnp.asarray(X), jnp.asarray(X)
  for idx in [5, -7, (1, 9), I([5, -7, 1]), (slice(None), I([[7], [-4]]))]:
    np.testing.assert_array_equal(x[idx], jx[idx], err_msg=repr(idx))
    np.testing.assert_array_equal(x.at[idx].get(mode="fill"), jx.at[idx].get(mode="fill"))
    np.testing.assert_array_equal(x.at[idx].get(mode="fill", fill_value=-1.0),
                                  jx.at[idx].get(mode="fill", fill_value=-1.0))
  ix = rnp.arange(5)
  np.testing.assert_array_equal(ix.at[I([7, 1])].get(mode="fill"),
                                jnp.arange(5).at[I([7, 1])].get(mode="fill"))
  np.testing.assert_array_equal(rnp.take(ix, I([7, -1])), jnp.take(jnp.arange(5), I([7, -1])))
  np.testing.assert_array_equal(rnp.take(ix, I([7, -1]), mode="clip"),
                                jnp.take(jnp.arange(5), I([7, -1]), mode="clip"))


UPDATES = [
    (1, 7.0), ((0, 2), np.arange(4, dtype=np.float32)), (slice(None, None, -1), 2.0),
    ((slice(None), slice(1, None, 2)), -1.0), ((Ellipsis, I([0, 3])), 9.0),
    ((I([1, 0]), 2, I([0, 3])), I([10.0, 20.0], np.float32)), ((None, 0, 0), 5.0),
    (X > 20, 0.0), ((I([[0], [1]]), I([0, 2])), 4.0),
]


@pytest.mark.parametrize("idx,v", UPDATES, ids=[f"u{i}" for i in range(len(UPDATES))])
def test_updates_against_numpy(idx, v):
  x = rnp.asarray(X)
  expected = X.copy()
  expected[idx] = v
  np.testing.assert_array_equal(x.at[idx].set(v), expected)
  np.testing.assert_array_equal(revax.jit(lambda a: a.at[idx].set(v))(X), expected)
  for op, np_op in (("add", np.add), ("multiply", np.multiply), ("min", np.minimum),
                    ("max", np.maximum), ("subtract", np.subtract)):
    expected = X.copy()
    expected[idx] = np_op(expected[idx], v)
    np.testing.assert_array_equal(getattr(x.at[idx], op)(v), expected, err_msg=op)
  np.testing.assert_array_equal(x.at[idx].get(), X[idx])


def test_repeated_indices_accumulate():
  x = rnp.arange(5.0)
  i = I([0, 2, 0, 0])
  for op, ufunc in (("add", np.add), ("multiply", np.multiply), ("min", np.minimum),
                    ("max", np.maximum)):
    expected = np.arange(5.0, dtype=np.float32)
    ufunc.at(expected, i, I([3.0, 1.0, -2.0, 5.0], np.float32))
    got = getattr(x.at[i], op)(I([3.0, 1.0, -2.0, 5.0], np.float32))
    np.testing.assert_array_equal(got, expected, err_msg=op)
    traced = revax.jit(lambda a, j, v, op=op: getattr(a.at[j], op)(v))(
        x, i, I([3.0, 1.0, -2.0, 5.0], np.float32))
    np.testing.assert_array_equal(traced, expected, err_msg=op)


def test_out_of_bound_updates_match_jax():
  x, jx = rnp.asarray(X), jnp.asarray(X)
  for idx in [5, -3, (1, 7), I([5, -7, 1]), (slice(None), I([[7], [-4]]))]:
    for mode in (None, "drop", "clip", "promise_in_bounds"):
      np.testing.assert_array_equal(x.at[idx].set(-1.0, mode=mode),
                                    jx.at[idx].set(-1.0, mode=mode), err_msg=f"{idx} {mode}")
      np.testing.assert_array_equal(x.at[idx].add(1.0, mode=mode),
                                    jx.at[idx].add(1.0, mode=mode), err_msg=f"{idx} {mode}")
  f = revax.jit(lambda a, i: a.at[i].set(0.0))
  for i in (1, -1, 2, -3, 7):
    np.testing.assert_array_equal(f(X, np.int32(i)), jx.at[i].set(0.0), err_msg=str(i))


def test_update_dtypes_and_weak_types():
  ix = rnp.arange(3)
  out = ix.at[0].set(2.7)
  assert out.dtype == np.int32 and out[0] == 2
  w = rnp.asarray(1.0) + rnp.zeros(3, np.float16)
  assert w.at[1].set(5.0).dtype == np.float16
  assert rnp.zeros(3).at[1].add(1).weak_type is False


def test_take_along_axis_and_take():
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  idx = np.argsort(-a, axis=1)
  np.testing.assert_array_equal(rnp.take_along_axis(a, idx, axis=1),
                                np.take_along_axis(a, idx, axis=1))
  i0 = np.array([[2, 0, 1, 1]])
  np.testing.assert_array_equal(rnp.take_along_axis(a, i0, axis=0),
                                np.take_along_axis(a, i0, axis=0))
  np.testing.assert_array_equal(rnp.take_along_axis(a, np.array([3, 11]), axis=None),
                                np.take_along_axis(a, np.array([3, 11]), axis=None))
  np.testing.assert_array_equal(rnp.take(a, np.array([[0, 2]]), axis=1),
                                np.take(a, np.array([[0, 2]]), axis=1))
  np.testing.assert_array_equal(revax.jit(lambda x, i: rnp.take(x, i, axis=0))(a, I([2, 0])),
                                a[[2, 0]])


def test_nonzero_family():
  m = np.array([[0, 3, 0], [1, 0, 2]])
  for got, want in zip(rnp.nonzero(m), np.nonzero(m), strict=True):
    np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(rnp.flatnonzero(m), np.flatnonzero(m))
  np.testing.assert_array_equal(rnp.argwhere(m), np.argwhere(m))
  np.testing.assert_array_equal(rnp.nonzero(m, size=5, fill_value=-1)[1], [1, 0, 2, -1, -1])
  with pytest.raises(revax._src.core.trace.ConcretizationTypeError,
                     match="nonzero requires a concrete array"):
    revax.jit(rnp.nonzero)(m)


def test_indexing_errors():
  x = rnp.asarray(X)
  with pytest.raises(TypeError, match="Using a non-tuple sequence for multidimensional indexing "
                                      "is not allowed"):
    x[[0, 1]]
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type, got indexer "
                                      "with type float64"):
    x[1.5]
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type, got indexer "
                                      "with type float32"):
    x[np.array([1.0], np.float32)]
  with pytest.raises(TypeError, match="revax does not support string indexing"):
    x["a"]
  with pytest.raises(IndexError, match=r"an index can only have a single ellipsis \('...'\)"):
    x[..., ...]
  with pytest.raises(IndexError, match="Too many indices: array is 3-dimensional, but 4 were "
                                       "indexed"):
    x[0, 0, 0, 0]
  with pytest.raises(IndexError, match="shape mismatch: indexing arrays could not be broadcast"):
    x[I([0, 1]), I([0, 1, 2])]
  with pytest.raises(IndexError, match="boolean index did not match indexed array"):
    x[I([True, False, True])]
  with pytest.raises(IndexError, match="index is out of bounds for axis 0 with size 0"):
    rnp.ones((0, 3))[0]
  with pytest.raises(IndexError, match="index is out of bounds for axis 0 with size 0"):
    rnp.ones((0, 3))[I([0])]
  with pytest.raises(rnp.NonConcreteBooleanIndexError, match=r"Array boolean indices must be "
                                                             r"concrete; got bool\[2\]"):
    revax.jit(lambda a, m: a[m])(X, I([True, False]))
  with pytest.raises(rnp.NonConcreteBooleanIndexError):
    revax.jit(lambda a: a.at[a > 3].set(0.0))(X)
  with pytest.raises(IndexError, match="Slice entries must be static integers"):
    revax.jit(lambda a, i: a[i:i + 1])(X, 1)
  with pytest.raises(ValueError, match="cannot be broadcast to the indexed shape"):
    x.at[0].set(np.ones(5, np.float32))
  with pytest.raises(ValueError, match="unknown indexing mode 'wrap'"):
    x.at[0].get(mode="wrap")
  with pytest.raises(ValueError, match="take requires integer indices"):
    rnp.take(x, np.array([0.5]))


def test_lists_and_tuples_inside_an_index_tuple_are_index_arrays():
  """Inside a tuple index, lists and tuples are integer (or boolean) arrays, as in JAX and NumPy
  (only a top-level list is refused); found by the bad-input campaign (tests/bad_inputs)."""
  x = rnp.asarray(X)
  for idx in [([0, 1], 0), (0, [0, 2]), ((1, 0),), ((0, 1), (1, 2)), ([[0], [1]], [0, 2], 1),
              ([], 0), ([True, False], 0), (Ellipsis, [3, 0])]:
    np.testing.assert_array_equal(x[idx], np.asarray(jnp.asarray(X)[idx]), err_msg=str(idx))
  np.testing.assert_array_equal(revax.jit(lambda a, i: a[[i, 0], 1])(x, 1), X[[1, 0], 1])
  np.testing.assert_array_equal(x.at[[0, 1], 2].set(-1.0), jnp.asarray(X).at[[0, 1], 2].set(-1.0))


def test_updates_at_static_indices_have_unique_indices():
  """Static ints and slices write each position once, so (as in JAX) .at[1].mul(v) is
  differentiable with respect to v; found by tests/fuzz."""
  import jax
  x = np.full((3, 2), 2.0, np.float32)
  w = np.arange(6.0, dtype=np.float32).reshape(3, 2)
  for idx in (1, np.int32(2), (slice(0, 2), 1)):
    vv = np.full(np.zeros((3, 2))[idx].shape, 3.0, np.float32)

    def loss(api):
      return lambda x, v: api.sum(api.asarray(x).at[idx].mul(v) * w)
    got = revax.grad(loss(rnp), argnums=(0, 1))(x, vv)
    want = jax.grad(loss(jnp), argnums=(0, 1))(x, vv)
    for a, b in zip(got, want):
      np.testing.assert_allclose(a, b, rtol=1e-6)


def test_at_divide_power_apply_match_jax():
  # these three were missing from revax's `.at[]`; jax's divide is a true division (int -> float)
  # and repeated indices divide, raise and apply repeatedly
  import jax.numpy as jjnp
  idx = np.array([1, 1, 3])
  for x in (np.arange(5), np.arange(5.0)):
    for make in (lambda m, a: a.at[idx].divide(2), lambda m, a: a.at[1:3].power(2),
                 lambda m, a: a.at[idx].apply(lambda v: v * 3),
                 lambda m, a: a.at[7].apply(m.negative, mode="clip"),
                 lambda m, a: a.at[7].apply(m.negative, mode="drop")):
      got, want = make(rnp, rnp.asarray(x)), make(jjnp, jjnp.asarray(x))
      assert got.dtype == want.dtype and got.shape == want.shape
      np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
  out = revax.jit(revax.vmap(lambda a, i: a.at[i].apply(rnp.exp)))(np.zeros((2, 3)), np.array([0, 2]))
  np.testing.assert_allclose(np.asarray(out), [[1, 0, 0], [0, 0, 1]])


def test_ds_slices_against_jax():
  """`x[revax.ds(i, n, stride)]` (JAX's `jax.ds`): a start that may be traced, clamped so the
  window fits; reads, `.at[...]` updates, gradients and vmap, against jax.numpy."""
  import jax
  m = np.arange(12.0, dtype=np.float32).reshape(3, 4)

  def run(api, np_):
    x = np_.asarray(m[0].tolist() + m[1, :2].tolist())
    mm = np_.asarray(m)
    return (x[api.ds(1, 2)], x[api.ds(4, 3)], x[api.ds(1, 2, 2)],
            api.jit(lambda i: x[api.ds(i, 2)])(-1), api.jit(lambda i: x[api.ds(i, 2)])(5),
            api.jit(lambda i: x.at[api.ds(i, 2)].set(9.0))(3),
            api.jit(lambda i: mm[1:, api.ds(i, 2)])(1),
            api.jit(lambda i: mm[None, api.ds(i, 2), np_.array([0, 3])])(1),
            api.grad(lambda v, i: np_.sum(v[api.ds(i, 3)] ** 2))(x, 2),
            api.vmap(lambda v, i: v[api.ds(i, 2)])(mm, np_.array([0, 1, 2])))
  for got, want in zip(run(revax, rnp), run(jax, jnp), strict=True):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
