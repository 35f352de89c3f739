"""Per block of issue 32's reversible MLP: what XLA's optimized program does, read from its dump.

For each variant (revax plain / invertible / checkpoint, jax plain / checkpoint / invertible)
it compiles jit(grad(loss)) at two depths with XLA dumping its optimized HLO (`--xla_dump_to`;
one child process per library compiles all its variants and depths, each program's dump read
apart by the files its compile added), and counts, over every computation that runs (the entry,
conditional branches, loop bodies; not the bodies of fusions), per block (the difference between
the depths over their difference in blocks):

  dots (a dot or a fusion around one), loop fusions and other elementwise passes, copies (and
  asynchronous ones, e.g. a TPU's prefetches, counted apart), transposes, and the bytes those
  passes read and write (operands + results, from their shapes: each elementwise pass over an
  activation reads and writes memory, which is what a backward pass's time beyond its matmuls
  goes to), also as "activation passes" (those bytes over one activation's), and the bytes the
  dots read and write (on a TPU, elementwise work fused into a dot shows there, not as a pass).

`--names` prints each block's elementwise passes of the deeper program (what they compute) for
one variant. On XLA:CPU jax.checkpoint's optimization_barrier does not fence (the CPU pipeline
expands it before CSE), so there jax checkpoint is plain grad's program; revax's fence (a
conditional) holds, so revax checkpoint is the like-for-like reference there.

"jax invertible" is the same reversible backward written by hand (bench_reversible.py). `--fence`
lowers revax's fence another way (barrier: jax.checkpoint's optimization_barrier; none: no fence)
to see what the fence changes in the program. revax's variants compile in one child process
and jax's in another, one after the other, each on the default device of its library
(JAX_PLATFORMS is dropped for jax, as in bench_reversible.py: on a TPU host both compile for the
chip; with REVAX_PLATFORMS set, jax gets the same platforms).

Run: python benchmarks/hlo_reversible.py [--depths 2,4] [--width 256 --batch 128]
  [--variants "revax invertible,revax checkpoint"] [--names "revax invertible"]
  [--fence conditional|barrier|none] [--split] [--coupling] [--fence-cts] [--tpu-aot]

`--tpu-aot` compiles for one TPU v5e chip on a machine without one, with libtpu's compile-only
client (only the `libtpu` package jax pairs with is needed: `pip install --target DIR
'libtpu==0.0.42.*'`, DIR on PYTHONPATH): the chip's optimized programs and XLA temp, read here
(elementwise work fused into the dots shows as `dot MiB` there). "temp activations" is XLA's
temp memory per block, in activations (flat in depth: about 0); "relayout MiB" what a TPU
program moves outside its fusions (asynchronous copies, slices and their ConcatBitcast
concatenations, by their results); "cost MiB accessed" and "tanh
per element" are XLA's cost analysis of the program (bytes accessed; transcendentals over one
activation's elements), per block.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
VARIANTS = ("revax plain", "revax invertible", "revax checkpoint", "jax plain", "jax checkpoint",
            "jax invertible")
FENCES = ("conditional", "barrier", "none")
KEYS = ("dot", "elementwise pass", "copy", "transpose", "conditional", "elementwise MiB",
        "activation passes", "dot MiB", "async copy", "relayout MiB", "temp activations",
        "cost MiB accessed", "tanh per element")
TPU_TOPOLOGY = "v5e:1x1"  # --tpu-aot compiles for one TPU v5e chip (libtpu, compile only)
_ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "pred": 1, "f64": 8, "s64": 8,
             "u64": 8, "s8": 1, "u8": 1}
_HEAD = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*")


def _closing(text: str, start: int) -> int:
  """The index of the parenthesis closing the one at `start` (len(text) if none)."""
  depth = 0
  for i in range(start, len(text)):
    if text[i] == "(":
      depth += 1
    elif text[i] == ")":
      depth -= 1
      if depth == 0:
        return i
  return len(text)


def parse_instruction(line: str):
  """(name, result shape, opcode, operand text, attribute text) of an HLO instruction line, or
  None. Shapes may be tuples and carry a backend's tiled layouts (`{1,0:T(8,128)}`)."""
  m = _HEAD.match(line)
  if not m:
    return None
  i = m.end()
  if line.startswith("(", i):
    end = _closing(line, i) + 1
  else:
    end = line.find(" ", i)
    end = len(line) if end < 0 else end
  shape = line[i:end]
  m2 = re.match(r"\s+([a-z][a-z0-9\-]*)\(", line[end:])
  if not m2:
    return None
  open_at = end + m2.end() - 1
  close = _closing(line, open_at)
  return m.group(1), shape, m2.group(1), line[open_at + 1:close], line[close + 1:]


