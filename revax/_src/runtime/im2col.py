"""Convolutions on the CPU as GEMMs of image patches: a rewrite of the program text XLA compiles.

Why: on the default CPU plugin (xla-cpu-pjrt 0.0.1, XLA of 2025-11) two kinds of convolution
run several times slower than on jaxlib 0.10.2's newer XLA (issue 36; each library in its own
process, `python benchmarks/bench_conv_ops.py`): grouped ones (`feature_group_count > 1`, what
vmap makes of a convolution whose filter is mapped, as in per-example gradients: the weight
gradient of a 3x3 layer over 16 examples took 8.9 ms against jax's 4.9 ms, and 1.3 ms against
0.43 ms for the first layer's), and those with a few input channels per group (the first layer of
an image network: 64x28x28x1 by 3x3x1x32 took 3.1 ms against 0.6 ms); batch-grouped ones (the
filter gradient of a feature-grouped convolution) are slow in both XLAs (2 groups of 16
channels on 16x28x28: 140 ms, the handler 7 ms). Its other convolutions
(many channels, strided, lhs- or rhs-dilated, the backward passes of ungrouped layers) are as
fast as jax's or faster, and stay XLA's: through this handler they were 1.1-4x slower.
With it, the two grouped weight gradients measured 0.56x and 0.72x of jax's time, the first
layer 1.8x (OpenBLAS's GEMM with 9 columns to contract is no match for jaxlib's YNNPACK);
benchmarks/RESULTS.md has the table.

So, by default (`REVAX_CPU_CONV=0` turns this off), when a single-device program is compiled
for the CPU (the plugins gemm.py's gate admits; `REVAX_CPU_GEMM=0` turns this off too), each
`stablehlo.convolution` that revax's lowering wrote in its channels-last form (NHWC x HWIO ->
NHWC, which every convolution of 1 to 3 spatial dimensions is lowered to, see
revax/_src/lax/convolution.py) with operands and result all float32 or all float64 (complex
ones are three real ones on the CPU), of a kind `uses_patches` picks (grouped, by features or by
batch, or few input channels), becomes a
custom call to revax's convolution handler (`_lapack.c`'s `conv_handler`): for each group, chunks
of output positions have their patches copied into a scratch matrix that stays in the caches, and
one BLAS GEMM (one thread, as gemm.py's) multiplies it by the group's block of the filter, writing
straight into the output. Padding (of any sign), strides, both dilations and window reversal are
the handler's table of which input element each output position reads at each window position.
Where the filter holds NaN or inf (one pass over it tells), the handler gives jax's answer, not
the patches': jaxlib's XLA multiplies the padding by the filter in some of its convolution
algorithms and leaves it out in others, and revax/_src/runtime/conv_nonfinite.py says which for
each convolution (an attribute of the call); where it leaves it out, the outputs whose window
touches padding are summed again over the taps that read the input, and XLA's rewrites of batch
groups and float64 depthwise convolutions spread NaNs as they do there. Finite filters never
take that path. The handler runs on XLA's calling thread; env `REVAX_CPU_CONV_THREADS=2` has it
share work of 4e6 flops and more with a second thread (on the 2 shared cores measured, under load,
that took 1.06-1.23x one thread's time, so it is not the default). The text `Lowered.as_text()`
shows is unchanged; the rewritten text is what is compiled and what keys the persistent compilation
cache.
"""
from __future__ import annotations

import math
import os
import re

from revax._src.runtime import conv_nonfinite, gemm

__all__ = ["enabled", "parse", "uses_patches", "rewrite_program", "FEW_CHANNELS"]

# Ungrouped convolutions with at most this many input channels go to the handler (measured:
# bench_conv_ops.py's first-layer rows).
FEW_CHANNELS = 4

_ELEMENT = r"(f32|f64|complex<f32>|complex<f64>)"
_TENSOR = r"tensor<((?:\d+x)+)" + _ELEMENT + ">"
_INTS = r"array<i64(?:: ([-\d, ]*))?>"
_CONV = re.compile(
    r'^(?P<indent>\s*)(?P<result>%[\w.#$-]+) = "stablehlo\.convolution"'
    r"\((?P<lhs>%[\w.#$-]+), (?P<rhs>%[\w.#$-]+)\) <\{batch_group_count = (?P<bgc>\d+) : i64, "
    r"dimension_numbers = #stablehlo\.conv<(?P<dnums>\[[^\]]*\]x\[[^\]]*\]->\[[^\]]*\])>, "
    r"feature_group_count = (?P<fgc>\d+) : i64, "
    rf"lhs_dilation = (?P<ldil>{_INTS}), "
    r"padding = dense<(?P<padding>[-\d\[\], ]*)> : tensor<\d+x2xi64>, "
    r"(?:precision_config = \[[^\]]*\], )?"
    rf"rhs_dilation = (?P<rdil>{_INTS}), "
    r"window_reversal = array<i1(?:: (?P<rev>[a-z, ]*))?>, "
    rf"window_strides = (?P<strides>{_INTS})\}}> : "
    rf"\((?P<lt>{_TENSOR}), (?P<rt>{_TENSOR})\) -> (?P<ot>{_TENSOR})(?P<rest>.*)$")


