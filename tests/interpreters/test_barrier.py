"""optimization_barrier and fenced_call: identity semantics under every transformation, and the
StableHLO each lowers to."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import revax
import revax.lax as lax
import revax.numpy as rnp
from revax._src.core.typecheck import check_jaxpr
from revax._src.interpreters.barrier import fenced_call
from revax.test_util import check_vmap
from tests.gradcheck import check_grads
from tests.platform_tolerances import allclose_tol

X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)


def test_optimization_barrier_is_the_identity_under_transformations():
  f = lambda x, y: lax.optimization_barrier((rnp.sin(x), {"y": y * 2}))
  out = f(X, 3.0)
  np.testing.assert_allclose(out[0], np.sin(X), rtol=1e-6)
  assert float(out[1]["y"]) == 6.0
  jitted = revax.jit(f)(X, 3.0)
  np.testing.assert_allclose(jitted[0], np.sin(X), rtol=1e-6)
  text = revax.jit(f).lower(X, 3.0).as_text()
  assert '"stablehlo.optimization_barrier"' in text
  g = lambda x: (lax.optimization_barrier(rnp.sin(x)) * x).sum()
  check_grads(g, (X,), order=2, modes=("fwd", "rev"))
  check_vmap(lambda x: lax.optimization_barrier(x * 2), (X,), in_axes=1)
  check_jaxpr(revax.make_jaxpr(revax.grad(g))(X))


def test_fenced_call_evaluates_its_jaxpr_inside_a_conditional():
  closed = revax.make_jaxpr(lambda x: rnp.tanh(x) * 2)(X)
  f = lambda x: fenced_call(closed, x)[0]
  np.testing.assert_allclose(f(X), np.tanh(X) * 2, **allclose_tol(rtol=1e-6))
  np.testing.assert_allclose(revax.jit(f)(X), np.tanh(X) * 2, **allclose_tol(rtol=1e-6))
  text = revax.jit(f).lower(X).as_text()
  assert '"stablehlo.if"' in text and '"stablehlo.rng"' in text
  check_grads(lambda x: f(x).sum(), (X,), order=2, modes=("fwd", "rev"))
  check_vmap(f, (np.stack([X, -X]),), in_axes=0)
  check_jaxpr(revax.make_jaxpr(revax.grad(lambda x: f(x).sum()))(X))
  grads = revax.jit(revax.grad(lambda x: f(x).sum()))(X)
  np.testing.assert_allclose(grads, 2 * (1 - np.tanh(X) ** 2), **allclose_tol(rtol=1e-5))


def test_fenced_calls_share_one_opaque_predicate_per_body():
  """One `rng` per function body or region, whatever the number of fenced calls in it: each
  call is its own conditional on the shared predicate, and nested bodies (a loop's, a branch's)
  make their own, so the module stays well formed."""
  closed = revax.make_jaxpr(lambda x: rnp.tanh(x) * 2)(X)
  fence = lambda v: fenced_call(closed, v)[0]

  def f(x):
    y = fence(fence(fence(x)))
    z, _ = lax.scan(lambda c, _: (fence(fence(c)), None), y, None, length=2)
    return lax.cond(x.sum() > 0, fence, lambda v: -v, z)

  text = revax.jit(f).lower(X).as_text()
  assert text.count('"stablehlo.rng"') == 3  # main, the loop body, the true branch
  assert text.count('"stablehlo.if"') == 6  # one per call
  g = lambda v: np.tanh(v) * 2
  for x in (X + 0.5, X - 0.5):  # the true branch (sum > 0), then the false one
    z = x
    for _ in range(7):  # three calls, then two per loop step
      z = g(z)
    np.testing.assert_allclose(revax.jit(f)(x), g(z) if x.sum() > 0 else -z,
                               **allclose_tol(rtol=1e-5))


_KEPT_BARRIER_SCRIPT = textwrap.dedent("""
    import json
    import numpy as np
    import revax, revax.numpy as rnp
    from revax._src.interpreters import barrier, mlir
    from revax.reversible import reversible_block, reversible_sequence

    layer = lambda w, x: rnp.tanh(x @ w)
    block = reversible_block(layer, layer)
    width, batch = 64, 256
    rng = np.random.default_rng(0)

    def run(method, depth):
      stack = reversible_sequence(block, method=method)
      loss = lambda ws, a, b: sum((y * y).sum() for y in stack(ws, a, b))
      ws = [tuple(rng.standard_normal((width, width), np.float32) * 0.1 for _ in range(2))
            for _ in range(depth)]
      a, b = (rng.standard_normal((batch, width)).astype(np.float32) for _ in range(2))
      lowered = revax.jit(revax.grad(loss)).lower(ws, a, b)
      text = lowered.as_text()
      compiled = lowered.compile()
      grads = compiled(ws, a, b)
      plain = reversible_sequence(block, method="plain")
      want = revax.jit(revax.grad(lambda ws, a, b: sum((y * y).sum()
                                                       for y in plain(ws, a, b))))(ws, a, b)
      err = max(float(np.max(np.abs(np.asarray(g) - np.asarray(w))))
                for gw, ww in zip(grads, want) for g, w in zip(gw, ww))
      return {"temp": compiled.memory_analysis().temp_size_in_bytes, "err": err,
              "if": text.count('"stablehlo.if"'),
              "barrier": text.count('"stablehlo.optimization_barrier"')}

    dict.__setitem__(mlir.lowerings, barrier.fenced_call_p, barrier.lower_fenced_call_as_barrier)
    print(json.dumps({f"{m} {d}": run(m, d) for m in ("invertible", "checkpoint", "plain")
                      for d in (2, 10)}))
