"""invertible: XLA temp memory and step time of jit(grad) of issue 9's reversible MLP (additive
tanh couplings y1 = x1 + tanh(x2 @ w1), y2 = x2 + tanh(y1 @ w2) on two halves of width 256, batch
64) as depth grows, revax beside JAX.

Variants: plain grad; the whole stack under `revax.invertible` (activations rebuilt from the
outputs); every block under `checkpoint` (its inputs stored, its insides recomputed). JAX has no
invertible reverse mode any more, so revax's invertible is compared with JAX's plain grad.

Reading the numbers: invertible does 8 matmuls per block against plain grad's 6 (the backward
pass recomputes F(x2) and G(y1)), so about 1.33x plain grad's step time is what it costs: the
row against plain grad + one forward shows what is left once that is accounted for (the fence:
one conditional around the whole walk). revax's
checkpoint-per-block temp is small because XLA:CPU keeps the stored block inputs in the
weight-gradient output buffers (written only later by the backward pass's conditionals), not
because less is stored (JAX's checkpoint per block reports about its plain grad's temp: both
keep two activations a block).

Run: python benchmarks/bench_invertible.py [--quick]
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

WIDTH, BATCH = 256, 64
DEPTHS, QUICK_DEPTHS = (8, 16, 32, 64), (8, 64)


def _inputs(depth):
  rng = np.random.default_rng(0)
  ws = [tuple((rng.standard_normal((WIDTH, WIDTH)) * 0.02).astype(np.float32) for _ in range(2))
        for _ in range(depth)]
  x1, x2 = (rng.standard_normal((BATCH, WIDTH)).astype(np.float32) for _ in range(2))
  return ws, x1, x2


def _loss(np_, wrap_stack=None, wrap_block=None):
  def block(w, x1, x2):
    x1 = x1 + np_.tanh(x2 @ w[0])
    return x1, x2 + np_.tanh(x1 @ w[1])
  block = wrap_block(block) if wrap_block is not None else block

  def stack(ws, x1, x2):
    for w in ws:
      x1, x2 = block(w, x1, x2)
    return x1, x2
  stack = wrap_stack(stack) if wrap_stack is not None else stack

  def loss(ws, x1, x2):
    y1, y2 = stack(ws, x1, x2)
    return (y1 ** 2).sum() + (y2 ** 2).sum()
  return loss


def _compile(lib, loss, depth, forward_only=False):
  """(jitted grad, or the jitted loss when `forward_only`; device arguments; XLA temp bytes)."""
  args = _inputs(depth)
  g = lib.jit(loss if forward_only else lib.grad(loss))
  temp = g.lower(*args).compile().memory_analysis().temp_size_in_bytes
  args = lib.device_put(args)
  lib.block_until_ready(g(*args))
  return g, args, temp


def _step_samples(programs, calls, rounds):
  """Seconds per call of each (library, jitted fn, args), one sample per round, in wall time
  and in process CPU time, measured in interleaved rounds so that load from other processes
  hits every variant alike."""
  wall, cpu = [[] for _ in programs], [[] for _ in programs]
  for _ in range(rounds):
    for k, (lib, g, args) in enumerate(programs):
      start, cpu_start = time.perf_counter(), time.process_time()
      for _ in range(calls):
        out = g(*args)
      lib.block_until_ready(out)
      wall[k].append((time.perf_counter() - start) / calls)
      cpu[k].append((time.process_time() - cpu_start) / calls)
  return wall, cpu


def sweep(quick: bool) -> dict:
  """{(variant, depth): (temp bytes, [seconds per step, one per round])} for revax
  plain/invertible/checkpoint/forward only and jax plain/checkpoint, in wall time and (variant
  name + " (CPU)") in process CPU time."""
  import jax
  import jax.numpy as jnp

  import revax
  import revax.numpy as rnp
  variants = {
      "revax plain": (revax, _loss(rnp)),
      "revax forward": (revax, _loss(rnp)),
      "revax invertible": (revax, _loss(rnp, wrap_stack=revax.invertible)),
      "revax checkpoint": (revax, _loss(rnp, wrap_block=revax.checkpoint)),
      "jax plain": (jax, _loss(jnp)),
      "jax checkpoint": (jax, _loss(jnp, wrap_block=jax.checkpoint)),
  }
  calls, rounds = (2, 5) if quick else (4, 9)
  results = {}
  for depth in QUICK_DEPTHS if quick else DEPTHS:
    compiled = {name: _compile(lib, loss, depth, forward_only=name == "revax forward")
                for name, (lib, loss) in variants.items()}
    wall, cpu = _step_samples([(variants[name][0], g, args)
                               for name, (g, args, _) in compiled.items()], calls, rounds)
    for (name, (_, _, temp)), t, c in zip(compiled.items(), wall, cpu, strict=True):
      results[name, depth] = (temp, t)
      results[name + " (CPU)", depth] = (temp, c)
    for suffix in ("", " (CPU)"):
      plain = results["revax plain" + suffix, depth][1]
      fwd = results["revax forward" + suffix, depth][1]
      results["revax plain + forward" + suffix, depth] = (
          None, [p + f for p, f in zip(plain, fwd, strict=True)])
  return results


def rows(quick: bool) -> list:
  """Rows (label, unit, revax-side figure, reference figure, target ratio or None); a step
  row's ratio is the median of the per-round ratios, its figures the reference's median and
  that ratio times it. `revax plain + forward` is what the backward walk's rebuilding costs when
  nothing else does: invertible's step is plain grad's plus one forward through each block's
  F and G, so the row against it shows what the fence around the walk adds."""
  results = sweep(quick)
  depths = QUICK_DEPTHS if quick else DEPTHS
  mib = lambda name, d: results[name, d][0] / 2 ** 20

  def step(name, reference, d, label, target=None):
    a, b = results[name, d][1], results[reference, d][1]
    ref = statistics.median(b) * 1e6
    ratio = statistics.median(x / y for x, y in zip(a, b, strict=True))
    return (label, "us", ratio * ref, ref, target)

  out = []
  for d in depths:
    out += [
        (f"reversible MLP depth {d}: XLA temp MiB, revax plain vs jax plain", "MiB",
         mib("revax plain", d), mib("jax plain", d), None),
        (f"reversible MLP depth {d}: XLA temp MiB, revax checkpoint vs jax.checkpoint", "MiB",
         mib("revax checkpoint", d), mib("jax checkpoint", d), None),
        (f"reversible MLP depth {d}: XLA temp MiB, revax invertible vs jax plain", "MiB",
         mib("revax invertible", d), mib("jax plain", d), None),
        step("revax invertible", "revax plain", d,
             f"reversible MLP depth {d}: step, revax invertible (vs revax plain)",
             1.2 if d == 64 else None),
        step("revax invertible (CPU)", "revax plain (CPU)", d,
             f"reversible MLP depth {d}: CPU time, revax invertible (vs revax plain)",
             1.2 if d == 64 else None),
        step("revax invertible", "revax plain + forward", d,
             f"reversible MLP depth {d}: step, revax invertible (vs revax plain + one forward)"),
        step("revax invertible (CPU)", "revax plain + forward (CPU)", d,
             f"reversible MLP depth {d}: CPU time, revax invertible (vs revax plain + one "
             "forward)"),
        step("revax invertible", "jax plain", d,
             f"reversible MLP depth {d}: step, revax invertible vs jax plain"),
        step("revax plain", "jax plain", d,
             f"reversible MLP depth {d}: step, revax plain vs jax plain"),
        step("revax checkpoint", "jax checkpoint", d,
             f"reversible MLP depth {d}: step, revax checkpoint vs jax.checkpoint"),
    ]
  lo, hi = depths[0], depths[-1]
  out += [
      (f"invertible: XLA temp MiB, revax depth {hi} (vs revax depth {lo})", "MiB",
       mib("revax invertible", hi), mib("revax invertible", lo), 1.25),
      (f"invertible: XLA temp MiB at depth {hi}, revax (vs revax plain grad)", "MiB",
       mib("revax invertible", hi), mib("revax plain", hi), 0.125),
      (f"invertible: XLA temp MiB at depth {hi}, revax vs jax plain grad", "MiB",
       mib("revax invertible", hi), mib("jax plain", hi), 0.125),
  ]
  return out


if __name__ == "__main__":
  for label, unit, r, j, target in rows("--quick" in sys.argv):
    goal = f" (target <= {target}x: {'met' if r / j <= target else 'missed'})" if target else ""
    print(f"{label}: {r:.2f} {unit} / {j:.2f} {unit} = {r / j:.3f}x{goal}")
