"""Autodiff machinery: symbolic zeros that carry their aval, rule helpers, API errors."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax._src.core.avals import ShapedArray
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad

x3 = np.linspace(0.1, 0.9, 3).astype(np.float32)


def _names(closed):
  names = []

  def walk(jaxpr):
    for e in jaxpr.eqns:
      names.append(e.primitive.name)
      for p in e.params.values():
        if hasattr(p, "jaxpr"):
          walk(p.jaxpr)
  walk(closed.jaxpr)
  return names


def test_zero_carries_its_aval_and_instantiates_without_an_example():
  z = ad.Zero(ShapedArray((2, 3), np.float32))
  arr = ad.instantiate_zeros(z)
  assert arr.shape == (2, 3) and arr.dtype == np.float32 and not np.asarray(arr).any()
  assert ad.Zero.from_value(np.int32(3)).aval.dtype == revax._src.core.dtypes.float0


def test_jvp_wrt_one_argument_builds_no_zeros_for_the_other():
  f = lambda x, y: rnp.sin(x) * 2.0

  def jvp_x_only(x, y):
    return revax.jvp(lambda a: f(a, y), (x,), (np.ones(3, np.float32),))

  closed = revax.make_jaxpr(jvp_x_only)(x3, x3)
  names = _names(closed)
  assert "broadcast_in_dim" not in names, names
  zero_literals = [e for e in closed.jaxpr.eqns
                   if any(getattr(a, "val", None) is not None and np.all(np.asarray(a.val) == 0)
                          for a in e.invars)]
  assert not zero_literals, closed
  assert sorted(names) == ["cos", "mul", "mul", "mul", "sin"], names


def test_grad_wrt_first_argument_builds_no_zeros_for_the_second():
  f = lambda x, y: (rnp.sin(x) * 2.0 * y).sum()
  closed = revax.make_jaxpr(revax.grad(f, argnums=0))(x3, x3)
  names = _names(closed)
  # no zero array is ever built for y's (unused) cotangent
  consts_zero = [e for e in closed.jaxpr.eqns if e.primitive.name == "broadcast_in_dim"
                 and any(getattr(a, "val", None) == 0 for a in e.invars)]
  assert not consts_zero, names


@pytest.mark.parametrize("helper", [ad.defjvp, ad.defjvp_from_output])
def test_single_output_helpers_refuse_multiple_results_primitives(helper):
  p = Primitive("two_outputs_for_test", multiple_results=True)
  with pytest.raises(ValueError, match="primitive 'two_outputs_for_test' has multiple results"):
    helper(p, lambda *a, **k: None)


def test_rule_tables_refuse_double_registration():
  p = Primitive("registered_twice_for_test")
  ad.defjvp(p, None)
  with pytest.raises(ValueError, match="already registered"):
    ad.defjvp(p, None)


def test_grad_of_non_scalar_output_is_a_type_error():
  with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions. "
                                      r"Output had shape: \(3,\)"):
    revax.grad(lambda x: x * 2.0)(x3)


def test_grad_of_integer_input_is_a_type_error():
  with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs.*int32"):
    revax.grad(lambda x: x * 2)(np.int32(3))


def test_integer_inputs_get_float0_tangents_and_cotangents():
  out, f_vjp = revax.vjp(lambda x, n: x * n, np.float32(2.0), np.int32(3))
  gx, gn = f_vjp(np.float32(1.0))
  assert float(gx) == 3.0
  assert gn.dtype == revax._src.core.dtypes.float0


def test_jvp_structure_mismatch_error():
  with pytest.raises(TypeError, match="same tree structure"):
    revax.jvp(lambda x, y: x, (1.0, 2.0), (1.0,))


def test_jvp_tangent_dtype_mismatch_error():
  with pytest.raises(TypeError, match="Got primal dtype float32 and so expected tangent dtype "
                                      "float32, but got tangent dtype int32"):
    revax.jvp(lambda x: x, (np.float32(1.0),), (np.int32(1),))


def test_has_aux():
  g, aux = revax.grad(lambda x: ((x * x).sum(), "aux"), has_aux=True)(x3)
  np.testing.assert_allclose(g, 2 * x3, rtol=1e-6)
  assert aux == "aux"


def test_grad_of_jit_reuses_one_derived_program_per_signature():
  f = revax.jit(lambda x: (rnp.sin(x) * x).sum())
  g = revax.grad(f)
  first = g(x3)
  from revax._src import program_cache
  # the programs alive now (a weak cache: other tests' programs may be dropped meanwhile, so
  # compare which programs exist rather than how many)
  before = {id(k) for k in program_cache._programs.keys()}
  keep = list(program_cache._programs.keys())
  for _ in range(3):
    g(x3 + 1)
  assert {id(k) for k in program_cache._programs.keys()} <= before
  del keep
  np.testing.assert_allclose(first, np.cos(x3) * x3 + np.sin(x3), rtol=1e-5)


def test_value_and_grad_and_argnums_tuple():
  f = lambda x, y: (x * y).sum()
  v, (gx, gy) = revax.value_and_grad(f, argnums=(0, 1))(x3, 2 * x3)
  np.testing.assert_allclose(v, (x3 * 2 * x3).sum(), rtol=1e-6)
  np.testing.assert_allclose(gx, 2 * x3, rtol=1e-6)
  np.testing.assert_allclose(gy, x3, rtol=1e-6)


def test_linearize_evaluates_only_the_linear_map():
  y, f_jvp = revax.linearize(rnp.sin, x3)
  np.testing.assert_allclose(y, np.sin(x3), rtol=1e-6)
  np.testing.assert_allclose(f_jvp(np.ones_like(x3)), np.cos(x3), rtol=1e-6)


def test_jacobians_and_hessian():
  f = lambda x: rnp.sin(x) * x.sum()
  jf, jr = revax.jacfwd(f)(x3), revax.jacrev(f)(x3)
  expected = np.diag(np.cos(x3)) * x3.sum() + np.sin(x3)[:, None]
  np.testing.assert_allclose(jf, expected, rtol=1e-5)
  np.testing.assert_allclose(jr, expected, rtol=1e-5)
  h = revax.hessian(lambda x: (x ** 3).sum())(x3)
  np.testing.assert_allclose(h, np.diag(6 * x3), rtol=1e-5)


def test_linear_transpose():
  f_t = revax.linear_transpose(lambda x: x * 3.0, x3)
  (ct,) = f_t(np.ones(3, np.float32))
  np.testing.assert_allclose(ct, np.full(3, 3.0), rtol=1e-6)


def test_weak_scalar_of_a_narrow_dtype_survives_re_evaluation():
  """A weakly typed f16 scalar inside a JVP rule (full_like keeps weak types) is staged as a
  literal; re-evaluating the linearized jaxpr (reverse of reverse mode) must give it back as f16,
  not as a Python float that binds as f32 (it did: mul(f16, f32) in the second-order VJP)."""
  from revax._src.lax.special import bessel_i1e
  x = np.array([0.5, -1.25], np.float16)
  grad_fn = lambda v: revax.grad(lambda y: bessel_i1e(y).sum())(v)
  (g2,) = revax.vjp(grad_fn, x)[1](np.ones(2, np.float16))
  assert g2.dtype == np.float16
  want = revax.vjp(grad_fn, x.astype(np.float32))[1](np.ones(2, np.float32))[0]
  np.testing.assert_allclose(np.asarray(g2, np.float32), want, rtol=2e-2, atol=2e-3)