""")


def test_the_barrier_lowering_of_fenced_call_fences_where_barriers_survive_cse():
  """`lower_fenced_call_as_barrier`, the fence a backend that keeps barriers can use (a TPU),
  checked on XLA:CPU with its barrier expander disabled (which then keeps barriers as a TPU
  does): invertible's walk stays flat in XLA's temp memory as the network deepens (nothing
  merged with the forward), checkpoint stores less per block than plain grad (its recomputation
  not merged either), no conditional is left, and the gradients are plain grad's."""
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  env = {**os.environ, "XLA_FLAGS": "--xla_disable_hlo_passes=cse_barrier_expander",
         "REVAX_PLATFORMS": "cpu",  # XLA:CPU with barriers kept (a chip is this process's)
         "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
  out = subprocess.run([sys.executable, "-c", _KEPT_BARRIER_SCRIPT], env=env, cwd=root,
                       capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  r = json.loads(out.stdout.strip().splitlines()[-1])
  activation = 256 * 64 * 4
  for key, res in r.items():
    assert res["err"] < 1e-3, (key, res)
    assert res["if"] == 0, (key, res)
  assert r["invertible 2"]["barrier"] == r["invertible 10"]["barrier"] == 1  # the walk's
  assert r["checkpoint 10"]["barrier"] == 10  # one per block
  grow = {m: (r[f"{m} 10"]["temp"] - r[f"{m} 2"]["temp"]) / 8 / activation
          for m in ("invertible", "checkpoint", "plain")}
  # (in activations per block; a few bytes per block are XLA's small buffers)
  assert grow["invertible"] < 0.01, (grow, r)
  assert grow["checkpoint"] < 2.01 and grow["plain"] >= 4, (grow, r)


def _lowered_for(fun, platform, *args):
  from revax._src.core.jaxpr import ClosedJaxpr
  from revax._src.interpreters import mlir
  closed = revax.make_jaxpr(fun)(*args)
  return mlir.lower_jaxpr_to_module(ClosedJaxpr(closed.jaxpr, closed.consts), "main",
                                    platform=platform)


def test_checkpoint_fences_with_a_barrier_on_a_tpu_and_a_conditional_elsewhere():
  """checkpoint's backward steps are fenced as jax.checkpoint's on a TPU (a barrier: XLA:TPU
  keeps barriers through CSE, and there it measured faster than the conditional), by the
  conditional on the CPU (whose XLA expands barriers before CSE); invertible's walk keeps the
  conditional on both (measured faster on the chip). The gradients are the same either way."""
  w = np.full((4, 4), 0.1, np.float32)
  x = np.ones((2, 4), np.float32)
  block = revax.checkpoint(lambda w, x: rnp.tanh(x @ w))
  ckpt = revax.grad(lambda w, x: block(w, block(w, x)).sum())
  tpu, cpu = (_lowered_for(ckpt, p, w, x) for p in ("tpu", "cpu"))
  assert tpu.count("stablehlo.optimization_barrier") == 2 and "stablehlo.if" not in tpu, tpu
  assert cpu.count("stablehlo.if") == 2 and "optimization_barrier" not in cpu, cpu
  rev = revax.invertible(lambda x: (x[0], x[1] + rnp.tanh(x[0] @ w)))
  inv = revax.grad(lambda x: rev((x, x))[1].sum())
  assert "stablehlo.if" in _lowered_for(inv, "tpu", x)
  from revax._src.runtime.client import get_backend
  backend = get_backend()  # the TPU's module, run on this backend: the gradients are plain grad's
  outs = backend.compile(tpu).execute([backend.buffer_from_numpy(a) for a in (w, x)])
  np.testing.assert_allclose(outs[0].to_numpy(), revax.grad(  # tanh: TRANSCENDENTAL on a TPU
      lambda w, x: rnp.tanh(rnp.tanh(x @ w) @ w).sum())(w, x), **allclose_tol(rtol=1e-6))


def test_lowered_text_is_the_compiling_platforms(monkeypatch):
  """`Lowered.as_text()` is the module lowered for the platform the program compiles for (as
  jax's): on a TPU checkpoint's fence is the barrier there, not the CPU's conditional."""
  from types import SimpleNamespace

  from revax._src.interpreters import dispatch
  block = revax.checkpoint(lambda x: rnp.tanh(rnp.tanh(x)))
  f = revax.jit(revax.grad(lambda x: block(x).sum()))
  x = np.ones(3, np.float32)
  platform = dispatch.default_compile_backend().platform
  here = f.lower(x).as_text()
  assert ("optimization_barrier" in here) == (platform == "tpu"), here
  monkeypatch.setattr(dispatch, "default_compile_backend",
                      lambda: SimpleNamespace(platform="tpu"))
  tpu = revax.jit(revax.grad(lambda x: block(x).sum())).lower(x).as_text()
  assert "stablehlo.optimization_barrier" in tpu and "stablehlo.if" not in tpu, tpu
