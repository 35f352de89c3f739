"""Timing helpers shared by the benchmarks: revax and JAX side by side, in one process.

Calls are timed in interleaved rounds (revax, jax, revax, jax, ...), so that load from elsewhere
on the machine hits every library alike, and reported as paired medians: the median over rounds
of each library's mean time per call, and the median over rounds of the ratio of two libraries
within the same round (a round disturbed by load is disturbed for both, so its ratio stays
honest where its times do not).
"""
from __future__ import annotations

import gc
import statistics
import time


class Timings(dict):
  """{name: median seconds per call} of interleaved rounds; `samples` keeps every round's value
  per name, `ratio(a, b)` is the median over rounds of a's time over b's in the same round."""

  def __init__(self, samples: dict):
    super().__init__({name: statistics.median(s) for name, s in samples.items()})
    self.samples = samples

  def ratio(self, a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(self.samples[a], self.samples[b], strict=True))


def libraries() -> dict:
  """{"revax": (revax, revax.numpy), "jax": (jax, jax.numpy)}."""
  import jax
  import jax.numpy as jnp

  import revax
  import revax.numpy as rnp
  compile_uncached()
  return {"revax": (revax, rnp), "jax": (jax, jnp)}


def compile_uncached() -> None:
  """Turn revax's persistent compilation cache off in this process: rows that time compiles or
  first calls must time XLA compiling, not a load from the cache a previous run filled (JAX's
  cache is off by default). The cache has its own benchmark, bench_compilation_cache.py, in
  fresh processes."""
  import revax
  revax.config.update("enable_compilation_cache", False)


