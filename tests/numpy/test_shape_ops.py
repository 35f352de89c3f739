"""Shape manipulation and contractions against NumPy, eagerly and under jit, and their errors."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.numpy.helpers import BF16, assert_close, jnp

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
V = np.arange(3, dtype=np.int32)

# (description, revax/NumPy-agnostic call taking the module): NumPy and revax.numpy spell these
# the same way, so each case runs on both and compares
CASES = [
    ("reshape", lambda m, x: m.reshape(x, (4, -1))),
    ("reshape_F", lambda m, x: m.reshape(x, (6, 4), order="F")),
    ("reshape_int", lambda m, x: m.reshape(x, 24)),
    ("ravel", lambda m, x: m.ravel(x)),
    ("ravel_F", lambda m, x: m.ravel(x, order="F")),
    ("transpose", lambda m, x: m.transpose(x)),
    ("transpose_axes", lambda m, x: m.transpose(x, (1, -1, 0))),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, -1)),
    ("moveaxis", lambda m, x: m.moveaxis(x, 0, -1)),
    ("moveaxis_seq", lambda m, x: m.moveaxis(x, (0, 1), (2, 0))),
    ("expand_dims", lambda m, x: m.expand_dims(x, (0, -1))),
    ("squeeze", lambda m, x: m.squeeze(m.expand_dims(x, (0, 2)))),
    ("squeeze_axis", lambda m, x: m.squeeze(m.expand_dims(x, (0, 2)), axis=-3)),
    ("atleast_1d", lambda m, x: m.atleast_1d(x[0, 0, 0])),
    ("atleast_2d", lambda m, x: m.atleast_2d(x[0, 0])),
    ("atleast_3d_1", lambda m, x: m.atleast_3d(x[0, 0])),
    ("atleast_3d_2", lambda m, x: m.atleast_3d(x[0])),
    ("broadcast_to", lambda m, x: m.broadcast_to(x[:, :1], (5, 2, 3, 4))),
    ("broadcast_arrays", lambda m, x: m.broadcast_arrays(x, x[0, :, :1])[1]),
    ("flip", lambda m, x: m.flip(x)), ("flip_axis", lambda m, x: m.flip(x, (0, 2))),
    ("fliplr", lambda m, x: m.fliplr(x)), ("flipud", lambda m, x: m.flipud(x)),
    ("concatenate", lambda m, x: m.concatenate([x, x[:, :1]], axis=1)),
    ("concatenate_none", lambda m, x: m.concatenate([x, x[0]], axis=None)),
    ("stack", lambda m, x: m.stack([x, x + 1], axis=-1)),
    ("hstack", lambda m, x: m.hstack([x, x])), ("hstack_1d", lambda m, x: m.hstack([x[0, 0],
                                                                                    x[1, 1]])),
    ("vstack", lambda m, x: m.vstack([x[0, 0], x[1, 1]])),
    ("dstack", lambda m, x: m.dstack([x[0], x[1]])),
    ("column_stack", lambda m, x: m.column_stack([x[0, 0], x[1, 1]])),
    ("split", lambda m, x: m.split(x, 2, axis=-1)[1]),
    ("split_idx", lambda m, x: m.split(x, [1, -1, 10], axis=2)[1]),
    ("array_split", lambda m, x: m.array_split(x, 3, axis=2)[0]),
    ("hsplit", lambda m, x: m.hsplit(x, 3)[2]), ("vsplit", lambda m, x: m.vsplit(x, 2)[0]),
    ("tile", lambda m, x: m.tile(x[0], (2, 1, 2))), ("repeat", lambda m, x: m.repeat(x, 2, 1)),
    ("repeat_flat", lambda m, x: m.repeat(x[0], 3)),
    ("matmul", lambda m, x: m.matmul(x, m.swapaxes(x, 1, 2))),
    ("matmul_bcast", lambda m, x: m.matmul(x[:, None], x[0].T)),
    ("matmul_mat_batch", lambda m, x: m.matmul(x[0, :2, :3], x)),
    ("matmul_vec", lambda m, x: m.matmul(x, x[0, 0])),
    ("matmul_vecmat", lambda m, x: m.matmul(x[0, :, 0], x)),
    ("dot", lambda m, x: m.dot(x, x[0].T)), ("dot_vec", lambda m, x: m.dot(x[0, 0], x[1, 1])),
    ("dot_scalar", lambda m, x: m.dot(2.0, x)),
    ("inner", lambda m, x: m.inner(x, x[0])), ("vdot", lambda m, x: m.vdot(x, x)),
    ("outer", lambda m, x: m.outer(x[0, 0], x[1, :, 0])),
    ("tensordot", lambda m, x: m.tensordot(x, x, ((0, 1), (0, 1)))),
    ("tensordot_int", lambda m, x: m.tensordot(x, m.reshape(x, (3, 4, 2)), 2)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_against_numpy(name, fn):
  out = fn(rnp, X)
  assert isinstance(out, revax.Array)
  np.testing.assert_allclose(out, fn(np, X), rtol=1e-6)
  assert out.dtype == np.float32


def test_under_jit():
  def run(x):
    return [fn(rnp, x) for _, fn in CASES]
  for (name, _), e, j in zip(CASES, run(X), revax.jit(run)(X), strict=True):
    assert e.shape == j.shape, name
    assert_close(j, e, msg=name)


def test_methods_and_queries():
  x = rnp.asarray(X)
  assert x.reshape(4, 6).shape == (4, 6) and x.reshape((4, -1)).shape == (4, 6)
  assert x.reshape(-1).shape == (24,) and x.flatten().shape == (24,) and x.ravel().shape == (24,)
  assert x.T.shape == (4, 3, 2) and x.mT.shape == (2, 4, 3)
  assert x.transpose(1, 0, 2).shape == (3, 2, 4) and x.transpose((2, 0, 1)).shape == (4, 2, 3)
  assert x.transpose().shape == (4, 3, 2)
  assert x[None].squeeze().shape == (2, 3, 4) and x.swapaxes(0, 1).shape == (3, 2, 4)
  assert rnp.shape(X) == (2, 3, 4) and rnp.ndim(2.0) == 0 and rnp.size(X, -1) == 4
  assert rnp.size(X) == 24 and rnp.shape([[1, 2]]) == (1, 2)
  assert rnp.broadcast_shapes((2, 1), (3,)) == (2, 3)
  np.testing.assert_allclose(x @ x.mT, X @ np.swapaxes(X, 1, 2))
  assert x.astype(BF16).dtype == BF16 and rnp.astype(x, np.int8).dtype == np.int8
  assert x.copy() is not None and np.asarray(x.copy()).shape == x.shape


def test_promotion_of_joined_arrays():
  out = rnp.concatenate([V, np.ones(2, np.float16)])
  assert out.dtype == np.float16
  assert rnp.stack([V.astype(np.int8), V.astype(np.uint8)]).dtype == np.int16
  assert rnp.concatenate([V, V], dtype=np.float32).dtype == np.float32
  assert rnp.matmul(V, np.ones(3, np.float32)).dtype == np.float32
  assert rnp.matmul(V, V) == 5
  np.testing.assert_array_equal(rnp.concatenate(np.ones((2, 3))), np.ones(6))
  assert rnp.matmul(np.ones((2, 3), BF16), np.ones(3, BF16), preferred_element_type=np.float32
                    ).dtype == np.float32


def test_shape_errors():
  # ValueError from jnp.reshape, TypeError from the Array.reshape method (as in JAX)
  with pytest.raises(TypeError, match="cannot reshape"):
    rnp.asarray(X).reshape(5)
  with pytest.raises(ValueError, match=r"cannot reshape array of shape \(2, 3, 4\) \(size 24\) into "
                                      r"shape \(5,\) \(size 5\)"):
    rnp.reshape(X, (5,))
  with pytest.raises(ValueError, match=r"can only specify one unknown axis size with a `-1` value, "
                                      r"got \(-1, -1\)"):
    rnp.reshape(X, (-1, -1))
  with pytest.raises(ValueError, match="does not evenly divide 24"):
    rnp.reshape(X, (5, -1))
  with pytest.raises(NotImplementedError, match="order='A' is not supported"):
    rnp.reshape(X, (24,), order="A")
  with pytest.raises(TypeError, match=r"transpose permutation isn't a permutation of operand "
                                      r"dimensions, got permutation \(0, 0, 1\)"):
    rnp.transpose(X, (0, 0, 1))
  with pytest.raises(ValueError, match=r"cannot select an axis to squeeze out which has size not "
                                       r"equal to one, got shape=\(2, 3, 4\) and dimensions=\(0,\)"):
    rnp.squeeze(X, 0)
  # (jax's swapaxes indexes a NumPy permutation: NumPy's IndexError, in both)
  for lib in (rnp, jnp):
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
      lib.swapaxes(X, 0, 3)
  with pytest.raises(ValueError, match="axis 4 is out of bounds for array of dimension 4"):
    rnp.expand_dims(X, 4)
  with pytest.raises(ValueError, match="Need at least one array to concatenate."):
    rnp.concatenate([])
  with pytest.raises(ValueError, match="Zero-dimensional arrays cannot be concatenated."):
    rnp.concatenate([np.float32(1), np.float32(2)])
  with pytest.raises(TypeError, match=r"Cannot concatenate arrays with different numbers of "
                                      r"dimensions: got \(2, 3, 4\), \(3,\)"):
    rnp.concatenate([X, V])
  with pytest.raises(ValueError, match="All input arrays must have the same shape"):
    rnp.stack([X, X[:1]])
  with pytest.raises(TypeError, match="concatenate requires ndarray or scalar arguments"):
    rnp.concatenate([[1, 2], [3]])
  with pytest.raises(ValueError, match="array split does not result in an equal division: rest is "
                                       "1"):
    rnp.split(X, 3, axis=-1)
  with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: input "
                                       r"shape=\(2, 3, 4\) and requested shape=\(2, 3, 5\)"):
    rnp.broadcast_to(X, (2, 3, 5))
  with pytest.raises(ValueError, match="Cannot broadcast to shape with fewer dimensions"):
    rnp.broadcast_to(X, (4,))
  for lib in (rnp, jnp):
    with pytest.raises(ValueError, match="Inconsistent number of elements: 2 vs 1"):
      lib.moveaxis(X, (0, 1), 0)


def test_contraction_errors():
  with pytest.raises(ValueError, match="matmul: inputs must be at least 1-dimensional"):
    rnp.matmul(np.float32(1), X)
  with pytest.raises(TypeError, match=r"matmul: contracting dimensions differ"):  # as JAX
    rnp.matmul(X, X)
  with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
    rnp.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5)))
  with pytest.raises(TypeError, match=r"dot: shapes \(2, 3, 4\) and \(3,\) not aligned"):
    rnp.dot(X, V)
  with pytest.raises(TypeError, match=r"tensordot requires 0 <= axes <= min\(a.ndim, b.ndim\)"):
    rnp.tensordot(X, V, 2)
  with pytest.raises(TypeError, match="tensordot: shape mismatch on contracted axes"):
    rnp.tensordot(X, X, ((0,), (1,)))


def test_matmul_against_jax_shapes():
  for sa, sb in [((5, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4)), ((2, 2, 3), (3,)), ((1, 2, 3),
                                                                                  (5, 3, 1))]:
    a = np.arange(np.prod(sa), dtype=np.float32).reshape(sa)
    b = np.arange(np.prod(sb), dtype=np.float32).reshape(sb)
    np.testing.assert_allclose(rnp.matmul(a, b), np.asarray(jnp.matmul(a, b)), rtol=1e-6)
    np.testing.assert_allclose(revax.jit(rnp.matmul)(a, b), np.matmul(a, b), rtol=1e-6)


def test_repeat_with_a_count_per_element_matches_jax():
  # revax raised NotImplementedError for array `repeats`; jax takes concrete counts, or traced
  # ones with total_repeat_length (shorter truncates, longer repeats the last element)
  import jax
  import jax.numpy as jjnp
  a = np.arange(3)
  cases = [
      lambda m, mod: m.repeat(m.asarray(a), m.array([1, 0, 2])),
      lambda m, mod: m.repeat(m.asarray(a), m.array([1, 0, 2]), total_repeat_length=5),
      lambda m, mod: m.repeat(m.asarray(a), m.array([1, 0, 2]), total_repeat_length=2),
      lambda m, mod: m.repeat(m.asarray(a), 2, total_repeat_length=4),
      lambda m, mod: m.repeat(m.arange(4.0).reshape(2, 2), m.array([1, 2]), axis=1),
      lambda m, mod: mod.jit(lambda r: m.repeat(m.asarray(a), r, total_repeat_length=4))(
          m.array([2, 1, 1])),
      lambda m, mod: mod.grad(lambda x: m.repeat(x, m.array([1, 0, 2]),
                                                 total_repeat_length=3).sum())(m.arange(3.0)),
  ]
  for case in cases:
    got, want = case(rnp, revax), case(jjnp, jax)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  with pytest.raises(revax.errors.ConcretizationTypeError, match="total_repeat_length"):
    revax.jit(lambda r: rnp.repeat(a, r))(np.array([2, 1, 1]))
  with pytest.raises(ValueError, match="does not match"):
    rnp.repeat(a, rnp.array([1, 2]))
  with pytest.raises(TypeError):
    rnp.repeat(a, [1, 2, 3])
