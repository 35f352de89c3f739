"""checkpoint's fence, variant by variant: what each lowering of `fenced_call` costs and whether
XLA still recomputes behind it (jit(grad) of the 64-block residual MLP of bench_checkpoint).

Variants (the lowering of each checkpointed block's backward step):
  shared     revax's fence: a conditional per block on one opaque predicate per body
  per_call   the fence before issue 21: an `rng` + compare per conditional
  barrier    no conditional: `optimization_barrier` over the step's inputs, then the step
  select     no conditional: every float input through `select(p, x, 0)`, p opaque and read
             from the incoming cotangent (so the step still waits for the backward pass)
Per variant: XLA temp, the dots / conditionals / rng states in XLA's optimized HLO (read from
an XLA dump; 64 blocks recompute when there are 511 dots, plain grad has 383), and the step's
CPU time against plain grad + one extra forward (paired per-round medians).

Run: python benchmarks/bench_checkpoint_fences.py [--width 256] [--batch 64] [--rounds 20]
Not part of run.py: it swaps lowering rules, which only an experiment should do.
"""
from __future__ import annotations

import argparse
import collections
import os
import pathlib
import re
import statistics
import sys
import tempfile

import numpy as np

DUMP = tempfile.mkdtemp(prefix="revax_fences_")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={DUMP}"
                           " --xla_dump_hlo_as_text --xla_dump_hlo_module_re=jit_.*")
os.environ["REVAX_COMPILATION_CACHE"] = "0"  # a cache hit would compile (and dump) nothing
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_checkpoint  # noqa: E402
from timing import time_interleaved  # noqa: E402


def _variants():
  from revax._src.core import dtypes
  from revax._src.core.avals import ShapedArray
  from revax._src.interpreters import barrier, mlir
  f32, i1 = ShapedArray((), dtypes.float32), "tensor<i1>"
  shared = mlir.lowerings[barrier.fenced_call_p]

  def compare(fb, a, b, direction):
    return fb.op("stablehlo.compare", [a, b], [i1], props={
        "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
        "compare_type": "#stablehlo<comparison_type FLOAT>"})[0]

  def conditional(ctx, pred, args, jaxpr):
    fb = ctx.fb
    zeros = lambda sub: [sub.constant(np.zeros(a.shape, a.dtype), a) for a in ctx.avals_out]
    return fb.op("stablehlo.if", [pred], [mlir.ir_type(a) for a in ctx.avals_out], regions=[
        fb.region([], lambda sub: mlir.inline_closed_jaxpr(sub, jaxpr, args)),
        fb.region([], zeros)])

  def per_call(ctx, *args, jaxpr, barrier_on=()):
    fb = ctx.fb
    lo, hi, two = (fb.constant(np.float32(v), f32) for v in (0.0, 1.0, 2.0))
    shape = fb.constant(np.zeros((0,), np.int64), ShapedArray((0,), dtypes.int64))
    (u,) = fb.op("stablehlo.rng", [lo, hi, shape], [mlir.ir_type(f32)],
                 props={"rng_distribution": "#stablehlo<rng_distribution UNIFORM>"})
    return conditional(ctx, compare(fb, u, two, "LT"), args, jaxpr)

  def barrier_only(ctx, *args, jaxpr, barrier_on=()):
    args = ctx.op("stablehlo.optimization_barrier", list(args), ctx.avals_in)
    return mlir.inline_closed_jaxpr(ctx.fb, jaxpr, args)

  def select(ctx, *args, jaxpr, barrier_on=()):
    fb = ctx.fb
    ct, aval = args[-1], ctx.avals_in[-1]  # the last operand is a float cotangent here
    rank = len(aval.shape)
    (c,) = fb.op("stablehlo.slice", [ct], [mlir.ir_type(ShapedArray((1,) * rank, aval.dtype))],
                 props={"start_indices": mlir.i64_array([0] * rank),
                        "limit_indices": mlir.i64_array([1] * rank),
                        "strides": mlir.i64_array([1] * rank)})
    (c,) = fb.op("stablehlo.reshape", [c], [mlir.ir_type(f32)])
    (p,) = fb.op("stablehlo.or", [compare(fb, c, c, "EQ"), compare(fb, c, c, "NE")], [i1])
    fenced = []
    for a, av in zip(args, ctx.avals_in, strict=True):
      if av.dtype == np.float32 and av.shape:
        mask = fb.op("stablehlo.broadcast_in_dim", [p],
                     [mlir.ir_type(ShapedArray(av.shape, np.bool_))],
                     props={"broadcast_dimensions": "array<i64>"})[0]
        a = fb.op("stablehlo.select", [mask, a, fb.constant(np.zeros(av.shape, av.dtype), av)],
                  [mlir.ir_type(av)])[0]
      fenced.append(a)
    return mlir.inline_closed_jaxpr(fb, jaxpr, fenced)

  return {"shared": shared, "per_call": per_call, "barrier": barrier_only, "select": select}


