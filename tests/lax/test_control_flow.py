"""Control flow: values against Python loops (eager and jitted), jaxprs and lowering, DCE, and
JAX's error messages. Derivatives: test_control_flow_ad.py; vmap: test_control_flow_vmap.py;
differential tests against JAX and memory: test_control_flow_jax.py."""
import numpy as np
import pytest

import revax
import revax.lax as lax
import revax.numpy as rnp
from revax._src.core.typecheck import check_jaxpr
from tests.platform_tolerances import allclose_tol

rng = np.random.default_rng(0)
x3 = rng.standard_normal(3).astype(np.float32)
xs5 = rng.standard_normal((5, 3)).astype(np.float32)


def _names(closed):
  return [e.primitive.name for e in closed.jaxpr.eqns]


def _both(f, *args):
  """f eagerly and jitted."""
  return f(*args), revax.jit(f)(*args)


# --- cond / switch ---------------------------------------------------------------------------
@pytest.mark.parametrize("p", [True, False, 2, 0, -1.5, 0.0])
def test_cond_picks_a_branch(p):
  w = np.float32(3.0)
  f = lambda p, x: lax.cond(p, lambda y: rnp.sin(y) * w, lambda y: (rnp.cos(y) - w), x)
  expected = np.sin(x3) * w if p else np.cos(x3) - w
  for out in _both(f, p, x3):
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_cond_pytrees_and_several_operands():
  def f(p, a, d):
    return lax.cond(p, lambda a, d: {"s": a + d["b"], "t": (a, d["b"] * 2)},
                    lambda a, d: {"s": a - d["b"], "t": (a * 0, d["b"])}, a, d)
  for p in (True, False):
    for out in _both(f, p, x3, {"b": x3 + 1}):
      b = x3 + 1
      np.testing.assert_allclose(out["s"], x3 + b if p else x3 - b, rtol=1e-6)
      np.testing.assert_allclose(out["t"][0], x3 if p else 0 * x3)
      np.testing.assert_allclose(out["t"][1], 2 * b if p else b, rtol=1e-6)


def test_cond_operand_keyword_and_no_operands():
  assert float(lax.cond(True, lambda x: x + 1, lambda x: x, operand=1.0)) == 2.0
  assert float(lax.cond(False, lambda: 1.0, lambda: 2.0)) == 2.0
  with pytest.raises(TypeError, match="if 'operand' keyword is passed"):
    lax.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0)


def test_cond_jaxpr_and_lowering():
  f = lambda x: lax.cond(x[0] > 0, rnp.sin, rnp.cos, x)
  closed = revax.make_jaxpr(f)(x3)
  check_jaxpr(closed)
  (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "cond"]
  # branches=(false, true) as JAX, the predicate as an int32 index
  assert [_names(b) for b in eqn.params["branches"]] == [["cos"], ["sin"]]
  assert eqn.invars[0].aval.str_short() == "i32[]"
  assert "branches=(" in str(closed)
  text = revax.jit(f).lower(x3).as_text()
  assert "stablehlo.case" in text


def test_cond_hoists_closed_over_values_into_operands():
  w = rnp.asarray(rng.standard_normal(3).astype(np.float32))
  closed = revax.make_jaxpr(lambda x: lax.cond(True, lambda y: y * w, lambda y: y, x))(x3)
  (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "cond"]
  assert len(eqn.invars) == 3  # index, the hoisted w, x
  assert all(not b.consts for b in eqn.params["branches"])


@pytest.mark.parametrize("i", [-3, 0, 1, 2, 7])
def test_switch_clamps_the_index(i):
  branches = [lambda y: y + 1, lambda y: y * 2, lambda y: -y]
  expected = branches[min(max(i, 0), 2)](x3)
  for out in _both(lambda i, x: lax.switch(i, branches, x), i, x3):
    np.testing.assert_allclose(out, expected)


def test_switch_one_branch_is_a_call_and_index_dtypes():
  closed = revax.make_jaxpr(lambda x: lax.switch(0, [rnp.sin], x))(x3)
  assert "cond" not in _names(closed)
  for dt in (np.int8, np.uint32, np.int64):
    np.testing.assert_allclose(lax.switch(np.asarray(1, dt), [rnp.sin, rnp.cos], x3),
                               np.cos(x3), rtol=1e-6)


