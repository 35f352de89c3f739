"""dot_general on the CPU as BLAS GEMMs: a rewrite of the program text XLA compiles.

Why: the default CPU plugin (xla-cpu-pjrt 0.0.1, XLA of 2025-11) runs every float dot with
Eigen, where jaxlib 0.10.2's newer XLA runs them with YNNPACK; no flag of that plugin turns
YNNPACK on for dots (`--xla_cpu_experimental_ynn_fusion_type=dot` is parsed and changes nothing,
XNNPACK's dot fusions are slower, oneDNN's fusions abort the process on the reversible MLP).
Measured there (issue 36, benchmarks/RESULTS.md), each in its own process: Eigen is 1.5-2x
jax's time on small and medium dots (64x256x256: 0.22 ms against 0.12 ms) and on dots whose
right operand is contracted on its minor dimension (x @ w.T, the backward pass of every dense
layer: 256x1024x1024 in 8.6 ms against 5.2 ms), and a 32x32 product costs a jitted call 30 us
where the GEMM call takes 5 us; on large dots that read the right operand row-major (x @ w,
x.T @ g) its two threads keep up with jax. NumPy's OpenBLAS GEMM on one thread is at or below
jax's time on all but those large ones and large matrix-vector products.

Measured again on a quiet machine, XLA's own dots (two threads) were the faster after all
(`DOTS_BY_DEFAULT` below says by how much): the rewrite is now on only with `REVAX_CPU_GEMM=1`;
the plugin gate below still decides where the convolution handler (im2col.py) is used.

So, when a single-device program is compiled for the CPU, each `stablehlo.dot_general` that
revax's lowering wrote (generic form) with operands and result of one dtype among float32,
float64, complex64 and complex128 and no `algorithm` becomes a custom call to revax's GEMM
handler (`_lapack.c`'s `gemm_handler`), except those `uses_gemm` leaves to XLA. The text
`Lowered.as_text()` shows is unchanged (JAX's StableHLO); the rewritten text is what is compiled
and what keys the persistent compilation cache.

The custom call asks XLA for operand layouts that put each operand's dimensions in GEMM order
(batch, then the lhs's free and contracting groups, the rhs's contracting and free groups, each
operand keeping its own order of the two where it can, so XLA copies only where a vmapped dot
needs a transpose, as its DotDecomposer does for Eigen); the handler loops over the batch. The
GEMM runs on one thread: OpenBLAS's own threads spinning beside XLA's pool made whole programs
many times slower on two cores.

An opt-in variant for measuring on a quiet machine, `REVAX_CPU_GEMM=large` or `=large-nt`
(`rule`): only dots of at least `THREADED_FLOPS` flops (env `REVAX_CPU_GEMM_MIN_FLOPS` changes
the threshold), and with `large-nt` only those whose right operand is contracted on its minor
dimension (x @ w.T, where Eigen lost most: 256x1024x1024 in 8.6 ms against jax's 5.2 ms),
become GEMM calls, each split over as many threads as XLA's CPU thread pool has
(`gemm_threads`: the CPUs this process may run on): the handler computes one block of the
result's rows (or columns) per thread, each with one-thread OpenBLAS, on threads of its own that
end with the call (OpenBLAS's own threads, which the first version used, kept spinning beside
XLA's pool after the call: the MLP training step took 1.51x jax's time under `large-nt` with
them, 1.07x with the split); every other dot stays XLA's. (The layout is the dot_general's: a
dense layer's backward g @ w.T is one; a user's `x @ w.T` is lowered as a transpose then a plain
dot, as jax does, and stays XLA's under `large-nt`.) Measured on a quiet machine (2026-12-06
21:41, `python benchmarks/bench_plugins.py --plugin xla-cpu-pjrt --pairs 3 --variant
REVAX_CPU_GEMM=large-nt`): the MLP step 1.06x of jax against the default's 1.12x, a 256x1024 @
(1024x1024).T dot 3.6 ms against XLA's 5.3 and jax's 2.8; but the vmapped dot with both
operands mapped 1.23x against 1.02x, so the rule stays opt-in.

Convolutions are im2col.py's (run first, under the same switches: its handler's GEMMs are
OpenBLAS's too).

Not rewritten (client.py decides the first three): programs of several devices (the SPMD
partitioner cannot split an opaque custom call), other platforms, plugins newer than the one
measured (`enabled_for_plugin`; `REVAX_CPU_GEMM=1` forces it, `=0` turns it off everywhere), and
dtypes for which the `_lapack` extension or OpenBLAS's `cblas_?gemm` is missing.
"""
from __future__ import annotations

