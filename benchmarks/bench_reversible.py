"""Reversible MLP per block: revax.invertible's backward against checkpoint per block and against
plain grad + one forward, revax and JAX in separate processes, written as a markdown table.

The network is issue 32's: reversible blocks y1 = x1 + tanh(x2 @ w1), y2 = x2 + tanh(y1 @ w2) on
two streams of `--width` (2048 on a TPU), batch `--batch` (8192), float32, the loss the sum of
squares of both outputs. Per depth and variant it compiles `jit(grad(loss))` (the forward
variant: `jit(loss)`), times it in interleaved rounds against the other variants of its process
(medians; the machine may be shared), and records XLA's memory account of the program. A
variant that does not fit (RESOURCE_EXHAUSTED) is marked out of memory and not tried deeper.

Variants, revax process: plain grad, forward only, the whole stack under `revax.invertible`,
every block under `revax.checkpoint`; JAX process (JAX_PLATFORMS left as the environment has it,
so on a TPU jax takes the chip after revax has let it go): jax plain grad, jax forward,
`jax.checkpoint` per block, and "jax invertible": the same reversible backward revax.invertible
derives, written by hand with `jax.custom_vjp` (rebuild each block's inputs from its outputs,
then its VJP; no fence), the yardstick for what the rebuilding itself costs. Per-block times
are slopes between the shallowest and the deepest depth where the variant ran (fixed costs
cancel); a step that stores nothing pays plain grad + one forward per block, so
`invertible / (plain + forward)` is what the recomputation costs beyond its arithmetic.

Where the time goes is read from the programs (per block, as the difference between two depths
over their difference in blocks): in the StableHLO revax lowers, the dots (6 = no recomputation,
8 = one forward recomputed), conditionals (`stablehlo.if`: the fence that keeps XLA from merging
a recomputation with the forward), optimization barriers and transposes; with `--dump`, in XLA's
optimized HLO, the dots, copies, fusions and conditionals XLA kept.

With `--barrier`, a third process runs revax's invertible and checkpoint with the fence lowered
as an optimization_barrier (jax.checkpoint's fence) instead of a conditional, to see whether
the conditional is what costs on a backend (on XLA:CPU the barrier does not fence: its dots and
memory fall to plain grad's, and jax.checkpoint's too, unless every process runs with
`XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander`, which keeps barriers through CSE as a
TPU does: then jax.checkpoint and both barrier-fenced revax variants recompute, 8 dots a block).
With `--split`, another process runs revax's invertible with `split_vjp_recomputation` on
(`use_split_vjp`): its VJPs recompute tanh rather than share the rebuild's, and the rebuild waits
for the cotangents, through barriers: fewer elementwise passes where barriers survive (a TPU);
on a stock XLA:CPU its memory grows with depth.
With `--coupling`, another process runs revax's invertible with `vjp_output_from_coupling` on
(`use_coupling_vjp`): each coupling's VJP reads tanh's output as y - x, so tanh is no longer
shared between the rebuild and the VJP, and the rebuild's matmuls wait for the cotangents in
fenced calls (its gradients differ from the default's in their last bits); with `--barrier`
too, one more process runs it with every fence lowered as a barrier. With `--fence-cts`,
another process runs it with `fence_vjp_cotangents` on (`use_fence_vjp_cotangents`: the VJP
cotangents computed once behind barriers, the rebuild waiting for the cotangents; the same
bits), and with `--barrier` too, one more with barrier fences.

Run (one command, < 5 minutes on one TPU v5e chip at the default TPU sizes):
  python benchmarks/bench_reversible.py --out RESULTS_reversible.md [--depths 8,16,32]
      [--width W --batch B] [--rounds 5 --calls 3] [--dump] [--barrier] [--split] [--coupling]
      [--fence-cts] [--no-jax]
Sizes default by platform: TPU width 2048, batch 8192, depths 8,16,32; CPU width 512, batch 512,
depths 4,8,16.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import platform as platform_module
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))
import device_memory  # noqa: E402
from timing import time_interleaved  # noqa: E402

REVAX_VARIANTS = ("revax plain", "revax forward", "revax invertible", "revax checkpoint")
JAX_VARIANTS = ("jax plain", "jax forward", "jax checkpoint", "jax invertible")
BARRIER = " (barrier fence)"  # revax's recomputations fenced by optimization_barrier alone
BARRIER_VARIANTS = ("revax invertible" + BARRIER, "revax checkpoint" + BARRIER)
SPLIT = " (VJP recomputes tanh)"  # invertible's VJPs do not share tanh with the rebuild
SPLIT_VARIANTS = ("revax invertible" + SPLIT,)
COUPLING = " (VJP reads y - x)"  # invertible's VJPs read tanh's output as y - x
COUPLING_VARIANTS = ("revax invertible" + COUPLING,)
COUPLING_BARRIER_VARIANTS = ("revax invertible (VJP reads y - x, barrier fence)",)
FENCE_CTS = " (VJP cotangents fenced)"  # invertible with fence_vjp_cotangents
FENCE_CTS_VARIANTS = ("revax invertible" + FENCE_CTS,
                      "revax invertible (VJP cotangents fenced, barrier fence)")
SIZES = {"tpu": {"width": 2048, "batch": 8192, "depths": (8, 16, 32)},
         "cpu": {"width": 512, "batch": 512, "depths": (4, 8, 16)}}
HLO_OPS = ("stablehlo.dot_general", "stablehlo.if", "stablehlo.case",
           "stablehlo.optimization_barrier", "stablehlo.transpose", "stablehlo.while")


# --- the network ---------------------------------------------------------------------------------
def make_loss(variant: str):
  """(library module, loss(ws, x1, x2)) of a variant ('revax plain', 'jax checkpoint', ...)."""
  lib_name, method = variant.split()[:2]
  if lib_name == "revax":
    import revax
    import revax.numpy as np_
    from revax import reversible
    layer = lambda w, x: np_.tanh(x @ w)
    stack = reversible.reversible_sequence(
        reversible.reversible_block(layer, layer),
        method={"forward": "plain"}.get(method, method))
    lib = revax
  else:
    import jax
    import jax.numpy as np_

    def block(w, x1, x2):
      x1 = x1 + np_.tanh(x2 @ w[0])
      return x1, x2 + np_.tanh(x1 @ w[1])
    block = jax.checkpoint(block) if method == "checkpoint" else block

    def stack(ws, x1, x2):
      for w in ws:
        x1, x2 = block(w, x1, x2)
      return x1, x2
    if method == "invertible":
      stack = _jax_reversible_stack(jax, np_, stack)
    lib = jax

  def loss(ws, x1, x2):
    y1, y2 = stack(ws, x1, x2)
    return (y1 * y1).sum() + (y2 * y2).sum()
  return lib, loss


def _jax_reversible_stack(jax, np_, stack):
  """The stack with a hand-written reversible backward (jax.custom_vjp, as RevNet's reference
  code): only the outputs are kept; walking back, each block's inputs are rebuilt from its
  outputs (x2 = y2 - G(y1), x1 = y1 - F(x2)) and its VJP taken on them. The same algorithm as
  revax.invertible's walk, written by hand in JAX with no fence: what the recomputation costs
  on a backend when nothing but the arithmetic is asked for."""
  layer = lambda w, x: np_.tanh(x @ w)

  @jax.custom_vjp
  def rev(ws, x1, x2):
    return stack(ws, x1, x2)

  def fwd(ws, x1, x2):
    y1, y2 = stack(ws, x1, x2)
    return (y1, y2), (ws, y1, y2)

  def bwd(res, cts):
    ws, y1, y2 = res
    g1, g2 = cts
    grads = []
    for w in reversed(ws):
      s, vjp_g = jax.vjp(layer, w[1], y1)
      x2 = y2 - s
      dw2, d1 = vjp_g(g2)
      g1 = g1 + d1
      t, vjp_f = jax.vjp(layer, w[0], x2)
      x1 = y1 - t
      dw1, d2 = vjp_f(g1)
      g2 = g2 + d2
      y1, y2 = x1, x2
      grads.append((dw1, dw2))
    return type(ws)(reversed(grads)), g1, g2

  rev.defvjp(fwd, bwd)
  return rev


def inputs(lib, depth: int, width: int, batch: int, seed: int = 0):
  """Weights (depth pairs of width x width) and the two input streams, drawn on the device."""
  key = lib.random.PRNGKey(seed)
  kw, k1, k2 = lib.random.split(key, 3)
  scale = 1.0 / np.sqrt(width)
  draw = lib.jit(lambda k: lib.random.normal(k, (depth, 2, width, width)) * scale)
  stacked = draw(kw)
  ws = [(stacked[i, 0], stacked[i, 1]) for i in range(depth)]
  x1 = lib.random.normal(k1, (batch, width))
  x2 = lib.random.normal(k2, (batch, width))
  return ws, x1, x2


# --- one process: compile, time, read the programs ---------------------------------------------
def hlo_counts(text: str) -> dict:
  counts = collections.Counter(re.findall(r'"?(stablehlo\.[a-z_]+)"?\(', text))
  return {op: counts.get(op, 0) for op in HLO_OPS}


def dumped_modules(dump_dir: str) -> set:
  return set(pathlib.Path(dump_dir).glob("*jit_loss*after_optimizations.txt"))


def optimized_hlo_counts(new_files) -> dict | None:
  """Counts in XLA's after-optimizations module of the program just compiled (the one dump file
  that appeared): dots (or convolutions), copies of data (not the zero fills of a fence's
  untaken branch), conditionals, loop fusions (standalone elementwise passes: each one reads
  and writes memory) and the MiB those write."""
  if len(new_files) != 1:
    return None
  counts = collections.Counter()
  for line in next(iter(new_files)).read_text().splitlines():
    m = re.search(r"=\s+(\(.*?\)|\S+)\s+([a-z][a-z0-9\-]*)\((.*)", line)
    if not m:
      continue
    shape, op, rest = m.groups()
    if op in ("dot", "convolution") or (op == "custom-call" and "revax_lapack_gemm" in rest):
      counts["dot"] += 1  # (revax's GEMM calls on the CPU: revax/_src/runtime/gemm.py)
    elif op == "copy" and not re.match(r"%?(wrapped_)?(broadcast|constant)", rest):
      counts["copy"] += 1
    elif op in ("conditional", "while"):
      counts[op] += 1
    elif op == "fusion" and "kind=kLoop" in rest and not line.lstrip().startswith("ROOT"):
      counts["loop fusion"] += 1
      counts["loop fusion MiB"] += _shape_bytes(shape) / 2 ** 20
  return {k: counts.get(k, 0) for k in OPTIMIZED_KEYS}


OPTIMIZED_KEYS = ("dot", "copy", "conditional", "loop fusion", "loop fusion MiB")


def _shape_bytes(shape: str) -> int:
  """Bytes of an HLO shape (hlo_reversible.py's reading, beside this file)."""
  sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
  from hlo_reversible import shape_bytes
  return shape_bytes(shape)


def run_variants(variants, depths, width, batch, rounds, calls, dump_dir=None, emit=print,
                 max_seconds=None):
  """Per depth: compile every variant (skipping those that ran out of memory at a smaller
  depth), time them in interleaved rounds, and emit one result per (variant, depth). The
  variants of a depth share one set of inputs. Depths stop once `max_seconds` have passed."""
  start_all = time.perf_counter()
  oom = set()
  for depth in depths:
    if max_seconds is not None and time.perf_counter() - start_all > max_seconds:
      emit("process", depth, {"skipped": f"time budget of {max_seconds} s spent"})
      break
    steps, info, args = {}, {}, None
    for variant in variants:
      if variant in oom:
        continue
      lib, loss = make_loss(variant)
      fn = lib.jit(loss if variant.endswith("forward") else lib.grad(loss))
      try:
        if args is None:
          args = inputs(lib, depth, width, batch)
        lowered = fn.lower(*args)
        before = dumped_modules(dump_dir) if dump_dir else set()
        start = time.perf_counter()
        compiled = lowered.compile()
        compile_s = time.perf_counter() - start
        record = {"memory": device_memory.compiled_bytes(compiled), "compile_s": compile_s}
        if variant.startswith("revax"):
          record["stablehlo"] = hlo_counts(lowered.as_text())
        if dump_dir:
          record["optimized"] = optimized_hlo_counts(dumped_modules(dump_dir) - before)
        lib.block_until_ready(fn(*args))
      except Exception as error:  # noqa: BLE001 (only out of memory is a result)
        if not device_memory.is_out_of_memory(error):
          raise
        oom.add(variant)
        emit(variant, depth, {"oom": str(error).strip().splitlines()[0][:200]})
        continue
      steps[variant] = lambda lib=lib, fn=fn, args=args: lib.block_until_ready(fn(*args))
      info[variant] = record
    if steps:
      t = time_interleaved(steps, calls, rounds, warmup=1, cpu=True)
      for variant in steps:
        info[variant].update(seconds=t[variant], cpu_seconds=t.cpu[variant],
                             samples=t.samples[variant])
        emit(variant, depth, info[variant])
    del steps, args
  emit("process", 0, {"platform": _platform(variants[0]),
                      "device_peak_bytes": _device_peak(variants[0])})


def _device_peak(variant: str):
  """The process's device peak_bytes_in_use, read through the library the process uses (the
  other one must not open the device: a TPU is held by one process)."""
  if variant.startswith("revax"):
    return device_memory.device_peak_bytes()
  import jax
  stats = jax.devices()[0].memory_stats()
  return stats.get("peak_bytes_in_use") if isinstance(stats, dict) else None


def _platform(variant: str) -> str:
  if variant.startswith("revax"):
    import revax
    d = revax.devices()[0]
  else:
    import jax
    d = jax.devices()[0]
  return f"{d.device_kind} ({d.platform})"


def use_barrier_fence() -> None:
  """An experiment's swap, in this process only: lower revax's `fenced_call` (the fence around
  a checkpointed block's recomputation and around invertible's backward walk) as an
  `optimization_barrier` over its operands followed by the body, as jax.checkpoint fences,
  instead of a conditional on an opaque predicate. XLA:CPU expands barriers before CSE, so there
  the recomputation is merged with the forward (plain grad's dots and memory); the dump's dot
  counts and the memory column show whether a backend keeps it."""
  from revax._src.interpreters import barrier, mlir
  dict.__setitem__(mlir.lowerings, barrier.fenced_call_p, barrier.lower_fenced_call_as_barrier)


def use_split_vjp() -> None:
  """An experiment, in this process only: `invertible.split_vjp_recomputation` on (see there):
  invertible's VJPs recompute tanh instead of sharing the rebuild's, and the rebuild's matmuls
  wait for the walk's cotangents, both through optimization barriers. Where barriers survive
  (a TPU; XLA:CPU with cse_barrier_expander disabled) that is 2 elementwise passes fewer per
  block with memory flat; on a stock XLA:CPU the barriers go early and memory grows with depth
  (read the memory column)."""
  from revax._src.interpreters import invertible
  invertible.split_vjp_recomputation = True


def use_coupling_vjp() -> None:
  """An option, in this process only: `invertible.vjp_output_from_coupling` on (see there):
  the VJP of each coupling's tanh reads its output as y - x (the coupling's output less its
  rebuilt input) instead of sharing the rebuild's tanh, so tanh fuses into the rebuild: one
  elementwise pass and one activation-sized read + write fewer per coupling, no barrier. The
  gradients differ from the default's in their last bits (y - x rounds)."""
  from revax._src.interpreters import invertible
  invertible.vjp_output_from_coupling = True


def use_fence_vjp_cotangents() -> None:
  """An option, in this process only: `invertible.fence_vjp_cotangents` on (see there): each
  VJP cotangent of an output-reading elementwise primitive is computed once behind a barrier,
  and the rebuild's matmuls wait for the cotangents through barriers. The same bits; on XLA:CPU
  (barriers expanded) the default's program; a TPU keeps the barriers."""
  from revax._src.interpreters import invertible
  invertible.fence_vjp_cotangents = True


def child_main(args) -> None:
  variants = {"revax": REVAX_VARIANTS, "jax": JAX_VARIANTS,
              "revax-barrier": BARRIER_VARIANTS, "revax-split": SPLIT_VARIANTS,
              "revax-coupling": COUPLING_VARIANTS,
              "revax-coupling-barrier": COUPLING_BARRIER_VARIANTS,
              "revax-fence-cts": FENCE_CTS_VARIANTS[:1],
              "revax-fence-cts-barrier": FENCE_CTS_VARIANTS[1:]}[args.child]
  if args.child.startswith("revax"):
    import revax
    revax.config.update("enable_compilation_cache", False)  # compile times must be compiles
  if args.child in ("revax-barrier", "revax-coupling-barrier", "revax-fence-cts-barrier"):
    use_barrier_fence()
  if args.child == "revax-split":
    use_split_vjp()
  if args.child in ("revax-coupling", "revax-coupling-barrier"):
    use_coupling_vjp()
  if args.child in ("revax-fence-cts", "revax-fence-cts-barrier"):
    use_fence_vjp_cotangents()

  def emit(variant, depth, result):
    print("RESULT " + json.dumps([variant, depth, result]), flush=True)
  run_variants(variants, args.depths, args.width, args.batch, args.rounds, args.calls,
               args.dump_dir, emit, args.max_seconds)


# --- the parent: two processes, one table ---------------------------------------------------------
def run_child(child: str, args, env) -> dict:
  command = [sys.executable, os.path.abspath(__file__), "--child", child,
             "--depths", ",".join(map(str, args.depths)), "--width", str(args.width),
             "--batch", str(args.batch), "--rounds", str(args.rounds), "--calls",
             str(args.calls), "--max-seconds", str(args.max_seconds)]
  if args.dump:
    command += ["--dump-dir", tempfile.mkdtemp(prefix=f"revax_bench_{child}_")]
    env = dict(env, XLA_FLAGS=(env.get("XLA_FLAGS", "") + " --xla_dump_to=" + command[-1]
                               + " --xla_dump_hlo_as_text --xla_dump_hlo_module_re=.*loss.*"
                               ).strip())
  results = {}
  with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as proc:
    for line in proc.stdout:
      if line.startswith("RESULT "):
        variant, depth, result = json.loads(line[len("RESULT "):])
        results[variant, depth] = result
        if variant == "process" and "skipped" in result:
          print(f"  {child}: depth {depth} and deeper skipped ({result['skipped']})", flush=True)
        elif variant != "process":
          print(f"  {variant} depth {depth}: " + (
              "out of memory" if "oom" in result else f"{result['seconds'] * 1e3:.2f} ms"),
              flush=True)
      else:
        print(line, end="", flush=True)
  if proc.returncode:
    raise RuntimeError(f"the {child} process failed (exit {proc.returncode}): "
                       + " ".join(command))
  return results


def per_block(results, variant, depths, key="seconds"):
  """(seconds per block, from depth, to depth): the slope of step time (`key`: 'seconds' wall,
  'cpu_seconds' process CPU) between the shallowest and the deepest depth where the variant
  ran; None where it ran at fewer than two depths."""
  ran = [d for d in depths if "seconds" in results.get((variant, d), {})]
  if len(ran) < 2:
    return None
  lo, hi = ran[0], ran[-1]
  return ((results[variant, hi][key] - results[variant, lo][key]) / (hi - lo), lo, hi)


def per_block_common(results, variants, depths, key="seconds"):
  """Per-block slopes of `variants` between the same two depths (the extremes where all ran),
  so that their ratio compares like with like; {} where fewer than two depths are common."""
  common = [d for d in depths
            if all("seconds" in results.get((v, d), {}) for v in variants)]
  if len(common) < 2:
    return {}
  lo, hi = common[0], common[-1]
  return {v: (results[v, hi][key] - results[v, lo][key]) / (hi - lo) for v in variants}


def format_report(results, args, platforms, load) -> str:
  size = lambda b: f"{b / 2 ** 30:.2f} GiB" if b >= 2 ** 30 / 10 else f"{b / 2 ** 20:.1f} MiB"
  variants = [v for v in REVAX_VARIANTS + BARRIER_VARIANTS + SPLIT_VARIANTS + COUPLING_VARIANTS
               + COUPLING_BARRIER_VARIANTS + FENCE_CTS_VARIANTS + JAX_VARIANTS
              if any(k[0] == v for k in results)]
  lines = [f"# Reversible MLP per block: {', '.join(sorted(set(platforms)))}", "",
           f"Command: `python benchmarks/bench_reversible.py {' '.join(args.argv)}`  ",
           f"Width {args.width} per stream, batch {args.batch}, float32; {args.rounds} "
           f"interleaved rounds of {args.calls} calls per variant (medians); load average "
           f"{load[0]:.1f} at the start, {load[1]:.1f} at the end; "
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
           "", "## Step time (ms) and XLA memory (temp + arguments + outputs) per depth", "",
           "| depth | " + " | ".join(variants) + " |", "|" + "---|" * (len(variants) + 1)]
  for d in args.depths:
    cells = []
    for v in variants:
      r = results.get((v, d))
      if r is None:
        cells.append("-")
      elif "oom" in r:
        cells.append("out of memory")
      else:
        cells.append(f"{r['seconds'] * 1e3:.2f} ms, {size(r['memory']['total'])}")
    lines.append(f"| {d} | " + " | ".join(cells) + " |")
  lines += ["", "## Per block (slope of step time between depths)", "",
            "Process CPU time (all threads) is the steadier figure on a loaded CPU; on an "
            "accelerator it is only the host's share.", "",
            "| variant | ms per block (wall) | ms per block (process CPU) | depths |",
            "|---|---|---|---|"]
  for v in variants:
    pb, pc = (per_block(results, v, args.depths, k) for k in ("seconds", "cpu_seconds"))
    lines.append(f"| {v} | " + (f"{pb[0] * 1e3:.3f} | {pc[0] * 1e3:.3f} | {pb[1]}-{pb[2]} |"
                                if pb else "- | - | - |"))
  lines += ["", "## Ratios of per-block times (same depths for both sides)", "",
            "| ratio | wall | process CPU | target |", "|---|---|---|---|"]

  def ratio(label, num, den, target=""):
    names = [num] + (list(den) if isinstance(den, tuple) else [den])
    cells = []
    for key in ("seconds", "cpu_seconds"):
      slopes = per_block_common(results, names, args.depths, key)
      bottom = sum(slopes[n] for n in names[1:]) if slopes else 0
      cells.append(f"{slopes[num] / bottom:.3f}" if slopes and bottom > 0 else "-")
    lines.append(f"| {label} | {cells[0]} | {cells[1]} | {target} |")
  ratio("revax invertible / revax checkpoint", "revax invertible", "revax checkpoint", "<= 1")
  ratio("revax invertible / (revax plain + revax forward)", "revax invertible",
        ("revax plain", "revax forward"), "<= 1.1")
  ratio("revax checkpoint / (revax plain + revax forward)", "revax checkpoint",
        ("revax plain", "revax forward"), "<= 1.1")
  ratio("jax checkpoint / (jax plain + jax forward)", "jax checkpoint",
        ("jax plain", "jax forward"))
  ratio("revax invertible / jax checkpoint (separate processes)", "revax invertible",
        "jax checkpoint", "<= 1")
  ratio("revax plain / jax plain (separate processes)", "revax plain", "jax plain")
  ratio("jax invertible (hand-written) / jax checkpoint", "jax invertible", "jax checkpoint")
  ratio("revax invertible / jax invertible (separate processes)", "revax invertible",
        "jax invertible", "<= 1")
  if any(k[0] in BARRIER_VARIANTS for k in results):
    ratio("revax invertible, barrier fence / conditional fence (separate processes)",
          "revax invertible" + BARRIER, "revax invertible")
    ratio("revax checkpoint, barrier fence / conditional fence (separate processes)",
          "revax checkpoint" + BARRIER, "revax checkpoint")
    ratio("revax invertible, barrier fence / (revax plain + revax forward)",
          "revax invertible" + BARRIER, ("revax plain", "revax forward"), "<= 1.1")
  if any(k[0] in SPLIT_VARIANTS for k in results):
    ratio("revax invertible, VJP recomputes tanh / as is (separate processes)",
          "revax invertible" + SPLIT, "revax invertible")
  if any(k[0] in COUPLING_VARIANTS for k in results):
    ratio("revax invertible, VJP reads y - x / as is (separate processes)",
          "revax invertible" + COUPLING, "revax invertible")
    ratio("revax invertible, VJP reads y - x / jax checkpoint (separate processes)",
          "revax invertible" + COUPLING, "jax checkpoint", "<= 1")
  for v in FENCE_CTS_VARIANTS:
    if any(k[0] == v for k in results):
      ratio(v[len("revax "):] + " / invertible as is (separate processes)", v,
            "revax invertible")
      ratio(v[len("revax "):] + " / jax checkpoint (separate processes)", v, "jax checkpoint",
            "<= 1")
      ratio(v[len("revax "):] + " / revax checkpoint (barrier fence)", v,
            "revax checkpoint" + BARRIER, "<= 1")
  if any(k[0] in COUPLING_BARRIER_VARIANTS for k in results):
    ratio("revax invertible, VJP reads y - x, barrier fence / as is (separate processes)",
          COUPLING_BARRIER_VARIANTS[0], "revax invertible")
  lines += ["", "## What each revax program holds per block", "",
            "StableHLO revax lowers (and, with --dump, XLA's optimized HLO), per block: the "
            "difference between the deepest and the shallowest depth over the blocks between.",
            "", "| variant | " + " | ".join(o.replace("stablehlo.", "") for o in HLO_OPS)
            + " | " + " | ".join(f"XLA: {k}" for k in OPTIMIZED_KEYS) + " |",
            "|" + "---|" * (len(HLO_OPS) + len(OPTIMIZED_KEYS) + 1)]
  for v in variants:
    ran = [d for d in args.depths if "stablehlo" in results.get((v, d), {})]
    if len(ran) < 2:
      continue
    lo, hi = results[v, ran[0]], results[v, ran[-1]]
    n = ran[-1] - ran[0]
    cells = [f"{(hi['stablehlo'][o] - lo['stablehlo'][o]) / n:g}" for o in HLO_OPS]
    if lo.get("optimized") and hi.get("optimized"):
      cells += [f"{(hi['optimized'][k] - lo['optimized'][k]) / n:.3g}" for k in OPTIMIZED_KEYS]
    else:
      cells += ["-"] * len(OPTIMIZED_KEYS)
    lines.append(f"| {v} | " + " | ".join(cells) + " |")
  peaks = [f"{r['platform']}: {size(r['device_peak_bytes'])}" for (k, _), r in results.items()
           if r.get("device_peak_bytes")]
  if peaks:
    lines += ["", "Device peak_bytes_in_use of the whole process (revax, then jax): "
              + "; ".join(peaks)]
  skipped = [f"{r['skipped']} before depth {d}" for (k, d), r in results.items()
             if "skipped" in r]
  if skipped:
    lines += ["", "Skipped: " + "; ".join(skipped)]
  return "\n".join(lines) + "\n"


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--out", help="where to write the markdown table (required unless a child)")
  parser.add_argument("--depths", type=lambda s: tuple(int(d) for d in s.split(",")))
  parser.add_argument("--width", type=int)
  parser.add_argument("--batch", type=int)
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--calls", type=int, default=3)
  parser.add_argument("--size", choices=sorted(SIZES), help="default sizes (default: by platform)")
  parser.add_argument("--dump", action="store_true", help="also read XLA's optimized HLO")
  parser.add_argument("--max-seconds", type=float, default=120.0,
                      help="per process: start no deeper depth after this long (default 120)")
  parser.add_argument("--no-jax", action="store_true", help="skip the JAX process")
  parser.add_argument("--barrier", action="store_true",
                      help="also run revax's invertible and checkpoint with an "
                           "optimization_barrier fence instead of a conditional (a third "
                           "process; an experiment)")
  parser.add_argument("--split", action="store_true",
                      help="also run revax's invertible with its VJPs recomputing tanh instead "
                           "of sharing the rebuild's (a process more; an experiment)")
  parser.add_argument("--fence-cts", action="store_true",
                      help="also run revax's invertible with fence_vjp_cotangents (the same "
                           "bits; a process more, two with --barrier; an option)")
  parser.add_argument("--coupling", action="store_true",
                      help="also run revax's invertible with its VJPs reading tanh's output as "
                           "y - x (vjp_output_from_coupling; a process more; an option)")
  parser.add_argument("--child", choices=("revax", "jax", "revax-barrier", "revax-split",
                                          "revax-coupling", "revax-coupling-barrier",
                                          "revax-fence-cts", "revax-fence-cts-barrier"),
                      help=argparse.SUPPRESS)
  parser.add_argument("--dump-dir", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  args.argv = list(sys.argv[1:] if argv is None else argv)
  if args.child:
    child_main(args)
    return
  if not args.out:
    parser.error("--out PATH is required")
  size = args.size or _probe_size()
  for key in ("width", "batch", "depths"):
    if getattr(args, key) is None:
      setattr(args, key, SIZES[size][key])
  load = [os.getloadavg()[0]]
  env = dict(os.environ)
  print(f"revax process: depths {args.depths}, width {args.width}, batch {args.batch}", flush=True)
  results = run_child("revax", args, env)
  # (the variant processes asked for: its flag, its child's name, what it changes)
  variants = [(args.barrier, "revax-barrier", "barrier fences"),
              (args.split, "revax-split", "the VJPs recomputing tanh")]
  for flag, name, what in ((args.coupling, "revax-coupling", "the VJPs reading y - x"),
                           (args.fence_cts, "revax-fence-cts", "the VJP cotangents fenced")):
    variants += [(flag, name, what), (flag and args.barrier, name + "-barrier",
                                      what + " and barrier fences")]
  for flag, name, what in variants:
    if flag:
      print(f"revax process with {what}", flush=True)
      results.update(run_child(name, args, env))
  if not args.no_jax:
    print("jax process", flush=True)
    # jax picks its platform itself (the TPU where there is one, now that revax let it go)
    results.update(run_child("jax", args, {k: v for k, v in env.items()
                                           if k != "JAX_PLATFORMS"}))
  load.append(os.getloadavg()[0])
  platforms = [r["platform"] for (k, _), r in results.items() if "platform" in r]
  report = format_report(results, args, platforms or [platform_module.machine()], load)
  pathlib.Path(args.out).write_text(report)
  print(report)
  print(f"written to {os.path.abspath(args.out)}")


def _probe_size() -> str:
  """'tpu' when revax's default device is a TPU, else 'cpu' -- asked in a child process, so
  that this one never holds the chip the measuring processes need."""
  out = subprocess.run([sys.executable, "-c", "import revax; print(revax.devices()[0].platform)"],
                       capture_output=True, text=True, check=True)
  return "tpu" if out.stdout.strip().splitlines()[-1] == "tpu" else "cpu"


if __name__ == "__main__":
  main()
