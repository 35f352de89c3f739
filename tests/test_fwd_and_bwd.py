"""revax.fwd_and_bwd, revax.closure_convert and revax.make_user_context against jax 0.10.2:
forward outputs and backward cotangents (int and tuple argnums, has_aux, jitted or not), the
backward pass compiled once across forward passes, closure conversion inside a custom_vjp that
differentiates the hoisted values (eagerly, under jit and under vmap), and user contexts that
make jit retrace."""
from functools import partial

import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.platform_tolerances import allclose_tol

jax = pytest.importorskip("jax")
jnp = jax.numpy

rng = np.random.default_rng(8)
X = rng.standard_normal((4, 3)).astype(np.float32)
W = rng.standard_normal((3, 2)).astype(np.float32)
CT = rng.standard_normal((4, 2)).astype(np.float32)


def _close(a, b, tol=1e-5):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
    # (on a TPU, jitted tanh/sin are the chip's: platform_tolerances.TRANSCENDENTAL)
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), **allclose_tol(rtol=tol, atol=tol))


@pytest.mark.parametrize("jitted", [True, False])
def test_fwd_and_bwd_match_jax(jitted):
  f = lambda np_: lambda x, w, scale: np_.tanh(x @ w) * scale
  for argnums in (1, (0, 1)):
    rf, rb = revax.fwd_and_bwd(f(rnp), argnums=argnums, jitted=jitted)
    jf, jb = jax.fwd_and_bwd(f(jnp), argnums=argnums, jitted=jitted)
    y, res = rf(X, W, 2.0)
    jy, jres = jf(X, W, 2.0)
    _close(y, jy)
    _close(rb(res, CT), jb(jres, CT))
  aux_f = lambda np_: lambda x, w: (np_.sum(np_.sin(x @ w)), {"n": x.shape[0]})
  y, res, aux = revax.fwd_and_bwd(aux_f(rnp), argnums=0, has_aux=True, jitted=jitted)[0](X, W)
  jy, jres, jaux = jax.fwd_and_bwd(aux_f(jnp), argnums=0, has_aux=True, jitted=jitted)[0](X, W)
  _close((y, aux["n"]), (jy, jaux["n"]))


def test_bwd_compiles_once_across_forward_passes():
  fwd, bwd = revax.fwd_and_bwd(lambda x, w: rnp.sin(x @ w), argnums=(0, 1))
  for i in range(3):
    y, res = fwd(X * (i + 1), W)
    bwd(res, CT)
  assert fwd._cache_size() == 1 and bwd._cache_size() == 1
  with pytest.raises(TypeError, match="residuals fwd returned"):
    bwd((1.0,), CT)


def _minimize_like(lib, np_):
  """The pattern of closure_convert's docstring: a custom_vjp over a function argument whose
  closed-over values are hoisted and differentiated by the rule."""
  @partial(lib.custom_vjp, nondiff_argnums=(0,))
  def apply(fn, x0, *args):
    return fn(x0, *args)

  def fwd(fn, x0, *args):
    return apply(fn, x0, *args), (x0, args)

  def rev(fn, res, g):
    x0, args = res
    return lib.vjp(fn, x0, *args)[1](g)

  apply.defvjp(fwd, rev)

  def loss(w):
    objective = lambda x: np_.sum(np_.sin(x * w) ** 2)
    converted, hoisted = lib.closure_convert(objective, X[0])
    return apply(converted, X[0], *hoisted)
  return loss


def test_closure_convert_inside_custom_vjp_matches_jax():
  w = np.array([0.5, -1.0, 2.0], np.float32)
  want = jax.grad(_minimize_like(jax, jnp))(w)
  _close(revax.grad(_minimize_like(revax, rnp))(w), want)
  _close(revax.jit(revax.grad(_minimize_like(revax, rnp)))(w), want)
  ws = np.stack([w, 2 * w])
  _close(revax.vmap(revax.grad(_minimize_like(revax, rnp)))(ws),
         jax.vmap(jax.grad(_minimize_like(jax, jnp)))(ws))


def test_closure_convert_hoists_only_what_may_be_differentiated():
  converted, hoisted = revax.closure_convert(lambda x: x * W.sum(), X[0])
  assert hoisted == [] and np.allclose(converted(X[0]), X[0] * W.sum())

  def under_grad(w):
    converted, hoisted = revax.closure_convert(lambda x: x * w, X[0])
    assert len(hoisted) == 1
    return rnp.sum(converted(X[0], *hoisted))
  revax.grad(under_grad)(np.float32(2.0))
  converted, _ = revax.closure_convert(lambda x: x, X[0])
  with pytest.raises(TypeError, match="same Pytree structure"):
    converted((X[0],))


def test_make_user_context_keys_jit_caches_like_jax():
  for lib in (revax, jax):
    traces = []

    @lib.jit
    def f(x):
      traces.append(1)
      return x * 2

    ctx = lib.make_user_context(default_value=None)
    f(1.0)
    with ctx(1):
      f(1.0)
      f(1.0)
    with ctx(2):
      f(1.0)
    f(1.0)
    assert len(traces) == 3, lib.__name__
  ctx = revax.make_user_context("a")
  assert ctx.value == "a"
  with ctx("b"):
    assert ctx.value == "b"
  assert ctx.value == "a"
