"""Where the first call of bench_tpu's transformer step goes, revax vs jax: trace + lower,
XLA's compile, the first execution; and, to tell the program text from the way it is compiled,
each library compiling the OTHER library's StableHLO, and revax compiling its own text with
jax's serialized compile options.

    python benchmarks/bench_first_call.py OUT_DIR [ROUNDS] [--first-only]   # OUT_DIR/first_call.md
    python benchmarks/bench_first_call.py --lib revax|jax OUT_DIR   # one process, JSON line

Each process first times a tiny jitted call (the compiler's one-time start: jax starts its
compiler while building the parameters, since it compiles its eager operations; revax computes
eager operations on host values with NumPy, so without this its step's first compile carried
libtpu's start alone). `--first-only` leaves out the cross and repeated compiles (for rounds).

Each library runs in its own process (one program holds a TPU), alternating jax, revax, jax,
revax...: a process compiles its own program first (the first call a user sees), then the
other library's text as written by the previous process, then its own again (a second compile
in a warm process: the fair comparison for the cross compile). The texts (jax.mlir, revax.mlir)
and jax's options (jax_options.bin) stay in OUT_DIR for reading. BENCH_TPU_SMALL=1 makes the
model tiny (for a CPU check). revax's persistent compilation cache is off in the children
(REVAX_COMPILATION_CACHE=0): a first call on a fresh machine compiles, as jax's does.
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_tpu  # noqa: E402


def _timed(fn):
  start = time.perf_counter()
  result = fn()
  return result, time.perf_counter() - start


def _op_count(text: str) -> int:
  return sum(1 for line in text.splitlines() if " = " in line and '"' not in line.split("=")[0])


def _first_call(lib_name: str, out: str):
  """The library's first call of the step, split: ({lib, compiler_start_s, lower_s, compile_s,
  execute_s, ops}, the library's modules, its StableHLO text (also written to
  OUT/<lib>.mlir))."""
  row = {"lib": lib_name, "compiler_start_s": bench_tpu.start_compiler(lib_name)}
  jax, _, step, params, tokens = bench_tpu.build(lib_name)
  lowered, row["lower_s"] = _timed(lambda: step.lower(params, tokens))
  compiled, row["compile_s"] = _timed(lowered.compile)
  _, row["execute_s"] = _timed(lambda: jax.block_until_ready(compiled(params, tokens)))
  text = lowered.as_text()
  open(os.path.join(out, f"{lib_name}.mlir"), "w").write(text)
  row["ops"] = _op_count(text)
  return row, jax, text


def measure_jax(out: str, first_only: bool = False) -> dict:
  row, jax, text = _first_call("jax", out)
  if first_only:
    return row
  from jax._src import compiler, xla_bridge
  from jax._src.interpreters import mlir
  from jax._src.lib import xla_client as xc
  from jax._src.lib.mlir import ir
  backend = xla_bridge.get_backend()
  options = compiler.get_compile_options(1, 1, backend=backend)
  open(os.path.join(out, "jax_options.bin"), "wb").write(options.SerializeAsString())
  devices = xc.DeviceList(tuple(jax.devices()[:1]))

  def compile_text(source: str):
    with mlir.make_ir_context():
      module = ir.Module.parse(source)
      return backend.compile_and_load(module, executable_devices=devices,
                                      compile_options=compiler.get_compile_options(
                                          1, 1, backend=backend))
  other = os.path.join(out, "revax.mlir")
  if os.path.exists(other):
    _, row["cross_compile_s"] = _timed(lambda: compile_text(open(other).read()))
  _, row["own_again_s"] = _timed(lambda: compile_text(text))
  return row


def measure_revax(out: str, first_only: bool = False) -> dict:
  row, _, text = _first_call("revax", out)
  if first_only:
    return row
  from revax._src.runtime.client import get_backend
  backend = get_backend()
  other = os.path.join(out, "jax.mlir")
  if os.path.exists(other):
    _, row["cross_compile_s"] = _timed(lambda: backend.compile(open(other).read()))
  _, row["own_again_s"] = _timed(lambda: backend.compile(text))
  options = os.path.join(out, "jax_options.bin")
  if os.path.exists(options):  # revax's text, jax's compile options, through revax's client
    code, opts = text.encode(), open(options, "rb").read()
    _, row["own_with_jax_options_s"] = _timed(
        lambda: backend._compile(code, opts, single_device=True))
  return row


def main() -> None:
  first_only = "--first-only" in sys.argv
  argv = [a for a in sys.argv if a != "--first-only"]
  if argv[1] == "--lib":
    lib, out = argv[2], argv[3]
    measure = measure_jax if lib == "jax" else measure_revax
    print(json.dumps(measure(out, first_only)), flush=True)
    return
  out, rounds = argv[1], int(argv[2]) if len(argv) > 2 else 2
  os.makedirs(out, exist_ok=True)
  rows = []
  for _ in range(rounds):
    for lib in ("jax", "revax"):
      done = subprocess.run([sys.executable, __file__, "--lib", lib, out]
                            + ["--first-only"] * first_only, capture_output=True,
                            text=True, timeout=280,
                            env=dict(os.environ, REVAX_COMPILATION_CACHE="0"))
      lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
      if not lines:
        print(lib, "failed:", done.stderr[-3000:], flush=True)
        continue
      rows.append(json.loads(lines[-1]))
      print(lines[-1], flush=True)
  for row in rows:
    row["first_call_s"] = row["lower_s"] + row["compile_s"]
  keys = ("compiler_start_s", "lower_s", "compile_s", "first_call_s", "execute_s", "own_again_s",
          "cross_compile_s", "own_with_jax_options_s", "ops")
  table = ["| measurement | revax | jax | revax / jax |", "|---|---|---|---|"]
  for key in keys:
    got = {lib: [r[key] for r in rows if r["lib"] == lib and key in r] for lib in ("revax", "jax")}
    r = statistics.median(got["revax"]) if got["revax"] else None
    j = statistics.median(got["jax"]) if got["jax"] else None
    ratio = f"{r / j:.2f}x" if r and j else ""
    fmt = lambda v: "" if v is None else (f"{v:.0f}" if key == "ops" else f"{v:.2f} s")  # noqa
    table.append(f"| {key} | {fmt(r)} | {fmt(j)} | {ratio} |")
  ratios = sorted(r["first_call_s"] / j["first_call_s"] for r, j in zip(
      (r for r in rows if r["lib"] == "revax"), (j for j in rows if j["lib"] == "jax")))
  text = (f"{rounds} alternating round(s) of processes (jax first), medians; "
          f"`python benchmarks/bench_first_call.py OUT {rounds}"
          f"{' --first-only' if first_only else ''}`. compiler_start_s: each library's first "
          "jitted call of a tiny program, before the step (the compiler's one-time start, kept "
          "out of the step's first call for both); first_call_s: the step's trace + lower + "
          f"compile (per-round revax / jax: {', '.join(f'{x:.2f}' for x in ratios)}). "
          "cross_compile_s: the library "
          "compiling the OTHER library's StableHLO (its column names the compiler, not the "
          "text); own_with_jax_options_s: revax's text with jax's serialized compile options."
          "\n\n" + "\n".join(table) + "\n")
  open(os.path.join(out, "first_call.md"), "w").write(text)
  print(text)


if __name__ == "__main__":
  main()
