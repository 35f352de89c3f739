"""dot_general run time, revax vs JAX, side by side in one process.

Run: python benchmarks/bench_dot.py [--quick]

Measures the steady-state run time of
  - a jitted `vmap` of a `dot_general` whose batch dims sit in odd positions (both operands
    mapped, and only the lhs mapped), where revax's batching rule emits one dot_general and no
    transposes, and
  - a jitted training step of a matmul-heavy MLP (forward, gradient, SGD update).
Each library's call is timed in interleaved rounds (revax, JAX, revax, ...) so that load from other
processes hits both alike; a value is the median round's mean time per call, a ratio the median of
the per-round ratios (paired); revax's compiled program also runs directly on the runtime in the
same rounds (`timing.revax_program_directly`).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from timing import describe, libraries, revax_program_directly, row, time_interleaved

os.environ.setdefault("JAX_PLATFORMS", "cpu")

# (lhs per example, rhs per example): lhs (M, B, K), rhs (K, N, B); batch B and contracting K
# in odd positions; the vmapped axis V is inserted at lhs axis 2 and rhs axis 1.
M, B, K, N, V = 64, 16, 64, 64, 8
DOT_DIMS = (((2,), (0,)), ((1,), (2,)))
MLP_SIZES = (784, 1024, 1024, 1024, 10)
MLP_BATCH = 256


def vmapped_dot_calls(libs, both_mapped: bool):
  rng = np.random.default_rng(0)
  lhs = rng.standard_normal((M, B, V, K)).astype(np.float32)  # mapped at axis 2
  if both_mapped:
    rhs = rng.standard_normal((K, V, N, B)).astype(np.float32)  # mapped at axis 1
    in_axes = (2, 1)
  else:
    rhs = rng.standard_normal((K, N, B)).astype(np.float32)
    in_axes = (2, None)
  calls, outs = {}, {}
  for name, (lib, _) in libs.items():
    f = lib.jit(lib.vmap(lambda a, b, lib=lib: lib.lax.dot_general(a, b, DOT_DIMS),
                         in_axes=in_axes))
    a, b = lib.device_put(lhs), lib.device_put(rhs)
    outs[name] = np.asarray(f(a, b))
    calls[name] = lambda f=f, a=a, b=b: f(a, b).block_until_ready()
    if name == "revax":
      calls["revax direct"] = revax_program_directly(f, a, b)
  np.testing.assert_allclose(outs["revax"], outs["jax"], rtol=1e-4, atol=1e-3)
  return calls


def mlp_params(sizes=MLP_SIZES):
  rng = np.random.default_rng(0)
  return [(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m),
           np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]


def mlp_step_fn(lib, np_mod, learning_rate=1e-2):
  """One SGD step on a tanh MLP with a softmax cross-entropy loss."""
  def loss(params, x, labels):
    for w, b in params[:-1]:
      x = np_mod.tanh(x @ w + b)
    w, b = params[-1]
    logits = x @ w + b
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np_mod.log(np_mod.exp(shifted).sum(axis=1, keepdims=True))
    return -(log_probs * labels).sum() / x.shape[0]

  def step(params, x, labels):
    grads = lib.grad(loss)(params, x, labels)
    return lib.tree_util.tree_map(lambda p, g: p - learning_rate * g, params, grads)
  return lib.jit(step)


def mlp_step_calls(libs):
  rng = np.random.default_rng(1)
  x = rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32)
  labels = np.eye(MLP_SIZES[-1], dtype=np.float32)[rng.integers(0, MLP_SIZES[-1], MLP_BATCH)]
  calls, outs = {}, {}
  for name, (lib, np_mod) in libs.items():
    step = mlp_step_fn(lib, np_mod)
    params, dx, dl = lib.device_put(mlp_params()), lib.device_put(x), lib.device_put(labels)
    outs[name] = [np.asarray(w) for w, _ in step(params, dx, dl)]
    calls[name] = lambda step=step, p=params, dx=dx, dl=dl, lib=lib: \
        lib.block_until_ready(step(p, dx, dl))
    if name == "revax":
      calls["revax direct"] = revax_program_directly(step, params, dx, dl)
  for r, j in zip(outs["revax"], outs["jax"], strict=True):
    np.testing.assert_allclose(r, j, rtol=1e-4, atol=1e-5)
  return calls


def rows(quick: bool):
  """[(label, unit, revax value, JAX value, target ratio)] for benchmarks/run.py."""
  libs = libraries()
  rounds = 5 if quick else 15
  out = []
  for both in (True, False):
    t = time_interleaved(vmapped_dot_calls(libs, both), number=20 if quick else 50, rounds=rounds)
    label = (f"jit(vmap(dot_general)), batch dims in odd positions, "
             f"{'both operands' if both else 'lhs only'} mapped")
    out.append(row(label, t, 1.0))
  t = time_interleaved(mlp_step_calls(libs), number=3 if quick else 10, rounds=rounds)
  sizes = "-".join(map(str, MLP_SIZES))
  out.append(row(f"MLP {sizes} training step (fwd+grad+SGD, batch {MLP_BATCH}), jitted", t,
                 1.05))
  return out


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
