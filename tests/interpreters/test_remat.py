"""checkpoint: gradients equal plain reverse mode, the backward pass recomputes (behind a barrier)
instead of storing, policies decide what is stored, and XLA's temp memory shows the saving."""
import numpy as np
import pytest

import revax
import revax.lax as lax
import revax.numpy as rnp
from revax import ad_checkpoint
from revax._src.core.typecheck import check_jaxpr
from tests.gradcheck import check_grads
from tests.platform_tolerances import allclose_tol

jax = pytest.importorskip("jax")
jnp = jax.numpy

rng = np.random.default_rng(0)
W = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
X = rng.standard_normal((3, 4)).astype(np.float32)


def _functions(np_, lax_):
  return {
      "sin_dot": lambda w, x: np_.sin(x @ w).sum(),
      "tanh_mlp": lambda w, x: np_.tanh(np_.tanh(x @ w) @ w).sum(),
      "exp_log": lambda w, x: np_.log1p(np_.exp(x * w[0])).sum(),
      "softmax": lambda w, x: (np_.exp(x @ w) / np_.exp(x @ w).sum(axis=1, keepdims=True)
                               ).max(),
      "pow_sqrt": lambda w, x: np_.sqrt((x @ w) ** 2 + 1.0).sum(),
      "slicing": lambda w, x: ((x @ w)[:, 1:3] * w[0, :2]).sum(),
      "reductions": lambda w, x: (x @ w).max(axis=0).sum() + np_.cos(w).prod(),
      "where": lambda w, x: np_.where(x @ w > 0, x @ w, 0.1 * (x @ w)).sum(),
      "concat": lambda w, x: np_.concatenate([np_.sin(x), x @ w]).sum() ** 2 * 0.1,
      "integer_pow": lambda w, x: lax_.integer_pow(x @ w, 3).sum() + (w ** 2).sum(),
  }


NAMES = sorted(_functions(rnp, lax))


@pytest.mark.parametrize("name", NAMES)
def test_grad_of_checkpoint_equals_grad(name):
  f = _functions(rnp, lax)[name]
  expected = revax.grad(f, argnums=(0, 1))(W, X)
  for fc in (revax.checkpoint(f), revax.checkpoint(revax.checkpoint(f)),
             revax.checkpoint(f, policy=revax.checkpoint_policies.dots_saveable)):
    got = revax.grad(fc, argnums=(0, 1))(W, X)
    jitted = revax.jit(revax.grad(fc, argnums=(0, 1)))(W, X)
    for e, g, j in zip(expected, got, jitted):
      np.testing.assert_allclose(g, e, **allclose_tol(rtol=1e-5, atol=1e-5))
      np.testing.assert_allclose(j, e, **allclose_tol(rtol=1e-5, atol=1e-5))
  jf = _functions(jnp, jax.lax)[name]
  for e, j in zip(jax.grad(jax.checkpoint(jf), argnums=(0, 1))(W, X), expected):
    np.testing.assert_allclose(np.asarray(j), np.asarray(e), **allclose_tol(rtol=2e-5, atol=2e-5))


@pytest.mark.parametrize("name", NAMES[:4])
def test_checkpoint_under_vmap_and_check_grads(name):
  f = revax.checkpoint(_functions(rnp, lax)[name])
  xs = np.stack([X, X * 0.5, -X])
  per_example = revax.vmap(revax.grad(f), in_axes=(None, 0))(W, xs)
  loop = [revax.grad(_functions(rnp, lax)[name])(W, x) for x in xs]
  np.testing.assert_allclose(per_example, np.stack(loop), rtol=1e-5, atol=1e-5)
  grad_of_vmap = revax.grad(lambda w: revax.vmap(f, in_axes=(None, 0))(w, xs).sum())(W)
  np.testing.assert_allclose(grad_of_vmap, np.sum(loop, axis=0), rtol=1e-4, atol=1e-4)
  check_grads(lambda w: f(w, X), (W,), order=2, modes=("fwd", "rev"))


def _names(jaxpr):
  out = []
  for eqn in jaxpr.eqns:
    out.append(eqn.primitive.name)
    for p in eqn.params.values():
      if hasattr(p, "jaxpr") and hasattr(p.jaxpr, "eqns"):
        out += _names(p.jaxpr)
  return out


def test_backward_pass_recomputes_inside_a_fence():
  f = lambda w, x: rnp.sin(rnp.sin(x @ w)).sum()
  plain = revax.make_jaxpr(revax.grad(f))(W, X)
  remat = revax.make_jaxpr(revax.grad(revax.checkpoint(f)))(W, X)
  no_cse = revax.make_jaxpr(revax.grad(revax.checkpoint(f, prevent_cse=False)))(W, X)
  for j in (plain, remat, no_cse):
    check_jaxpr(j)
  assert _names(plain).count("sin") == 2 and "fenced_call" not in _names(plain)
  # the backward recomputes x @ w and the inner sin (the outer one's value is never needed),
  # inside one fenced call that also takes the cotangent
  assert _names(remat).count("sin") == 3 and _names(remat).count("dot_general") == 3
  (fence,) = [e for e in remat.eqns if e.primitive.name == "fenced_call"]
  assert [e.primitive.name for e in fence.params["jaxpr"].eqns].count("sin") == 1
  assert fence.invars[-1].aval.shape == ()  # the cotangent of the scalar output
  assert "fenced_call" not in _names(no_cse) and _names(no_cse).count("sin") == 3
  text = revax.jit(revax.grad(revax.checkpoint(f))).lower(W, X).as_text()
  assert '"stablehlo.if"' in text and '"stablehlo.rng"' in text


