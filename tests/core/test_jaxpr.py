"""The jaxpr IR: printing like JAX, type checking, evaluation and dead-code elimination."""
import numpy as np
import pytest

import revax
import revax.lax as lax
import revax.numpy as rnp
from revax._src.core.avals import ShapedArray
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from revax._src.core.typecheck import JaxprTypeError, check_jaxpr
from revax._src.interpreters.staging import dce_jaxpr

jax = pytest.importorskip("jax")
x3 = np.ones(3, np.float32)


def _printed_funs(lib):
  """{name: (function, args)} whose jaxprs' text must be JAX's: the naming across nested
  jaxprs, `_` for unused results at top level, shared bodies printed ahead, the layout."""
  np_mod, jit, lax = lib.numpy, lib.jit, lib.lax
  twice = jit(lambda y: y * 2)

  def long_body(y):
    for _ in range(6):
      y = np_mod.sin(y) * 2
    return y

  def ref_writes(x):
    r = lib.new_ref(x)
    r[...] = r[...] * 2
    lib.ref.set(r, (), 3.0)
    r[...] += 1.0
    return r[...]

  @lib.custom_jvp
  def custom(x):
    return x * 2

  @custom.defjvp
  def custom_jvp(p, t):
    return custom(p[0]), t[0] * 2

  return {
      "scalar_exp": (lambda x: np_mod.exp(x), (1.0,)),
      "weak_promotion": (lambda x, y: x * y + 1.0, (x3, 2.0)),
      "nested_jit": (lambda x: jit(lambda y: y * 2)(x), (x3,)),
      "passthrough": (lambda x: (x, 1.0), (x3,)),
      "identity_jit_one_line": (lambda x: jit(lambda y: y)(x), (1.0,)),
      "nested_jit_names": (lambda x: jit(lambda y: jit(lambda z: jit(np_mod.cos)(z) * 2)(y))(x),
                           (x3,)),
      "unused_results": (lambda x: (np_mod.sin(x), jit(lambda a: (a * 2, a + 1))(x))[1][1],
                         (1.0,)),
      "operand_twice": (lambda x: lib.jvp(jit(np_mod.sin), (x,), (x,)), (x3,)),
      "shared_body": (lambda x: twice(x) + twice(twice(x)), (1.0,)),
      "long_body_ahead": (lambda x: jit(long_body)(x), (1.0,)),
      "ref_writes": (ref_writes, (1.0,)),
      "ref_writes_nested": (jit(ref_writes), (1.0,)),
      "cond_branches": (lambda x: lax.cond(x > 0, lambda: 1., lambda: 2.), (1.0,)),
      "while_consts": (lambda x: lax.while_loop(lambda v: v[0] < 3, lambda v: v + x3, x),
                       (x3,)),
      "broken_params": (lambda x: lax.fori_loop(0, 4, lambda i, v: v * 2.0 + i, x), (x3,)),
      "dot_general": (lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
                      (np.ones((2, 3), np.float32), x3)),
      "custom_jvp": (custom, (x3,)),
      # the layout's breaks (JAX's Wadler-Lindig groups): a params group that fits before
      # operands that do not, broken before the first operand past column 80
      "normal_sampler": (lambda k: lib.random.normal(k, (3,)), (lib.random.key(0),)),
      "long_operands": (lambda *xs: jit(lambda *ys: sum(ys))(*xs),  # (binders broken too)
                        tuple(np.ones((2, 3), np.float32) for _ in range(24))),
      "many_results": (lambda x: jit(lambda y: tuple(y * i for i in range(1, 15)))(x), (x3,)),
      "long_params": (lambda x: lax.pad(x, 0.0, [(1, 2, 0)] * 8),  # (one param past 80)
                      (np.ones((1,) * 8, np.float32),)),
      "switch_branches": (lambda i, x: lax.switch(i, [lambda v: v * 2.0, lambda v: v + 1.0,
                                                      np_mod.sin, np_mod.cos,
                                                      lambda v: v - 3.0], x), (1, x3)),
  }


@pytest.mark.parametrize("fun_name", list(_printed_funs(revax)))
def test_printing_matches_jax(fun_name):
  f, args = _printed_funs(revax)[fun_name]
  jf, jargs = _printed_funs(jax)[fun_name]  # (each library's own args: a key is its own type)
  assert str(revax.make_jaxpr(f)(*args)) == str(jax.make_jaxpr(jf)(*jargs))


def test_constants_are_constvars_and_scalars_literals():
  c = np.arange(3, dtype=np.float32)
  closed = revax.make_jaxpr(lambda x: x * c + 2.0)(x3)
  assert len(closed.jaxpr.constvars) == 1 and closed.consts[0] is c
  assert str(closed).startswith("{ lambda a:f32[3]; b:f32[3]. let")
  assert any(isinstance(a, Literal) for e in closed.eqns for a in e.invars)


def test_eval_jaxpr_reproduces_the_function():
  f = lambda x, y: rnp.exp(x * y) + x
  y = np.full(3, 0.5, np.float32)
  closed = revax.make_jaxpr(f)(x3, y)
  (out,) = eval_jaxpr(closed.jaxpr, closed.consts, x3, y)
  np.testing.assert_allclose(out, np.exp(x3 * y) + x3, rtol=1e-6)


