"""custom_jvp and custom_vjp against JAX's documented examples: values and derivatives under
grad, jit, vmap and nested differentiation, with check_jaxpr on the transformed programs, and
JAX's errors."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax._src.core.typecheck import check_jaxpr
from revax.test_util import check_vmap

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _log1pexp(lib, np_):
  @lib.custom_jvp
  def log1pexp(x):
    return np_.log(1. + np_.exp(x))

  @log1pexp.defjvp
  def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    return ans, x_dot * (1. - 1. / (1. + np_.exp(x)))
  return log1pexp


def _clip_gradient(lib, np_):
  @lib.custom_vjp
  def clip_gradient(lo, hi, x):
    return x

  def fwd(lo, hi, x):
    return x, (lo, hi)

  def bwd(res, g):
    lo, hi = res
    return (None, None, np_.clip(g, lo, hi))
  clip_gradient.defvjp(fwd, bwd)
  return clip_gradient


def _app(lib, np_):
  from functools import partial

  @partial(lib.custom_vjp, nondiff_argnums=(0,))
  def app(f, x):
    return f(x)

  def app_fwd(f, x):
    return app(f, x), x

  def app_bwd(f, x, g):
    return (5 * g,)
  app.defvjp(app_fwd, app_bwd)
  return app


def _f_jvp_nondiff(lib, np_):
  from functools import partial

  @partial(lib.custom_jvp, nondiff_argnums=(0,))
  def app2(f, x):
    return f(x)

  @app2.defjvp
  def app2_jvp(f, primals, tangents):
    x, = primals
    t, = tangents
    return app2(f, x), 2.0 * t * np_.cos(x)
  return app2


def _compare(a, b, tol=1e-5):
  for x, y in zip(jax.tree_util.tree_leaves(a), revax.tree_util.tree_leaves(b)):
    np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=tol, atol=tol)


XS = np.array([-3.0, 0.0, 2.0, 100.0], np.float32)


def test_log1pexp_stable_jvp():
  r, j = _log1pexp(revax, rnp), _log1pexp(jax, jnp)
  for transform in (lambda lib, f: lib.vmap(lib.grad(f)),
                    lambda lib, f: lib.jit(lib.vmap(lib.grad(f))),
                    lambda lib, f: lib.vmap(lib.grad(lib.grad(f)))):
    _compare(transform(jax, j)(XS), transform(revax, r)(XS))
  assert np.isfinite(np.asarray(revax.grad(r)(100.0)))  # the naive derivative gives nan here
  _compare(jax.jvp(j, (XS,), (np.ones(4, np.float32),)), revax.jvp(r, (XS,), (np.ones(4, np.float32),)))
  check_jaxpr(revax.make_jaxpr(revax.vmap(revax.grad(r)))(XS))
  check_jaxpr(revax.make_jaxpr(revax.grad(revax.jit(r)))(2.0))
  jaxpr = revax.make_jaxpr(r)(2.0)
  assert [e.primitive.name for e in jaxpr.eqns] == ["custom_jvp_call"]


def test_defjvps_and_jvp_with_function_argument():
  @revax.custom_jvp
  def f(x, y):
    return rnp.sin(x) * y

  f.defjvps(lambda x_dot, ans, x, y: rnp.cos(x) * x_dot * y,
            lambda y_dot, ans, x, y: rnp.sin(x) * y_dot)

  @jax.custom_jvp
  def fj(x, y):
    return jnp.sin(x) * y

  fj.defjvps(lambda x_dot, ans, x, y: jnp.cos(x) * x_dot * y,
             lambda y_dot, ans, x, y: jnp.sin(x) * y_dot)
  _compare(jax.grad(fj, argnums=(0, 1))(2.0, 3.0), revax.grad(f, argnums=(0, 1))(2.0, 3.0))
  r, j = _f_jvp_nondiff(revax, rnp), _f_jvp_nondiff(jax, jnp)
  _compare(jax.grad(lambda x: j(jnp.sin, x))(1.5), revax.grad(lambda x: r(rnp.sin, x))(1.5))
  _compare(jax.vmap(jax.grad(lambda x: j(jnp.sin, x)))(XS[:3]),
           revax.vmap(revax.grad(lambda x: r(rnp.sin, x)))(XS[:3]))


def test_gradient_clipping_custom_vjp():
  r, j = _clip_gradient(revax, rnp), _clip_gradient(jax, jnp)
  loss_r = lambda x: rnp.sin(r(-0.75, 0.75, x)) * 3.0
  loss_j = lambda x: jnp.sin(j(-0.75, 0.75, x)) * 3.0
  xs = np.linspace(0.0, 10.0, 7, dtype=np.float32)
  _compare(jax.vmap(jax.grad(loss_j))(xs), revax.vmap(revax.grad(loss_r))(xs))
  _compare(jax.jit(jax.vmap(jax.grad(loss_j)))(xs), revax.jit(revax.vmap(revax.grad(loss_r)))(xs))
  _compare(jax.grad(lambda v: jax.vmap(loss_j)(v).sum())(xs),
           revax.grad(lambda v: revax.vmap(loss_r)(v).sum())(xs))
  _compare(jax.grad(jax.grad(loss_j))(2.0), revax.grad(revax.grad(loss_r))(2.0))
  check_jaxpr(revax.make_jaxpr(revax.vmap(revax.grad(loss_r)))(xs))
  check_jaxpr(revax.make_jaxpr(revax.grad(lambda v: revax.vmap(loss_r)(v).sum()))(xs))


def test_custom_vjp_nondiff_function_argument():
  r, j = _app(revax, rnp), _app(jax, jnp)
  _compare(jax.grad(lambda x: j(lambda y: y ** 2, x))(3.0),
           revax.grad(lambda x: r(lambda y: y ** 2, x))(3.0))
  _compare(jax.jit(jax.grad(lambda x: j(jnp.sin, x)))(3.0),
           revax.jit(revax.grad(lambda x: r(rnp.sin, x)))(3.0))
  assert float(r(lambda y: y ** 2, 3.0)) == 9.0


def test_custom_vjp_under_vmap_with_unbatched_argument_sums_cotangents():
  @revax.custom_vjp
  def scale(w, x):
    return w * x

  scale.defvjp(lambda w, x: (w * x, (w, x)), lambda res, g: (res[1] * g, res[0] * g * 2.0))

  @jax.custom_vjp
  def scale_j(w, x):
    return w * x

  scale_j.defvjp(lambda w, x: (w * x, (w, x)), lambda res, g: (res[1] * g, res[0] * g * 2.0))
  xs = np.arange(3, dtype=np.float32)
  _compare(jax.grad(lambda w: jax.vmap(scale_j, in_axes=(None, 0))(w, xs).sum())(1.5),
           revax.grad(lambda w: revax.vmap(scale, in_axes=(None, 0))(w, xs).sum())(1.5))
  check_vmap(lambda w, x: revax.grad(lambda v: scale(v, x))(w), (np.ones(3, np.float32), xs),
             in_axes=(0, 0))


def test_custom_vjp_under_forward_mode_is_an_error():
  r = _clip_gradient(revax, rnp)
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
    revax.jvp(lambda x: r(-1.0, 1.0, x), (1.0,), (1.0,))
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
    revax.jacfwd(lambda x: r(-1.0, 1.0, x))(1.0)


def test_rule_errors_match_jax():
  @revax.custom_jvp
  def f(x):
    return x

  with pytest.raises(AttributeError, match="No JVP defined"):
    f(1.0)
  f.defjvp(lambda p, t: (p[0], (t[0], t[0])))
  with pytest.raises(TypeError, match="equal container"):
    revax.grad(f)(1.0)
  f.defjvp(lambda p, t: p[0])
  with pytest.raises(TypeError, match="must produce a pair"):
    revax.grad(f)(1.0)
  f.defjvp(lambda p, t: (p[0], rnp.asarray(t[0]).astype(np.int32)))
  with pytest.raises(TypeError, match="corresponding shapes and dtypes"):
    revax.jvp(f, (1.0,), (1.0,))

  @revax.custom_vjp
  def g(x, y):
    return x * y

  with pytest.raises(AttributeError, match="No VJP defined"):
    g(1.0, 2.0)
  g.defvjp(lambda x, y: (x * y, (x, y)), lambda res, ct: (ct,))
  with pytest.raises(TypeError, match="tuple of length equal to the number of arguments"):
    revax.grad(g)(1.0, 2.0)
  g.defvjp(lambda x, y: x * y, lambda res, ct: (ct, ct))
  with pytest.raises(TypeError, match="must produce a pair"):
    revax.grad(g)(1.0, 2.0)
  g.defvjp(lambda x, y: (x * y, None), lambda res, ct: (ct, rnp.ones(3)))
  with pytest.raises(ValueError, match="shape and dtype"):
    revax.grad(g, argnums=1)(1.0, 2.0)


def test_differentiating_a_closed_over_value_is_an_error():
  def outer(w):
    @revax.custom_jvp
    def f(x):
      return x * w
    f.defjvp(lambda p, t: (f(p[0]), t[0] * w))
    return f(2.0)

  with pytest.raises(TypeError, match="closed-over value"):
    revax.grad(outer)(3.0)


def test_eager_call_runs_the_function_and_integer_inputs_get_no_cotangent():
  calls = []

  @revax.custom_vjp
  def h(x, n):
    calls.append(1)
    return x * n

  h.defvjp(lambda x, n: (x * n, n), lambda n, g: (g * n, None))
  assert float(h(2.0, 3)) == 6.0 and len(calls) == 1
  assert float(revax.grad(h)(2.0, 3)) == 3.0
  assert float(revax.jit(revax.grad(h))(2.0, 3)) == 3.0


# bwd outputs that are pytree prefixes of the primal arguments: each cotangent leaf stands for
# every primal leaf under it (flax's nnx custom_vjp returns States of arrays where the primal
# holds Variables over them), None for zeros; deeper or different structures are TypeErrors
BWD_PREFIX_CASES = {
    "exact": lambda g, x: ({"a": g * x["b"], "b": g * x["a"]}, g),
    "dict leaf over a pair": lambda g, x: ({"a": g, "b": g}, g),
    "whole arg one leaf": lambda g, x: (g, g),
    "none for an arg": lambda g, x: (None, g),
    "none inside": lambda g, x: ({"a": None, "b": g}, g),
    "deeper than the primal": lambda g, x: ({"a": g, "b": (g, g)}, g),
    "missing key": lambda g, x: ({"a": g}, g),
    "list for tuple": lambda g, x: [{"a": g, "b": g}, g],
}


@pytest.mark.parametrize("case", list(BWD_PREFIX_CASES))
def test_custom_vjp_bwd_cotangents_may_be_prefixes_of_the_primal_as_in_jax(case):
  def run(lib):
    @lib.custom_vjp
    def f(x, y):
      return (x["a"] * x["b"][0] + x["b"][1]) * y

    def fwd(x, y):
      return f(x, y), (x, y)

    def bwd(res, g):
      x, _ = res
      return BWD_PREFIX_CASES[case](g, {"a": x["a"], "b": x["b"][0]})
    f.defvjp(fwd, bwd)
    x = {"a": np.float32(2.0), "b": (np.float32(3.0), np.float32(5.0))}
    try:
      grads = lib.grad(lambda x, y: f(x, y), argnums=(0, 1))(x, np.float32(7.0))
    except (TypeError, ValueError) as e:
      return type(e).__name__
    return [np.asarray(v).tolist() for v in lib.tree_util.tree_leaves(grads)]

  assert run(revax) == run(jax)
