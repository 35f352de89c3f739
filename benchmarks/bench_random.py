"""revax.random vs jax.random, side by side in one process.

Run: python benchmarks/bench_random.py [--quick]

Measures, for the same keys and shapes (values checked equal or close first):
  - an eager `split` of one key (revax runs the integer hash in NumPy, JAX a compiled program),
  - eager `normal` of 10^6 float32 values (both a cached jitted program),
  - eager `gamma` of 10^5 values (revax's NumPy rejection sampler, JAX's compiled while loop),
  - jitted `gamma` of 10^5 values (both XLA while loops), and
  - jitted gradient of the mean of 10^4 gamma samples with respect to `a`.
Calls are timed in interleaved rounds (revax, JAX, revax, ...); a value is the median round's mean
time per call, a ratio the median of the per-round ratios (paired); revax's compiled program also
runs directly on the runtime in the same rounds for the jitted rows
(`timing.revax_program_directly`).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from timing import describe, jitted_calls, row, time_interleaved

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def libraries():
  import jax
  import jax.random as jr
  import revax
  import revax.random as rr
  return {"revax": (revax, rr), "jax": (jax, jr)}


def _calls(libs, make, check="equal", jitted=False):
  """{name: zero-argument call} for `make(lib, random) -> (fn, args)`, outputs compared; with
  `jitted` (fn is one jitted program) the arguments are put on the device first and revax's
  program also runs directly ("revax direct")."""
  calls, outs = {}, {}
  for name, (lib, rnd) in libs.items():
    fn, args = make(lib, rnd)
    outs[name] = np.asarray(fn(*args))
    if jitted:
      calls.update(jitted_calls(name, lib, fn, *lib.device_put(args)))
    else:
      calls[name] = lambda fn=fn, args=args, lib=lib: lib.block_until_ready(fn(*args))
  if check == "equal":
    np.testing.assert_array_equal(outs["revax"], outs["jax"])
  else:
    np.testing.assert_allclose(outs["revax"], outs["jax"], rtol=1e-4)
  return calls


def rows(quick: bool):
  """[(label, unit, revax value, JAX value, target ratio)] for benchmarks/run.py."""
  libs = libraries()
  rounds = 3 if quick else 10
  out = []

  def split(lib, rnd):
    return rnd.split, (rnd.PRNGKey(0),)
  t = time_interleaved(_calls(libs, split), number=50 if quick else 200, rounds=rounds)
  out.append(row("random.split of one key, eager", t, None))

  def normal(lib, rnd):
    return (lambda k: rnd.normal(k, (10**6,))), (rnd.PRNGKey(1),)
  t = time_interleaved(_calls(libs, normal), number=5 if quick else 20, rounds=rounds)
  out.append(row("random.normal, 10^6 float32, eager", t, None))

  def gamma(lib, rnd):
    a = np.float32(2.5)
    return (lambda k: rnd.gamma(k, a, (10**5,))), (rnd.PRNGKey(2),)
  t = time_interleaved(_calls(libs, gamma, "close"), number=2 if quick else 5, rounds=rounds)
  out.append(row("random.gamma, 10^5 samples (a = 2.5), eager", t, None))

  def gamma_jit(lib, rnd):
    a = np.full(10**5, 2.5, np.float32)
    return lib.jit(lambda k, a: rnd.gamma(k, a)), (rnd.PRNGKey(2), a)
  t = time_interleaved(_calls(libs, gamma_jit, "close", jitted=True),
                       number=2 if quick else 5, rounds=rounds)
  out.append(row("jit(random.gamma), 10^5 samples (a = 2.5)", t, None))

  def gamma_grad(lib, rnd):
    key = rnd.PRNGKey(3)
    return lib.jit(lib.grad(lambda a: rnd.gamma(key, a, (10**4,)).mean())), (np.float32(1.5),)
  t = time_interleaved(_calls(libs, gamma_grad, "close", jitted=True),
                       number=2 if quick else 5, rounds=rounds)
  out.append(row("jit(grad(mean of 10^4 gamma samples)) w.r.t. a", t, None))
  return out


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
