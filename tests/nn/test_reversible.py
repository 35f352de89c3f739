"""revax.reversible: the additive coupling, the reversible residual block and stacks of them.

Values and gradients against the same network written in jax (plain reverse mode), for every
method (invertible, checkpoint per block, plain) with the blocks in a Python loop and in a scan;
inverses round trip; and what reverse mode stores, read two ways and never timed: the residuals
of the VJP (`ad_checkpoint.saved_residuals`, bytes of activation-shaped values) and XLA's temp
memory of the compiled `jit(grad)`: flat in depth for invertible, linear for plain and for
checkpoint per block."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax import ad_checkpoint
from revax import reversible as R
from tests.platform_tolerances import NO_TEMP_BYTES, allclose_tol, scaled_tol, skip_on_tpu

jax = pytest.importorskip("jax")
jnp = jax.numpy

W, B = 16, 8  # stream width and batch: activations are (B, W), weights (W, W)
CASES = [(m, s) for m in R.METHODS for s in (False, True)]


def _layer(np_):
  return lambda w, x: np_.tanh(x @ w)


def _attention(np_, nn):
  """A pre-LayerNorm single-head self-attention over axis 0 of a (T, D) stream."""
  def f(w, x):
    wq, wk, wv = w
    mu = x.mean(-1, keepdims=True)
    h = (x - mu) / np_.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    scores = (h @ wq) @ (h @ wk).T / np.sqrt(x.shape[-1])
    return nn.softmax(scores, axis=-1) @ (h @ wv)
  return f


def _weights(depth, n=2, seed=0, width=W):
  rng = np.random.default_rng(seed)
  return [tuple((rng.standard_normal((width, width)) * 0.3).astype(np.float32)
                for _ in range(n)) for _ in range(depth)]


def _inputs(seed=1, batch=B, width=W):
  rng = np.random.default_rng(seed)
  return tuple(rng.standard_normal((batch, width)).astype(np.float32) for _ in range(2))


def _revax_loss(method, scan_layers, block=None):
  block = block or R.reversible_block(_layer(rnp), _layer(rnp))
  stack = R.reversible_sequence(block, method=method, scan_layers=scan_layers)

  def loss(params, x1, x2):
    y1, y2 = stack(params, x1, x2)
    return (y1 * y1).sum() + (y2 * np.arange(y2.shape[-1], dtype=np.float32)).sum()
  return loss


def _jax_loss(params, x1, x2):
  for w1, w2 in params:
    x1 = x1 + jnp.tanh(x2 @ w1)
    x2 = x2 + jnp.tanh(x1 @ w2)
  return (x1 * x1).sum() + (x2 * np.arange(x2.shape[-1], dtype=np.float32)).sum()


def _params(depth, scan_layers, **kw):
  ws = _weights(depth, **kw)
  return R.stack_params(ws) if scan_layers else ws


# --- values, inverses, gradients -----------------------------------------------------------------
def test_coupling_and_block_values_and_inverses():
  (w1, w2), (x1, x2) = _weights(1)[0], _inputs()
  coupling = R.additive_coupling(_layer(rnp))
  y1, y2 = coupling(w1, x1, x2)
  np.testing.assert_allclose(y1, x1 + np.tanh(x2 @ w1), rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(y2, x2)
  for got, want in zip(coupling.inverse(w1, y1, y2), (x1, x2), strict=True):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
  block = R.reversible_block(_layer(rnp), _layer(rnp))
  y1, y2 = block((w1, w2), x1, x2)
  np.testing.assert_allclose(y1, x1 + np.tanh(x2 @ w1), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(y2, x2 + np.tanh(np.asarray(y1) @ w2), rtol=1e-5, atol=1e-5)
  for got, want in zip(block.inverse((w1, w2), y1, y2), (x1, x2), strict=True):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method,scan_layers", CASES)
def test_sequence_values_inverse_and_gradients_match_jax(method, scan_layers):
  depth = 3
  params, (x1, x2) = _params(depth, scan_layers), _inputs()
  loss = _revax_loss(method, scan_layers)
  stack = R.reversible_sequence(R.reversible_block(_layer(rnp), _layer(rnp)), method=method,
                                scan_layers=scan_layers)
  for got, want in zip(stack.inverse(params, *stack(params, x1, x2)), (x1, x2), strict=True):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
  want_value, want_grads = jax.value_and_grad(_jax_loss, argnums=(0, 1, 2))(
      _weights(depth), x1, x2)
  if scan_layers:  # compare per-block weight gradients with the stacked ones
    want_grads = (jax.tree_util.tree_map(lambda *ws: np.stack(ws), *want_grads[0]),
                  *want_grads[1:])
  for fn in (revax.value_and_grad(loss, argnums=(0, 1, 2)),
             revax.jit(revax.value_and_grad(loss, argnums=(0, 1, 2)))):
    value, grads = fn(params, x1, x2)
    np.testing.assert_allclose(value, want_value, **allclose_tol(rtol=1e-5))
    got, want = revax.tree_util.tree_leaves(grads), jax.tree_util.tree_leaves(want_grads)
    assert len(got) == len(want) == (4 if scan_layers else 2 * depth + 2)
    for g, e in zip(got, want, strict=True):  # (a gradient element of 0.12 beside ones of 35:
      # on a TPU its error is of the scale of its array's terms, the chip's tanh: scaled_tol)
      np.testing.assert_allclose(g, e, **scaled_tol(e, rtol=2e-4, atol=2e-5))


def test_attention_block_gradient_matches_jax_and_vmaps():
  """A transformer-style block (F attention, G an MLP, both pre-LayerNorm) under invertible:
  the gradient equals jax's plain one, per example under vmap too."""
  f, g = _attention(rnp, revax.nn), _attention(jnp, jax.nn)
  mlp = lambda np_: lambda w, x: np_.tanh(x @ w[0]) @ w[1]
  weights = [(a[:3], a[3:]) for a in _weights(2, n=5, seed=3)]
  x1, x2 = _inputs(seed=4)
  stack = R.reversible_sequence(R.reversible_block(f, mlp(rnp)))

  def revax_loss(p, a, b):
    return sum((y ** 2).sum() for y in stack(p, a, b))

  def jax_loss(p, a, b):
    for pf, pg in p:
      a = a + g(pf, b)
      b = b + mlp(jnp)(pg, a)
    return (a ** 2).sum() + (b ** 2).sum()
  got = revax.tree_util.tree_leaves(revax.jit(revax.grad(revax_loss))(weights, x1, x2))
  want = jax.tree_util.tree_leaves(jax.jit(jax.grad(jax_loss))(weights, x1, x2))
  for a, b in zip(got, want, strict=True):
    np.testing.assert_allclose(a, b, **allclose_tol(rtol=5e-4, atol=5e-5))
  xs1, xs2 = np.stack([x1, x1[::-1]]), np.stack([x2, -x2])
  got = revax.vmap(revax.grad(revax_loss, argnums=1), (None, 0, 0))(weights, xs1, xs2)
  want = jax.jit(jax.vmap(jax.grad(jax_loss, argnums=1), (None, 0, 0)))(weights, xs1, xs2)
  np.testing.assert_allclose(got, want, **allclose_tol(rtol=5e-4, atol=5e-5))


