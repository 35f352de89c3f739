"""dot_general run time, revax vs JAX, one library per process.

Run: python benchmarks/bench_dot.py [--quick]

Measures the steady-state run time of
  - a jitted `vmap` of a `dot_general` whose batch dims sit in odd positions (both operands
    mapped, and only the lhs mapped), where revax's batching rule emits one dot_general and no
    transposes, and
  - a jitted training step of a matmul-heavy MLP (forward, gradient, SGD update).
Each library runs in its own child processes (processes.py, `time_apart`: pairs alternating
which library goes first; a ratio is the median of the per-pair ratios); in revax's child,
revax's compiled program also runs directly on the runtime in the same interleaved rounds as
revax.jit (`timing.revax_program_directly`).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from processes import jitted_child_calls, time_apart
from timing import describe, row

os.environ.setdefault("JAX_PLATFORMS", "cpu")

# (lhs per example, rhs per example): lhs (M, B, K), rhs (K, N, B); batch B and contracting K
# in odd positions; the vmapped axis V is inserted at lhs axis 2 and rhs axis 1.
M, B, K, N, V = 64, 16, 64, 64, 8
DOT_DIMS = (((2,), (0,)), ((1,), (2,)))
MLP_SIZES = (784, 1024, 1024, 1024, 10)
MLP_BATCH = 256


def vmapped_dot_program(lib, both_mapped: bool):
  """(jit(vmap(dot_general)) with batch dims in odd positions, its device-resident operands)."""
  rng = np.random.default_rng(0)
  lhs = rng.standard_normal((M, B, V, K)).astype(np.float32)  # mapped at axis 2
  if both_mapped:
    rhs = rng.standard_normal((K, V, N, B)).astype(np.float32)  # mapped at axis 1
    in_axes = (2, 1)
  else:
    rhs = rng.standard_normal((K, N, B)).astype(np.float32)
    in_axes = (2, None)
  f = lib.jit(lib.vmap(lambda a, b: lib.lax.dot_general(a, b, DOT_DIMS), in_axes=in_axes))
  return f, lib.device_put((lhs, rhs))


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


def mlp_step_program(lib, np_mod):
  """(the jitted MLP training step, its device-resident (params, x, labels))."""
  rng = np.random.default_rng(1)
  x = rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32)
  labels = np.eye(MLP_SIZES[-1], dtype=np.float32)[rng.integers(0, MLP_SIZES[-1], MLP_BATCH)]
  return mlp_step_fn(lib, np_mod), lib.device_put((mlp_params(), x, labels))


# group -> (row label, target ratio)
GROUPS = {
    "vdot_both": ("jit(vmap(dot_general)), batch dims in odd positions, both operands mapped",
                  1.0),
    "vdot_lhs": ("jit(vmap(dot_general)), batch dims in odd positions, lhs only mapped", 1.0),
    "mlp_step": (f"MLP {'-'.join(map(str, MLP_SIZES))} training step (fwd+grad+SGD, batch "
                 f"{MLP_BATCH}), jitted", 1.05),
}


def program(group: str, lib, np_mod):
  """(jitted function, device-resident arguments) of `group` for one library."""
  if group in ("vdot_both", "vdot_lhs"):
    return vmapped_dot_program(lib, group == "vdot_both")
  if group == "mlp_step":
    return mlp_step_program(lib, np_mod)
  raise ValueError(f"unknown group {group!r}")


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool):
  """One library's calls of `group` for processes.time_apart (its own child process)."""
  f, args = program(group, lib, np_mod)
  number = (20 if quick else 50) if group != "mlp_step" else (3 if quick else 10)
  tol = (1e-4, 1e-3) if group != "mlp_step" else (1e-4, 1e-5)
  return jitted_child_calls(lib_name, lib, f, args, number, 3 if quick else 5, rtol=tol[0],
                            atol=tol[1])


def rows(quick: bool):
  """[`timing.row` tuples] for benchmarks/run.py: each library in its own processes."""
  t = time_apart("bench_dot", list(GROUPS), quick)
  return [row(label, t[group], target) for group, (label, target) in GROUPS.items()]


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
