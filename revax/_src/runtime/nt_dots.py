"""`x @ w.T` on the default CPU plugin as `(w @ x.T).T`, and a narrow `x.T @ g` as `(g.T @ x).T`:
a rewrite of the program text XLA compiles.

Why: the default CPU plugin's XLA (xla-cpu-pjrt 0.0.1, 2025-11) runs float dots with Eigen, whose
kernel for a dot contracting both operands on their minor dimension (`x @ w.T` with both
row-major: the backward pass of every dense layer, g @ w.T) is up to several times slower than
its row-major kernel when the contracted size is a multiple of 256 (a power-of-two row stride;
by how much grows with it): 256x1024 @ (1024x1024).T took 5.3-5.6 ms where 256x1024 @
1024x1024 took 2.7 and jax's XLA 2.8. Computing the same product as `(w @ x.T).T`, the
transposes of the small operand and of the result fenced by optimization barriers (XLA's
transpose folding would otherwise turn it back into the slow dot), uses the fast kernel at the
price of two copies the size of x and of the result.

Measured on this project's 2-core machine (2026-12-07, one process, the two forms of each shape
timed in turn, best of 3 rounds of the 25th percentile of 10 calls; `m x k @ (n x k).T`):

| m, k, n | NT | swapped | | m, k, n | NT | swapped |
|---|---|---|---|---|---|---|
| 256, 1024, 1024 | 5.60 ms | 3.33 ms | | 256, 784, 1024 | 2.33 ms | 2.58 ms |
| 16, 1024, 1024 | 2.52 ms | 0.28 ms | | 1024, 1024, 1024 | 12.7 ms | 18.3 ms |
| 128, 512, 512 | 0.65 ms | 0.57 ms | | 2048, 256, 256 | 1.28 ms | 2.65 ms |
| 512, 1024, 1024 | 7.92 ms | 6.60 ms | | 256, 1000, 1000 | 2.94 ms | 3.12 ms |
| 256, 2048, 1024 | 12.5 ms | 6.57 ms | | 256, 1024, 10 | 0.09 ms | 0.32 ms |
| 32, 4096, 4096 | 65.0 ms | 5.74 ms | | 256, 10, 1024 | 0.05 ms | 0.33 ms |
| 64, 256, 256 | 0.17 ms | 0.13 ms | | | | |
| 128, 256, 1024 | 0.67 ms | 0.54 ms | | | | |
| 256, 512, 512 | 0.67 ms | 0.68 ms | | | | |
| 256, 768, 768 | 2.01 ms | 2.07 ms | | | | |

So the rule (`swaps`): float32, no batch dimensions, both operands two-dimensional and
contracted on their minor dimension, the contracted size a multiple of 256, the result at least
twice as wide as it is tall (n >= 2 m: the transposes stay small against the product), and at
least `MIN_FLOPS`. Every case of the left column is the rule's (the last two even within the
noise), every case of the right column is not. The reversible MLP of issue 36 (width 256, batch
64, 64 blocks: 128 of its dots are 64x256 @ (256x256).T) took 19.5-20.8 ms a gradient step with
the rule, 22.9-24.2 ms without (jax 18.9-19.1 ms; `python benchmarks/bench_plugins.py --rows
rev_mlp --variant REVAX_CPU_NT_DOTS=0`, 2026-12-07 01:40: its plain gradient; the same blocks under
revax.invertible, whose backward walk is fenced, are left to XLA, below).

The weight gradient of a narrow layer (`x.T @ g`, contracting both operands on their major
dimension, the result m x n with n small: a classifier's head) has the same trouble the other
way round: Eigen computes the m x n result slowly, its transpose `g.T @ x` (n x m, the same kind
of dot with the operands swapped) fast. Measured as above (`k x m` transposed `@ k x n`; the
swapped form `g.T @ x` fenced by a barrier, then transposed):

| k, m, n | x.T @ g | swapped | | k, m, n | x.T @ g | swapped |
|---|---|---|---|---|---|---|
| 256, 1024, 10 | 0.229 ms | 0.048 ms | | 256, 1024, 32 | 0.222 ms | 0.203 ms |
| 1024, 1024, 10 | 0.995 ms | 0.194 ms | | 256, 1024, 64 | 0.338 ms | 0.271 ms |
| 256, 4096, 10 | 0.796 ms | 0.170 ms | | 256, 1024, 128 | 0.443 ms | 0.485 ms |
| 256, 784, 10 | 0.084 ms | 0.041 ms | | 256, 1024, 256 | 0.721 ms | 0.786 ms |
| 64, 256, 10 | 0.028 ms | 0.018 ms | | 256, 1024, 1 | 0.133 ms | 0.024 ms |

(quiet machine, 2026-12-07 03:50; jax's XLA took 0.05-0.10 ms for 256, 1024, 10 in its own
process.) So `tn_swaps`: n at most m / 16 and at least
`TN_MIN_FLOPS`. revax's transpose rule writes that gradient already narrow side first, `(g.T @
x).T`, but XLA folds the transpose into the dot and computes the slow m x n one (0.23 ms for 256,
1024, 10 against 0.05 ms fenced): a narrow-first dot whose result is transposed is fenced by a
barrier, so that the transpose stays one.

Only dots of a function's body are swapped, never those inside a region (the branches of a
conditional, loop bodies): revax fences checkpoint's and invertible's backward steps in
conditionals, and there the swapped form's transposes made XLA:CPU keep one more buffer per
block alive (invertible's reversible MLP, width 256: XLA's temp bytes 0.85 MB at depth 8, 4.0
MB at depth 64, where the walk stays at 0.59 MB without the rewrite; tests/interpreters/
test_invertible.py's flat-memory test found it).

Applied where gemm.py's rewrite is (single-device programs on the CPU plugins up to
`gemm.NEWEST_MEASURED_API`), after it: a dot it made a GEMM call is no longer a dot_general.
`Lowered.as_text()` still shows jax's StableHLO. `REVAX_CPU_NT_DOTS=0` turns it off.
"""
from __future__ import annotations

