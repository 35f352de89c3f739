"""The convolutions of bench_conv's two programs, one at a time, revax vs jax, one library per
process.

Run: python benchmarks/bench_conv_ops.py [--pairs N] [--quick] [--convs NAME,...]
                                         [--env NAME=VALUE ...]

Each convolution that revax's lowering writes for the CNN training step (batch 64) and the
per-example gradients (jit(vmap(grad)), 16 examples) of benchmarks/bench_conv.py (`CONVS`, which
tests/benchmarks/test_bench_conv_ops.py checks against the programs' text) is jitted alone with
its own shapes, strides, paddings, dilations and group counts and timed on device-resident
operands. As in bench_plugins.py (processes.py's children), each library runs in its own child
interpreter (two XLA runtimes in one process compete for the cores), in `--pairs` pairs of
children alternating which goes first; a cell is the median over the children of each child's
median run, a ratio the median of the per-pair ratios revax/jax, printed with the 1-minute load
average; the last column is each library's fastest run over all its children (the least
disturbed by other processes on a loaded machine). `--env`
passes variables to revax's children only (`REVAX_CPU_CONV=0`, `REVAX_CPU_GEMM=0`), to compare
revax's own variants against jax on the same machine state.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from processes import child_env, emit, one_library, pair_order, run_child  # noqa: E402

DIMS = ("NHWC", "HWIO", "NHWC")
# name -> (lhs shape, rhs shape, window strides, padding, lhs dilation, rhs dilation,
#          feature_group_count, batch_group_count); every one NHWC x HWIO -> NHWC, as lowered.
CONVS = {
    # the training step, batch 64
    "step_fwd1": ((64, 28, 28, 1), (3, 3, 1, 32), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 1, 1),
    "step_fwd2": ((64, 28, 28, 32), (3, 3, 32, 64), (2, 2), ((0, 1), (0, 1)), (1, 1), (1, 1), 1,
                  1),
    "step_wgrad2": ((32, 28, 28, 64), (14, 14, 64, 64), (1, 1), ((0, 1), (0, 1)), (1, 1), (2, 2),
                    1, 1),
    "step_dgrad2": ((64, 14, 14, 64), (3, 3, 64, 32), (1, 1), ((2, 1), (2, 1)), (2, 2), (1, 1), 1,
                    1),
    "step_wgrad1": ((1, 28, 28, 64), (28, 28, 64, 32), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1),
                    1, 1),
    # the per-example gradients, 16 examples (vmap folds the examples into feature groups)
    "pex_fwd1": ((16, 28, 28, 1), (3, 3, 1, 32), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 1, 1),
    "pex_fwd2": ((16, 28, 28, 32), (3, 3, 32, 64), (2, 2), ((0, 1), (0, 1)), (1, 1), (1, 1), 1, 1),
    "pex_wgrad2": ((32, 28, 28, 16), (14, 14, 1, 1024), (1, 1), ((0, 1), (0, 1)), (1, 1), (2, 2),
                   16, 1),
    "pex_dgrad2": ((16, 14, 14, 64), (3, 3, 64, 32), (1, 1), ((2, 1), (2, 1)), (2, 2), (1, 1), 1,
                   1),
    "pex_wgrad1": ((1, 28, 28, 16), (28, 28, 1, 512), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1),
                   16, 1),
}


# Each program computes z * z on this many elements beside its convolution, in both libraries
# (about 1 us): revax keeps XLA's convolution in a program of nothing else (im2col.py), as in a
# program of dots only (gemm.py), and the programs measured have other work.
BESIDE = 4096


def conv_program(lib, name: str):
  """(jitted convolution `name` of `lib` beside z * z, its device-resident operands)."""
  lhs, rhs, strides, padding, lhs_dil, rhs_dil, groups, batch_groups = CONVS[name]
  rng = np.random.default_rng(0)
  x = rng.standard_normal(lhs).astype(np.float32)
  w = rng.standard_normal(rhs).astype(np.float32)
  z = np.ones(BESIDE, np.float32)
  f = lib.jit(lambda x, w, z: (lib.lax.conv_general_dilated(
      x, w, strides, padding, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil, dimension_numbers=DIMS,
      feature_group_count=groups, batch_group_count=batch_groups), z * z))
  return f, lib.device_put((x, w, z))


def child(lib_name: str, names: list, quick: bool, outputs: str | None) -> dict:
  """Time the convolutions `names` with one library in this process."""
  from timing import blocked_runs
  lib, _ = one_library(lib_name)
  repeats, budget = (5, 0.05) if quick else (15, 0.1)
  times, best, saved = {}, {}, {}
  for name in names:
    f, args = conv_program(lib, name)
    out = lib.block_until_ready(f(*args))
    if outputs:
      saved[name] = np.asarray(out[0])
    t = time.perf_counter()
    lib.block_until_ready(f(*args))
    number = max(1, min(200, int(budget / max(time.perf_counter() - t, 1e-6))))
    runs = blocked_runs(lib, f, args, number, repeats)
    times[name], best[name] = statistics.median(runs), min(runs)
  if outputs:
    np.savez(outputs, **saved)
  return {"times": times, "best": best}


def measure(lib: str, names: list, quick: bool, env_extra: dict,
            outputs: str | None = None) -> dict:
  """One child's result (`child`), revax's children with `env_extra`."""
  args = ["--child", lib, "--convs", ",".join(names)] + (["--quick"] if quick else [])
  if outputs:
    args += ["--outputs", outputs]
  return run_child(pathlib.Path(__file__).resolve(), args,
                   child_env(env_extra if lib == "revax" else None))


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--pairs", type=int, default=3)
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--convs", default=",".join(CONVS))
  parser.add_argument("--env", action="append", default=[],
                      help="NAME=VALUE for revax's children (repeatable)")
  parser.add_argument("--child", choices=("revax", "jax"), help=argparse.SUPPRESS)
  parser.add_argument("--outputs", help=argparse.SUPPRESS)
  args = parser.parse_args()
  names = args.convs.split(",")
  if args.child:
    emit(child(args.child, names, args.quick, args.outputs))
    return
  env_extra = dict(item.split("=", 1) for item in args.env)
  pairs = []
  import tempfile
  with tempfile.TemporaryDirectory(prefix="bench-conv-ops-") as tmp:
    for i in range(args.pairs):
      got = {}
      for lib in pair_order(("revax", "jax"), i):
        outputs = os.path.join(tmp, f"{lib}.npz") if i == 0 else None
        got[lib] = measure(lib, names, args.quick, env_extra, outputs)
      if i == 0:
        r, j = np.load(os.path.join(tmp, "revax.npz")), np.load(os.path.join(tmp, "jax.npz"))
        for name in names:
          scale = float(np.max(np.abs(j[name])))
          np.testing.assert_allclose(r[name], j[name], rtol=0, atol=1e-4 * scale,
                                     err_msg=name)
      pairs.append((got["revax"], got["jax"]))
      print(f"pair {i + 1} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
  load = os.getloadavg()[0]
  print(f"revax env: {env_extra or '(none)'}; {args.pairs} pairs; 1-minute load average "
        f"{load:.2f} at the end")
  print("| convolution | lhs x rhs | groups | revax | jax | revax / jax (per pair) "
        "| best runs: revax / jax |")
  print("|---|---|---|---|---|---|---|")
  for name in names:
    rv = [r["times"][name] for r, _ in pairs]
    jx = [j["times"][name] for _, j in pairs]
    ratios = [a / b for a, b in zip(rv, jx, strict=True)]
    best_r, best_j = (min(x["best"][name] for x in side) for side in zip(*pairs))
    lhs, rhs, strides, _, lhs_dil, rhs_dil, groups, _ = CONVS[name]
    extra = "".join(f", {k} {v}" for k, v in (("stride", strides), ("lhs_dil", lhs_dil),
                                             ("rhs_dil", rhs_dil)) if max(v) > 1)
    print(f"| {name} | {'x'.join(map(str, lhs))} * {'x'.join(map(str, rhs))}{extra} | {groups} "
          f"| {statistics.median(rv) * 1e3:.3f} ms | {statistics.median(jx) * 1e3:.3f} ms "
          f"| {statistics.median(ratios):.2f}x ({', '.join(f'{x:.2f}' for x in ratios)}) "
          f"| {best_r * 1e3:.3f} / {best_j * 1e3:.3f} ms ({best_r / best_j:.2f}x) |")


if __name__ == "__main__":
  main()
