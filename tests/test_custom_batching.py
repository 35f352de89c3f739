"""revax.custom_batching (custom_vmap, sequential_vmap) against jax.custom_batching: the rule under
vmap (in_batched, axis size, batch dims moved to the front), jit, nested vmap, forward-mode AD,
the errors, and custom_vjp outside custom_vmap."""
import jax
import jax.custom_batching
import numpy as np
import pytest

import revax
import revax.custom_batching
import revax.numpy as rnp
from revax._src.core.typecheck import check_jaxpr
from revax.custom_batching import custom_vmap, sequential_vmap


def _make(lib, calls):
  np_ = lib.numpy

  @lib.custom_batching.custom_vmap
  def f(x, y):
    return np_.sin(x) + y

  @f.def_vmap
  def rule(axis_size, in_batched, xs, ys):
    calls.append((axis_size, list(in_batched)))
    return np_.cos(xs) * ys, in_batched[0] or in_batched[1]

  return f


X = np.linspace(0.1, 1.0, 3, dtype=np.float32)
Y = np.arange(1.0, 4.0, dtype=np.float32)

CASES = {
  "eager": lambda lib, f: f(0.5, 2.0),
  "jit": lambda lib, f: lib.jit(f)(0.5, 2.0),
  "vmap": lambda lib, f: lib.vmap(f)(X, Y),
  "vmap_unbatched_y": lambda lib, f: lib.vmap(f, (0, None))(X, 2.0),
  "vmap_axis_1": lambda lib, f: lib.vmap(f, (1, None))(np.stack([X, Y]), 2.0),
  "jit_of_vmap": lambda lib, f: lib.jit(lib.vmap(f))(X, Y),
  "vmap_of_jit": lambda lib, f: lib.vmap(lib.jit(f))(X, Y),
  "vmap_of_vmap": lambda lib, f: lib.vmap(lib.vmap(f, (0, None)), (None, 0))(X, Y[:2]),
  "jvp": lambda lib, f: lib.jvp(f, (0.5, 2.0), (1.0, 0.5)),
  "jvp_of_vmap": lambda lib, f: lib.jvp(lib.vmap(f), (X, Y), (np.ones(3, np.float32), Y)),
  "vmap_of_jvp": lambda lib, f: lib.vmap(lambda a, b: lib.jvp(f, (a, b), (b, a)))(X, Y),
  "grad_of_vmap": lambda lib, f: lib.grad(lambda a: lib.vmap(f)(a, Y).sum())(X),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_custom_vmap_matches_jax(case):
  calls, jcalls = [], []
  out = CASES[case](revax, _make(revax, calls))
  expected = CASES[case](jax, _make(jax, jcalls))
  assert calls == jcalls
  for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(expected), strict=True):
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)


def test_vmap_of_jvp_with_one_sided_batching_takes_the_diagonal():
  # The primal x is batched but its tangent is not: the JVP rule vmaps the user's rule over x,
  # and the rule batches over y too. Each example must see its own x and y (jax 0.10.2 returns a
  # (3, 3) array here instead of (3,)).
  f = _make(revax, [])
  p, t = revax.vmap(lambda a, b: revax.jvp(f, (a, b), (1.0, b)))(X, Y)
  np.testing.assert_allclose(p, np.cos(X) * Y, rtol=1e-6)
  np.testing.assert_allclose(t, -np.sin(X) * Y + np.cos(X) * Y, rtol=1e-6)


def test_staged_as_custom_vmap_call_and_the_rule_replaces_batching():
  f = _make(revax, [])
  jaxpr = revax.make_jaxpr(f)(1.0, 2.0)
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["custom_vmap_call"]
  names = [e.primitive.name for e in revax.make_jaxpr(revax.vmap(f))(X, Y).jaxpr.eqns]
  assert names == ["cos", "mul"]
  for fun in (lambda a, b: revax.jvp(f, (a, b), (a, b)),
              revax.vmap(lambda a, b: revax.jvp(f, (a, b), (1.0, b)))):
    check_jaxpr(revax.make_jaxpr(fun)(X, Y))  # the JVP call and its batched rule type-check