def _setting() -> str:
  return os.environ.get("REVAX_CPU_CONV", "").strip().lower()


def enabled() -> bool:
  """Whether convolutions may become patch GEMMs where the plugin gets rewrites at all (gemm.py's
  gate): by default; env `REVAX_CPU_CONV` "0" turns this off, "all" rewrites every convolution
  the handler can run (for measurements and tests; read at each compile). Where a filter holds
  NaN or inf, XLA leaves the padding out of some convolutions' sums and not of others (jnp.poly
  of NaN roots starts with 1; a grouped SAME convolution's border is NaN): each call carries
  conv_nonfinite.py's rule for its convolution, and the handler follows it (tests/runtime/
  test_conv_nonfinite.py compares with jax)."""
  return _setting() not in ("0", "false", "no", "off")


def _canonical(n: int) -> str:
  spatial = ", ".join(str(d) for d in range(n))
  return f"[b, {spatial}, f]x[{spatial}, i, o]->[b, {spatial}, f]"


def _shape(dims: str) -> list[int]:
  return [int(d) for d in dims.split("x") if d]


def _ints(text: str | None) -> list[int]:
  return [int(t) for t in re.findall(r"-?\d+", text or "")]


def parse(line: str) -> dict | None:
  """The convolution on `line` (revax's generic form, channels last, one dtype, 1 to 3 spatial
  dimensions) as the handler's attributes, or None for any other line.

  Args:
    line: one line of a StableHLO module's text.

  Returns:
    {"n", "c", "o", "groups", "batch_groups", "in", "win", "out", "stride", "pad", "pad_hi",
    "ldil", "rdil", "rev" (lists,
    one entry per spatial dimension), "dtype" (the element type's text), "match"}.

  Example:
    >>> from revax._src.runtime.im2col import parse
    >>> f = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME",
    ...                                           feature_group_count=2)
    >>> text = revax.jit(f).lower(jnp.ones((1, 4, 5, 5)), jnp.ones((6, 2, 3, 3))).as_text()
    >>> [parse(l)["groups"] for l in text.split("\\n") if "stablehlo.convolution" in l]
    [2]
  """
  m = _CONV.match(line)
  if m is None:
    return None
  lshape = _shape(re.match(_TENSOR, m["lt"]).group(1))
  rshape = _shape(re.match(_TENSOR, m["rt"]).group(1))
  oshape = _shape(re.match(_TENSOR, m["ot"]).group(1))
  dtypes = {re.match(_TENSOR, m[k]).group(2) for k in ("lt", "rt", "ot")}
  n = len(lshape) - 2
  if len(dtypes) != 1 or not 1 <= n <= 3 or m["dnums"] != _canonical(n):
    return None
  strides, ldil, rdil = (_ints(m[k].partition(":")[2]) for k in ("strides", "ldil", "rdil"))
  pads = _ints(m["padding"])
  rev = [t.strip() == "true" for t in (m["rev"] or "").split(",") if t.strip()]
  if not (len(strides) == len(ldil) == len(rdil) == len(rev) == n and len(pads) == 2 * n
          and len(rshape) == len(oshape) == n + 2):
    return None
  groups, batch_groups = int(m["fgc"]), int(m["bgc"])
  if groups > 1 and batch_groups > 1:
    return None  # (StableHLO allows only one of them above 1)
  return {"n": lshape[0], "c": lshape[-1], "o": rshape[-1], "groups": groups,
          "batch_groups": batch_groups,
          "in": lshape[1:-1], "win": rshape[:-2], "out": oshape[1:-1], "stride": strides,
          "pad": pads[0::2], "pad_hi": pads[1::2], "ldil": ldil, "rdil": rdil,
          "rev": [int(r) for r in rev],
          "dtype": dtypes.pop(), "match": m}


def uses_patches(conv: dict) -> bool:
  """Whether the convolution `conv` (`parse`'s answer) runs faster as patch GEMMs than as XLA's
  convolution on the plugin measured: grouped ones (feature or batch groups: the latter are the
  weight gradients of feature-grouped convolutions) and those with few input channels."""
  if _setting() == "all":
    return True
  if math.prod(conv["out"]) * conv["n"] * conv["o"] == 0:
    return False  # nothing to compute: XLA's is as good
  return conv["groups"] > 1 or conv["batch_groups"] > 1 or conv["c"] <= FEW_CHANNELS