import collections
import math
import os
import re

__all__ = ["LARGE_FLOPS", "VECTOR_FLOPS", "THREADED_FLOPS", "NEWEST_MEASURED_API",
           "CHEAP_MARGIN", "enabled", "enabled_for_plugin", "rule", "gemm_threads", "plan",
           "uses_gemm", "other_flops", "rewrite_program"]

# Dots of at least this many flops (2 * batch * m * n * k) with a row-major right operand stay
# XLA's (Eigen, all the intra-op threads): 256x512x512 is where the two were even.
LARGE_FLOPS = 2 ** 27
# Matrix-vector products (m or n is 1) of at least this many flops stay XLA's (its GEMV reads
# the matrix with both threads: 1024x1024 @ 1024 took 0.12 ms, 0.21 ms as a GEMM).
VECTOR_FLOPS = 2 ** 20
# The opt-in rules `large` and `large-nt` (see `rule`) rewrite only dots of at least this many
# flops (256x256x128; the MLP training step's 256x1024x1024 dots have 2^29): below it, starting
# OpenBLAS's threads costs about what the GEMM does. Env REVAX_CPU_GEMM_MIN_FLOPS overrides it.
THREADED_FLOPS = 2 ** 24

_ELEMENT = r"(f32|f64|complex<f32>|complex<f64>)"
_TENSOR = r"tensor<((?:\d+x)*)" + _ELEMENT + ">"
_DIMS = r"\[([\d, ]*)\]"
_DOT = re.compile(
    r'^(?P<indent>\s*)(?P<result>%[\w.#$-]+) = "stablehlo\.dot_general"'
    r"\((?P<lhs>%[\w.#$-]+), (?P<rhs>%[\w.#$-]+)\) <\{dot_dimension_numbers = #stablehlo\.dot<"
    rf"lhs_batching_dimensions = {_DIMS}, rhs_batching_dimensions = {_DIMS}, "
    rf"lhs_contracting_dimensions = {_DIMS}, rhs_contracting_dimensions = {_DIMS}>"
    r"(?:, precision_config = \[[^\]]*\])?\}> : "
    rf"\((?P<lt>{_TENSOR}), (?P<rt>{_TENSOR})\) -> (?P<ot>{_TENSOR})(?P<rest>.*)$")


# Measured on the default plugin, PJRT C API 0.81 (XLA of 2025-11, Eigen dots). The CPU plugins
# of C API 0.106 and 0.115 (XLA of 2026) were not measured with it: there it is off unless
# REVAX_CPU_GEMM=1 asks for it.
NEWEST_MEASURED_API = (0, 81)


def enabled(default: bool = True) -> bool:
  """Whether dots may become GEMM calls: env `REVAX_CPU_GEMM` ("1", "large" or "large-nt" on,
  "0" off) where set, else `default` (read at each compile, so one process can compare both)."""
  value = os.environ.get("REVAX_CPU_GEMM", "").strip().lower()
  if not value:
    return default
  return value not in ("0", "false", "no", "off")