# --- what reverse mode stores --------------------------------------------------------------------
def _activation_residual_bytes(loss, params, x1, x2):
  """Bytes of the VJP's residuals shaped like activations ((B, W), or (depth, B, W) stacked by
  a scan); the weights (W, W) and the loss's own residuals are left out."""
  saved = ad_checkpoint.saved_residuals(loss, params, x1, x2)
  return sum(int(np.prod(a.shape)) * a.dtype.itemsize for a, _ in saved
             if a.shape[-2:] == (B, W))


@pytest.mark.parametrize("scan_layers", [False, True])
def test_invertible_residuals_are_constant_in_depth(scan_layers):
  act = B * W * 4
  x1, x2 = _inputs()
  by_method = {m: [_activation_residual_bytes(_revax_loss(m, scan_layers),
                                              _params(d, scan_layers), x1, x2) for d in (1, 4, 8)]
               for m in R.METHODS}
  inv = by_method["invertible"]
  assert inv[0] == inv[1] == inv[2] <= 3 * act, inv  # the two outputs (+ the loss's y)
  for m in ("plain", "checkpoint"):
    got = by_method[m]
    per_block = (got[2] - got[1]) / 4
    assert per_block >= 2 * act, (m, got)  # at least both streams' inputs per block
    assert got[1] - got[0] == 3 * per_block, (m, got)  # linear in depth


