"""benchmarks/hlo_reversible.py: the reading of XLA's optimized HLO (which computations run, what
each elementwise pass reads and writes), on a hand-written module and on a tiny end-to-end run
whose per-block counts say what issue 32's comparison rests on: revax.invertible's backward is
the same program as the reversible backward written by hand in JAX (no pass more), and one
forward's dots more than plain grad."""
from __future__ import annotations

import importlib
import pathlib
import sys

import pytest

from tests.platform_tolerances import HOLDS_THE_CHIP, ON_TPU

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"

MODULE = """HloModule jit_loss, is_scheduled=true

%fused_computation (param_0: f32[8,4], param_1: f32[8,4]) -> f32[8,4] {
  %param_0 = f32[8,4]{1,0} parameter(0)
  %param_1 = f32[8,4]{1,0} parameter(1)
  %tanh.1 = f32[8,4]{1,0} tanh(%param_1)
  ROOT %add.1 = f32[8,4]{1,0} add(%param_0, %tanh.1)
}

%wrapped_broadcast_computation (param_0.1: f32[]) -> f32[4,4] {
  %param_0.1 = f32[] parameter(0)
  ROOT %broadcast.1 = f32[4,4]{1,0} broadcast(%param_0.1), dimensions={}
}

%branch_taken (arg: (f32[8,4], f32[4,4])) -> (f32[4,4]) {
  %arg = (f32[8,4]{1,0}, f32[4,4]{1,0}) parameter(0)
  %x = f32[8,4]{1,0} get-tuple-element(%arg), index=0
  %w = f32[4,4]{1,0} get-tuple-element(%arg), index=1
  %dot.2 = f32[4,4]{1,0} dot(%x, %x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %copy.1 = f32[4,4]{1,0} copy(%dot.2)
  ROOT %tuple.1 = (f32[4,4]{1,0}) tuple(%copy.1)
}

%branch_zeros (arg_empty_tuple: ()) -> (f32[4,4]) {
  %arg_empty_tuple = () parameter(0)
  %constant.1 = f32[] constant(0)
  %wrapped_broadcast = f32[4,4]{1,0} fusion(%constant.1), kind=kLoop, \
calls=%wrapped_broadcast_computation
  ROOT %tuple.2 = (f32[4,4]{1,0}) tuple(%wrapped_broadcast)
}

ENTRY %main (a: f32[8,4], b: f32[8,4], w: f32[4,4], p: pred[]) -> (f32[4,4]) {
  %a = f32[8,4]{1,0} parameter(0)
  %b = f32[8,4]{1,0} parameter(1)
  %w = f32[4,4]{1,0} parameter(2)
  %p = pred[] parameter(3)
  %dot.1 = f32[8,4]{1,0} dot(%b, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, \
metadata={op_name="x"}
  %cs = (f32[8,4]{1,0}, f32[8,4]{1,0}, u32[]) copy-start(%b)
  %cd = f32[8,4]{1,0} copy-done(%cs)
  %tanh_add_fusion = f32[8,4]{1,0} fusion(%a, %dot.1), kind=kLoop, calls=%fused_computation
  %transpose.1 = f32[4,4]{0,1} transpose(%w), dimensions={1,0}
  %tuple.3 = (f32[8,4]{1,0}, f32[4,4]{1,0}) tuple(%tanh_add_fusion, %transpose.1)
  %tuple.4 = () tuple()
  ROOT %conditional.1 = (f32[4,4]{1,0}) conditional(%p, %tuple.3, %tuple.4), \
true_computation=%branch_taken, false_computation=%branch_zeros
}
"""


@pytest.fixture(scope="module")
def hlo():
  sys.path.insert(0, str(BENCHMARKS))
  try:
    yield importlib.import_module("hlo_reversible")
  finally:
    sys.path.remove(str(BENCHMARKS))