def shape_bytes(shape: str) -> int:
  total = 0
  for dtype, dims in re.findall(r"([a-z]+[0-9]*)\[([0-9,]*)\]", shape):
    n = 1
    for d in filter(None, dims.split(",")):
      n *= int(d)
    total += n * _ITEMSIZE.get(dtype, 4)
  return total


def computations(text: str) -> dict:
  """{name: [instruction lines]} of an HLO module's text."""
  comps, name = {}, None
  for line in text.splitlines():
    m = re.match(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s+\(.*\)\s*->.*\{\s*$", line)
    if m:
      name = m.group(1)
      comps[name] = []
    elif line.startswith("}"):
      name = None
    elif name is not None and line.strip():
      comps[name].append(re.sub(r", metadata=\{[^}]*\}", "", line))
  return comps


def passes(text: str, activation_bytes: int):
  """The elementwise passes, dots, copies and transposes of the computations that run, as a
  list of (kind, name, result shape, bytes read + written, calls) and the counts."""
  comps = computations(text)
  fused = set()
  for lines in comps.values():
    for line in lines:
      parsed = parse_instruction(line)
      if parsed and parsed[2] == "fusion":
        fused.update(re.findall(r"calls=%?([\w.\-]+)", parsed[4]))
  counts, listing = collections.Counter(), []
  for cname, lines in comps.items():
    if cname in fused or _takes_nothing(lines):
      continue  # a fusion's body, or a fence's untaken branch (no operands: it fills zeros)
    shapes = {}
    for line in lines:
      parsed = parse_instruction(line)
      if not parsed:
        continue
      name, shape, op, operand_text, rest = parsed
      shapes[name] = shape
      operands = re.findall(r"%([\w.\-]+)", operand_text)
      moved = shape_bytes(shape) + sum(shape_bytes(shapes.get(o, "")) for o in operands)
      calls = ",".join(re.findall(r"calls=%?([\w.\-]+)", rest))
      if op == "dot" or op == "convolution" or (op == "fusion" and "kind=kCustom" in rest
                                                 and _has_dot(comps, calls)) or (
          op == "custom-call" and "revax_lapack_gemm" in rest):  # revax's CPU GEMM calls
        kind = "dot"
      elif op == "fusion" and re.search(r"kind=k(Loop|Input|Output)", rest):
        if _has_dot(comps, calls):
          kind = "dot"
        else:
          kind = "elementwise pass"
      elif op == "copy" and not (operands and re.match(r"(wrapped_)?(broadcast|constant)",
                                                      operands[0])):
        kind = "copy"
      elif op == "copy-start":  # an asynchronous copy (e.g. a prefetch between memories)
        kind = "async copy"
        counts["relayout MiB"] += _tuple_element_bytes(shape, 0) / 2 ** 20  # the copy
      elif op == "slice-start" or (op == "custom-call" and "ConcatBitcast" in rest):
        kind = "relayout"  # a TPU's data moves between dots: slices and their concatenation
        counts["relayout MiB"] += (_tuple_element_bytes(shape, 1) if op == "slice-start"
                                   else shape_bytes(shape)) / 2 ** 20
      elif op in ("transpose", "conditional"):
        kind = op
      else:
        continue
      counts[kind] += 1
      if kind in ("elementwise pass", "copy", "transpose"):
        counts["elementwise MiB"] += moved / 2 ** 20
        counts["activation passes"] += moved / activation_bytes
      elif kind == "dot":  # operands and result (with what a backend fused into the dot)
        counts["dot MiB"] += moved / 2 ** 20
      listing.append((kind, name, shape, moved, calls, cname))
  return listing, {k: counts.get(k, 0) for k in KEYS}


def _tuple_element_bytes(shape: str, i: int) -> int:
  """Bytes of the i-th array shape written in `shape` (a tuple's elements in order)."""
  arrays = re.findall(r"[a-z]+[0-9]*\[[0-9,]*\]", shape)
  return shape_bytes(arrays[i]) if i < len(arrays) else 0


def _takes_nothing(lines) -> bool:
  return any(re.search(r"=\s*\(\)\s+parameter\(0\)", line) for line in lines)


def _has_dot(comps, calls: str, depth: int = 0) -> bool:
  """Whether the computations `calls` names (or fusions nested in them) hold a dot."""
  for c in filter(None, calls.split(",")):
    for line in comps.get(c, ()):
      if re.search(r"\s(dot|convolution)\(", line):
        return True
      nested = ",".join(re.findall(r"calls=%?([\w.\-]+)", line))
      if nested and depth < 8 and _has_dot(comps, nested, depth + 1):
        return True
  return False


def fusion_body(text: str, calls: str) -> str:
  """A fusion's computation, as the ops it applies (for --names)."""
  comps = computations(text)
  ops = []
  for c in calls.split(","):
    for line in comps.get(c, ()):
      parsed = parse_instruction(line)
      if parsed and parsed[2] not in ("parameter", "constant", "broadcast"):
        ops.append(parsed[2])
  return " ".join(ops)


def use_fence(fence: str) -> None:
  """Lower revax's fenced_call (this process only) as `fence`: 'conditional' (revax's own),
  'barrier' (an optimization_barrier over its operands, jax.checkpoint's fence) or 'none' (the
  body inlined: what the hand-written jax invertible does)."""
  if fence == "conditional":
    return
  from revax._src.interpreters import barrier, mlir

  def inline(ctx, *args, jaxpr, barrier_on=()):
    return mlir.inline_closed_jaxpr(ctx.fb, jaxpr, args)
  dict.__setitem__(mlir.lowerings, barrier.fenced_call_p,
                   barrier.lower_fenced_call_as_barrier if fence == "barrier" else inline)


def child(variants, depths, width: int, batch: int, out: str, fence: str,
          split: bool = False, coupling: bool = False, tpu_aot: bool = False,
          fence_cts: bool = False) -> None:
  """Compile jit(grad(loss)) of each of `variants` (all of one library) at each of `depths`, one
  after another in this process, and print a `RESULT <json>` line per program: its variant,
  depth, the dump files it added to `out` and [XLA's temp bytes, its cost analysis]."""
  sys.path.insert(0, str(HERE))
  import bench_reversible
  if variants[0].startswith("revax"):
    import revax
    revax.config.update("enable_compilation_cache", False)
    use_fence(fence)
    if split:
      bench_reversible.use_split_vjp()
    if coupling:
      bench_reversible.use_coupling_vjp()
    if fence_cts:
      bench_reversible.use_fence_vjp_cotangents()
  for variant in variants:
    lib, loss = bench_reversible.make_loss(variant)
    for depth in depths:
      if tpu_aot:
        text, temp, cost = compile_for_tpu(lib, loss, depth, width, batch)
        path = pathlib.Path(out) / (f"{variant.replace(' ', '_')}.{depth}.jit_loss.tpu_aot"
                                    ".after_optimizations.txt")
        path.write_text(text)
        files = [str(path)]
      else:
        before = set(pathlib.Path(out).glob("*jit_loss*after_optimizations.txt"))
        compiled = lib.jit(lib.grad(loss)).lower(*host_inputs(depth, width, batch)).compile()
        # the files this compile added (XLA names each dump by its module's unique id)
        files = sorted(str(p) for p in
                       set(pathlib.Path(out).glob("*jit_loss*after_optimizations.txt")) - before)
        temp, cost = compiled.memory_analysis().temp_size_in_bytes, _cost(
            compiled.cost_analysis())
      print("RESULT " + json.dumps([variant, depth, files, [temp, cost]]), flush=True)


def _cost(analysis) -> dict:
  """(bytes accessed, transcendentals) of XLA's cost analysis of a compiled program."""
  analysis = analysis[0] if isinstance(analysis, (list, tuple)) else (analysis or {})
  return {k: float(analysis.get(k, 0.0)) for k in ("bytes accessed", "transcendentals")}


def host_inputs(depth: int, width: int, batch: int):
  """The loss's arguments as NumPy arrays (depth pairs of width x width weights, two streams of
  batch x width): only their shapes and dtypes reach the program, and drawing them on the host
  compiles nothing (a device draw would compile its own programs, uncached here)."""
  import numpy as np
  rng = np.random.default_rng(0)
  ws = [tuple(rng.standard_normal((width, width), np.float32) / np.sqrt(width)
              for _ in range(2)) for _ in range(depth)]
  x1, x2 = (rng.standard_normal((batch, width)).astype(np.float32) for _ in range(2))
  return ws, x1, x2


def compile_for_tpu(lib, loss, depth: int, width: int, batch: int):
  """(XLA's optimized HLO text, temp bytes) of jit(grad(loss)) compiled for one TPU v5e chip by
  libtpu's compile-only client: no chip needed, only the `libtpu` package jax 0.10.2 pairs with
  (0.0.42.*) importable, e.g. `pip install --target DIR 'libtpu==0.0.42.*'` and DIR on
  PYTHONPATH. jax lowers and compiles its own variants; revax lowers its StableHLO, which jax
  parses and hands to the same compile-only client."""
  import jax
  from jax.experimental import topologies
  device = topologies.get_topology_desc(TPU_TOPOLOGY, "tpu",
                                        chips_per_host_bounds=[1, 1, 1]).devices[0]
  ws, x1, x2 = host_inputs(depth, width, batch)
  if lib is jax:
    sharding = jax.sharding.SingleDeviceSharding(device)
    spec = lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)
    compiled = jax.jit(jax.grad(loss)).lower(jax.tree.map(spec, ws), spec(x1),
                                             spec(x2)).compile()
    return (compiled.as_text(), compiled.memory_analysis().temp_size_in_bytes,
            _cost(compiled.cost_analysis()))
  from jax._src import compiler
  from jax._src.interpreters import mlir as jax_mlir
  from jax._src.lib import xla_client
  from jax._src.lib.mlir import ir
  text = lib.jit(lib.grad(loss)).lower(ws, x1, x2).as_text()
  with jax_mlir.make_ir_context():
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1,
                                           device_assignment=[device])
    executable = device.client.compile(ir.Module.parse(text),
                                       executable_devices=xla_client.DeviceList((device,)),
                                       compile_options=options)
  return (executable.hlo_modules()[0].to_string(),
          executable.get_compiled_memory_stats().temp_size_in_bytes,
          _cost(executable.cost_analysis()))