def blocked_runs(lib, f, args, number: int, repeats: int) -> list[float]:
  """Seconds per call of `f(*args)`, each call waited for with `lib.block_until_ready`: after
  max(2, number // 5) warm-up calls, `repeats` runs of `number` calls (the per-process timing of
  bench_plugins.py and bench_conv_ops.py)."""
  for _ in range(max(2, number // 5)):
    lib.block_until_ready(f(*args))
  runs = []
  for _ in range(repeats):
    start = time.perf_counter()
    for _ in range(number):
      lib.block_until_ready(f(*args))
    runs.append((time.perf_counter() - start) / number)
  return runs


def time_interleaved(calls: dict, number: int, rounds: int, warmup: int = 3,
                     cpu: bool = False) -> Timings:
  """Paired medians of `rounds` interleaved rounds, each the mean over `number` calls of each
  function in `calls` ({name: function}), the order rotated by one from round to round; see
  `Timings`.

  With `cpu`, the result's `cpu` attribute holds the same rounds in process CPU seconds (all
  the process's threads), the steadier figure on a loaded machine: other processes' load
  stretches wall time, not the work done."""
  for fn in calls.values():
    for _ in range(max(warmup, number // 5)):
      fn()
  names = list(calls)
  samples = {name: [] for name in names}
  cpu_samples = {name: [] for name in names}
  for k in range(rounds):
    # each round starts one name later, so that every call takes every place in a round
    # equally often: what the previous call leaves behind (another library's worker threads
    # still spinning, caches) falls on no one library
    shift = k % len(names)
    for name in names[shift:] + names[:shift]:
      fn = calls[name]
      t, c = time.perf_counter(), time.process_time()
      for _ in range(number):
        fn()
      samples[name].append((time.perf_counter() - t) / number)
      cpu_samples[name].append((time.process_time() - c) / number)
  timings = Timings(samples)
  if cpu:
    timings.cpu = Timings(cpu_samples)
  return timings


def measure_interleaved(measure, libs: dict, rounds: int = 3) -> Timings:
  """Paired medians of a one-shot measurement: `measure(name, lib, np_mod)` (seconds, bytes,
  ...) for each library of `libs` ({name: (lib, np_mod)}) in turn, `rounds` times, with garbage
  collected before each; for what cannot be repeated in a loop (a first call, a compile)."""
  samples = {name: [] for name in libs}
  for _ in range(rounds):
    for name, (lib, np_mod) in libs.items():
      gc.collect()
      samples[name].append(measure(name, lib, np_mod))
  return Timings(samples)


def revax_program_directly(jitted, *args):
  """A function running the executable that `jitted(*args)` runs (revax's compiled program)
  straight on the runtime: `Executable.execute` on the arguments' device buffers, waiting for
  its outputs (as the rows' jit calls do with `block_until_ready`), freed when dropped -- no jit
  front end (no signature lookup, argument checks, Array outputs or pytrees). Beside
  `revax.jit` it shows what the call path adds to the program itself; beside JAX, whether a gap
  is revax's program or revax's call path.

  `args` must be device-resident (revax.device_put) for the call to touch no host data.
  """
  import revax
  compiled = jitted.lower(*args).compile()
  entry = compiled._entry
  program = entry.program
  leaves = list(entry.consts) + revax.tree_util.tree_leaves(args)
  buffers = [revax.device_put(leaf)._device_buffer() for leaf in leaves]
  executable = program.executable
  wait = executable._backend.wait_buffers

  def run():
    outs = executable.execute(buffers)
    wait(outs)
    return outs
  return run


def row(label: str, t: Timings, target, unit: str = "us", scale: float = 1e6,
        revax: str = "revax", reference: str = "jax", direct: str | None = None) -> tuple:
  """A run.py row from interleaved timings, with paired median ratios.

  Args:
    label: the row's label.
    t: timings holding `revax` and `reference` (and, when the revax call is one jitted program,
      that program run directly: see `revax_program_directly`).
    target: the ratio revax/reference aims for, or None.
    unit, scale: the unit shown and the factor from seconds to it.
    revax, reference: the names in `t` of the row's two sides (revax.jit and jax by default).
    direct: the name in `t` of the revax side's program run directly (default: `revax` +
      " direct", where `t` has it).

  Returns:
    (label, unit, revax figure, reference figure, target, extra): extra holds "ratio" (paired
    median revax/reference) and, with a direct run, "direct" (its median, in `unit`) and
    "jit/direct" (paired median of the revax side over the direct run, same rounds).
  """
  extra = {"ratio": t.ratio(revax, reference)}
  direct = f"{revax} direct" if direct is None else direct
  if direct in t:
    extra["direct"] = t[direct] * scale
    extra["jit/direct"] = t.ratio(revax, direct)
  return (label, unit, t[revax] * scale, t[reference] * scale, target, extra)


def jitted_calls(lib_name: str, lib, fn, *args) -> dict:
  """{name: zero-argument call} for one library's jitted `fn` on device-resident `args`, each
  call waiting for its outputs; for revax also "revax direct", the same compiled program run
  straight on the runtime (`revax_program_directly`).

  Args:
    lib_name: "revax" or "jax" (any name; only "revax" gets a direct call).
    lib: the library module (for `block_until_ready`).
    fn: the jitted function.
    *args: its arguments, already on the device (`lib.device_put`).
  """
  calls = {lib_name: lambda: lib.block_until_ready(fn(*args))}
  if lib_name == "revax":
    calls["revax direct"] = revax_program_directly(fn, *args)
  return calls


def describe(rows: list) -> list:
  """One printable line per row (`row`'s tuples, or plain (label, unit, revax, jax, target)),
  for a topic module run on its own."""
  lines = []
  for label, unit, r, j, target, *rest in rows:
    extra = rest[0] if rest else {}
    ratio = extra.get("ratio", r / j)
    text = f"{label}: revax {r:.4g} {unit}, reference {j:.4g} {unit}, ratio {ratio:.3f}x"
    if "direct" in extra:
      text += f", revax program direct {extra['direct']:.4g} {unit} " \
              f"(jit/direct {extra['jit/direct']:.3f}x)"
    if target is not None:
      text += f", target <= {target}x ({'met' if ratio <= target else 'missed'})"
    lines.append(text)
  return lines


def per_call_us(fn, number: int, repeats: int = 5, warmup: int = 200) -> float:
  """Median over `repeats` of the mean microseconds per call over `number` calls."""
  for _ in range(min(number, warmup)):
    fn()
  samples = []
  for _ in range(repeats):
    t = time.perf_counter_ns()
    for _ in range(number):
      fn()
    samples.append((time.perf_counter_ns() - t) / number / 1e3)
  return statistics.median(samples)