def test_passes_of_a_module(hlo):
  act = 8 * 4 * 4
  listing, counts = hlo.passes(MODULE, act)
  # the fusion's body is not counted, nor the untaken branch's zero fill; the conditional's
  # branch is
  assert counts["dot"] == 2 and counts["conditional"] == 1
  assert counts["elementwise pass"] == 1 and counts["copy"] == 1 and counts["transpose"] == 1
  assert counts["async copy"] == 1
  by_name = {name: moved for _, name, _, moved, _, _ in listing}
  assert by_name["tanh_add_fusion"] == 3 * act  # reads a and dot.1, writes its result
  assert by_name["copy.1"] == 2 * 64 and by_name["transpose.1"] == 2 * 64
  assert counts["activation passes"] == pytest.approx(3 + 4 * 64 / act)
  # dot.1 reads b and w and writes f32[8,4]; dot.2 reads x twice and writes f32[4,4]
  assert counts["dot MiB"] * 2 ** 20 == pytest.approx((128 + 64 + 128) + (128 + 128 + 64))
  assert hlo.fusion_body(MODULE, "fused_computation") == "tanh add"
  assert hlo.shape_bytes("(f32[2,3]{1,0}, bf16[4])") == 24 + 8


def test_a_backends_tiled_layouts_and_multi_output_fusions(hlo):
  # as a TPU prints them: operand shapes inline, tiled layouts, a fusion with two results
  line = ("  %fusion.7 = (f32[8,4]{1,0:T(8,128)}, f32[8,4]{1,0:T(8,128)}) fusion("
          "f32[8,4]{1,0:T(8,128)} %a, f32[8,4]{1,0:T(8,128)} %b), kind=kLoop, "
          "calls=%fused_computation.3, backend_config={\"flag\":\"x(1)\"}")
  name, shape, op, operands, rest = hlo.parse_instruction(line)
  assert (name, op) == ("fusion.7", "fusion")
  assert hlo.shape_bytes(shape) == 2 * 128
  assert operands.count("%") == 2 and "calls=%fused_computation.3" in rest
  module = ("HloModule m\n\n%fused_computation.3 (p0: f32[8,4], p1: f32[8,4]) -> "
            "(f32[8,4], f32[8,4]) {\n  %p0 = f32[8,4]{1,0} parameter(0)\n}\n\n"
            "ENTRY %main (a: f32[8,4], b: f32[8,4]) -> (f32[8,4], f32[8,4]) {\n"
            "  %a = f32[8,4]{1,0:T(8,128)} parameter(0)\n"
            "  %b = f32[8,4]{1,0:T(8,128)} parameter(1)\n" + line.replace("  ", "  ROOT ", 1)
            + "\n}\n")
  listing, counts = hlo.passes(module, 128)
  # a fusion that is its computation's result is still a pass: read two, write two
  assert counts["elementwise pass"] == 1 and counts["activation passes"] == 4
  # a dot inside a fusion nested in a fusion (kOutput) is a dot, not an elementwise pass
  conv = ("HloModule m\n\n%inner (q0: f32[8,4], q1: f32[4,4]) -> f32[8,4] {\n"
          "  ROOT %convolution.1 = f32[8,4]{1,0:T(8,128)} convolution(f32[8,4]{1,0} %q0, "
          "f32[4,4]{1,0} %q1), dim_labels=bf_io->bf\n}\n\n"
          "%outer (r0: f32[8,4], r1: f32[4,4]) -> f32[8,4] {\n"
          "  ROOT %f = f32[8,4]{1,0} fusion(f32[8,4]{1,0} %r0, f32[4,4]{1,0} %r1), "
          "kind=kOutput, calls=%inner\n}\n\n"
          "ENTRY %main (a: f32[8,4], w: f32[4,4]) -> f32[8,4] {\n"
          "  %a = f32[8,4]{1,0} parameter(0)\n  %w = f32[4,4]{1,0} parameter(1)\n"
          "  ROOT %fusion.9 = f32[8,4]{1,0} fusion(f32[8,4]{1,0} %a, f32[4,4]{1,0} %w), "
          "kind=kOutput, calls=%outer\n}\n")
  _, counts = hlo.passes(conv, 128)
  assert counts["dot"] == 1 and counts["elementwise pass"] == 0, counts