def _optimized_counts(before: set) -> dict:
  """Op counts in the optimized HLO XLA dumped since `before` (the set of dump files then)."""
  path = min(p for p in pathlib.Path(DUMP).glob("*cpu_after_optimizations.txt")
             if p.name not in before)
  text = path.read_text()
  ops = re.findall(r"(?m)^\s*(?:ROOT )?%\S+ = .*? ([a-z][a-z0-9-]*)\(", text)
  counts = collections.Counter(ops)
  # revax's GEMM calls on the CPU (revax/_src/runtime/gemm.py) are dots too
  counts["dot"] += len(re.findall(r'custom-call\(.*custom_call_target="revax_lapack_gemm"', text))
  return {k: counts[k] for k in ("dot", "conditional", "rng-get-and-update-state")}


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--width", type=int, default=256)
  parser.add_argument("--batch", type=int, default=64)
  parser.add_argument("--rounds", type=int, default=20)
  parser.add_argument("--calls", type=int, default=2)
  opts = parser.parse_args()
  bench_checkpoint.WIDTH, bench_checkpoint.BATCH = opts.width, opts.batch

  import revax
  import revax.numpy as rnp
  from revax._src.interpreters import barrier, mlir
  variants = _variants()
  steps, report = {}, {}
  for name in ("plain", "fwd", *variants):
    rule = variants.get(name, variants["shared"])
    dict.__setitem__(mlir.lowerings, barrier.fenced_call_p, rule)  # an experiment's swap
    dumped = {p.name for p in pathlib.Path(DUMP).glob("*")}
    remat = None if name in ("plain", "fwd") else revax.checkpoint
    step, temp = bench_checkpoint._compile(revax, rnp, remat, forward_only=name == "fwd")
    steps[name] = step
    report[name] = (temp, _optimized_counts(dumped))
  dict.__setitem__(mlir.lowerings, barrier.fenced_call_p, variants["shared"])

  cpu = time_interleaved(steps, opts.calls, opts.rounds, warmup=1, cpu=True).cpu.samples
  reference = [p + f for p, f in zip(cpu["plain"], cpu["fwd"], strict=True)]
  print(f"width {opts.width}, batch {opts.batch}, 64 blocks, {opts.rounds} rounds; CPU time")
  for name, (temp, counts) in report.items():
    line = (f"{name:9s} temp {temp / 2 ** 20:7.3f} MiB  dots {counts['dot']:4d}  "
            f"conditionals {counts['conditional']:3d}  rng {counts['rng-get-and-update-state']:3d}"
            f"  step {statistics.median(cpu[name]) * 1e3:8.2f} ms")
    if name not in ("plain", "fwd"):
      ratio = statistics.median(a / b for a, b in zip(cpu[name], reference, strict=True))
      line += f"  = {ratio:.3f}x (plain + fwd)"
    print(line)


if __name__ == "__main__":
  main()
