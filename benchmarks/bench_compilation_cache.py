"""compilation cache: the first call of a program in a fresh process, cold cache vs warm cache.

The program is the 64-layer reversible MLP of bench_invertible under `revax.invertible`,
`jit(grad(loss))`: each measurement is a fresh interpreter timing its first call (trace, lower,
then compile or load from the persistent cache, then run), after imports and input set-up.
Variants, interleaved round by round so that machine load hits each alike:
- revax, cold: an empty cache directory (trace + lower + XLA compile + store);
- revax, warm: the directory a cold run filled (trace + lower + load);
- jax: jax.jit's first call with JAX's defaults (its persistent cache is off unless configured).

Run: python benchmarks/bench_compilation_cache.py [--quick]
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

DEPTH = 64

_CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {here!r})
    from bench_invertible import _inputs, _loss
    lib_name = sys.argv[1]
    if lib_name == "jax":
      import jax as lib, jax.numpy as np_
      wrap = None
    else:
      import revax as lib, revax.numpy as np_
      wrap = lib.invertible
    args = lib.device_put(_inputs({depth}))
    g = lib.jit(lib.grad(_loss(np_, wrap_stack=wrap)))
    start = time.perf_counter()
    lib.block_until_ready(g(*args))
    print("FIRST_CALL", time.perf_counter() - start)
""")


def _first_call(lib: str, cache_dir: str | None, depth: int) -> float:
  here = str(pathlib.Path(__file__).resolve().parent)
  env = {k: v for k, v in os.environ.items() if not k.startswith("REVAX_COMPILATION_CACHE")}
  env["JAX_PLATFORMS"] = "cpu"
  if cache_dir is not None:
    env["REVAX_COMPILATION_CACHE_DIR"] = cache_dir
  code = _CHILD.format(here=here, depth=depth)
  out = subprocess.run([sys.executable, "-c", code, lib], capture_output=True, text=True,
                       check=True, env=env, timeout=900)
  return float(out.stdout.split("FIRST_CALL")[-1].strip())


def measure(quick: bool) -> dict:
  """Best first-call seconds of revax cold, revax warm and jax over interleaved rounds."""
  rounds = 2 if quick else 4
  best = {"revax cold": float("inf"), "revax warm": float("inf"), "jax": float("inf")}
  for _ in range(rounds):
    with tempfile.TemporaryDirectory() as cache:
      best["revax cold"] = min(best["revax cold"], _first_call("revax", cache, DEPTH))
      best["jax"] = min(best["jax"], _first_call("jax", None, DEPTH))
      best["revax warm"] = min(best["revax warm"], _first_call("revax", cache, DEPTH))
  return best


def rows(quick: bool) -> list:
  t = measure(quick)
  label = f"reversible MLP depth {DEPTH}, invertible jit(grad) first call in a fresh process"
  return [
      (f"{label}: revax warm cache (vs revax cold cache)", "s", t["revax warm"], t["revax cold"],
       0.15),
      (f"{label}: revax warm cache vs jax", "s", t["revax warm"], t["jax"], 0.2),
      (f"{label}: revax cold cache vs jax", "s", t["revax cold"], t["jax"], None),
  ]


if __name__ == "__main__":
  quick = "--quick" in sys.argv
  for row in rows(quick):
    label, unit, r, j, target = row
    print(f"{label}: {r * 1e3:.0f} ms vs {j * 1e3:.0f} ms = {r / j:.2f}x"
          + (f" (target <= {target}x)" if target else ""))