def test_per_block_counts_end_to_end(hlo, capsys, monkeypatch):
  pytest.importorskip("jax")
  monkeypatch.setenv("REVAX_PLATFORMS", "cpu")  # XLA:CPU's counts (a chip is this process's)
  hlo.main(["--depths", "1,3", "--width", "32", "--batch", "16",
            "--variants", "revax plain,revax invertible,jax invertible"])
  rows = {}
  for line in capsys.readouterr().out.splitlines():
    cells = [c.strip() for c in line.strip("|").split("|")]
    if cells[0] in ("revax plain", "revax invertible", "jax invertible"):
      rows[cells[0]] = dict(zip(hlo.KEYS, map(float, cells[1:]), strict=True))
  assert {v: r["dot"] for v, r in rows.items()} == {
      "revax plain": 6, "revax invertible": 8, "jax invertible": 8}
  # the derived walk is the hand-written one: no elementwise pass, copy or byte more per block
  for key in ("elementwise pass", "copy", "transpose", "activation passes"):
    assert rows["revax invertible"][key] <= rows["jax invertible"][key], (key, rows)


def test_split_vjp_recomputation_has_checkpoints_pass_count(hlo, capsys, monkeypatch):
  """invertible with `split_vjp_recomputation`, where barriers survive (XLA:CPU with its barrier
  expander disabled, as on a TPU): no elementwise pass more per block than checkpoint's
  recomputation, two fewer than without (the VJPs' tanh fused in their own passes)."""
  pytest.importorskip("jax")
  monkeypatch.setenv("XLA_FLAGS", "--xla_disable_hlo_passes=cse_barrier_expander")
  monkeypatch.setenv("REVAX_PLATFORMS", "cpu")  # XLA:CPU with barriers kept
  rows = {}
  for split in (False, True):
    hlo.main(["--depths", "2,4", "--width", "32", "--batch", "16", "--variants",
              "revax invertible,revax checkpoint"] + (["--split"] if split else []))
    for line in capsys.readouterr().out.splitlines():
      cells = [c.strip() for c in line.strip("|").split("|")]
      if cells[0].startswith("revax "):
        rows[cells[0], split] = dict(zip(hlo.KEYS, map(float, cells[1:]), strict=True))
  inv, ckpt = rows["revax invertible", True], rows["revax checkpoint", True]
  assert inv["dot"] == ckpt["dot"] == 8, rows
  assert inv["elementwise pass"] <= ckpt["elementwise pass"], rows
  assert inv["elementwise pass"] == rows["revax invertible", False]["elementwise pass"] - 2, rows
  assert inv["activation passes"] < rows["revax invertible", False]["activation passes"], rows
  assert inv["copy"] == 0, rows


def test_coupling_vjp_saves_a_pass_and_two_activation_passes_per_coupling(hlo, capsys,
                                                                            monkeypatch):
  """invertible with `vjp_output_from_coupling` (an option), on a stock XLA:CPU (no barrier
  needs to survive): per block 8 dots, 2 elementwise passes fewer than the default walk (tanh
  fused into each rebuild, no longer written out and read back: checkpoint's pass count) and 2
  activation-sized reads + writes fewer, no copy; the two rebuild matmuls are fenced calls."""
  monkeypatch.setenv("REVAX_PLATFORMS", "cpu")  # XLA:CPU's counts (a chip is this process's)
  rows = {}
  for coupling in (False, True):
    hlo.main(["--depths", "2,4", "--width", "32", "--batch", "16", "--variants",
              "revax invertible,revax checkpoint"] + (["--coupling"] if coupling else []))
    for line in capsys.readouterr().out.splitlines():
      cells = [c.strip() for c in line.strip("|").split("|")]
      if cells[0].startswith("revax "):
        rows[cells[0], coupling] = dict(zip(hlo.KEYS, map(float, cells[1:]), strict=True))
  inv, default = rows["revax invertible", True], rows["revax invertible", False]
  ckpt = rows["revax checkpoint", False]
  assert inv["dot"] == default["dot"] == 8, rows
  assert inv["elementwise pass"] == default["elementwise pass"] - 2 == ckpt["elementwise pass"]
  assert inv["activation passes"] == default["activation passes"] - 2, rows
  assert inv["copy"] == 0 and inv["conditional"] == 2, rows