# Dots are XLA's unless REVAX_CPU_GEMM=1. Measured on a quiet machine (2 cores, load average
# 0.3-1.5, `python benchmarks/bench_plugins.py --plugin xla-cpu-pjrt --pairs 4`, 2026-12-06
# 15:42-15:47 UTC), revax / jax with the GEMM calls and with XLA's dots: reversible MLP 1.24x
# and 0.90x, MLP training step 1.26x and 1.12x, vmapped dots 0.84x/0.73x and 0.91x/0.75x, 32x32
# product 1.07x and 0.91x: XLA's dots use both cores where the GEMM call uses one. The GEMM
# calls won only while other processes kept the cores busy (the session that added them
# measured under load averages of 1-5). Convolutions (im2col.py) are rewritten by default.
DOTS_BY_DEFAULT = False


def dots_enabled() -> bool:
  """Whether dot_generals become GEMM calls (where the plugin gets rewrites at all)."""
  return enabled(default=DOTS_BY_DEFAULT)


def enabled_for_plugin(api_version) -> bool:
  """Whether a plugin of PJRT C API `api_version` ((major, minor)) gets the rewrite: by default
  those up to `NEWEST_MEASURED_API`; `REVAX_CPU_GEMM` decides where set."""
  return enabled(default=tuple(api_version) <= NEWEST_MEASURED_API)


RULES = ("large", "large-nt")


def rule() -> str | None:
  """The opt-in GEMM rule env `REVAX_CPU_GEMM` names, or None for `uses_gemm`'s default rule.

  "large": every dot of at least `threaded_flops()` flops (but matrix-vector products) becomes
  a GEMM call on `gemm_threads()` OpenBLAS threads; "large-nt": only those of them whose right
  operand is stored contracting dimension minor (x @ w.T). Every other dot stays XLA's.

  Returns:
    "large", "large-nt" or None.

  Raises:
    ValueError: REVAX_CPU_GEMM holds a value that is neither a switch nor a rule.

  Example:
    >>> import os
    >>> from revax._src.runtime.gemm import rule
    >>> os.environ["REVAX_CPU_GEMM"] = "large-nt"
    >>> rule()
    'large-nt'
    >>> del os.environ["REVAX_CPU_GEMM"]
  """
  value = os.environ.get("REVAX_CPU_GEMM", "").strip().lower()
  if value in RULES:
    return value
  if value in ("", "0", "1", "false", "no", "off", "true", "yes", "on"):
    return None
  raise ValueError(f"REVAX_CPU_GEMM={value!r}: expected 0, 1 or one of the rules "
                   f"{', '.join(RULES)}")


def threaded_flops() -> int:
  """The flop threshold of the `large` rules: env `REVAX_CPU_GEMM_MIN_FLOPS` (an integer), else
  `THREADED_FLOPS`."""
  value = os.environ.get("REVAX_CPU_GEMM_MIN_FLOPS", "").strip()
  if not value:
    return THREADED_FLOPS
  try:
    return int(float(value))
  except ValueError:
    raise ValueError(f"REVAX_CPU_GEMM_MIN_FLOPS={value!r} is not a number of flops") from None


def gemm_threads() -> int:
  """Threads of a GEMM call under a `large` rule (each runs one-thread OpenBLAS on a block of the
  result): as many as XLA's CPU thread pool
  uses, the CPUs this process may run on (`os.sched_getaffinity`, which `taskset` narrows;
  `os.cpu_count()` where the platform has no affinity)."""
  try:
    return max(1, len(os.sched_getaffinity(0)))
  except (AttributeError, OSError):
    return max(1, os.cpu_count() or 1)