def test_reverse_mode_is_an_error_as_in_jax():
  f = _make(revax, [])
  with pytest.raises(ValueError, match="Linearization failed to produce known values"):
    revax.grad(f)(0.5, 2.0)
  with pytest.raises(ValueError, match="Linearization failed to produce known values"):
    jax.grad(_make(jax, []))(0.5, 2.0)


def test_custom_vjp_outside_custom_vmap_gives_both():
  @revax.custom_vjp
  @custom_vmap
  def f(x, y):
    return rnp.sin(x) * y

  @f.def_vmap
  def f_vmap_rule(axis_size, in_batched, xs, ys):
    return rnp.cos(xs) * ys, True

  f.defvjp(lambda x, y: (f(x, y), (rnp.cos(x), rnp.sin(x), y)),
           lambda res, g: (res[0] * g * res[2], res[1] * g))
  np.testing.assert_allclose(revax.vmap(f)(rnp.zeros(3), rnp.ones(3)), np.ones(3))
  assert float(revax.grad(f)(rnp.zeros(()), rnp.ones(()))) == 1.0


def test_rule_errors():
  @custom_vmap
  def g(x):
    return x * 2

  with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap function g"):
    g(1.0)
  g.def_vmap(lambda n, b, x: (x * 3, [True]))
  with pytest.raises(ValueError, match="output batching specification .* do not match"):
    revax.vmap(g)(X)
  g.def_vmap(lambda n, b, x: ((x * 3,), (True,)))
  with pytest.raises(ValueError, match="does not match that of original custom-vmapped"):
    revax.vmap(g)(X)
  # Outputs that contradict out_batched (jax returns wrong values for these).
  for bad in (lambda n, b, x: (x * 3, False), lambda n, b, x: (x[0], True),
              lambda n, b, x: ((x * 3).astype(rnp.int32), True)):
    g.def_vmap(bad)
    with pytest.raises(ValueError, match="so the rule must return"):
      revax.vmap(g)(X)
  with pytest.raises(TypeError, match="could not be resolved to positional-only"):
    g(1.0, z=2)

  def closes_over(x, c):
    @custom_vmap
    def h(x):
      return x + c
    h.def_vmap(lambda n, b, x: (x - c, True))
    return h(x)

  np.testing.assert_allclose(revax.vmap(closes_over, (0, None))(X, 5.0), X - 5.0)
  with pytest.raises(ValueError, match="closes over a value that is batched"):
    revax.vmap(closes_over)(X, X)


def test_pytree_arguments_and_outputs():
  @custom_vmap
  def h(x, y):
    return {"a": x, "b": (y, x)}

  seen = []

  @h.def_vmap
  def rule(axis_size, in_batched, x, y):
    seen.append(in_batched)
    return {"a": x * 10, "b": (y, x)}, {"a": in_batched[0], "b": (in_batched[1], in_batched[0])}

  out = revax.vmap(h, (0, None))(X, 1.0)
  assert seen == [[True, False]]
  np.testing.assert_allclose(out["a"], X * 10)
  np.testing.assert_allclose(out["b"][0], np.ones(3))


def test_sequential_vmap_matches_jax_and_loops():
  s = sequential_vmap(lambda a, b: a * b + 1)
  js = jax.custom_batching.sequential_vmap(lambda a, b: a * b + 1)
  assert float(s(2.0, 3.0)) == 7.0
  np.testing.assert_allclose(revax.vmap(s)(X, Y), jax.vmap(js)(X, Y), rtol=1e-6)
  np.testing.assert_allclose(revax.vmap(s, (0, None))(X, 2.0), jax.vmap(js, (0, None))(X, 2.0),
                             rtol=1e-6)
  names = [e.primitive.name for e in revax.make_jaxpr(revax.vmap(s, (0, None)))(X, 2.0).jaxpr.eqns]
  assert names == ["scan"]
