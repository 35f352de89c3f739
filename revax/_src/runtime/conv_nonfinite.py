"""What jax's XLA:CPU makes of a filter's NaN and inf in a convolution: the rule the patch-GEMM
convolution handler (im2col.py, `_lapack.c`'s conv_handler) follows so that its non-finite results
are jax's.

With finite operands every algorithm computes the same sums. A NaN or inf in the FILTER tells them
apart, because 0 * inf and 0 * nan are NaN: jaxlib 0.10.2's XLA:CPU runs each convolution with
one of several algorithms, some of which multiply the zero padding (and the holes of an lhs
dilation) by the filter and some of which leave them out of the sums:

- Eigen's spatial convolution (float32, 1-3 spatial dims, no window reversal, operands and result
  each over 8 bytes) and YNNPACK's (float32 and float64, 2 spatial dims, no lhs dilation, more
  than 16 input or output features, output and window no larger than the input) multiply them:
  mode "A", where a non-finite filter entry reaches every output of its feature.
- Eigen's transposed convolution (lhs dilation with unit strides and rhs dilation, 1-2 spatial
  dims, no feature groups) scatters only real inputs, and XLA's generic loop (everything else:
  float64 apart from YNNPACK's, tiny arrays, window reversal, and convolutions XLA's algebraic
  simplifier swaps because the window is larger than the input) skips positions outside the
  input: mode "B", where only the taps that read an input element count.
- Batch groups are rewritten first: with as many examples and output features as groups, into
  one convolution of every example with every filter whose other products a select drops (the
  mode of that convolution, nothing more); otherwise into a convolution with one more spatial
  dimension, lhs-dilated by the group count, where each group's window meets the other groups'
  filters at holes: in mode "A" a non-finite entry of a group's filters then reaches the same
  feature of every other group too (spread "bg").
- float64 feature groups that YNNPACK does not take (it takes grouped ones as they are) are
  rewritten too: one input channel per group (depthwise) becomes an ungrouped convolution whose
  filter holds zeros off its groups, so a non-finite INPUT element reaches every other group's
  outputs that read it (spread "x"); more channels per group become a convolution with an
  lhs-dilated group dimension, mode "B".
- A negative padding is decided on as written (revax's lowering crops it with a slice that
  im2col.py reads back).

Found by generated differential tests against jax 0.10.2 (tests/runtime/test_conv_nonfinite.py; the
same XLA passes, read from its source: ConvolutionGroupConverter, the algebraic simplifier's operand
swap, PotentiallyImplementedAsEigenConvolution, IsConvolutionOpSupportedByYnn). Where jax's
convolution sits in a loop's body or a conditional's branch (not the entry computation, which alone
XLA's layout canonicalisation visits) with other dimension numbers than NHWC x HWIO or with batch
groups rewritten into a dilated dimension, XLA runs it in its generic loop (mode "B"): im2col.py
tells such convolutions by the transposes revax's lowering puts around them, inside a
`stablehlo.while` or a `stablehlo.case` whose index is not a constant (revax's own `stablehlo.if`
fences of checkpoint and invertible are no control flow in jax's program).
"""
from __future__ import annotations

import math

__all__ = ["rule"]

# The dtypes the handler serves: which of them Eigen's and YNNPACK's convolutions take (complex
# ones never reach the handler on the CPU: revax, as jax, lowers a complex convolution to three
# real ones there; XLA would run one in its generic loop).
_EIGEN, _YNN = {"f32"}, {"f32", "f64"}


def _out_size(i, k, s, lo, hi, ld, rd):
  di = (i - 1) * ld + 1 if i else 0
  dk = (k - 1) * rd + 1 if k else 0
  return 0 if di + lo + hi < dk else (di + lo + hi - dk) // s + 1


def _swapped(g: dict) -> bool:
  """Whether XLA's algebraic simplifier swaps lhs and rhs (a window larger than the input: the
  swapped convolution reverses its window and so runs in the generic loop)."""
  window = swapped = 1
  for i, k, s, lo, hi, ld, rd in zip(g["in"], g["win"], g["stride"], g["lo"], g["hi"], g["ldil"],
                                     g["rdil"], strict=True):
    plain = lo == hi == 0 and rd == 1
    if (plain and ld == k and s == k - 1) or (plain and k == i and ld == 1 and s == 1):
      continue  # a group or pure contraction dimension: not counted
    window *= k
    swapped *= k if (i == 1 and s == 1 and rd == 1 and lo == hi == k - 1) else i
  return window > swapped


def _outs(g: dict) -> list[int]:
  return [_out_size(*a) for a in zip(g["in"], g["win"], g["stride"], g["lo"], g["hi"], g["ldil"],
                                     g["rdil"], strict=True)]


