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

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from processes import ChildCalls, time_apart  # noqa: E402
from timing import describe, revax_program_directly, row  # noqa: E402

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


def apart_calls(group: str, lib_name: str, lib, np_mod, quick: bool) -> ChildCalls:
  """One library's variants at depth `group` for processes.time_apart: revax plain / forward
  only / invertible / checkpoint (each revax gradient's program also run directly as
  "<variant> direct"), jax plain / checkpoint; each variant's XLA temp bytes as `extra`."""
  depth = int(group)
  if lib_name == "revax":
    variants = {"revax plain": _loss(np_mod), "revax forward": _loss(np_mod),
                "revax invertible": _loss(np_mod, wrap_stack=lib.invertible),
                "revax checkpoint": _loss(np_mod, wrap_block=lib.checkpoint)}
  else:
    variants = {"jax plain": _loss(np_mod), "jax checkpoint": _loss(np_mod,
                                                                    wrap_block=lib.checkpoint)}
  steps, temps = {}, {}
  for name, loss in variants.items():
    forward_only = name == "revax forward"
    g, args, temps[name] = _compile(lib, loss, depth, forward_only=forward_only)
    steps[name] = lambda g=g, args=args: lib.block_until_ready(g(*args))
    if lib_name == "revax" and not forward_only:
      steps[name + " direct"] = revax_program_directly(g, *args)
  calls, rounds = (2, 3) if quick else (3, 5)
  return ChildCalls(steps, calls, rounds, warmup=1, extra={k: int(v) for k, v in temps.items()})


def sweep(quick: bool) -> dict:
  """{depth: (temps, wall, cpu)}: temps {variant: XLA temp bytes}, and wall and CPU timings
  (`processes.Apart`: each library in its own child processes, its variants in interleaved
  rounds there) of every variant (revax plain/forward only/invertible/checkpoint, each revax
  gradient's program also run directly as "<variant> direct", jax plain/checkpoint), with
  "revax plain + forward" the per-round sum of those two."""
  depths = QUICK_DEPTHS if quick else DEPTHS
  apart = time_apart("bench_invertible", [str(d) for d in depths], quick)
  results = {}
  for depth in depths:
    t = apart[str(depth)].with_sums({"revax plain + forward": ("revax plain", "revax forward")})
    temps = {**t.extra["revax"], **t.extra["jax"]}
    results[depth] = (temps, t, t.cpu)
  return results


def rows(quick: bool) -> list:
  """Rows for benchmarks/run.py (`timing.row` tuples for steps, plain tuples for memory); a step
  row's ratio between two revax variants is the median of the per-round ratios in revax's child
  process, one against jax the median of the per-pair ratios (processes.time_apart), and a revax
  row also shows its program run directly on the runtime in the same rounds.
  `revax plain + forward` is what the backward walk's rebuilding costs when nothing else does:
  invertible's step is plain grad's plus one forward through each block's F and G, so the row
  against it shows what the fence around the walk adds."""
  results = sweep(quick)
  depths = QUICK_DEPTHS if quick else DEPTHS
  mib = lambda name, d: results[d][0][name] / 2 ** 20

  def step(name, reference, d, label, target=None, cpu=False):
    return row(label, results[d][2 if cpu else 1], target, revax=name, reference=reference)

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
        step("revax invertible", "revax plain", d,
             f"reversible MLP depth {d}: CPU time, revax invertible (vs revax plain)",
             1.2 if d == 64 else None, cpu=True),
        step("revax invertible", "revax plain + forward", d,
             f"reversible MLP depth {d}: step, revax invertible (vs revax plain + one forward)"),
        step("revax invertible", "revax plain + forward", d,
             f"reversible MLP depth {d}: CPU time, revax invertible (vs revax plain + one "
             "forward)", cpu=True),
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
  print("\n".join(describe(rows("--quick" in sys.argv))))
