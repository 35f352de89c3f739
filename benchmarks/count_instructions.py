"""Instructions per call of revax's cached jit call, its program run directly, and bare PJRT.

Run: python benchmarks/count_instructions.py            (needs valgrind; takes minutes)

Wall-clock ratios of small overheads drown in machine load (the shared 2-core machines this
project runs on swing them by 30%); instruction counts under callgrind do not. The script
re-runs itself under `valgrind --tool=callgrind`, collecting only inside glibc's `qsort_r`,
whose comparator (a ctypes callback) runs one measured loop; one dump per loop. Per call it
reports, for jit(grad) of a 64-layer MLP (129 inputs, 128 outputs) and for f32[8] + f32[8]:
  raw      the executable through bare ctypes calls (execute, await, one destroy per output)
  direct   `Executable.execute` on the argument buffers, outputs freed
  jit      `revax.jit(f)(*args)` (outputs freed)
  jit+bur  the same and `revax.block_until_ready` over the outputs
  jax, jax+bur  the same two through jax.jit (a second interpreter under callgrind)

Measured 2026-12-03 (instructions per call; x86_64, CPython 3.11.7, jax 0.10.2):

  case    raw (ctypes)  direct      jit         jit+bur     jax         jax+bur
  grad64  1,319,454     1,353,268   1,309,665   1,473,156   1,950,083   2,460,996
  add8       32,034        32,584      28,453      33,255      41,517      53,322

with the compiled call path (runtime/_fastpath.c): jit/direct 0.97x (grad64) and 0.87x (add8),
jit/jax 0.67x and 0.69x. Before it (ctypes throughout; the previous session): jit/direct 1.19x,
add8 jit/jax 1.22-1.38x in wall time. Wall time, interleaved paired medians of 60 rounds on a
quiet machine (load 1.2): f32[8] add 7.8 us vs jax 10.9 us (0.69x); with REVAX_FASTPATH=0
12.5 us vs 8.8 us (1.44x).
"""
from __future__ import annotations

import ctypes as C
import glob
import os
import re
import subprocess
import sys
import tempfile

CASES = {"grad64": 20, "add8": 400}  # calls per measured loop


def _raw_runner(exe, buffers):
  from revax._src.runtime import pjrt
  api, count = exe._api, len(buffers)
  inputs = (C.c_void_p * max(count, 1))(*[b._ptr for b in buffers])
  argument_list = (C.c_void_p * 1)(C.addressof(inputs))
  outputs = (C.c_void_p * max(exe.num_outputs, 1))()
  output_list = (C.c_void_p * 1)(C.addressof(outputs))
  events = (C.c_void_p * 1)()
  options = pjrt.ExecuteOptions(struct_size=pjrt.ExecuteOptions.STRUCT_SIZE)
  args = api.args("LoadedExecutable_Execute", executable=exe._ptr, options=C.addressof(options),
                  argument_lists=C.addressof(argument_list), num_devices=1, num_args=count,
                  output_lists=C.addressof(output_list),
                  device_complete_events=C.addressof(events),
                  execute_device=buffers[0].device._ptr)
  event, destroy = api.args("Event_Await"), api.args("Buffer_Destroy")
  fns = api.functions
  keep = (inputs, argument_list, outputs, output_list, events, options, args, event, destroy)

  def run(keep=keep):
    assert not fns["LoadedExecutable_Execute"](C.addressof(args))
    event.event = events[0]
    assert not fns["Event_Await"](C.addressof(event))
    fns["Event_Destroy"](C.addressof(event))
    for pointer in outputs[:exe.num_outputs]:
      destroy.buffer = pointer
      fns["Buffer_Destroy"](C.addressof(destroy))
  return run


def _measured(fn, number):
  """Run `fn` `number` times inside qsort_r (where callgrind collects)."""
  libc = C.CDLL(None)
  done = []

  def compare(a, b):
    if not done:
      done.append(True)
      for _ in range(number):
        fn()
    return 0
  callback = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p)(compare)
  libc.qsort((C.c_int64 * 2)(), 2, 8, callback)


def _cases(lib, np_mod):
  """{name: (jitted function, device arguments)} for revax or jax."""
  import numpy as np

  def mlp_loss(params, x):
    for w, b in params:
      x = np_mod.tanh(x @ w + b)
    return (x ** 2).sum()
  rng = np.random.default_rng(0)
  params = [(rng.standard_normal((32, 32), np.float32) / 6, np.zeros(32, np.float32))
            for _ in range(64)]
  return {"grad64": (lib.jit(lib.grad(mlp_loss)),
                     (lib.device_put(params), lib.device_put(np.ones((8, 32), np.float32)))),
          "add8": (lib.jit(lambda a, b: a + b),
                   (lib.device_put(np.arange(8, dtype=np.float32)),
                    lib.device_put(np.ones(8, np.float32))))}


def _measure_variants(name, variants):
  for label, fn in variants.items():
    for _ in range(5):
      fn()
    _measured(fn, CASES[name])
    print("LOOP", name, label, flush=True)


def child():
  import revax
  import revax.numpy as rnp
  for name, (f, args) in _cases(revax, rnp).items():
    for _ in range(3):
      revax.block_until_ready(f(*args))
    exe = f.lower(*args).compile()._entry.program.executable
    buffers = [leaf._buf for leaf in revax.tree_util.tree_leaves(args)]
    _measure_variants(name, {
        "raw": _raw_runner(exe, buffers), "direct": lambda: exe.execute(buffers),
        "jit": lambda: f(*args), "jit+bur": lambda: revax.block_until_ready(f(*args))})


def child_jax():
  """The same two calls through jax.jit (its C++ dispatch), for the revax/JAX ratio."""
  import jax
  import jax.numpy as jnp
  for name, (f, args) in _cases(jax, jnp).items():
    for _ in range(3):
      jax.block_until_ready(f(*args))
    _measure_variants(name, {"jax": lambda: f(*args),
                             "jax+bur": lambda: jax.block_until_ready(f(*args))})


def main():
  out = tempfile.mkdtemp(prefix="revax_callgrind_")
  env = dict(os.environ, PYTHONHASHSEED="0")
  log = ""
  for flag in ("--child", "--child-jax"):
    log += subprocess.run(
        ["valgrind", "--tool=callgrind", "--toggle-collect=qsort_r", "--dump-after=qsort_r",
         f"--callgrind-out-file={out}/cg{flag}.out", sys.executable, __file__, flag],
        env=env, capture_output=True, text=True, check=True).stdout
  loops = [line.split()[1:] for line in log.splitlines() if line.startswith("LOOP")]
  dumps = [path for flag in ("--child", "--child-jax") for path in sorted(
      glob.glob(f"{out}/cg{flag}.out.*"), key=lambda p: int(p.rsplit(".", 1)[1]))]
  counts = []
  for path in dumps:
    with open(path) as f:
      total = int(re.search(r"^summary: (\d+)", f.read(), re.M).group(1))
    if total > 10 * max(CASES.values()) * 1000:  # a measured loop, not a startup qsort
      counts.append(total)
  for (name, label), total in zip(loops, counts, strict=True):
    print(f"{name:7s} {label:8s} {total / CASES[name]:12,.0f} instructions per call")


if __name__ == "__main__":
  if "--child-jax" in sys.argv:
    child_jax()
  elif "--child" in sys.argv:
    child()
  else:
    main()