def plan(lhs_shape, rhs_shape, dimension_numbers) -> dict:
  """The GEMM a dot_general is.

  Args:
    lhs_shape, rhs_shape: the operands' shapes.
    dimension_numbers: `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`.

  Returns:
    {"batch", "m", "n", "k"}: products of the dimension groups; {"trans_a", "trans_b"}: the
    operand is stored contracting group first; {"lhs_order", "rhs_order"}: each operand's
    dimensions in memory, major to minor.

  Example:
    >>> from revax._src.runtime.gemm import plan
    >>> p = plan((64, 256), (128, 256), (((1,), (1,)), ((), ())))  # x @ w.T
    >>> p["m"], p["n"], p["k"], p["trans_a"], p["trans_b"]
    (64, 128, 256, False, True)
  """
  (lc, rc), (lb, rb) = dimension_numbers
  lc, rc, lb, rb = (list(map(int, d)) for d in (lc, rc, lb, rb))
  lf = [d for d in range(len(lhs_shape)) if d not in lc and d not in lb]
  rf = [d for d in range(len(rhs_shape)) if d not in rc and d not in rb]
  size = lambda shape, dims: math.prod(int(shape[d]) for d in dims)
  trans_a = bool(lc and lf) and min(lc) < min(lf)
  trans_b = bool(rc and rf) and min(rf) < min(rc)
  return {"batch": size(lhs_shape, lb), "m": size(lhs_shape, lf), "n": size(rhs_shape, rf),
          "k": size(lhs_shape, lc), "trans_a": trans_a, "trans_b": trans_b,
          "lhs_order": lb + (lc + lf if trans_a else lf + lc),
          "rhs_order": rb + (rf + rc if trans_b else rc + rf)}


def uses_gemm(p: dict, rule_name: str | None = None) -> bool:
  """Whether the GEMM `p` (`plan`'s answer) runs faster as a BLAS call than as XLA's dot.

  Args:
    p: `plan`'s answer.
    rule_name: None for the rule of `REVAX_CPU_GEMM=1` (one-thread GEMMs: all but large
      row-major and large matrix-vector dots), or one of `RULES` (see `rule`).

  Returns:
    Whether the dot becomes a GEMM call.

  Example:
    >>> from revax._src.runtime.gemm import plan, uses_gemm
    >>> nt = plan((256, 1024), (1024, 1024), (((1,), (1,)), ((), ())))  # x @ w.T
    >>> uses_gemm(nt), uses_gemm(nt, "large-nt")
    (True, True)
    >>> nn = plan((256, 1024), (1024, 1024), (((1,), (0,)), ((), ())))  # x @ w
    >>> uses_gemm(nn), uses_gemm(nn, "large"), uses_gemm(nn, "large-nt")
    (False, True, False)
  """
  flops = 2 * p["batch"] * p["m"] * p["n"] * p["k"]
  if rule_name is not None:
    if rule_name not in RULES:
      raise ValueError(f"unknown GEMM rule {rule_name!r}: expected one of {RULES}")
    if flops < threaded_flops() or min(p["m"], p["n"]) == 1:
      return False
    return rule_name == "large" or p["trans_b"]
  if flops >= LARGE_FLOPS and not p["trans_b"]:
    return False
  return not (min(p["m"], p["n"]) == 1 and flops >= VECTOR_FLOPS)


def _layout(order) -> str:
  """custom_call layout (minor-to-major) placing the dimensions `order` major to minor."""
  dims = [str(d) for d in reversed(list(order))]
  return f"dense<[{', '.join(dims)}]> : tensor<{len(dims)}xindex>" if dims else \
      "dense<> : tensor<0xindex>"


def _ints(text: str) -> list[int]:
  return [int(t) for t in text.replace(" ", "").split(",") if t]


def _shape(dims: str) -> list[int]:
  return [int(d) for d in dims.split("x") if d]


def _call(indent, result, lhs, rhs, lt, rt, ot, rank, p, target, rest, threads=None) -> str:
  names = ("batch", "m", "n", "k", "trans_a", "trans_b")
  config = ", ".join(f"{name} = {int(p[name])} : i64" for name in names)
  if threads is not None:  # OpenBLAS threads of the call (the handler's default is 1)
    config += f", threads = {int(threads)} : i64"
  return (f'{indent}{result} = "stablehlo.custom_call"({lhs}, {rhs}) '
          f'<{{api_version = 4 : i32, backend_config = {{{config}}}, '
          f'call_target_name = "{target}", has_side_effect = false, '
          f'operand_layouts = [{_layout(p["lhs_order"])}, {_layout(p["rhs_order"])}], '
          f'result_layouts = [{_layout(range(rank))}]}}> : ({lt}, {rt}) -> {ot}{rest}')