def _ynn(g: dict) -> bool:
  """Whether YNNPACK runs the convolution (before XLA rewrites feature groups: it takes grouped
  ones as they are)."""
  return (len(g["in"]) == 2 and g["dtype"] in _YNN and max(g["c"], g["o"]) > 16
          and not any(g["rev"]) and all(q <= i for q, i in zip(_outs(g), g["in"]))
          and all(k <= i for k, i in zip(g["win"], g["in"])) and all(ld == 1 for ld in g["ldil"]))


def _mode(g: dict) -> str:
  """"A" (padding multiplied) or "B" (skipped) for a convolution without batch groups."""
  dims = len(g["in"])
  if any(g["rev"]):
    return "B"
  if g["groups"] == 1 and _swapped(g):
    return "B"
  if _ynn(g):
    return "A"
  outs = _outs(g)
  if g["dtype"] not in _EIGEN or not 1 <= dims <= 3:
    return "B"  # the generic loop
  sizes = (g["n"] * math.prod(g["in"]) * g["c"],
           math.prod(g["win"]) * g["c"] // g["groups"] * g["o"], g["n"] * math.prod(outs) * g["o"])
  if any(4 * s <= 8 for s in sizes):  # an operand under Eigen's 16-byte alignment
    return "B"
  if (any(ld > 1 for ld in g["ldil"]) and dims <= 2 and g["groups"] == 1
      and all(s == 1 for s in g["stride"]) and all(rd == 1 for rd in g["rdil"])):
    return "B"  # Eigen's transposed convolution
  return "A"


def rule(conv: dict, generic_loop: bool = False) -> tuple[int, int]:
  """How jax's XLA:CPU treats padding when the filter of `conv` (im2col.parse's answer) holds NaN
  or inf, as the handler's attributes.

  Args:
    conv: a convolution as `im2col.parse` describes it (with "pad_hi").
    generic_loop: whether jax's convolution sits in a loop's body or a conditional's branch with
      other dimension numbers than NHWC x HWIO or with batch groups XLA rewrites into a dilated
      dimension (not NHWC x HWIO either): XLA's layout canonicalisation visits only the entry
      computation, so such a convolution runs in XLA's generic loop.

  Returns:
    (skip, spread): skip 1 where padding and lhs-dilation holes stay out of the sums (mode "B"),
    0 where they are multiplied by the filter; spread 1 where a non-finite filter entry of one
    batch group reaches the same feature of every group, 2 where a non-finite input element
    reaches the other feature groups' outputs that read it, else 0.

  Example:
    >>> from revax._src.runtime import conv_nonfinite
    >>> conv = {"n": 1, "c": 1, "o": 1, "groups": 1, "batch_groups": 1, "in": [5], "win": [2],
    ...         "stride": [1], "pad": [1], "pad_hi": [1], "ldil": [1], "rdil": [1], "rev": [0],
    ...         "dtype": "f32"}
    >>> conv_nonfinite.rule(conv)  # a 2-element float32 filter: XLA's generic loop
    (1, 0)
  """
  g = {"n": conv["n"], "c": conv["c"], "o": conv["o"], "groups": conv["groups"],
       "in": list(conv["in"]), "win": list(conv["win"]), "stride": list(conv["stride"]),
       "lo": list(conv["pad"]), "hi": list(conv["pad_hi"]), "ldil": list(conv["ldil"]),
       "rdil": list(conv["rdil"]), "rev": list(conv["rev"]), "dtype": conv["dtype"]}
  bg = conv["batch_groups"]
  if generic_loop:  # mode "B"; the float64 depthwise rewrite still spreads the input's NaN
    depthwise = g["groups"] > 1 and g["c"] == g["groups"] and g["dtype"] not in _EIGEN
    return 1, 2 if depthwise else 0
  if bg > 1:
    if g["n"] == bg and g["o"] == bg:  # every example with every filter, a select keeps the pairs
      return int(_mode(g) == "B"), 0
    if len(g["in"]) == 3:
      return 1, 0  # 4 spatial dims after the rewrite: the generic loop
    for key, extra in (("in", bg), ("win", bg), ("stride", bg - 1), ("lo", 0), ("hi", 0),
                       ("ldil", bg), ("rdil", 1), ("rev", 0)):
      g[key].append(extra)
    g["n"] //= bg
    g["o"] //= bg  # (the groups' filters side by side along the new window dimension)
    skip = _mode(g) == "B"
    return int(skip), 0 if skip else 1
  if g["groups"] > 1 and g["dtype"] not in _EIGEN and not _ynn(g):  # (f16/f32 stay grouped)
    if g["c"] == g["groups"]:  # depthwise: an ungrouped convolution with a zero-filled filter
      g["groups"] = 1
      return int(_mode(g) == "B"), 2
    return 1, 0
  return int(_mode(g) == "B"), 0