def test_cond_errors():
  with pytest.raises(TypeError, match=r"(?s)cond branches must have equal output types but they "
                     r"differ.*true_fun is .* at .*The output of true_fun has type float32\[\] "
                     r"but the corresponding output of false_fun has type float32\[3\], so the "
                     r"shapes "
                     r"do not match"):
    lax.cond(True, lambda x: x, lambda x: rnp.ones(3), 1.0)
  with pytest.raises(TypeError, match="so the dtypes do not match"):
    lax.cond(True, lambda x: x, lambda x: rnp.int32(1), 1.0)
  with pytest.raises(TypeError, match="cond branch outputs must have the same pytree structure"):
    lax.cond(True, lambda x: (x, x), lambda x: x, 1.0)
  with pytest.raises(TypeError, match=r"Pred must be a scalar, got .* of shape \(2,\)"):
    lax.cond(np.ones(2) > 0, lambda x: x, lambda x: x, 1.0)
  with pytest.raises(TypeError, match="Pred must be a scalar, got a of type <class 'str'>"):
    lax.cond("a", lambda x: x, lambda x: x, 1.0)
  with pytest.raises(TypeError, match="Pred type must be either boolean or number, got "
                     "complex64"):
    lax.cond(np.complex64(1), lambda x: x, lambda x: x, 1.0)
  with pytest.raises(TypeError, match="cond predicate is None"):
    lax.cond(None, lambda x: x, lambda x: x, 1.0)
  with pytest.raises(TypeError, match="true_fun and false_fun arguments should be callable"):
    lax.cond(True, 1, lambda x: x, 1.0)


def test_switch_errors():
  with pytest.raises(TypeError, match=r"Branch index must be scalar, got \[1 1\] of shape"):
    lax.switch(np.ones(2, np.int32), [lambda x: x, lambda x: x], 1.0)
  with pytest.raises(TypeError, match="Index type must be an integer, got 1.0 as float32"):
    lax.switch(np.float32(1.0), [lambda x: x, lambda x: x], 1.0)
  with pytest.raises(TypeError, match="(?s)switch branches must have equal output types.*branch 0 "
                     r"has type float32\[\] but the corresponding output of branch1 has type "
                     r"int32\[\], so the dtypes do not match"):
    lax.switch(1, [lambda x: x, lambda x: rnp.int32(1)], 1.0)
  with pytest.raises(ValueError, match="Empty branch sequence"):
    lax.switch(0, [], 1.0)
  with pytest.raises(TypeError, match="branches argument should be a sequence of callables"):
    lax.switch(0, [1, 2], 1.0)


def test_cond_primitive_typechecks_its_operands():
  closed = revax.make_jaxpr(lambda x: lax.cond(True, rnp.sin, rnp.cos, x))(x3)
  (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "cond"]
  from revax._src.core.avals import ShapedArray
  with pytest.raises(TypeError, match=r"cond branches take input types \(f32\[3\]\), called "
                     r"with operands of type \(f32\[2\]\)"):
    eqn.primitive.abstract_eval(ShapedArray((), np.int32), ShapedArray((2,), np.float32),
                                **eqn.params)
  with pytest.raises(TypeError, match="index of type f32"):
    eqn.primitive.abstract_eval(ShapedArray((), np.float32), ShapedArray((3,), np.float32),
                                **eqn.params)


# --- while_loop / fori_loop ------------------------------------------------------------------
def test_while_loop_values_and_pytree_carry():
  def f(x):
    return lax.while_loop(lambda c: c["n"] < 4,
                          lambda c: {"n": c["n"] + 1, "v": c["v"] * 2 + 1}, {"n": 0, "v": x})
  for out in _both(f, x3):
    assert int(out["n"]) == 4
    np.testing.assert_allclose(out["v"], ((x3 * 2 + 1) * 2 + 1) * 4 + 3, rtol=1e-5)