import functools
import os
import re

from revax._src.runtime import gemm

__all__ = ["MIN_FLOPS", "TN_MIN_FLOPS", "enabled", "swaps", "tn_swaps", "rewrite_program"]

# Smallest product swapped: 64x512 @ (128x512).T (2^23 flops) measured 0.12 ms swapped against
# 0.15 ms; below about this the two copies' fixed costs are not measured to pay.
MIN_FLOPS = 2 ** 22
# Smallest x.T @ g swapped: 64x256 (transposed) @ 64x10 (2^18.3 flops) measured 0.018 ms swapped
# against 0.028 ms; smaller ones were not measured.
TN_MIN_FLOPS = 2 ** 18


def enabled() -> bool:
  """Whether NT dots are swapped: env `REVAX_CPU_NT_DOTS` ("0" off), on by default (read at each
  compile, so one process can compare both)."""
  value = os.environ.get("REVAX_CPU_NT_DOTS", "").strip().lower()
  return value not in ("0", "false", "no", "off")


def swaps(m: int, k: int, n: int) -> bool:
  """Whether the float32 product of an m x k matrix and the transpose of an n x k one is
  computed swapped (see the module docstring for the measurements).

  Example:
    >>> from revax._src.runtime.nt_dots import swaps
    >>> swaps(256, 1024, 1024), swaps(256, 784, 1024), swaps(1024, 1024, 1024)
    (True, False, False)
  """
  return k % 256 == 0 and n >= 2 * m and 2 * m * k * n >= MIN_FLOPS


def tn_swaps(k: int, m: int, n: int) -> bool:
  """Whether the float32 product of the transpose of a k x m matrix and a k x n one (`x.T @ g`,
  a dense layer's weight gradient) is computed as the transpose of `g.T @ x` (see the module
  docstring for the measurements): where the result is narrow, n at most a sixteenth of m.

  Example:
    >>> from revax._src.runtime.nt_dots import tn_swaps
    >>> tn_swaps(256, 1024, 10), tn_swaps(256, 1024, 1024), tn_swaps(8, 64, 4)
    (True, False, False)
  """
  return 16 * n <= m and 2 * k * m * n >= TN_MIN_FLOPS


_TRANSPOSE_2D = "<{permutation = array<i64: 1, 0>}>"


def _tensor(element: str, *dims: int) -> str:
  """`tensor<AxBxf32>`: the StableHLO type of an array of `dims` of `element`."""
  return f"tensor<{'x'.join(map(str, dims))}x{element}>"


def _swapped(match, serial: int) -> list[str]:
  """The lines computing `match`'s dot as the transpose of (rhs @ lhs^T)."""
  indent, result, lhs, rhs = match["indent"], match["result"], match["lhs"], match["rhs"]
  (m, k), (n, _) = gemm._shape(match.group(10)), gemm._shape(match.group(13))
  el = match.group(11)
  t = functools.partial(_tensor, el)
  lhs_t, lhs_b, dot, dot_b = (f"%revax_nt{serial}_{s}" for s in ("lt", "lb", "d", "db"))
  perm = _TRANSPOSE_2D
  dims = ("<{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [], "
          "rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], "
          "rhs_contracting_dimensions = [0]>")
  precision = match.group(0).split("rhs_contracting_dimensions = [1]>", 1)[1].split("}> :")[0]
  return [
      f'{indent}{lhs_t} = "stablehlo.transpose"({lhs}) {perm} : ({t(m, k)}) -> {t(k, m)}',
      f'{indent}{lhs_b} = "stablehlo.optimization_barrier"({lhs_t}) : ({t(k, m)}) -> {t(k, m)}',
      f'{indent}{dot} = "stablehlo.dot_general"({rhs}, {lhs_b}) {dims}{precision}}}> : '
      f"({t(n, k)}, {t(k, m)}) -> {t(n, m)}",
      f'{indent}{dot_b} = "stablehlo.optimization_barrier"({dot}) : ({t(n, m)}) -> {t(n, m)}',
      f'{indent}{result} = "stablehlo.transpose"({dot_b}) {perm} : ({t(n, m)}) -> '
      f"{t(m, n)}{match['rest']}"]


