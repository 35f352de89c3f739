"""Peak memory of a jitted step, read the best way the backend allows (shared by the examples and
the benchmarks).

Two figures, each partial:
- XLA's own account of the compiled program, `Compiled.memory_analysis()`: its temporaries plus
  its arguments plus its outputs (less the outputs that alias donated arguments), which is the
  program's peak when nothing else is alive. Every backend has it.
- On an accelerator whose runtime keeps allocator statistics (TPU), `Device.memory_stats()`'s
  'peak_bytes_in_use': the most device memory the process's buffers have held at once. It only
  ever grows, so it measures one step when the step is the largest thing the process has run so
  far: run configurations in order of growing memory, or one per process. On a TPU v5e (libtpu
  0.0.42.1, 2026-12-06) it does NOT count a program's temporaries: plain grad of the reversible
  transformer example read 0.21 GiB at depth 8 and ran out of the chip's 15.7 GiB at depth 32.
  XLA:CPU keeps no statistics (None, as JAX's).
A step's peak is therefore the larger of the two where there are two, else XLA's account.

A step that does not fit raises at compile or at run time with RESOURCE_EXHAUSTED (TPU: "Ran out
of memory in memory space hbm ..."); `is_out_of_memory` recognizes those errors.
"""
from __future__ import annotations

import statistics
import time

OOM_MARKERS = ("RESOURCE_EXHAUSTED", "Ran out of memory", "out of memory", "Out of memory",
               "exceeds the memory", "Allocation failure")


def device_peak_bytes(device=None) -> int | None:
  """`device.memory_stats()['peak_bytes_in_use']` (default: the first device), or None where the
  runtime keeps no allocator statistics (CPU)."""
  import revax
  device = device if device is not None else revax.devices()[0]
  stats = device.memory_stats()
  if isinstance(stats, dict) and "peak_bytes_in_use" in stats:
    return int(stats["peak_bytes_in_use"])
  return None


def compiled_bytes(compiled) -> dict:
  """XLA's memory account of a compiled program: {'temp', 'argument', 'output', 'alias',
  'total'} in bytes, total = temp + argument + output - alias."""
  m = compiled.memory_analysis()
  out = {"temp": int(m.temp_size_in_bytes), "argument": int(m.argument_size_in_bytes),
         "output": int(m.output_size_in_bytes),
         "alias": int(getattr(m, "alias_size_in_bytes", 0) or 0)}
  out["total"] = out["temp"] + out["argument"] + out["output"] - out["alias"]
  return out


def is_out_of_memory(error: BaseException) -> bool:
  """Whether `error` (from compiling or running a program) says the device ran out of memory."""
  text = f"{type(error).__name__}: {error}"
  return any(marker in text for marker in OOM_MARKERS)


def measure_step(jitted, args, *, calls: int = 5, warmup: int = 1) -> dict:
  """Compile `jitted` for `args`, run it, and report its memory and time.

  Args:
    jitted: a `revax.jit`-wrapped function.
    args: its positional arguments (a tuple); put them on the device first, so that the timed
      calls transfer nothing.
    calls: timed calls after the warm-up; the time reported is their median.
    warmup: untimed calls first (the first call also loads the executable).

  Returns:
    {'peak_bytes': the step's peak memory (the larger of the two figures where the device keeps
    statistics), 'source': which figure, 'device_peak_bytes': the device's figure or None,
    'compiled': `compiled_bytes` of the program,
    'seconds': median seconds per call, 'compile_seconds': trace + lower + compile}.
    On a backend with allocator statistics, `peak_bytes` is the process's peak after the calls
    (see the module's docstring for when that is the step's own).

  Raises:
    Whatever compiling or running raises; `is_out_of_memory` tells an out-of-memory error.
  """
  import revax
  start = time.perf_counter()
  compiled = jitted.lower(*args).compile()
  compile_seconds = time.perf_counter() - start
  account = compiled_bytes(compiled)
  for _ in range(warmup):
    revax.block_until_ready(jitted(*args))
  times = []
  for _ in range(calls):
    start = time.perf_counter()
    revax.block_until_ready(jitted(*args))
    times.append(time.perf_counter() - start)
  peak = device_peak_bytes()
  return {"peak_bytes": account["total"] if peak is None else max(peak, account["total"]),
          "source": "compiled memory_analysis" if peak is None else
                    "the larger of device peak_bytes_in_use and compiled memory_analysis",
          "device_peak_bytes": peak, "compiled": account,
          "seconds": statistics.median(times), "compile_seconds": compile_seconds}