def test_while_loop_zero_iterations_and_closures():
  k = rnp.asarray(np.float32(10))
  f = lambda x: lax.while_loop(lambda c: c < k, lambda c: c + k, x)
  for out in _both(f, np.float32(20)):
    assert float(out) == 20.0
  for out in _both(f, np.float32(-5)):
    assert float(out) == 15.0


def test_while_weak_initial_value_takes_the_body_type():
  out = lax.while_loop(lambda c: c < 3, lambda c: c + 1.5, 0)
  assert out.dtype == np.float32 and float(out) == 3.0


def test_while_jaxpr_and_lowering():
  f = lambda x: lax.while_loop(lambda c: c < 3.0, lambda c: c * 2, x)
  closed = revax.make_jaxpr(f)(1.0)
  check_jaxpr(closed)
  (eqn,) = closed.jaxpr.eqns
  assert eqn.primitive.name == "while"
  assert _names(eqn.params["cond_jaxpr"]) == ["lt"]
  assert _names(eqn.params["body_jaxpr"]) == ["mul"]
  assert "stablehlo.while" in revax.jit(f).lower(1.0).as_text()


def test_while_errors():
  with pytest.raises(TypeError, match="cond_fun must return a boolean scalar, but got output "
                     r"type\(s\) \[ShapedArray\(int32\[\], weak_type=True\)\]"):
    lax.while_loop(lambda c: c, lambda c: c + 1, 0)
  with pytest.raises(TypeError, match=r"boolean scalar, but got output type\(s\) "
                     r"\[ShapedArray\(bool\[2\]\)\]"):
    lax.while_loop(lambda c: rnp.ones(2) > 0, lambda c: c, 0)
  with pytest.raises(TypeError, match="cond_fun must return a boolean scalar, but got pytree"):
    lax.while_loop(lambda c: (c < 1, c < 2), lambda c: c, 0)
  with pytest.raises(TypeError, match=r"while_loop body function carry input and carry output "
                     r"must have equal types, but they differ:\n\nThe input carry c has type "
                     r"float32\[\] but the corresponding output carry component has type "
                     r"float32\[3\], "
                     r"so the shapes do not match"):
    lax.while_loop(lambda c: True, lambda c: rnp.ones(3) * c, np.float32(0))
  with pytest.raises(TypeError, match="must have the same pytree structure"):
    lax.while_loop(lambda c: True, lambda c: (c, c), 0.0)
  with pytest.raises(TypeError, match="body_fun and cond_fun arguments should be callable"):
    lax.while_loop(1, lambda c: c, 0.0)


def test_fori_loop_static_bounds_is_a_scan_traced_bounds_a_while():
  body = lambda i, acc: acc + i * acc
  assert "scan" in _names(revax.make_jaxpr(lambda x: lax.fori_loop(1, 4, body, x))(1.0))
  closed = revax.make_jaxpr(lambda x, n: lax.fori_loop(1, n, body, x))(1.0, 4)
  assert "while" in _names(closed) and "scan" not in _names(closed)
  check_jaxpr(closed)
  expected = 1.0
  for i in range(1, 4):
    expected = expected + i * expected
  for out in _both(lambda x: lax.fori_loop(1, 4, body, x), 1.0):
    assert float(out) == expected
  assert float(revax.jit(lambda x, n: lax.fori_loop(1, n, body, x))(1.0, 4)) == expected
  assert float(lax.fori_loop(5, 2, body, 1.0)) == 1.0  # empty range


def test_fori_loop_bounds_of_mixed_types_and_errors():
  assert int(lax.fori_loop(0, np.int16(3), lambda i, c: c + 1, 0)) == 3
  with pytest.raises(TypeError, match="lower and upper arguments to fori_loop must have equal "
                     "types, got int16 and int8"):
    lax.fori_loop(np.int16(0), np.int8(3), lambda i, c: c, 0.0)
  with pytest.raises(ValueError, match="Can only use `unroll` in `fori_loop` if the loop bounds "
                     "are statically known"):
    revax.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c, 0.0, unroll=2))(3)
  with pytest.raises(TypeError, match="body_fun argument should be callable"):
    lax.fori_loop(0, 1, None, 0.0)