def dumps(variants, depths, width: int, batch: int, fence: str = "conditional",
          split: bool = False, coupling: bool = False, tpu_aot: bool = False,
          fence_cts: bool = False) -> dict:
  """{(variant, depth): (the optimized HLO text of jit(grad) of `variant` at `depth`, [XLA's
  temp bytes, its cost analysis' bytes accessed and transcendentals])}: one child process per
  library (its variants and depths compiled one after another there, each program dumped
  apart), since XLA reads its dump flags when a process opens its backend."""
  results = {}
  for lib_name in ("revax", "jax"):
    group = [v for v in variants if v.split()[0] == lib_name]
    if group:
      results.update(_dump_in_child(group, depths, width, batch, fence, split, coupling,
                                    tpu_aot, fence_cts))
  return results


def dump(variant: str, depth: int, width: int, batch: int, fence: str = "conditional",
         split: bool = False, coupling: bool = False, tpu_aot: bool = False,
         fence_cts: bool = False):
  """(the optimized HLO text of jit(grad) of `variant` at `depth`, [XLA's temp bytes, its cost
  analysis' bytes accessed and transcendentals]): `dumps` of one program."""
  return dumps([variant], [depth], width, batch, fence, split, coupling, tpu_aot,
               fence_cts)[variant, depth]