_SLICE = re.compile(
    r'^\s*(?P<result>%[\w.#$-]+) = "stablehlo\.slice"\((?P<operand>%[\w.#$-]+)\) '
    rf'<\{{start_indices = (?P<start>{_INTS}), limit_indices = (?P<limit>{_INTS}), '
    rf'strides = (?P<strides>{_INTS})\}}> : \((?P<st>{_TENSOR})\) -> ')


def _as_written(conv: dict, slices: dict) -> dict:
  """`conv` with the geometry its user wrote where revax's lowering cropped a negative padding
  with a slice of the lhs (revax/_src/lax/convolution.py): jax's XLA decides its algorithm on the
  convolution with the negative padding. A slice is read as such a crop only where undoing it
  gives a negative padding side (what the lowering leaves is never negative)."""
  cut = slices.get(conv["match"]["lhs"])
  if cut is None:
    return conv
  start, limit, shape = cut
  dims = len(conv["in"])
  if (len(shape) != dims + 2 or start[0] or start[-1] or limit[0] != shape[0]
      or limit[-1] != shape[-1]):
    return conv
  conv = dict(conv, **{k: list(conv[k]) for k in ("in", "pad", "pad_hi")})
  for d in range(dims):
    size, ld = shape[1 + d], conv["ldil"][d]
    if limit[1 + d] == start[1 + d] and conv["in"][d] == 0 and size > 0:
      # cropped to nothing: the lowering kept the whole length as padding, the low side's crop
      # at the slice's start
      lo = conv["pad"][d] - start[1 + d] * ld
      total = conv["pad"][d] + conv["pad_hi"][d]
      conv["in"][d], conv["pad"][d], conv["pad_hi"][d] = size, lo, total - (size - 1) * ld - 1 - lo
      continue
    lo = conv["pad"][d] - start[1 + d] * conv["ldil"][d]
    hi = conv["pad_hi"][d] - (shape[1 + d] - limit[1 + d]) * conv["ldil"][d]
    if lo < 0:
      conv["pad"][d], conv["in"][d] = lo, conv["in"][d] + start[1 + d]
    if hi < 0:
      conv["pad_hi"][d], conv["in"][d] = hi, conv["in"][d] + shape[1 + d] - limit[1 + d]
  return conv


_OPERANDS = re.compile(r'= "stablehlo\.(transpose|slice|constant)"\((%[\w.#$-]+)?\)')
_RESULT = re.compile(r'^\s*(%[\w.#$-]+)(?::\d+)? = ')


def _layouts(lines: list[str]) -> tuple[dict, set]:
  """({result: (op, operand)} of the transposes, slices and constants, {operands of
  transposes})."""
  made, transposed = {}, set()
  for line in lines:
    m = _OPERANDS.search(line)
    r = _RESULT.match(line) if m is not None else None
    if r is None:
      continue
    made[r[1]] = (m[1], m[2])
    if m[1] == "transpose":
      transposed.add(m[2])
  return made, transposed


def _relaid(conv: dict, made: dict, transposed: set) -> bool:
  """Whether revax's lowering put transposes around `conv` (its user's dimension numbers were
  not NHWC x HWIO -> NHWC)."""
  m = conv["match"]
  lhs = m["lhs"]
  if made.get(lhs, ("",))[0] == "slice":  # a negative padding's crop
    lhs = made[lhs][1]
  return (made.get(lhs, ("",))[0] == "transpose" or made.get(m["rhs"], ("",))[0] == "transpose"
          or m["result"] in transposed)


def _dilates_groups(conv: dict) -> bool:
  """Whether XLA rewrites `conv`'s batch groups into an lhs-dilated group dimension (its
  dimension numbers then are not NHWC x HWIO: conv_nonfinite.py)."""
  bg = conv["batch_groups"]
  return bg > 1 and not conv["n"] == conv["o"] == bg


