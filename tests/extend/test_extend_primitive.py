"""A primitive defined through the extension API (revax.extend / revax.interpreters), the way
equinox and flax define theirs, works under eager evaluation, jit, grad, vmap and scan, and the
same definition written against jax gives the same values."""
import numpy as np
import pytest

import jax
import jax.numpy as jjnp
import revax
import revax.numpy as rjnp


def _define(ext_core, ad, batching, mlir, jnp, name):
  """Define `cube(x) = x**3` with a JVP, transpose-free (nonlinear) rule, a batching rule and a
  lowering by lower_fun: written once, run with revax's and with jax's extension modules."""
  cube_p = ext_core.Primitive(name)

  def impl(x):
    return x * x * x

  cube_p.def_impl(impl)
  cube_p.def_abstract_eval(lambda a: a)

  def jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = cube_p.bind(x)
    if type(t) is ad.Zero:
      return out, ad.Zero.from_primal_value(out)
    return out, 3 * x * x * t

  ad.primitive_jvps[cube_p] = jvp

  def batch(vals, dims):
    (x,), (d,) = vals, dims
    return cube_p.bind(x), d

  batching.primitive_batchers[cube_p] = batch
  mlir.register_lowering(cube_p, mlir.lower_fun(impl, multiple_results=False))
  return cube_p


_count = [0]


@pytest.fixture
def prims():
  _count[0] += 1
  import jax.extend.core as jcore
  import jax.interpreters.ad as jad
  import jax.interpreters.batching as jbatch
  import jax.interpreters.mlir as jmlir
  import revax.extend.core as rcore
  import revax.interpreters.ad as rad
  import revax.interpreters.batching as rbatch
  import revax.interpreters.mlir as rmlir
  name = f"cube_test_{_count[0]}"
  return (_define(rcore, rad, rbatch, rmlir, rjnp, name),
          _define(jcore, jad, jbatch, jmlir, jjnp, name))


def _programs(lib, jnp, p):
  def f(x):
    return jnp.sum(p.bind(x) * 2.0)

  def scan_f(x):
    def body(c, xi):
      return c + p.bind(xi), p.bind(c)
    return lib.lax.scan(body, 0.0, x)

  return {
      "eager": lambda x: p.bind(x),
      "jit": lambda x: lib.jit(p.bind)(x),
      "grad": lambda x: lib.grad(f)(x),
      "jit_grad": lambda x: lib.jit(lib.grad(f))(x),
      "vmap": lambda x: lib.vmap(p.bind)(x),
      "vmap_grad": lambda x: lib.vmap(lib.grad(lambda y: p.bind(y)))(x),
      "jvp": lambda x: lib.jvp(p.bind, (x,), (jnp.ones_like(x),)),
      "scan": lambda x: scan_f(x),
      "grad_scan": lambda x: lib.grad(lambda y: scan_f(y)[0])(x),
      "jit_vmap": lambda x: lib.jit(lib.vmap(lambda y: p.bind(y) + 1))(x),
  }


@pytest.mark.parametrize("prog", ["eager", "jit", "grad", "jit_grad", "vmap", "vmap_grad",
                                  "jvp", "scan", "grad_scan", "jit_vmap"])
def test_library_primitive_matches_jax(prims, prog):
  rp, jp = prims
  x = np.array([0.5, -1.25, 2.0], np.float32)
  got = _programs(revax, rjnp, rp)[prog](rjnp.asarray(x))
  want = _programs(jax, jjnp, jp)[prog](jjnp.asarray(x))
  got_l, want_l = revax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
  assert len(got_l) == len(want_l)
  for g, w in zip(got_l, want_l):
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_jaxpr_names_the_library_primitive(prims):
  rp, _ = prims
  jaxpr = revax.make_jaxpr(lambda x: rp.bind(x) + 1)(1.0)
  assert [e.primitive.name for e in jaxpr.eqns][0] == rp.name


def test_missing_rules_name_the_primitive():
  import revax.extend.core as rcore
  p = rcore.Primitive("no_rules_test")
  p.def_abstract_eval(lambda a: a)
  with pytest.raises(NotImplementedError, match="no_rules_test"):
    revax.grad(lambda x: p.bind(x))(1.0)
  with pytest.raises(NotImplementedError, match="no_rules_test"):
    revax.jit(lambda x: p.bind(x))(1.0)


