"""Where a jitted call's time goes on the chip: revax against jax, each in its own process.

    python tests/tpu/profile_dispatch.py OUT_DIR [PAIRS]   # alternating: OUT_DIR/dispatch.json
    python tests/tpu/profile_dispatch.py --lib revax|jax [--profile PATH]

Per library: 2000 chained calls of jit(x + 1) on a scalar (each call's input is the last one's
output, still in flight), 2000 calls on the same ready input, 200 calls each waited for (the
round trip), 1000 chained eager `x + 1` (no jit), 500 device_puts of a scalar, and how soon a call
whose program runs about half a second returns (issue 31: before its work ends). For revax also
the chained calls under several in-flight bounds, whether the compiled fast path is in use, and
a cProfile of the chained calls (the functions that cost the most, written to --profile).
"""
import json
import os
import subprocess
import sys
import time


def per_call_us(fn, calls):
  start = time.perf_counter()
  fn(calls)
  return (time.perf_counter() - start) / calls * 1e6


def measure(lib, profile_path=None):
  if lib == "jax":
    import jax
    import jax.numpy as jnp
  else:
    import revax as jax
    import revax.numpy as jnp
  tiny = jax.jit(lambda x: x + 1)
  x0 = jax.block_until_ready(tiny(jnp.zeros((), jnp.float32)))

  def chained(calls):
    x = x0
    for _ in range(calls):
      x = tiny(x)
    jax.block_until_ready(x)

  def independent(calls):
    y = None
    for _ in range(calls):
      y = tiny(x0)
    jax.block_until_ready(y)

  def waited(calls):
    for _ in range(calls):
      jax.block_until_ready(tiny(x0))

  def eager(calls):
    x = x0
    for _ in range(calls):
      x = x + 1
    jax.block_until_ready(x)

  def put(calls):
    y = None
    for i in range(calls):
      y = jax.device_put(float(i))
    jax.block_until_ready(y)

  for fn in (chained, independent, waited, eager, put):  # warm every path once
    fn(20)
  result = {"lib": lib, "device": str(jax.devices()[0]),
            "chained_us": per_call_us(chained, 2000),
            "independent_us": per_call_us(independent, 2000),
            "waited_us": per_call_us(waited, 200), "eager_chained_us": per_call_us(eager, 1000),
            "device_put_us": per_call_us(put, 500)}

  def slow(a):  # about half a second of bf16 matrix products on one v5e chip
    return jax.lax.fori_loop(0, 700, lambda i, m: (m @ a) * 0.5, a)

  slow_jit = jax.jit(slow)
  n = 64 if os.environ.get("PROFILE_SMALL") else 4096
  a = jnp.ones((n, n), jnp.bfloat16) * 0.01
  jax.block_until_ready(slow_jit(a))
  start = time.perf_counter()
  out = slow_jit(a)
  returned = time.perf_counter() - start
  jax.block_until_ready(out)
  result.update(slow_call_returned_s=returned, slow_call_done_s=time.perf_counter() - start)

  if lib == "revax":
    from revax._src.runtime import fastpath
    result["fastpath"] = fastpath.available
    bounds = {}
    for bound in (1, 2, 8, 64, 1024):
      jax.config.update("revax_max_inflight_computations", bound)
      chained(20)
      bounds[bound] = per_call_us(chained, 2000)
    result["chained_us_by_inflight_bound"] = bounds
    if profile_path:
      import cProfile
      import pstats
      profiler = cProfile.Profile()
      profiler.enable()
      chained(2000)
      profiler.disable()
      with open(profile_path, "w") as f:
        pstats.Stats(profiler, stream=f).sort_stats("tottime").print_stats(25)
  return result


def main():
  if sys.argv[1] == "--lib":
    path = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--profile" else None
    print(json.dumps(measure(sys.argv[2], path)), flush=True)
    return
  out = sys.argv[1]
  os.makedirs(out, exist_ok=True)
  rows = []
  pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
  for lib in ("jax", "revax") * pairs:
    command = [sys.executable, __file__, "--lib", lib]
    if lib == "revax":
      command += ["--profile", os.path.join(out, "dispatch_profile.txt")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    rows.append(json.loads(lines[-1]) if lines else {"lib": lib, "error": done.stderr[-3000:]})
    print(json.dumps(rows[-1]), flush=True)
  with open(os.path.join(out, "dispatch.json"), "w") as f:
    json.dump(rows, f, indent=1)


if __name__ == "__main__":
  main()