def _dump_in_child(variants, depths, width, batch, fence, split, coupling, tpu_aot, fence_cts):
  out = tempfile.mkdtemp(prefix="revax_hlo_reversible_")
  env = dict(os.environ, XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={out}"
                                    " --xla_dump_hlo_as_text --xla_dump_hlo_module_re=.*loss.*"
                                    ).strip())
  if variants[0].startswith("jax"):  # as bench_reversible: jax takes the chip where there is
    env.pop("JAX_PLATFORMS", None)  # one, unless revax is held to a platform: then jax is too
    if env.get("REVAX_PLATFORMS"):
      env["JAX_PLATFORMS"] = env["REVAX_PLATFORMS"]
  if tpu_aot:  # libtpu compiles; the dump flags are for the local backend's programs
    env["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "")
    env["JAX_PLATFORMS"] = "cpu"  # jax's own backend stays the CPU (no chip is opened)
    env.setdefault("TPU_ACCELERATOR_TYPE", "v5litepod-1")  # quiets libtpu's host probing
  res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", ",".join(variants),
                        "--depths", ",".join(map(str, depths)), "--width", str(width),
                        "--batch", str(batch), "--out", out, "--fence", fence]
                       + (["--split"] if split else []) + (["--coupling"] if coupling else [])
                       + (["--tpu-aot"] if tpu_aot else [])
                       + (["--fence-cts"] if fence_cts else []),
                       env=env, capture_output=True, text=True)
  if res.returncode:
    raise RuntimeError(f"{', '.join(variants)} at depths {depths} failed:\n"
                       f"{res.stderr[-3000:]}")
  results = {}
  for line in res.stdout.splitlines():
    if line.startswith("RESULT "):
      variant, depth, files, temp = json.loads(line[len("RESULT "):])
      if not files:
        raise RuntimeError(f"{variant} at depth {depth}: XLA dumped no optimized module")
      # the grad program is the largest module dumped (small ones draw the inputs)
      results[variant, depth] = (max((pathlib.Path(f).read_text() for f in files), key=len),
                                 temp)
  missing = [(v, d) for v in variants for d in depths if (v, d) not in results]
  if missing:
    raise RuntimeError(f"the child reported no program for {missing}:\n{res.stdout[-3000:]}")
  return results


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--depths", default="2,4")
  parser.add_argument("--width", type=int, default=256)
  parser.add_argument("--batch", type=int, default=128)
  parser.add_argument("--variants", default=",".join(VARIANTS))
  parser.add_argument("--names", default="", help="variants whose passes to list")
  parser.add_argument("--fence", choices=FENCES, default="conditional",
                      help="how revax's fenced_call is lowered (an experiment; default: as "
                           "revax lowers it, a conditional)")
  parser.add_argument("--split", action="store_true",
                      help="revax's invertible with split_vjp_recomputation on (an experiment)")
  parser.add_argument("--coupling", action="store_true",
                      help="revax's invertible with vjp_output_from_coupling on (an option: "
                           "the VJP reads tanh's output as y - x)")
  parser.add_argument("--fence-cts", action="store_true",
                      help="revax's invertible with fence_vjp_cotangents on (an option)")
  parser.add_argument("--tpu-aot", action="store_true",
                      help="compile for a TPU v5e chip without one (libtpu's compile-only "
                           "client; needs the libtpu package importable)")
  parser.add_argument("--child", help=argparse.SUPPRESS)
  parser.add_argument("--out", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  depths = [int(d) for d in args.depths.split(",")]
  if args.child:
    child(args.child.split(","), depths, args.width, args.batch, args.out, args.fence,
          args.split, args.coupling, args.tpu_aot, args.fence_cts)
    return
  act = args.width * args.batch * 4
  lo, hi = depths[0], depths[-1]
  print(f"Per block (depth {lo} -> {hi}), width {args.width}, batch {args.batch}, f32, revax "
        f"fence {args.fence}; "
        f"an activation is {act / 2 ** 20:.3g} MiB; 'activation passes' = bytes read + written "
        "by elementwise passes, copies and transposes / an activation's bytes\n")
  print("| variant | " + " | ".join(KEYS) + " |")
  print("|---" * (len(KEYS) + 1) + "|")
  variants = [v.strip() for v in args.variants.split(",")]
  programs = dumps(variants, (lo, hi), args.width, args.batch, args.fence, args.split,
                   args.coupling, args.tpu_aot, args.fence_cts)
  for variant in variants:
    pair = [programs[variant, d] for d in (lo, hi)]
    texts = [text for text, _ in pair]
    (_, c_lo), (listing, c_hi) = (passes(t, act) for t in texts)
    for counts, (_, (temp, cost)) in zip((c_lo, c_hi), pair, strict=True):
      counts["temp activations"] = temp / act
      counts["cost MiB accessed"] = cost["bytes accessed"] / 2 ** 20
      counts["tanh per element"] = cost["transcendentals"] / (args.width * args.batch)
    cells = [f"{(c_hi[k] - c_lo[k]) / (hi - lo):.3g}" for k in KEYS]
    print(f"| {variant} | " + " | ".join(cells) + " |", flush=True)
    if variant in args.names.split(","):
      text = texts[1]
      for kind, name, shape, moved, calls, cname in listing:
        print(f"    [{cname}] {kind:16s} {name:32s} {shape:22s} {moved / act:5.2f} act  "
              f"{fusion_body(text, calls) if calls else ''}")


if __name__ == "__main__":
  main()