def _eqn(prim, ins, outs, **params):
  return JaxprEqn(prim, ins, outs, params)


def test_check_jaxpr_rejects_wrong_output_type():
  f32 = ShapedArray((3,), np.float32)
  a, b = Var(f32), Var(ShapedArray((4,), np.float32))
  jaxpr = Jaxpr([], [a], [b], [_eqn(revax._src.lax.unary.exp_p, [a], [b])])
  with pytest.raises(JaxprTypeError, match=r"output of exp has type f32\[4\] but its rule gives f32\[3\]"):
    check_jaxpr(jaxpr)


def test_check_jaxpr_rejects_use_before_definition():
  f32 = ShapedArray((3,), np.float32)
  a, b, c = Var(f32), Var(f32), Var(f32)
  jaxpr = Jaxpr([], [a], [c], [_eqn(revax._src.lax.binary.add_p, [a, b], [c])])
  with pytest.raises(JaxprTypeError, match="used before it is defined"):
    check_jaxpr(jaxpr)


def test_check_jaxpr_rejects_double_definition():
  f32 = ShapedArray((3,), np.float32)
  a = Var(f32)
  jaxpr = Jaxpr([], [a], [a], [_eqn(revax._src.lax.unary.exp_p, [a], [a])])
  with pytest.raises(JaxprTypeError, match="defined twice"):
    check_jaxpr(jaxpr)


def test_check_jaxpr_rejects_ill_typed_primitive_application():
  a, b = Var(ShapedArray((3,), np.float32)), Var(ShapedArray((3,), np.int32))
  c = Var(ShapedArray((3,), np.float32))
  jaxpr = Jaxpr([], [a, b], [c], [_eqn(revax._src.lax.binary.add_p, [a, b], [c])])
  with pytest.raises(JaxprTypeError, match="same dtypes"):
    check_jaxpr(jaxpr)


def test_check_jaxpr_checks_nested_jaxprs():
  closed = revax.make_jaxpr(lambda x: revax.jit(lambda y: rnp.exp(y))(x))(x3)
  check_jaxpr(closed)
  inner = closed.eqns[0].params["jaxpr"].jaxpr
  inner.eqns[0].outvars[0].aval = ShapedArray((2,), np.float32)  # corrupt the inner program
  with pytest.raises(JaxprTypeError):
    check_jaxpr(closed)


def test_dce_removes_unused_equations_and_reports_used_inputs():
  closed = revax.make_jaxpr(lambda x, y: (rnp.exp(x), rnp.exp(y) * 2.0))(x3, x3)
  new, used = dce_jaxpr(closed.jaxpr, [True, False])
  assert [e.primitive.name for e in new.eqns] == ["exp"]
  assert used == [True, False]
  pruned, _ = dce_jaxpr(closed.jaxpr, [False, True], prune_inputs=True)
  assert len(pruned.invars) == 1
  check_jaxpr(pruned)


def test_dce_inside_jit_call():
  def f(x):
    a, _ = revax.jit(lambda y: (rnp.exp(y), rnp.negative(y)))(x)
    return a
  closed = revax.make_jaxpr(f)(x3)
  new, _ = dce_jaxpr(closed.jaxpr)
  inner = new.eqns[0].params["jaxpr"].jaxpr
  assert [e.primitive.name for e in inner.eqns] == ["exp"]
  check_jaxpr(new)


def test_tracer_errors():
  with pytest.raises(TypeError, match="bool\\(\\) conversion"):
    revax.make_jaxpr(lambda x: 1 if x else 0)(1.0)
  with pytest.raises(TypeError, match="__array__"):
    revax.make_jaxpr(lambda x: np.asarray(x))(1.0)


def test_leaked_tracer_is_reported():
  leaked = []
  revax.make_jaxpr(lambda x: leaked.append(x) or x)(1.0)
  with pytest.raises(Exception, match="unexpected tracer"):
    rnp.exp(leaked[0])


def test_shaped_array_prints_as_jax():
  # repr and str use full dtype names (a user printing `make_jaxpr(f)(x).in_avals` sees
  # `[ShapedArray(float32[2,3])]`); jaxprs keep the short names through str_short()
  from jax.core import ShapedArray as JaxShapedArray
  for shape, dtype, weak in [((2, 3), np.float32, False), ((), np.int32, True),
                             ((1,), np.bool_, False), ((4,), rnp.bfloat16, False)]:
    ours, theirs = ShapedArray(shape, dtype, weak), JaxShapedArray(shape, dtype, weak_type=weak)
    assert (repr(ours), str(ours)) == (repr(theirs), str(theirs))
  assert ShapedArray((2, 3), np.float32).str_short() == "f32[2,3]"


def test_float0_literal_prints_as_jax():
  """A float0 output literal (the cotangent of an integer input) prints as JAX prints it (it
  raised TypeError in the printer)."""
  import jax
  for lib, np_ in ((revax, rnp), (jax, jax.numpy)):
    _, vjp = lib.vjp(lambda a, i: a * i, np_.ones(3), np.int32(3))
    assert str(lib.make_jaxpr(vjp)(np_.ones(3))).endswith(", (b'',):float0[]) }"), lib