# --- scan / map ------------------------------------------------------------------------------
def _py_scan(f, init, xs, reverse=False):
  carry, ys = init, [None] * len(xs)
  for i in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
    carry, ys[i] = f(carry, xs[i])
  return carry, np.stack(ys)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 2, 5, True])
def test_scan_matches_a_python_loop(reverse, unroll):
  W = rng.standard_normal((3, 3)).astype(np.float32) * 0.5

  def step(h, x):
    h = rnp.tanh(W @ h + x)
    return h, (h * 2, rnp.sum(h))

  def np_step(h, x):
    h = np.tanh(W @ h + x)
    return h, np.concatenate([h * 2, [h.sum()]])

  h_ref, ys_ref = _py_scan(np_step, x3, xs5, reverse)
  for h, (ys, sums) in _both(lambda h0, xs: lax.scan(step, h0, xs, reverse=reverse,
                                                     unroll=unroll), x3, xs5):
    np.testing.assert_allclose(h, h_ref, **allclose_tol(rtol=1e-5, atol=1e-6))  # (tanh)
    np.testing.assert_allclose(ys, ys_ref[:, :3], **allclose_tol(rtol=1e-5, atol=1e-6))
    np.testing.assert_allclose(sums, ys_ref[:, 3], **allclose_tol(rtol=1e-5, atol=1e-6))


def test_scan_without_xs_pytrees_and_empty_length():
  f = lambda c: lax.scan(lambda c, _: ((c[0] + 1, c[1] * 2), c[1]), c, None, length=4)
  for (n, v), ys in _both(f, (0, x3)):
    assert int(n) == 4
    np.testing.assert_allclose(v, x3 * 16, rtol=1e-6)
    np.testing.assert_allclose(ys, np.stack([x3 * 2 ** k for k in range(4)]), rtol=1e-6)
  for c, ys in _both(lambda xs: lax.scan(lambda c, x: (c + x, x * 2), x3, xs), xs5[:0]):
    np.testing.assert_allclose(c, x3)
    assert ys.shape == (0, 3)
  ys = lax.scan(lambda c, x: (c, {"a": x, "b": (x["p"][0],)}), 0.0, {"p": xs5})[1]
  np.testing.assert_allclose(ys["b"][0], xs5[:, 0])


def test_scan_weak_initial_carry_takes_the_body_type():
  c, _ = lax.scan(lambda c, x: (c + x, None), 0, np.arange(3, dtype=np.float32))
  assert c.dtype == np.float32 and float(c) == 3.0


def test_scan_jaxpr_and_lowering():
  f = lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)
  closed = revax.make_jaxpr(f)(xs5[:, 0])
  check_jaxpr(closed)
  (eqn,) = closed.jaxpr.eqns
  assert eqn.primitive.name == "scan"
  assert {k: eqn.params[k] for k in ("length", "num_consts", "num_carry", "reverse", "unroll")} \
      == {"length": 5, "num_consts": 0, "num_carry": 1, "reverse": False, "unroll": 1}
  text = revax.jit(f).lower(xs5[:, 0]).as_text()
  assert "stablehlo.while" in text and "stablehlo.dynamic_update_slice" in text
  assert "stablehlo.dynamic_slice" in text


def test_unused_scan_outputs_are_dead_code_under_jit():
  def f(xs):
    c, (ys, zs) = lax.scan(lambda c, x: (c + x, (rnp.sin(x), rnp.exp(c))), 0.0, xs)
    return ys
  (eqn,) = [e for e in revax.jit(f).lower(xs5[:, 0]).jaxpr.jaxpr.eqns if e.primitive.name ==
            "scan"]
  # the carry feeds nothing used (ys reads only x): both it and zs are gone
  assert len(eqn.outvars) == 1 and eqn.params["num_carry"] == 0
  assert _names(eqn.params["jaxpr"]) == ["sin"]
  np.testing.assert_allclose(revax.jit(f)(xs5[:, 0]), np.sin(xs5[:, 0]), rtol=1e-6)


