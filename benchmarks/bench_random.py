"""revax.random vs jax.random.

Run: python benchmarks/bench_random.py [--quick]

Measures, for the same keys and shapes (values checked equal or close first):
  - an eager `split` of one key (revax runs the integer hash in NumPy, JAX a compiled program),
  - eager `normal` of 10^6 float32 values (both a cached jitted program),
  - eager `gamma` of 10^5 values (revax's NumPy rejection sampler, JAX's compiled while loop),
  - jitted `gamma` of 10^5 values (both XLA while loops), and
  - jitted gradient of the mean of 10^4 gamma samples with respect to `a`.
The eager rows are timed in this process in interleaved rounds (revax, JAX, revax, ...); a value
is the median round's mean time per call, a ratio the median of the per-round ratios (paired).
The jitted rows run each library in its own child processes (processes.py, `time_apart`: pairs
alternating which goes first; a ratio is the median of the per-pair ratios), revax's compiled
program also run directly on the runtime in revax's child (`timing.revax_program_directly`).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from processes import jitted_child_calls, time_apart
from timing import describe, row, time_interleaved

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def libraries():
  import jax
  import jax.random as jr
  import revax
  import revax.random as rr
  return {"revax": (revax, rr), "jax": (jax, jr)}


def _gamma_jit(lib, rnd):
  a = np.full(10**5, 2.5, np.float32)
  return lib.jit(lambda k, a: rnd.gamma(k, a)), (rnd.PRNGKey(2), a)


def _gamma_grad(lib, rnd):
  key = rnd.PRNGKey(3)
  return lib.jit(lib.grad(lambda a: rnd.gamma(key, a, (10**4,)).mean())), (np.float32(1.5),)


# the jitted rows, timed with each library in its own processes: group -> (label, make)
JITTED = {
    "gamma_jit": ("jit(random.gamma), 10^5 samples (a = 2.5)", _gamma_jit),
    "gamma_grad": ("jit(grad(mean of 10^4 gamma samples)) w.r.t. a", _gamma_grad),
}


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool):
  """One library's calls of jitted row `group` for processes.time_apart."""
  import importlib
  rnd = importlib.import_module(f"{lib_name}.random")
  fn, args = JITTED[group][1](lib, rnd)
  return jitted_child_calls(lib_name, lib, fn, lib.device_put(args), 2 if quick else 5,
                            3 if quick else 5, rtol=1e-4, atol=0)


def _calls(libs, make, check="equal"):
  """{name: zero-argument eager call} for `make(lib, random) -> (fn, args)`, outputs compared."""
  calls, outs = {}, {}
  for name, (lib, rnd) in libs.items():
    fn, args = make(lib, rnd)
    outs[name] = np.asarray(fn(*args))
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

  t = time_apart("bench_random", list(JITTED), quick)  # each library in its own processes
  out += [row(label, t[group], None) for group, (label, _) in JITTED.items()]
  return out


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
  print("\n".join(describe(rows(parser.parse_args().quick))))


if __name__ == "__main__":
  main()