_TRANSPOSE = re.compile(
    r'^(?P<indent>\s*)(?P<result>%[\w.#$-]+) = "stablehlo\.transpose"\((?P<x>%[\w.#$-]+)\) '
    r"<\{permutation = array<i64(?:: (?P<perm>[\d, ]*))?>\}> : "
    rf"\({_TENSOR}\) -> (?P<ot>{_TENSOR})(?P<rest>.*)$")


# What XLA's HloCostAnalysis counts as flops, approximately: one per result element of these
# ops (a reduction: per operand element), and a kept dot's 2*m*n*k. Transcendental functions,
# data movement and custom calls count none.
_FLOP_OPS = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "compare", "select",
             "remainder", "power", "atan2", "clamp", "and", "or", "xor", "convolution",
             "dot_general", "reduce", "reduce_window")
_OP = re.compile(r'^\s*%[\w.#$-]+(?::\d+)? = "stablehlo\.(' + "|".join(_FLOP_OPS) + r')"')
_RESULT_TYPES = re.compile(r"tensor<((?:\d+x)*)[a-z]")
# A program whose other ops count fewer flops than this keeps its largest dot (4x XLA's 1000:
# the simplifier may remove some of those ops).
CHEAP_MARGIN = 4000


def other_flops(lines: list) -> int:
  """Approximately the flops XLA counts for a program's lines, custom calls (the dots and
  convolutions rewritten so far) counted as none; counting stops at `CHEAP_MARGIN`.

  Args:
    lines: the module's text split into lines (None for a line removed).

  Returns:
    The count, or any number >= CHEAP_MARGIN once it gets there.

  Example:
    >>> from revax._src.runtime.gemm import other_flops
    >>> other_flops(revax.jit(lambda x: x * 2).lower(jnp.ones(8)).as_text().split("\\n"))
    8
  """
  total = 0
  for line in lines:
    if line is None:
      continue
    m = _OP.match(line)
    if m is None:
      continue
    if m.group(1) == "dot_general":
      d = _DOT.match(line)
      if d is None:
        return CHEAP_MARGIN  # a dot of another form: assume it counts
      p = plan(_shape(d.group(10)), _shape(d.group(13)),
               ((_ints(d.group(7)), _ints(d.group(8))), (_ints(d.group(5)), _ints(d.group(6)))))
      total += 2 * p["batch"] * p["m"] * p["n"] * p["k"]
      continue
    types = _RESULT_TYPES.findall(line.split(":")[-1] if m.group(1) not in ("reduce",
                                                                           "reduce_window")
                                  else line)
    total += max((math.prod(_shape(t)) for t in types), default=1)
    if total >= CHEAP_MARGIN:
      return total
  return total


_NAME = re.compile(r"%[\w.#$-]+")


def _fold_transposes(lines: list[str], dots: dict, text: str, rule_name=None,
                     threads=None) -> None:
  """A GEMM result used only by a transpose that swaps its two free groups becomes the GEMM of
  the swapped operands (C^T = B^T A^T), written where the transpose was: XLA folds such a
  transpose into its own dot, and would copy after a custom call (the weight gradient of every
  dense layer, dot_general(g, x) then a transpose, is this)."""
  uses = None
  for i, line in enumerate(lines):
    if '"stablehlo.transpose"' not in line:
      continue
    t = _TRANSPOSE.match(line)
    if t is None or t["x"] not in dots:
      continue
    if uses is None:  # every SSA name's occurrences (definition + uses), counted once
      uses = collections.Counter(_NAME.findall(text))
    if uses[t["x"]] != 2:
      continue
    j, d = dots[t["x"]]
    nb, nlf, nrf = d["nb"], d["nlf"], d["nrf"]
    swap = list(range(nb)) + list(range(nb + nlf, nb + nlf + nrf)) + list(range(nb, nb + nlf))
    if _ints(t["perm"] or "") != swap:
      continue
    (lc, rc), (lb, rb) = d["dims"]
    p = plan(d["rshape"], d["lshape"], ((rc, lc), (rb, lb)))
    if not uses_gemm(p, rule_name):
      continue
    lines[i] = _call(t["indent"], t["result"], d["rhs"], d["lhs"], d["rt"], d["lt"], t["ot"],
                     nb + nlf + nrf, p, d["target"], t["rest"], threads)
    lines[j] = None