def _call(conv: dict, target: str, written: dict | None = None,
          generic_loop: bool = False) -> str:
  """The custom call of the handler for `conv`; `written` (default `conv`): the geometry that
  decides the non-finite rule (`_as_written`), `generic_loop`: conv_nonfinite.rule's."""
  m = conv["match"]
  attrs = [("n", conv["n"]), ("c", conv["c"]), ("o", conv["o"]), ("groups", conv["groups"]),
           ("batch_groups", conv["batch_groups"])]
  first = 3 - len(conv["in"])  # the handler's 3 spatial dims: size-1 ones before the conv's
  for key in ("in", "win", "out", "stride", "pad", "ldil", "rdil", "rev"):
    attrs += [(f"{key}{first + d}", v) for d, v in enumerate(conv[key])]
  skip, spread = conv_nonfinite.rule(written or conv, generic_loop)  # jax's XLA with NaN/inf
  attrs += [("skip_pad", skip), ("spread", spread)]
  threads = os.environ.get("REVAX_CPU_CONV_THREADS", "").strip()
  if threads.isdigit():  # 2: large work on two threads (the handler's default is 1)
    attrs.append(("threads", int(threads)))
  config = ", ".join(f"{name} = {int(v)} : i64" for name, v in attrs)
  return (f'{m["indent"]}{m["result"]} = "stablehlo.custom_call"({m["lhs"]}, {m["rhs"]}) '
          f'<{{api_version = 4 : i32, backend_config = {{{config}}}, '
          f'call_target_name = "{target}", has_side_effect = false}}> : '
          f'({m["lt"]}, {m["rt"]}) -> {m["ot"]}{m["rest"]}')


_TARGETS = {"f32": "float32", "f64": "float64", "complex<f32>": "complex64",
            "complex<f64>": "complex128"}


def rewrite_program(code: bytes, targets: dict) -> bytes:
  """`code` (a single-device CPU StableHLO module) with its eligible convolutions as calls of
  the patch-GEMM handler.

  Args:
    code: the module's text, as compiled.
    targets: {NumPy dtype name ("float32", "float64", "complex64", "complex128"): the custom
      call target of the convolution handler for it}; dtypes missing (or None) keep XLA's.

  Returns:
    The text to compile (`code` itself where nothing changes). A program whose other work XLA
    counts as under `gemm.CHEAP_MARGIN` flops keeps its largest convolution XLA's (gemm.py: such
    a program would otherwise run in the caller's thread).

  Example:
    >>> from revax._src.runtime.im2col import rewrite_program
    >>> f = lambda x, w, z: (lax.conv(x, w, (1, 1), "SAME"), z * z)
    >>> x, w, z = jnp.ones((2, 1, 8, 8)), jnp.ones((4, 1, 3, 3)), jnp.ones(4096)
    >>> text = revax.jit(f).lower(x, w, z).as_text()
    >>> import os
    >>> b"my_conv" in rewrite_program(text.encode(), {"float32": "my_conv"})
    True
  """
  if b'"stablehlo.convolution"' not in code or not enabled() or not gemm.enabled():
    return code
  if not any(targets.get(dt) for dt in _TARGETS.values()):
    return code
  lines = code.decode().split("\n")
  original, work, slices = {}, {}, {}
  made, transposed = _layouts(lines)
  regions = []  # (indent, op) of the open control-flow ops around the line
  for i, line in enumerate(lines):
    indent = len(line) - len(line.lstrip())
    while (regions and regions[-1][0] >= indent and line.strip()
           and not line.lstrip().startswith(("}, {", "^"))):  # (a region's start, blocks)
      regions.pop()
    flow = re.search(r'= "stablehlo\.(while|case|if)"\((%[\w.#$-]+)', line)
    if flow is not None and line.rstrip().endswith("({"):
      # (XLA inlines the branch a constant index picks: not control flow then)
      constant = flow[1] == "case" and made.get(flow[2], ("",))[0] == "constant"
      regions.append((indent, "inlined" if constant else flow[1]))
    if '"stablehlo.slice"' in line and (s := _SLICE.match(line)) is not None:
      slices[s["result"]] = (_ints(s["start"].partition(":")[2]),
                             _ints(s["limit"].partition(":")[2]),
                             _shape(re.match(_TENSOR, s["st"]).group(1)))
    if '"stablehlo.convolution"' not in line:
      continue
    conv = parse(line)
    if conv is None or conv["dtype"].startswith("complex") or not uses_patches(conv):
      continue  # (complex ones: revax, as jax, lowers them as three real convolutions on the
      # CPU; hand-written text keeps XLA's, whose inf arithmetic OpenBLAS's complex GEMM is not)
    target = targets.get(_TARGETS[conv["dtype"]])
    if target is None:
      continue
    original[i] = line
    written = _as_written(conv, slices)
    lines[i] = _call(conv, target, written,
                     any(op in ("while", "case") for _, op in regions)
                     and (_relaid(conv, made, transposed) or _dilates_groups(conv)))
    work[i] = (2 * conv["n"] * math.prod(conv["out"]) * conv["o"] * math.prod(conv["win"])
               * conv["c"] // conv["groups"] // conv["batch_groups"])
  if not original:
    return code
  if gemm.other_flops(lines) < gemm.CHEAP_MARGIN:
    i = max(work, key=work.get)
    lines[i] = original[i]
    if len(original) == 1:
      return code
  return "\n".join(lines).encode()