def test_multiple_results_and_effectful_abstract_eval():
  import revax.extend.core as rcore
  import revax.interpreters.mlir as rmlir
  p = rcore.Primitive("split_test")
  p.multiple_results = True

  def impl(x):
    return [x + 1, x * 2]

  p.def_impl(impl)
  p.def_effectful_abstract_eval(lambda a: ([a, a], rcore.no_effects))
  rmlir.register_lowering(p, rmlir.lower_fun(impl, multiple_results=True))
  eager = p.bind(rjnp.float32(3.0))
  jitted = revax.jit(lambda x: p.bind(x))(rjnp.float32(3.0))
  assert isinstance(eager, list) and [float(v) for v in eager] == [4.0, 6.0]
  assert [float(v) for v in jitted] == [4.0, 6.0]


def test_axis_primitive_batchers_get_size_and_name():
  import revax.extend.core as rcore
  import revax.interpreters.batching as rbatch
  import revax.interpreters.mlir as rmlir
  p = rcore.Primitive("axis_batch_test")
  p.def_impl(lambda x: x + 1)
  p.def_abstract_eval(lambda a: a)
  rmlir.register_lowering(p, rmlir.lower_fun(lambda x: x + 1, multiple_results=False))
  seen = []

  def rule(axis_size, axis_name, trace_type, vals, dims):
    seen.append((axis_size, axis_name))
    return p.bind(vals[0]), dims[0]

  rbatch.axis_primitive_batchers[p] = rule
  out = revax.vmap(p.bind, axis_name="i")(rjnp.arange(4.0))
  np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) + 1)
  assert seen == [(4, "i")]


def test_transpose_rule_of_a_linear_library_primitive():
  import revax.extend.core as rcore
  import revax.interpreters.ad as rad
  import revax.interpreters.mlir as rmlir
  p = rcore.Primitive("scale3_test")
  p.def_impl(lambda x: 3 * x)
  p.def_abstract_eval(lambda a: a)
  rmlir.register_lowering(p, rmlir.lower_fun(lambda x: 3 * x, multiple_results=False))
  rad.deflinear(p, lambda ct: [p.bind(ct)])  # JAX's deflinear: transpose(ct, **params)
  g = revax.grad(lambda x: rjnp.sum(p.bind(x) ** 2))(rjnp.arange(3.0))
  np.testing.assert_allclose(np.asarray(g), 18 * np.arange(3.0))
  assert rad.get_primitive_transpose(p) is rad.primitive_transposes[p]


def test_get_bind_params_rebinds_every_equation_like_jax():
  """equinox's jaxpr interpreters re-bind each equation with
  `eqn.primitive.get_bind_params(eqn.params)`; doing so gives the function's values."""
  def f(x):
    y = revax.numpy.sin(x) * 2
    return revax.lax.cond(y.sum() > 0, lambda v: v + 1, lambda v: v - 1, y)

  x = np.array([0.5, 1.0], np.float32)
  closed = revax.make_jaxpr(f)(x)
  env = dict(zip(closed.jaxpr.invars, [x]))
  read = lambda v: v.val if isinstance(v, revax.extend.core.Literal) else env[v]
  for eqn in closed.jaxpr.eqns:
    outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.primitive.get_bind_params(eqn.params))
    env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
  np.testing.assert_allclose(np.asarray(read(closed.jaxpr.outvars[0])), np.asarray(f(x)))


def test_eqn_and_jaxpr_effects_are_empty_exactly_where_jax_has_none():
  """`eqn.effects` / `jaxpr.effects` (equinox compares them): empty for pure equations, not
  for a debug callback, in revax as in jax."""
  def prog(lib):
    def f(x):
      lib.debug.print("x={x}", x=x)
      return x * 2
    return f

  for lib in (revax, jax):
    closed = lib.make_jaxpr(prog(lib))(1.0)
    flags = [bool(e.effects) for e in closed.jaxpr.eqns]
    assert flags == [True, False] and bool(closed.jaxpr.effects)
