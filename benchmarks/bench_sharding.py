"""A data-parallel MLP training step over N CPU devices: revax vs JAX, side by side.

Run: python benchmarks/bench_sharding.py [--quick]

The step (loss, grad, SGD update of a 2-layer MLP) is jitted with the parameters replicated and
the batch split over a 1-d mesh of N devices, for N = 1 and N = 4. Each N runs in its own
subprocess in which both libraries see N CPU devices (REVAX_CPU_DEVICE_COUNT and XLA's
--xla_force_host_platform_device_count); there the two libraries are timed in interleaved rounds
(revax, jax, revax, ...), each round the median of per-step times (block_until_ready included,
parameters fed back as the previous step's sharded outputs, the batch resident on the devices).
Figures are the medians over rounds; the ratio is the median of the per-round ratios (paired).
A second pair runs in the same rounds: revax's and jax's StableHLO of the step, each compiled
and executed by revax's runtime on the same shards (no jit front end), which tells a gap in the
program (partitioning) from one in the runtime; revax's is also run.py's "revax program, direct"
column, which tells revax.jit's call path from its program.
On a machine with fewer cores than devices the 4-device figures include the devices' threads
competing for the cores.

Measured 2026-12-03 (2 cores, load average 1-3; 4-device paired ratio, then revax's program /
jax's program on revax's runtime): before the compiled multi-device call path 1.01, 1.22, 1.12,
1.00 (program 0.96, 0.94, 1.05, 1.01); after it 1.17, 1.09, 1.12 (program 1.02, 1.01, 0.96;
revax.jit / revax's program directly 1.03-1.06). The ratio swings by +-10% between runs with 4
device threads on 2 cores; the same-runtime pair stays near 1.0, so what is left between revax
and jax is the plugin's multi-device execution (a tiny 4-device jit call: revax 250 us, of
which ~170 us in the plugin's Execute, against 155 us for all of jax's), not revax's program.

Measured 2026-12-05 (another 2-core machine, AVX-512; revax's mesh Explicit, jax's then Auto):
4-device paired ratio 1.11, 1.11, 1.10, then, after sharded calls stopped re-typing results and
re-checking shards already laid out as the program takes them, 1.12, 1.08 (programs on one
runtime 1.01-1.02; revax.jit / its program directly 1.06-1.07); 1 device 0.78-0.81.
Later that day, with asynchronous dispatch of multi-device calls and both meshes Explicit (jax's
from jax.make_mesh, as a 0.10.2 user writes it): 4-device paired ratio 1.05, 1.12, 1.09, 1.09,
1.12, 1.08 (programs on one runtime 1.00-1.01; revax.jit / direct 1.03-1.07); 1 device
0.81-0.83. Asynchronous dispatch itself changes nothing here (measured in one process, calls
waiting vs not: 1.005, 1.019): the plugin's Execute returns only after ~600 us of the ~1700 us
step, and the devices' threads leave no idle core on 2 cores for the Python that follows it.
Measured 2026-12-05 evening, with repeated sharded calls going through a plan in C
(call_plans.ShardedPlan, `Runner.call_sharded`; the main thread's CPU time per call measured
with time.thread_time fell from ~180 us to ~90 us, Execute included): 4-device paired ratio
1.10 before (idle machine), then 1.01 (load 1) and 0.98 (load 4); revax.jit / direct 1.03-1.04.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from timing import Timings, row  # noqa: E402

BATCH, IN, HIDDEN, OUT = 512, 128, 256, 16


def _child(devices: int, steps: int, rounds: int) -> dict:
  """In a process with `devices` CPU devices: {lib: [per-round median seconds], "ratio": [...]}."""
  import numpy as np
  import jax
  import jax.numpy as jnp
  from jax.sharding import NamedSharding as JNS
  from jax.sharding import PartitionSpec as JP

  import revax
  import revax.numpy as rnp
  from revax.sharding import NamedSharding as RNS
  from revax.sharding import PartitionSpec as RP

  assert len(jax.devices()) == devices == len(revax.devices())
  rng = np.random.default_rng(0)
  params = {"w1": rng.standard_normal((IN, HIDDEN)).astype(np.float32) / np.sqrt(IN),
            "b1": np.zeros(HIDDEN, np.float32),
            "w2": rng.standard_normal((HIDDEN, OUT)).astype(np.float32) / np.sqrt(HIDDEN)}
  x = rng.standard_normal((BATCH, IN)).astype(np.float32)
  y = rng.standard_normal((BATCH, OUT)).astype(np.float32)

  def make(lib, np_mod, mesh, ns, ps):
    def step(p, xb, yb):
      def loss(q):
        h = np_mod.tanh(xb @ q["w1"] + q["b1"])
        return np_mod.mean((h @ q["w2"] - yb) ** 2)
      lval, g = lib.value_and_grad(loss)(p)
      return lib.tree_util.tree_map(lambda a, d: a - 0.05 * d, p, g), lval
    repl, data = ns(mesh, ps()), ns(mesh, ps("x"))
    f = lib.jit(step, in_shardings=(repl, data, data), out_shardings=(repl, repl))
    state = {"p": lib.device_put(params, repl)}
    xb, yb = lib.device_put(x, data), lib.device_put(y, data)

    def call():
      state["p"], lval = f(state["p"], xb, yb)
      lval.block_until_ready()
    call.lowered_text = lambda: f.lower(params, x, y).as_text()
    call.args = (state, xb, yb)
    return call

  calls = {
      "revax": make(revax, rnp, revax.make_mesh((devices,), ("x",)), RNS, RP),
      "jax": make(jax, jnp, jax.make_mesh((devices,), ("x",)), JNS, JP),
  }
  # Same runtime, each library's program: revax's and jax's StableHLO of the step, both
  # compiled by revax's runtime for the same devices and run on revax's shards (no jit front
  # end). Attributes a gap to the program (partitioning), to the runtime (the plugin's XLA,
  # execution) or to revax.jit's call path (revax.jit beside revax's program run directly).
  from revax._src.runtime import sharded as rs
  from revax._src.runtime.client import get_backend
  backend = get_backend()
  ids = [d.id for d in backend.devices]
  state, xb_r, yb_r = calls["revax"].args
  leaves = [state["p"][k] for k in sorted(state["p"])] + [xb_r, yb_r]
  # a sharded Array holds one buffer per device; on one device jit's outputs are plain Arrays
  shards = [leaf._buffers if hasattr(leaf, "_buffers") else [leaf._device_buffer()]
            for leaf in leaves]
  per_device = [[shard[d] for shard in shards] for d in range(devices)]
  programs = {name: rs.compile_spmd(backend, calls[name].lowered_text(), ids)
              for name in calls}
  for name, exe in programs.items():
    def direct(exe=exe):
      outs = exe.execute_sharded(per_device)
      del outs
    calls[name + "_program_on_revax_runtime"] = direct
  # the same first steps give the same losses (one check that both compute the step)
  for fn in calls.values():
    for _ in range(5):
      fn()
  out = {name: [] for name in calls}
  out["ratio"] = []
  for _ in range(rounds):
    for name, fn in calls.items():
      times = []
      for _ in range(steps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
      out[name].append(statistics.median(times))
    out["ratio"].append(out["revax"][-1] / out["jax"][-1])
    if devices > 1:
      out.setdefault("same_runtime_ratio", []).append(
          out["revax_program_on_revax_runtime"][-1] / out["jax_program_on_revax_runtime"][-1])
  return out


def run_devices(devices: int, quick: bool) -> dict:
  env = dict(os.environ, REVAX_CPU_DEVICE_COUNT=str(devices), JAX_PLATFORMS="cpu",
             XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
             PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
  steps, rounds = (30, 5) if quick else (100, 9)
  code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import bench_sharding as b; "
          f"print('RESULT', json.dumps(b._child({devices}, {steps}, {rounds})))")
  p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                     timeout=900)
  line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), None)
  if p.returncode or line is None:
    raise RuntimeError(f"bench_sharding child ({devices} devices) failed:\n{p.stderr[-3000:]}")
  return json.loads(line[len("RESULT "):])


def rows(quick: bool):
  """Rows for benchmarks/run.py (`timing.row`): revax.jit, revax's program run directly on the
  same shards, jax.jit; paired medians of the child's rounds."""
  out = []
  results = {n: run_devices(n, quick) for n in (1, 4)}
  for n, r in results.items():
    t = Timings({"revax": r["revax"], "jax": r["jax"],
                 "revax direct": r["revax_program_on_revax_runtime"]})
    out.append(row(f"data-parallel MLP train step, {n} CPU device{'s' if n > 1 else ''} "
                   f"(batch {BATCH}, {IN}-{HIDDEN}-{OUT})", t, 1.1 if n > 1 else None))
  one, four = results[1], results[4]
  for lib in ("revax", "jax"):
    over = statistics.median(four[lib]) / statistics.median(one[lib])
    print(f"bench_sharding: {lib} 4 devices / 1 device = {over:.2f}x", file=sys.stderr)
  return out


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true")
  args = parser.parse_args()
  for n in (1, 4):
    r = run_devices(n, args.quick)
    rv, jv = statistics.median(r["revax"]) * 1e6, statistics.median(r["jax"]) * 1e6
    print(f"{n} device(s): revax {rv:.0f} us, jax {jv:.0f} us, paired ratio "
          f"{statistics.median(r['ratio']):.2f} (rounds: "
          f"{', '.join(f'{x:.2f}' for x in r['ratio'])})")
    rp = statistics.median(r["revax_program_on_revax_runtime"]) * 1e6
    jp = statistics.median(r["jax_program_on_revax_runtime"]) * 1e6
    over = Timings({"jit": r["revax"], "direct": r["revax_program_on_revax_runtime"]})
    print(f"  each library's program on revax's runtime: revax's {rp:.0f} us, jax's {jp:.0f} us"
          + (f", paired ratio {statistics.median(r['same_runtime_ratio']):.2f}"
             if "same_runtime_ratio" in r else "")
          + f"; revax.jit / revax's program directly {over.ratio('jit', 'direct'):.2f}")


if __name__ == "__main__":
  main()
