"""revax.flatten_util.ravel_pytree against jax.flatten_util.ravel_pytree: flat values, dtypes
and weak types, the unraveled leaves, dtype errors, and jit/grad/vmap through both functions."""
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree as jax_ravel

import revax
import revax.numpy as rnp
from revax.flatten_util import ravel_pytree


class Pair:
  """A custom pytree node, registered with both libraries."""

  def __init__(self, a, b):
    self.a, self.b = a, b


for _lib in (jax, revax):
  _lib.tree_util.register_pytree_node(Pair, lambda p: ((p.a, p.b), None),
                                      lambda _, c: Pair(*c))


def _trees(np_):
  """A family of pytrees built from `np_` (jax.numpy or revax.numpy): the dtype mixes
  ravel_pytree handles."""
  return [
    1.0, 3, True, 2 + 1j, [], (), {}, None, [None, ()],
    np_.arange(6.0).reshape(2, 3),
    [1.0, 2], [1, 2], (True, np_.ones(2)),
    {"a": np_.ones((2, 2)), "b": np_.arange(3), "c": (np_.float32(1.5), None)},
    [np_.ones(2, np_.int8), np_.ones(1, np_.bfloat16)],
    [np_.ones(2, np_.complex64), np_.arange(2.0)],
    [np_.ones(3, np_.uint8), np_.full(2, 7, np_.int16)],
    (np.float64(1.0), np.zeros(2, np.float64)),
    {"x": np.zeros(2, np.float64), "y": np_.ones(2)},
    [np_.zeros((0, 3)), np_.ones(2, np_.float16), 2.5],
    Pair(np_.ones(2), Pair(3, np_.zeros((1, 1), np_.int32))),
  ]


def _describe(tree):
  return jax.tree.map(lambda x: (np.asarray(x).tolist(), np.dtype(x.dtype),
                                 bool(getattr(x, "weak_type", False)), tuple(x.shape)),
                      tree, is_leaf=lambda x: x is None)


@pytest.mark.parametrize("index", range(len(_trees(jnp))))
def test_ravel_and_unravel_match_jax(index):
  flat, unravel = ravel_pytree(_trees(rnp)[index])
  jflat, junravel = jax_ravel(_trees(jnp)[index])
  assert (flat.shape, flat.dtype, flat.weak_type) == (jflat.shape, jflat.dtype, jflat.weak_type)
  np.testing.assert_array_equal(np.asarray(flat), np.asarray(jflat))
  back, jback = unravel(flat), junravel(jflat)
  assert (revax.tree.structure(back).num_leaves == jax.tree.structure(jback).num_leaves)
  assert _describe(jax.tree.leaves(back)) == _describe(jax.tree.leaves(jback))


def test_unravel_dtype_rules_match_jax():
  # One dtype: unravel converts nothing and accepts any dtype.
  _, unravel = ravel_pytree([rnp.ones(2), rnp.ones(1)])
  out = unravel(rnp.ones(3, rnp.int32))
  assert [x.dtype for x in out] == [np.int32, np.int32]
  # Mixed dtypes: unravel wants the promoted dtype, as jax (a TypeError with jax's message).
  _, unravel = ravel_pytree([rnp.ones(2, rnp.int8), rnp.ones(1, rnp.float16)])
  with pytest.raises(TypeError, match="given array of dtype float32, but expected dtype float16"):
    unravel(rnp.ones(3))
  with pytest.raises(ValueError, match=r"Sum of sizes 3 must be equal to dimension 0 of the "
                     r"operand shape \[4\]"):
    ravel_pytree([rnp.ones(2), rnp.ones(1)])[1](rnp.ones(4))
  # A complex vector casts back to a real leaf without a ComplexWarning, as jax.
  _, unravel = ravel_pytree([rnp.ones(1, rnp.complex64), rnp.ones(1)])
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    out = unravel(rnp.array([1 + 2j, 3 + 4j], rnp.complex64))
  assert out[1].dtype == np.float32 and float(out[1][0]) == 3.0


def test_unravel_is_hashable_and_a_static_jit_argument():
  tree = {"w": rnp.ones((2, 2)), "b": rnp.zeros(2)}
  flat, unravel = ravel_pytree(tree)
  _, unravel2 = ravel_pytree({"w": rnp.zeros((2, 2)), "b": rnp.ones(2)})
  assert unravel == unravel2 and hash(unravel) == hash(unravel2)
  f = revax.jit(lambda u, v: u(v)["w"].sum(), static_argnums=0)
  assert float(f(unravel, flat)) == 4.0 and float(f(unravel2, flat * 2)) == 8.0


def _loss(lib, ravel):
  def loss(params):
    flat, unravel = ravel(params)
    p = unravel(flat * 2.0)
    return lib.numpy.sum(lib.numpy.sin(p["w"]) @ p["b"]) + lib.numpy.sum(flat ** 2)
  return loss


def test_grad_jit_vmap_through_both_functions_match_jax():
  p = {"w": np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3),
       "b": np.arange(3, dtype=np.float32)}
  g = revax.jit(revax.grad(_loss(revax, ravel_pytree)))(p)
  jg = jax.jit(jax.grad(_loss(jax, jax_ravel)))(p)
  for k in p:
    np.testing.assert_allclose(g[k], jg[k], rtol=1e-5)
  # unravel is linear: vmap over a batch of flat vectors, and its transpose is ravel.
  flat, unravel = ravel_pytree(p)
  batch = rnp.stack([flat, 2 * flat, -flat])
  out = revax.vmap(unravel)(batch)
  assert out["w"].shape == (3, 2, 3) and out["b"].shape == (3, 3)
  np.testing.assert_allclose(out["w"][1], 2 * p["w"])
  ct = revax.linear_transpose(unravel, flat)({"w": rnp.ones((2, 3)), "b": 2 * rnp.ones(3)})
  np.testing.assert_allclose(ct[0], [2.0] * 3 + [1.0] * 6)  # dict keys sorted: "b" first
  # ravel under vmap: a batch of pytrees gives a batch of flat vectors.
  batch = {"w": rnp.ones((4, 2, 3)), "b": rnp.zeros((4, 3))}
  flats = revax.vmap(lambda t: ravel_pytree(t)[0])(batch)
  assert flats.shape == (4, 9)
  # Mixed dtypes: grad flows through the conversions back to float leaves only.
  mixed = [rnp.ones(2, rnp.float16), rnp.arange(2.0)]
  g = revax.grad(lambda t: rnp.sum(ravel_pytree(t)[0] ** 2))(mixed)
  jg = jax.grad(lambda t: jnp.sum(jax_ravel(t)[0] ** 2))(
      [jnp.ones(2, jnp.float16), jnp.arange(2.0)])
  assert [x.dtype for x in g] == [x.dtype for x in jg]
  np.testing.assert_allclose(np.asarray(g[1]), np.asarray(jg[1]))
