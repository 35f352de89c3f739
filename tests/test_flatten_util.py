"""revax.flatten_util.ravel_pytree against jax.flatten_util's: the flat vector (values, dtype
promotion, the empty tree), unravel (single dtype: any dtype passes through; mixed dtypes: each
leaf converted back, another dtype refused), and use under jit and grad."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax.flatten_util import ravel_pytree

jax = pytest.importorskip("jax")
from jax.flatten_util import ravel_pytree as jax_ravel  # noqa: E402

TREES = [
    {"a": np.ones(2, np.float32), "b": np.zeros((1, 2), np.float32)},
    [1.0, np.arange(3, dtype=np.int32)],
    (),
    [np.ones(2, np.float16), np.ones(1, np.float32)],
    {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "n": None, "s": (np.float32(2.0),)},
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_matches_jax(tree):
  flat, unravel = ravel_pytree(tree)
  jflat, junravel = jax_ravel(tree)
  assert np.asarray(flat).dtype == np.asarray(jflat).dtype
  np.testing.assert_array_equal(np.asarray(flat), np.asarray(jflat))
  got, want = unravel(flat), junravel(jflat)
  assert revax.tree.structure(got) == revax.tree.structure(jax.tree.map(lambda x: x, want))
  for g, w in zip(revax.tree.leaves(got), jax.tree.leaves(want)):
    assert np.asarray(g).dtype == np.asarray(w).dtype
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_unravel_dtypes_and_hashing():
  flat, unravel = ravel_pytree([rnp.ones(2), rnp.zeros(1)])
  assert unravel(flat.astype(rnp.float16))[0].dtype == np.float16  # single dtype: polymorphic
  flat, unravel = ravel_pytree([rnp.ones(2, rnp.float16), rnp.ones(1)])
  with pytest.raises(TypeError, match="expected dtype float32"):
    unravel(flat.astype(rnp.float16))
  assert unravel == ravel_pytree([rnp.zeros(2, rnp.float16), rnp.zeros(1)])[1]
  assert hash(unravel) == hash(ravel_pytree([rnp.zeros(2, rnp.float16), rnp.zeros(1)])[1])


def test_under_jit_and_grad():
  tree = {"a": rnp.arange(3.0), "b": 2.0}
  np.testing.assert_array_equal(revax.jit(lambda t: ravel_pytree(t)[0])(tree), [0, 1, 2, 2])
  g = revax.grad(lambda t: rnp.sum(ravel_pytree(t)[0] ** 2))(tree)
  np.testing.assert_allclose(g["a"], [0, 2, 4])
  assert float(g["b"]) == 4.0
