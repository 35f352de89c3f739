"""revax.custom_derivatives: the re-exported decorators and JAX's helpers (symbolic zeros, the
primal records of custom_vjp forward rules), against jax.custom_derivatives."""
import jax
import jax.custom_derivatives as jcd
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.custom_derivatives as cd
import revax.numpy as rnp


def test_decorators_and_primitives_are_revax_own():
  assert cd.custom_jvp is revax.custom_jvp and cd.custom_vjp is revax.custom_vjp
  assert cd.custom_gradient is revax.custom_gradient
  assert cd.closure_convert is revax.closure_convert
  assert cd.custom_jvp_call_p.name == jcd.custom_jvp_call_p.name
  assert cd.custom_vjp_call_p.name == jcd.custom_vjp_call_p.name


def test_symbolic_zeros_reach_a_custom_jvp_rule_as_symbolic_zero():
  seen = []

  @cd.custom_jvp
  def f(x, y):
    return x * y

  def f_jvp(primals, tangents):
    seen.append([type(t) is cd.SymbolicZero for t in tangents])
    x, y = primals
    tx, _ = tangents
    return f(x, y), tx * y

  f.defjvp(f_jvp, symbolic_zeros=True)
  assert float(revax.grad(f)(2.0, 3.0)) == 3.0
  assert seen == [[False, True]]
  z = cd.SymbolicZero.from_primal_value(rnp.ones(2, rnp.int32))
  assert z.aval.dtype == revax.float0 and z.aval.shape == (2,)


def test_zero_from_primal_matches_jax():
  tree = {"a": np.ones((2, 3), np.float32), "n": 3, "h": np.ones(2, np.float16)}
  out, expected = cd.zero_from_primal(tree), jcd.zero_from_primal(tree)
  for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(expected), strict=True):
    assert a.shape == b.shape and a.dtype == b.dtype
  sym = cd.zero_from_primal(tree, symbolic_zeros=True)
  assert type(sym["a"]) is cd.SymbolicZero and sym["a"].aval.shape == (2, 3)
  assert sym["n"].aval.dtype == revax.float0


def test_custom_vjp_primal_tree_values():
  tree = {"x": cd.CustomVJPPrimal(1.0, True), "y": (cd.CustomVJPPrimal(2, False),)}
  assert cd.custom_vjp_primal_tree_values(tree) == {"x": 1.0, "y": (2,)}
  with pytest.raises(TypeError, match="unexpected leaf type"):
    cd.custom_vjp_primal_tree_values({"x": 1.0})
  with pytest.raises(TypeError, match="unexpected leaf type"):
    jcd.custom_vjp_primal_tree_values({"x": jnp.ones(())})


def _transpose(lib, f, x_example):
  return lambda y: lib.linear_transpose(f, x_example)(y)[0]


@pytest.mark.parametrize("lib,lc", [(revax, cd.linear_call), (jax, jcd.linear_call)],
                         ids=["revax", "jax"])
def test_linear_call_uses_its_transpose_as_jax(lib, lc):
  div = lambda r, x: x / r
  div_add = lambda x, d: x + lc(div, lambda r, t: 2 * t / r, d, x)  # a deliberately "wrong" T
  assert float(div_add(9.0, 3.0)) == 12.0
  assert float(lib.jit(div_add)(9.0, 3.0)) == 12.0
  np.testing.assert_allclose(lib.grad(div_add)(1.0, 3.0), 1 + 2 / 3, rtol=1e-6)
  np.testing.assert_allclose(lib.jit(lib.grad(div_add))(1.0, 3.0), 1 + 2 / 3, rtol=1e-6)
  _, t = lib.jvp(lambda x: div_add(x, 2.0), (1.0,), (1.0,))
  assert float(t) == 1.5  # forward mode is the function itself

  def custom_id(x):
    return lc(lambda _, x: x, lambda _, t: 7.0, (), x)

  t1 = _transpose(lib, custom_id, 1.0)
  t2 = _transpose(lib, t1, 1.0)
  assert (float(custom_id(1.0)), float(t1(1.0)), float(t2(1.0))) == (1.0, 7.0, 1.0)
  assert float(_transpose(lib, t2, 1.0)(1.0)) == 7.0


def test_linear_call_pytrees_closures_and_errors():
  w = rnp.arange(3.0)
  g = lambda x: cd.linear_call(lambda r, x: {"a": x["u"] * w * r},
                               lambda r, c: {"u": c["a"] * w * r}, 2.0, {"u": x})
  np.testing.assert_allclose(revax.grad(lambda x: g(x)["a"].sum())(rnp.ones(3)), [0, 2, 4])
  bad = lambda x: cd.linear_call(lambda r, x: x * r, lambda r, c: (c, c), 2.0, x)
  with pytest.raises(TypeError, match="transpose output pytree structure must match"):
    revax.grad(bad)(1.0)
  div_add = lambda x, d: x + cd.linear_call(lambda r, x: x / r, lambda r, t: t / r, d, x)
  with pytest.raises(TypeError, match="not differentiable with respect to its residual"):
    revax.grad(div_add, 1)(1.0, 2.0)
  with pytest.raises(NotImplementedError, match="batching rule for 'linear_call'"):
    revax.vmap(div_add)(rnp.ones(3), rnp.ones(3))
  names = [e.primitive.name for e in revax.make_jaxpr(div_add)(1.0, 2.0).jaxpr.eqns]
  assert names == ["linear_call", "add"]