def test_nested_checkpoints_fence_each_backward_step():
  """A checkpoint of checkpoints: the outer backward step is a conditional whose branch holds
  the inner ones, each its own conditional on a predicate made in that branch."""
  inner = revax.checkpoint(lambda w, x: rnp.sin(x @ w))
  outer = revax.checkpoint(lambda w, x: inner(w, inner(w, x)).sum())
  g = revax.jit(revax.grad(outer, argnums=(0, 1)))
  text = g.lower(W, X).as_text()
  assert text.count('"stablehlo.if"') == 3 and text.count('"stablehlo.rng"') == 2
  expected = jax.grad(lambda w, x: jnp.sin(jnp.sin(x @ w) @ w).sum(), argnums=(0, 1))(W, X)
  for got, want in zip(g(W, X), expected, strict=True):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_policies_decide_what_is_saved():
  def f(w, x):
    h = ad_checkpoint.checkpoint_name(rnp.sin(x @ w), "hidden")
    return rnp.tanh(h @ w).sum()

  def described(fun):
    return [d for _, d in ad_checkpoint.saved_residuals(fun, W, X)]

  plain = described(f)
  assert "output of cos" in plain and len(plain) > 2
  assert described(revax.checkpoint(f)) == ["from the argument w", "from the argument x"]
  dots = described(revax.checkpoint(f, policy=revax.checkpoint_policies.dots_saveable))
  assert dots.count("output of dot_general") == 2 and "output of cos" not in dots
  names = described(revax.checkpoint(
      f, policy=revax.checkpoint_policies.save_only_these_names("hidden")))
  assert names == ["from the argument w", "from the argument x", "output of name"]
  everything = described(revax.checkpoint(
      f, policy=revax.checkpoint_policies.everything_saveable))
  assert len(everything) == len(plain)
  for policy in (None, revax.checkpoint_policies.dots_saveable,
                 revax.checkpoint_policies.save_only_these_names("hidden")):
    g = revax.grad(revax.checkpoint(f, policy=policy))(W, X)
    np.testing.assert_allclose(g, revax.grad(f)(W, X), rtol=1e-5, atol=1e-6)


def test_print_saved_residuals(capsys):
  ad_checkpoint.print_saved_residuals(revax.checkpoint(lambda w, x: rnp.sin(x @ w).sum()), W, X)
  assert capsys.readouterr().out.splitlines() == ["f32[4,4] from the argument w",
                                                  "f32[3,4] from the argument x"]


def test_transpose_makes_typed_zeros_for_unused_and_integer_inputs():
  f = revax.checkpoint(lambda x, y, n: (rnp.sin(x) * 2.0).sum() + 0.0 * n)
  gx, gy = revax.grad(f, argnums=(0, 1))(X, np.float32(3.0), 2)
  np.testing.assert_allclose(gx, 2 * np.cos(X), rtol=1e-6)
  assert np.asarray(gy).dtype == np.float32 and float(gy) == 0.0
  (gn,) = revax.grad(f, argnums=(2,), allow_int=True)(X, np.float32(3.0), 2)
  assert np.asarray(gn).dtype == revax.dtypes.float0


def test_python_body_runs_once_under_jit_of_grad():
  counts = {"revax": 0, "jax": 0}

  def body(np_, key):
    def f(w, x):
      counts[key] += 1
      return np_.sin(x @ w).sum()
    return f

  revax.jit(revax.grad(revax.checkpoint(body(rnp, "revax"))))(W, X)
  jax.jit(jax.grad(jax.checkpoint(body(jnp, "jax"))))(W, X)
  assert counts["revax"] <= counts["jax"]


def test_static_argnums_and_errors():
  f = revax.checkpoint(lambda x, n: rnp.sin(x) ** n, static_argnums=(1,))
  np.testing.assert_allclose(revax.grad(lambda x: f(x, 3).sum())(X),
                             3 * np.sin(X) ** 2 * np.cos(X), rtol=1e-5)
  with pytest.raises(TypeError, match="checkpoint expects a callable"):
    revax.checkpoint(3)
  with pytest.raises(TypeError, match="policy must be a callable"):
    revax.checkpoint(rnp.sin, policy="dots")
  with pytest.raises(TypeError, match="expects a string name"):
    ad_checkpoint.checkpoint_name(X, 3)


def _residual_mlp(np_, remat, depth=64):
  def block(w, h):
    return h + np_.tanh(h @ w)
  block = remat(block) if remat else block

  def loss(ws, x):
    for w in ws:
      x = block(w, x)
    return (x ** 2).sum()
  return loss


def test_checkpointed_residual_mlp_xla_temp_is_a_tenth_of_plain_grad():
  """64 blocks, width 256, batch 64: checkpointing every block stores each block's input only,
  not its hidden activations, and the fence keeps XLA from merging the recomputation back into
  the forward pass; XLA's temp buffer shows it (memory, not time). The fence is one conditional
  per block and one opaque predicate for the whole backward pass."""
  ws = [np.zeros((256, 256), np.float32) for _ in range(64)]
  x = np.ones((64, 256), np.float32)
  temp = {}
  for label, remat in (("plain", None), ("checkpoint", revax.checkpoint)):
    lowered = revax.jit(revax.grad(_residual_mlp(rnp, remat))).lower(ws, x)
    temp[label] = lowered.compile().memory_analysis().temp_size_in_bytes
    text = lowered.as_text()
  assert text.count('"stablehlo.if"') == 64 and text.count('"stablehlo.rng"') == 1
  assert temp["checkpoint"] <= 0.1 * temp["plain"], temp