def test_tpu_programs_compiled_without_a_chip(hlo, capsys, monkeypatch):
  """--tpu-aot: the programs compiled for a TPU v5e by libtpu's compile-only client (where the
  libtpu package is importable; CI has none). Per block: 8 dots and no standalone elementwise
  pass (the TPU fuses the elementwise work into the dots), checkpoint's fence a conditional,
  and revax's derived walk moves no more through its dots than the hand-written one."""
  pytest.importorskip("jax")
  pytest.importorskip("libtpu")
  if ON_TPU:  # libtpu's compile-only client takes the chip's lockfile too
    pytest.skip(f"TPU: {HOLDS_THE_CHIP}")
  monkeypatch.setenv("REVAX_PLATFORMS", "cpu")  # revax lowers on the CPU; libtpu compiles
  hlo.main(["--tpu-aot", "--depths", "1,3", "--width", "256", "--batch", "512",
            "--variants", "revax invertible,jax invertible,revax checkpoint"])
  rows = {}
  for line in capsys.readouterr().out.splitlines():
    cells = [c.strip() for c in line.strip("|").split("|")]
    if cells[0] in ("revax invertible", "jax invertible", "revax checkpoint"):
      rows[cells[0]] = dict(zip(hlo.KEYS, map(float, cells[1:]), strict=True))
  assert {v: (r["dot"], r["elementwise pass"]) for v, r in rows.items()} == {
      "revax invertible": (8, 0), "jax invertible": (8, 0), "revax checkpoint": (8, 0)}, rows
  assert rows["revax checkpoint"]["conditional"] == 1, rows
  assert rows["revax invertible"]["dot MiB"] <= rows["jax invertible"]["dot MiB"], rows


def test_tpu_relayouts_are_read(hlo):
  """A TPU program's data moves outside its fusions: an asynchronous copy (its target), a
  slice-start (its slice) and a ConcatBitcast custom call (its result) count in relayout MiB."""
  module = ("HloModule m\n\n"
            "ENTRY %main (a: f32[1024,256]) -> f32[1024,256] {\n"
            "  %a = f32[1024,256]{1,0:T(8,128)} parameter(0)\n"
            "  %copy-start = (f32[1024,256]{1,0:T(8,128)S(1)}, f32[1024,256]{1,0:T(8,128)}, "
            "u32[]{:S(2)}) copy-start(f32[1024,256]{1,0:T(8,128)} %a)\n"
            "  %slice-start = ((f32[1024,256]{1,0:T(8,128)}), f32[256,256]{1,0:T(8,128)}, "
            "s32[]{:S(2)}) slice-start(f32[1024,256]{1,0:T(8,128)} %a), slice={[0:256], [0:256]}\n"
            "  ROOT %custom-call = f32[1024,256]{1,0:T(8,128)} custom-call("
            "f32[1024,256]{1,0:T(8,128)} %a), custom_call_target=\"ConcatBitcast\"\n"
            "}\n")
  _, counts = hlo.passes(module, 1024 * 256 * 4)
  assert counts["async copy"] == 1, counts
  assert counts["relayout MiB"] == pytest.approx(1.0 + 0.25 + 1.0), counts
