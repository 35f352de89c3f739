"""ragged_dot and ragged_dot_general against jax 0.10.2: the three modes (ragged
non-contracting, contracting and batch dims), group sizes with empty groups and rows past the
last group, [g] and [prefix..., g] group sizes; values eagerly and under jit, grads, vmap, and
JAX's errors."""
import numpy as np
import pytest

import revax
import revax.lax as rlax

jax = pytest.importorskip("jax")
jlax = jax.lax

rng = np.random.default_rng(2)
LHS = rng.standard_normal((7, 4)).astype(np.float32)
RHS = rng.standard_normal((3, 4, 5)).astype(np.float32)
GS = np.array([2, 0, 4], np.int32)  # 6 of 7 rows: the last row is zero


def _close(got, want, tol=1e-5):
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def _cases(lax):
  dn = lax.RaggedDotDimensionNumbers
  return {
      "basic": (lambda l, r: lax.ragged_dot(l, r, GS), LHS, RHS),
      "noncontracting_batched_gs": (
          lambda l, r: lax.ragged_dot_general(
              l, r, np.array([[1, 2], [3, 0]], np.int32),
              dn((([2], [1]), ([0], [0])), [1], [2])),
          rng.standard_normal((2, 3, 4)).astype(np.float32),
          rng.standard_normal((2, 4, 2, 5)).astype(np.float32)),
      "contracting": (
          lambda l, r: lax.ragged_dot_general(l, r, np.array([1, 3, 2], np.int32),
                                              dn((([1], [0]), ([], [])), [1], [])),
          rng.standard_normal((3, 6)).astype(np.float32),
          rng.standard_normal((6, 5)).astype(np.float32)),
      "batch": (
          lambda l, r: lax.ragged_dot_general(l, r, np.array([1, 1], np.int32),
                                              dn((([2], [1]), ([0], [0])), [0], [])),
          rng.standard_normal((2, 3, 4)).astype(np.float32),
          rng.standard_normal((2, 4, 5)).astype(np.float32)),
  }


R, J = _cases(rlax), _cases(jlax)


def _dense_reference(name):
  """jax grads of the ragged contracting/batch modes are not implemented in jax 0.10.2: the
  reference for those is the same product written densely with jnp."""
  jnp = jax.numpy
  if name == "contracting":
    ends = np.cumsum([1, 3, 2])
    masks = [(np.arange(6) >= e - n) & (np.arange(6) < e) for e, n in zip(ends, [1, 3, 2])]
    return lambda l, r: jnp.stack([(l * m) @ r for m in masks])
  if name == "batch":
    return lambda l, r: jnp.einsum("bmk,bkn->bmn", l, r)
  return J[name][0]


@pytest.mark.parametrize("name", sorted(R))
def test_values_and_grads_match_jax(name):
  f, l, r = R[name]
  jf = J[name][0]
  want = jax.jit(jf)(l, r)
  _close(f(l, r), want)
  _close(revax.jit(f)(l, r), want)
  loss = lambda lib, g: lambda l, r: lib.numpy.sum(g(l, r) ** 2)
  got = revax.grad(loss(revax, f), argnums=(0, 1))(l, r)
  _close(want, jax.jit(_dense_reference(name))(l, r))
  ref = jax.jit(jax.grad(loss(jax, _dense_reference(name)), argnums=(0, 1)))(l, r)
  for g, e in zip(got, ref, strict=True):
    _close(g, e, 1e-4)


def test_vmap_over_lhs_rhs_and_group_sizes():
  ls, rs = np.stack([LHS, -LHS]), np.stack([RHS, 2 * RHS])
  gss = np.array([[2, 0, 4], [1, 5, 1]], np.int32)
  f = lambda lax: lambda l, r, g: lax.ragged_dot(l, r, g)
  _close(revax.vmap(f(rlax))(ls, rs, gss), jax.vmap(f(jlax))(ls, rs, gss))
  # (jax 0.10.2 cannot vmap an unbatched rhs: "ragged_dot vmap over any dim but 0 - NYI")
  got = revax.vmap(f(rlax), in_axes=(0, None, 0))(ls, RHS, gss)
  for i in range(2):
    _close(got[i], jlax.ragged_dot(ls[i], RHS, gss[i]))


def test_dtypes_and_errors_of_jax():
  got = rlax.ragged_dot(LHS.astype(np.float16), RHS.astype(np.float16), GS,
                        preferred_element_type=np.float32)
  assert got.dtype == jlax.ragged_dot(LHS.astype(np.float16), RHS.astype(np.float16), GS,
                                      preferred_element_type=np.float32).dtype
  for lax in (rlax, jlax):
    with pytest.raises(TypeError, match="group_sizes.dtype is subtype of np.integer"):
      lax.ragged_dot(LHS, RHS, GS.astype(np.float32))
    with pytest.raises(TypeError, match="expected rhs group dimension size to be 2, got 3"):
      lax.ragged_dot(LHS, RHS, GS[:2])
    with pytest.raises(TypeError, match="exactly one lhs ragged dimension"):
      lax.ragged_dot_general(LHS, RHS, GS, lax.RaggedDotDimensionNumbers(
          (([1], [1]), ([], [])), [0, 1], [0]))
  with pytest.raises(NotImplementedError, match="group_offset"):  # jax: unhashable param
    rlax.ragged_dot(LHS, RHS, GS, group_offset=np.zeros(1, np.int32))