def test_unused_cond_outputs_and_inputs_are_dead_code_under_jit():
  def f(p, x, y):
    a, b = lax.cond(p, lambda x, y: (rnp.sin(x), rnp.exp(y)), lambda x, y: (x, y * 2), x, y)
    return a
  (eqn,) = [e for e in revax.jit(f).lower(True, x3, x3).jaxpr.jaxpr.eqns
            if e.primitive.name == "cond"]
  assert len(eqn.outvars) == 1 and len(eqn.invars) == 2
  np.testing.assert_allclose(revax.jit(f)(False, x3, x3), x3)


def test_scan_errors():
  with pytest.raises(TypeError, match=r"scan body function carry input and carry output must "
                     r"have equal types, but they differ:\n\nThe input carry c has type "
                     r"float32\[\] but the corresponding output carry component has type "
                     r"float32\[3\], so the "
                     r"shapes do not match"):
    lax.scan(lambda c, x: (rnp.ones(3), x), np.float32(0), np.ones(3, np.float32))
  with pytest.raises(TypeError, match="must have the same pytree structure"):
    lax.scan(lambda c, x: ((c, c), x), 0.0, np.ones(3, np.float32))
  with pytest.raises(TypeError, match=r"scan body output must be a pair, got \("):
    lax.scan(lambda c, x: (c,), 0.0, np.ones(3, np.float32))
  with pytest.raises(ValueError, match="scan got values with different leading axis sizes: 3, 4"):
    lax.scan(lambda c, x: (c, x), 0.0, [np.ones(3), np.ones(4)])
  with pytest.raises(ValueError, match="scan got no values to scan over and `length` not "
                     "provided"):
    lax.scan(lambda c, x: (c, x), 0.0, None)
  with pytest.raises(ValueError, match=r"scan got `length` argument of 4 which disagrees with "
                     r"leading axis sizes \[3\]"):
    lax.scan(lambda c, x: (c, x), 0.0, np.ones(3), length=4)
  with pytest.raises(ValueError, match="scan got value with no leading axis to scan over"):
    lax.scan(lambda c, x: (c, x), 0.0, 1.0)
  with pytest.raises(ValueError, match="`unroll` must be a `bool` or a non-negative `int`"):
    lax.scan(lambda c, x: (c, x), 0.0, np.ones(3), unroll=-1)
  with pytest.raises(TypeError, match="f argument should be a callable"):
    lax.scan(None, 0.0, np.ones(3))


@pytest.mark.parametrize("batch_size", [None, 2, 5, 7])
def test_map(batch_size):
  f = lambda x: {"s": rnp.sin(x) * x[0], "n": rnp.sum(x)}
  out = lax.map(f, xs5, batch_size=batch_size)
  np.testing.assert_allclose(out["s"], np.sin(xs5) * xs5[:, :1], rtol=1e-6)
  np.testing.assert_allclose(out["n"], xs5.sum(1), rtol=1e-5)


def test_long_eager_loops_continue_compiled(monkeypatch):
  """Past the eager budget a while loop continues from its current carry as a compiled loop
  and a long scan runs compiled: the results are those of the Python evaluation."""
  from revax._src.lax.control_flow import common
  calls = []
  run_compiled = common.run_compiled
  monkeypatch.setattr(common, "EAGER_EQN_BUDGET", 10)
  monkeypatch.setattr(common, "run_compiled",
                      lambda prim, *a: calls.append(prim.name) or run_compiled(prim, *a))
  n, v = lax.while_loop(lambda c: c[0] < 50, lambda c: (c[0] + 1, c[1] * 0.5 + x3),
                        (0, np.zeros(3, np.float32)))
  expected = np.zeros(3, np.float32)
  for _ in range(50):
    expected = expected * 0.5 + x3
  assert int(n) == 50
  np.testing.assert_allclose(v, expected, rtol=1e-6)
  c, ys = lax.scan(lambda c, x: (c * 0.5 + x, c), x3, xs5)
  c_ref, ys_ref = _py_scan(lambda c, x: (c * 0.5 + x, c), x3, xs5)
  np.testing.assert_allclose(c, c_ref, rtol=1e-6)
  np.testing.assert_allclose(ys, ys_ref, rtol=1e-6)
  assert calls == ["while", "scan"]