def test_invertible_saved_residuals_name_only_outputs_and_params():
  depth, (x1, x2) = 6, _inputs()
  saved = ad_checkpoint.saved_residuals(_revax_loss("invertible", False), _weights(depth), x1, x2)
  activations = [why for a, why in saved if a.shape == (B, W)]
  weights = [why for a, why in saved if a.shape == (W, W)]
  assert activations.count("output of invertible") == 2, activations
  assert len(activations) <= 3, activations  # the outputs, and the loss's own y1 * y1
  assert len(weights) == 2 * depth  # each weight once: the caller holds them anyway


def _compiled_temp(method, scan_layers, depth, width=64, batch=256):
  params = _params(depth, scan_layers, width=width)
  x1, x2 = _inputs(batch=batch, width=width)
  grad = revax.jit(revax.grad(_revax_loss(method, scan_layers)))
  return grad.lower(params, x1, x2).compile().memory_analysis().temp_size_in_bytes


@pytest.mark.parametrize("scan_layers", [False, True])
@skip_on_tpu(NO_TEMP_BYTES)
def test_compiled_temp_memory_flat_for_invertible_linear_otherwise(scan_layers):
  act = 64 * 256 * 4
  depths = (4, 8, 16)
  temps = {m: [_compiled_temp(m, scan_layers, d) for d in depths] for m in R.METHODS}
  inv = temps["invertible"]
  assert max(inv) - min(inv) <= act // 2, inv  # flat: no activation more at depth 16 than 4
  for m in ("plain", "checkpoint"):
    t = temps[m]
    # grows by at least one activation per block (plain: ~4, checkpoint per block: ~2)
    assert t[2] - t[1] >= 8 * act and t[1] - t[0] >= 4 * act, (m, t)
  assert temps["plain"][2] > 4 * inv[2], temps


# --- errors --------------------------------------------------------------------------------------
def test_errors():
  layer = _layer(rnp)
  with pytest.raises(TypeError, match="additive_coupling expects a callable"):
    R.additive_coupling(3)
  with pytest.raises(TypeError, match="reversible_block's g expects a callable"):
    R.reversible_block(layer, "g")
  with pytest.raises(TypeError, match="reversible_sequence expects a callable"):
    R.reversible_sequence(None)
  with pytest.raises(ValueError, match="method must be one of"):
    R.reversible_sequence(R.reversible_block(layer, layer), method="stored")
  stack = R.reversible_sequence(R.reversible_block(layer, layer))
  with pytest.raises(TypeError, match="list or tuple of per-block params"):
    stack({"w": _weights(1)[0]}, *_inputs())
  with pytest.raises(ValueError, match="at least one block"):
    R.stack_params([])


def test_reachable_as_revax_reversible_after_import_revax():
  import os
  import subprocess
  import sys
  code = ("import sys, revax; assert 'revax.reversible' not in sys.modules; "
          "print(revax.reversible.reversible_block.__module__)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
  assert out.stdout.strip() == "revax._src.nn.reversible"
