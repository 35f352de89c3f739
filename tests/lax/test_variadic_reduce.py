"""lax.reduce with arbitrary computations (the variadic `reduce` primitive) against jax 0.10.2:
values eagerly and under jit, grad (the pairwise-tree JVP), vmap, weak types, the monoid fast
path, and JAX's errors for what it does not support."""
import numpy as np
import pytest

import revax
import revax.lax as rlax

jax = pytest.importorskip("jax")
jlax = jax.lax

rng = np.random.default_rng(3)
X = rng.standard_normal((5, 6)).astype(np.float32)
Y = rng.standard_normal((5, 6)).astype(np.float32)


def _argmax_pair(lax):
  def comp(a, b):
    take_a = lax.ge(a[0], b[0])
    return lax.select(take_a, a[0], b[0]), lax.select(take_a, a[1], b[1])
  return comp


def _programs(lax):
  """name -> (function of X, Y); each a reduce jax does not treat as a monoid."""
  smooth = lambda a, b: a * b + a + b  # (1+a)(1+b)-1: associative and commutative, identity 0
  return {
      "smooth_rows": lambda x, y: lax.reduce(x * 0.2, 0.0, smooth, (1,)),
      "smooth_all": lambda x, y: lax.reduce(x * 0.2, 0.0, smooth, (0, 1)),
      "smooth_cols_odd": lambda x, y: lax.reduce(x[:, :5] * 0.2, 0.0, smooth, (0,)),
      "pair_sum_prod": lambda x, y: lax.reduce((x, y * 0.3 + 1.0), (0.0, 1.0),
                                               lambda a, b: (a[0] + b[0], a[1] * b[1]), (0,)),
      "argmax_pair": lambda x, y: lax.reduce(
          (x, np.broadcast_to(np.arange(6, dtype=np.int32), (5, 6))),
          (np.float32(-np.inf), np.int32(0)), _argmax_pair(lax), (1,)),
      "dict_tree": lambda x, y: lax.reduce({"a": x, "b": y}, {"a": 0.0, "b": 0.0},
                                           lambda p, q: {"a": p["a"] + q["a"],
                                                         "b": p["b"] + q["b"]}, (1,)),
      "lambda_max_nonidentity_init": lambda x, y: lax.reduce(x, 0.5, lambda a, b: lax.max(a, b),
                                                             (0,)),
  }


R, J = _programs(rlax), _programs(jlax)


@pytest.mark.parametrize("name", sorted(R))
def test_values_match_jax_eager_and_jit(name):
  want = J[name](X, Y)
  for got in (R[name](X, Y), revax.jit(R[name])(X, Y)):
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
      assert np.asarray(g).dtype == np.asarray(w).dtype
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["smooth_rows", "smooth_all", "smooth_cols_odd", "pair_sum_prod",
                                  "dict_tree"])
def test_grad_matches_jax(name):
  loss = lambda f: lambda x, y: sum(jax.tree.leaves(jax.tree.map(lambda o: (o * o).sum(), f(x, y))))
  want = jax.jit(jax.grad(loss(J[name]), argnums=(0, 1)))(X, Y)  # eager jax takes seconds
  for got in (revax.grad(loss(R[name]), argnums=(0, 1))(X, Y),
              revax.jit(revax.grad(loss(R[name]), argnums=(0, 1)))(X, Y)):
    for g, w in zip(got, want, strict=True):
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["smooth_cols_odd", "argmax_pair", "pair_sum_prod"])
def test_vmap_matches_jax(name):
  xs, ys = np.stack([X, -X, 2 * X]), np.stack([Y, Y, -Y])
  want = jax.vmap(J[name], in_axes=(0, 0))(xs, ys)
  got = revax.vmap(R[name], in_axes=(0, 0))(xs, ys)
  for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)


def test_jaxpr_holds_the_computation_and_weak_types_follow_jax():
  comp = lambda a, b: a + 2 * b
  jaxpr = revax.make_jaxpr(lambda x: rlax.reduce(x, 0.0, comp, (0,)))(X)
  (eqn,) = jaxpr.eqns
  assert eqn.primitive.name == "reduce" and eqn.params["dimensions"] == (0,)
  assert [e.primitive.name for e in eqn.params["jaxpr"].eqns] == ["mul", "add"]
  for args in [(2.0, 0.0, comp, ()), (X, 0.0, comp, (0,)), (2.0, 0.0, rlax.add, ()),
               (X, 0.0, rlax.add, (1,))]:
    got, want = rlax.reduce(*args), jlax.reduce(*(jlax.add if a is rlax.add else a for a in args))
    assert got.aval.weak_type == want.weak_type and got.dtype == want.dtype


def test_empty_reduction_gives_the_init_value():
  comp = lambda a, b: a + 2 * b
  z = np.zeros((0, 3), np.float32)
  np.testing.assert_array_equal(rlax.reduce(z, 5.0, comp, (0,)), jlax.reduce(z, 5.0, comp, (0,)))


def test_errors_of_jax():
  comp = lambda a, b: a + 2 * b
  for lax, mod in ((rlax, "revax"), (jlax, "jax")):
    with pytest.raises(ValueError, match="same tree structure"):
      lax.reduce((X, X), 0.0, comp, (0,))
    with pytest.raises(ValueError, match="non-scalar initial value"):
      lax.reduce(X, np.zeros(2, np.float32), comp, (0,))
    with pytest.raises(TypeError, match="dtypes should match"):
      lax.reduce(X, np.int32(0), comp, (0,))
    with pytest.raises(IndexError):
      lax.reduce(X, 0.0, comp, (2,))
    with pytest.raises(NotImplementedError, match="non-zero tangents for initial values"):
      (revax if mod == "revax" else jax).grad(lambda i: lax.reduce(X, i, comp, (0, 1)))(0.0)
    with pytest.raises(NotImplementedError):
      (revax if mod == "revax" else jax).vmap(lambda i: lax.reduce(X, i, comp, (0,)))(
          np.zeros(2, np.float32))
    with pytest.raises(NotImplementedError, match="can't close over Tracers"):
      (revax if mod == "revax" else jax).jit(
          lambda x, s: lax.reduce(x, 0.0, lambda a, b: a + b * s, (0,)))(X, 2.0)
  # jax fails these in MLIR verification (ValueError); revax says so before lowering
  with pytest.raises(ValueError, match="dimension -1 is out of bounds"):
    rlax.reduce(X, 0.0, comp, (-1,))
  with pytest.raises(ValueError, match="Duplicate reduction dimension"):
    rlax.reduce(X, 0.0, comp, (0, 0))
  with pytest.raises(TypeError, match=r"must return \(f32\[\]\).*got \(i32\[\]\)"):
    rlax.reduce(X, 0.0, lambda a, b: (a + b).astype(np.int32), (0,))
  with pytest.raises(TypeError, match="must return a pytree with the structure of init_values"):
    rlax.reduce(X, 0.0, lambda a, b: (a, b), (0,))