_TARGETS = {"f32": "float32", "f64": "float64", "complex<f32>": "complex64",
            "complex<f64>": "complex128"}


def rewrite_program(code: bytes, targets: dict) -> bytes:
  """`code` (a single-device CPU StableHLO module) with its eligible dots as GEMM calls.

  Args:
    code: the module's text, as compiled.
    targets: {NumPy dtype name ("float32", "float64", "complex64", "complex128"): the custom
      call target of the GEMM handler for it}; dtypes missing (or None) keep XLA's dot.

  Returns:
    The text to compile (`code` itself where nothing changes).

  Example:
    >>> from revax._src.runtime.gemm import rewrite_program
    >>> f = lambda a, b, z: (a @ b, z * z)  # (a program of dots only keeps its largest dot)
    >>> text = revax.jit(f).lower(jnp.ones((4, 5)), jnp.ones((5, 6)), jnp.ones(4096)).as_text()
    >>> import os
    >>> os.environ["REVAX_CPU_GEMM"] = "1"  # (dots are XLA's unless asked for: DOTS_BY_DEFAULT)
    >>> b"my_gemm" in rewrite_program(text.encode(), {"float32": "my_gemm"})
    True
    >>> del os.environ["REVAX_CPU_GEMM"]
  """
  if b'"stablehlo.dot_general"' not in code or not dots_enabled():
    return code
  targets = {el: targets.get(dt) for el, dt in _TARGETS.items()}
  if not any(targets.values()):
    return code
  rule_name = rule()
  threads = gemm_threads() if rule_name else None
  text = code.decode()
  lines = text.split("\n")
  dots = {}  # result name -> (line index, what _fold_transposes needs)
  original, flops = {}, {}  # line index of a rewritten dot -> its line, its flops
  for i, line in enumerate(lines):
    if '"stablehlo.dot_general"' not in line:
      continue
    m = _DOT.match(line)
    if m is None:
      continue
    lb, rb, lc, rc = (_ints(m.group(k)) for k in (5, 6, 7, 8))
    lshape, rshape, oshape = _shape(m.group(10)), _shape(m.group(13)), _shape(m.group(16))
    target = targets.get(m.group(11))
    if target is None or not m.group(11) == m.group(14) == m.group(17):
      continue
    p = plan(lshape, rshape, ((lc, rc), (lb, rb)))
    if not uses_gemm(p, rule_name):
      continue
    original[i] = line
    lines[i] = _call(m["indent"], m["result"], m["lhs"], m["rhs"], m["lt"], m["rt"], m["ot"],
                     len(oshape), p, target, m["rest"], threads)
    flops[i] = 2 * p["batch"] * p["m"] * p["n"] * p["k"]
    dots[m["result"]] = (i, {"nb": len(lb), "nlf": len(lshape) - len(lb) - len(lc),
                             "nrf": len(rshape) - len(rb) - len(rc), "dims": ((lc, rc), (lb, rb)),
                             "lshape": lshape, "rshape": rshape, "lhs": m["lhs"],
                             "rhs": m["rhs"], "lt": m["lt"], "rt": m["rt"], "target": target})
  if not dots:
    return code
  if other_flops(lines) < CHEAP_MARGIN:
    # XLA runs a program of under 1000 flops (HloCostAnalysis, which counts none for a custom
    # call) inline in the caller's thread: keep the largest dot XLA's, so that a program of
    # dots (a loop of products, say) is still dispatched asynchronously.
    i = max(flops, key=flops.get)
    lines[i] = original[i]
    dots = {name: d for name, d in dots.items() if d[0] != i}
  _fold_transposes(lines, dots, text, rule_name, threads)
  return "\n".join(line for line in lines if line is not None).encode()
