"""A data-parallel MLP training step over N CPU devices: revax vs JAX, one library per process.

Run: python benchmarks/bench_sharding.py [--quick]

The step (loss, grad, SGD update of a 2-layer MLP) is jitted with the parameters replicated and
the batch split over a 1-d mesh of N devices, for N = 1 and N = 4. For each N, each library runs
in its own child processes (processes.time_apart: pairs alternating which goes first; the ratio
is the median of the per-pair ratios) that see N CPU devices (REVAX_CPU_DEVICE_COUNT and XLA's
--xla_force_host_platform_device_count); a child times the mean step over interleaved rounds
(block_until_ready included, parameters fed back as the previous step's sharded outputs, the
batch resident on the devices). In revax's child two more calls run in the same rounds: revax's
and jax's StableHLO of the step (jax's written by a short jax-only process first), each compiled
and executed by revax's runtime on the same shards (no jit front end), which tells a gap in the
program (partitioning) from one in the runtime; revax's is also run.py's "revax program, direct"
column, which tells revax.jit's call path from its program. (Before 2026-12-06 both libraries
ran in one process per N, in interleaved rounds: the figures below were measured that way.)
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
import importlib
import os
import pathlib
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from processes import (Apart, ChildCalls, child_env, emit, run_child,  # noqa: E402
                       time_apart)
from timing import row  # noqa: E402

BATCH, IN, HIDDEN, OUT = 512, 128, 256, 16


def _data():
  import numpy as np
  rng = np.random.default_rng(0)
  params = {"w1": rng.standard_normal((IN, HIDDEN)).astype(np.float32) / np.sqrt(IN),
            "b1": np.zeros(HIDDEN, np.float32),
            "w2": rng.standard_normal((HIDDEN, OUT)).astype(np.float32) / np.sqrt(HIDDEN)}
  x = rng.standard_normal((BATCH, IN)).astype(np.float32)
  y = rng.standard_normal((BATCH, OUT)).astype(np.float32)
  return params, x, y


def _step(lib_name: str, lib, np_mod, devices: int):
  """(zero-argument step call feeding its parameters back, the jitted step, the data) of one
  library with the parameters replicated and the batch split over a mesh of `devices`."""
  sharding = importlib.import_module(f"{lib_name}.sharding")
  assert len(lib.devices()) == devices, (lib_name, lib.devices())
  params, x, y = _data()
  mesh = lib.make_mesh((devices,), ("x",))
  ns, ps = sharding.NamedSharding, sharding.PartitionSpec

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
  return call, f, (state, xb, yb)


def jax_program_text(devices: int) -> str:
  """jax's StableHLO of the step on `devices` devices (in a process of jax alone)."""
  import jax
  import jax.numpy as jnp
  _, f, _ = _step("jax", jax, jnp, devices)
  return f.lower(*_data()).as_text()


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool):
  """One library's calls on `group` (a device count) CPU devices, for processes.time_apart:
  jax.jit's step, or revax.jit's step, revax's program run directly on the same shards
  ("revax direct") and jax's StableHLO compiled and run by revax's runtime on them ("jax
  program on revax runtime", from env BENCH_SHARDING_JAX_TEXT: a file jax's process wrote).
  The last two are the same runtime running each library's program (no jit front end): a gap
  between them is the program (partitioning), between revax.jit and the first revax's call
  path, and between revax's direct run and jax.jit the runtime."""
  devices = int(group)
  call, f, (state, xb, yb) = _step(lib_name, lib, np_mod, devices)
  calls = {lib_name: call}
  if lib_name == "revax":
    from revax._src.runtime import sharded as rs
    from revax._src.runtime.client import get_backend
    backend = get_backend()
    ids = [d.id for d in backend.devices]
    leaves = [state["p"][k] for k in sorted(state["p"])] + [xb, yb]
    # a sharded Array holds one buffer per device; on one device jit's outputs are plain Arrays
    shards = [leaf._buffers if hasattr(leaf, "_buffers") else [leaf._device_buffer()]
              for leaf in leaves]
    per_device = [[shard[d] for shard in shards] for d in range(devices)]
    texts = {"revax direct": f.lower(*_data()).as_text(),
             "jax program on revax runtime": pathlib.Path(
                 os.environ["BENCH_SHARDING_JAX_TEXT"]).read_text()}
    for name, text in texts.items():
      exe = rs.compile_spmd(backend, text, ids)

      def direct(exe=exe, keep=leaves):  # (keep: the Arrays owning the shards stay alive)
        outs = exe.execute_sharded(per_device)
        del outs
      calls[name] = direct
  steps, rounds = (30, 3) if quick else (100, 5)
  return ChildCalls(calls, steps, rounds, warmup=5)


def _env(devices: int) -> dict:
  return {"REVAX_CPU_DEVICE_COUNT": str(devices), "JAX_PLATFORMS": "cpu",
          "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}


def run_devices(devices: int, quick: bool) -> Apart:
  """`time_apart` of the step on `devices` CPU devices, each library in its own processes."""
  with tempfile.TemporaryDirectory(prefix="bench-sharding-") as tmp:
    text = pathlib.Path(tmp) / "jax.mlir"
    run_child(pathlib.Path(__file__), ["--jax-text", devices, text],
              child_env(_env(devices)))
    return time_apart("bench_sharding", [str(devices)], quick,
                      env_all={**_env(devices), "BENCH_SHARDING_JAX_TEXT": str(text)}
                      )[str(devices)]


def rows(quick: bool):
  """Rows for benchmarks/run.py (`timing.row`): revax.jit and revax's program run directly on
  the same shards (paired rounds in revax's process), jax.jit (its own process; the ratio is the
  median of the per-pair ratios)."""
  out = []
  results = {n: run_devices(n, quick) for n in (1, 4)}
  for n, t in results.items():
    out.append(row(f"data-parallel MLP train step, {n} CPU device{'s' if n > 1 else ''} "
                   f"(batch {BATCH}, {IN}-{HIDDEN}-{OUT})", t, 1.1 if n > 1 else None))
  one, four = results[1], results[4]
  for lib in ("revax", "jax"):
    print(f"bench_sharding: {lib} 4 devices / 1 device = {four[lib] / one[lib]:.2f}x",
          file=sys.stderr)
  return out


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--jax-text", nargs=2, help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.jax_text:
    devices, path = args.jax_text
    pathlib.Path(path).write_text(jax_program_text(int(devices)))
    emit({"written": path})
    return
  for n in (1, 4):
    t = run_devices(n, args.quick)
    print(f"{n} device(s): revax {t['revax'] * 1e6:.0f} us, jax {t['jax'] * 1e6:.0f} us, "
          f"ratio {t.ratio('revax', 'jax'):.2f} (pairs: "
          f"{', '.join(f'{x:.2f}' for x in t.ratios('revax', 'jax'))})")
    print(f"  each library's program on revax's runtime: revax's "
          f"{t['revax direct'] * 1e6:.0f} us, jax's {t['jax program on revax runtime'] * 1e6:.0f}"
          f" us, paired ratio {t.ratio('revax direct', 'jax program on revax runtime'):.2f}; "
          f"revax.jit / revax's program directly {t.ratio('revax', 'revax direct'):.2f}")


if __name__ == "__main__":
  main()