def _tn_swapped(match, serial: int) -> list[str]:
  """The lines computing `match`'s dot `x^T @ g` as the transpose of `g^T @ x` (the same
  kind of dot with its operands swapped: the result narrow side first)."""
  indent, result, lhs, rhs = match["indent"], match["result"], match["lhs"], match["rhs"]
  (k, m), (_, n) = gemm._shape(match.group(10)), gemm._shape(match.group(13))
  el = match.group(11)
  t = functools.partial(_tensor, el)
  dot, dot_b = (f"%revax_tn{serial}_{s}" for s in ("d", "db"))
  perm = _TRANSPOSE_2D
  attrs = match.group(0).split('"stablehlo.dot_general"', 1)[1].split(") ", 1)[1].split(" : (")[0]
  return [
      f'{indent}{dot} = "stablehlo.dot_general"({rhs}, {lhs}) {attrs} : '
      f"({t(k, n)}, {t(k, m)}) -> {t(n, m)}",
      f'{indent}{dot_b} = "stablehlo.optimization_barrier"({dot}) : ({t(n, m)}) -> {t(n, m)}',
      f'{indent}{result} = "stablehlo.transpose"({dot_b}) {perm} : ({t(n, m)}) -> '
      f"{t(m, n)}{match['rest']}"]


def _tn_fenced(match, serial: int) -> list[str]:
  """The lines computing `match`'s dot, its result renamed and fenced by a barrier under its
  own name (its transpose, which XLA would fold into the dot, then stays a transpose)."""
  indent, result, ot, rest, line = (match[g] for g in ("indent", "result", "ot", "rest", 0))
  dot = f"%revax_tn{serial}_f"
  definition = line[len(indent) + len(result):len(line) - len(rest)]  # ' = "...dot_general"...'
  return [f"{indent}{dot}{definition}",
          f'{indent}{result} = "stablehlo.optimization_barrier"({dot}) : ({ot}) -> {ot}{rest}']


# the operand of every transpose: `%name` of `"stablehlo.transpose"(%name)`
_TRANSPOSED = re.compile(r'"stablehlo\.transpose"\((%[\w.#$-]+)\)')


def rewrite_program(code: bytes) -> bytes:
  """`code` (a single-device CPU StableHLO module) with its `swaps` dots swapped, its `tn_swaps`
  ones swapped or fenced.

  Example:
    >>> from revax._src.runtime.nt_dots import rewrite_program
    >>> nt = lambda x, w: lax.dot_general(x, w, (((1,), (1,)), ((), ())))
    >>> text = revax.jit(nt).lower(jnp.ones((64, 512)), jnp.ones((256, 512))).as_text()
    >>> new = rewrite_program(text.encode()).decode()
    >>> new.count("stablehlo.transpose"), new.count("stablehlo.optimization_barrier")
    (2, 2)
  """
  if b'"stablehlo.dot_general"' not in code or not enabled():
    return code
  text = code.decode()
  lines = text.split("\n")
  transposed = set(_TRANSPOSED.findall(text))
  out, serial, body_indent = [], 0, None
  for line in lines:
    if "func.func" in line:  # the ops of a function's body sit one level in
      body_indent = len(line) - len(line.lstrip(" ")) + 2
    match = gemm._DOT.match(line) if '"stablehlo.dot_general"' in line else None
    if (match is not None and len(match["indent"]) == body_indent
        and match.group(11) == match.group(14) == match.group(17) == "f32"
        and not any(match.group(g).strip() for g in (5, 6))
        and len(gemm._shape(match.group(10))) == len(gemm._shape(match.group(13))) == 2):
      contracting = match.group(7).strip(), match.group(8).strip()
      (a, b), (c, d) = gemm._shape(match.group(10)), gemm._shape(match.group(13))
      if contracting == ("1", "1") and swaps(a, b, c):  # m x k @ (n x k).T
        out.extend(_swapped(match, serial))
        serial += 1
        continue
      if contracting == ("0", "0") and tn_swaps(a, b, d):
        out.extend(_tn_swapped(match, serial))  # (k x m).T @ k x n
        serial += 1
        continue
      if (contracting == ("0", "0") and match["result"] in transposed
          and tn_swaps(a, d, b)):  # (x.T @ g).T with x narrow: XLA would fold the transpose
        out.extend(_tn_fenced(match, serial))
        serial += 1
        continue
    out.append(line)
  return "\n".join(out).encode() if serial else code
