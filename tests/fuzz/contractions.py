"""Random programs over the contracting and windowed families: dot_general with random dimension
numbers (batch dimensions anywhere in either operand), matmul with broadcasting, einsum,
reduce_window with random windows, strides, (lo, hi) paddings and dilations, max/avg pooling
(against flax's definition written with jax.lax.reduce_window), and small random convolutions
(random layouts, strides, paddings, dilations, feature and batch groups).
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from tests.fuzz.array_ops import program
import jax

from tests.fuzz.harness import BF16, F32, I32, JAX, ArgSpec

_FLOATS = (F32, F32, F32, BF16)


# --- dot_general, matmul, einsum ---------------------------------------------------------------
@st.composite
def dot_programs(draw):
  kind = draw(st.sampled_from(("dot_general", "dot_general", "matmul", "einsum")), label="op")
  dtype = draw(st.sampled_from(_FLOATS + (I32,)), label="dtype")
  if kind == "dot_general":
    return _dot_general(draw, dtype)
  if kind == "matmul":
    return _matmul(draw, dtype)
  return _einsum(draw, dtype)


def _dot_general(draw, dtype):
  counts = {k: draw(st.integers(0, 2), label=f"{k} dims") for k in ("batch", "contract",
                                                                      "lhs_free", "rhs_free")}
  size = lambda: draw(st.integers(1, 3), label="size")  # noqa: E731
  batch = [size() for _ in range(counts["batch"])]
  contract = [size() if draw(st.integers(0, 6), label="empty?") else 0
              for _ in range(counts["contract"])]
  lhs_axes = [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))] + \
      [("f", i) for i in range(counts["lhs_free"])]
  rhs_axes = [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))] + \
      [("g", i) for i in range(counts["rhs_free"])]
  lhs_axes = draw(st.permutations(lhs_axes), label="lhs layout")
  rhs_axes = draw(st.permutations(rhs_axes), label="rhs layout")
  free = {("f", i): size() for i in range(counts["lhs_free"])}
  free.update({("g", i): size() for i in range(counts["rhs_free"])})

  def dim(axis):
    kind, i = axis
    return batch[i] if kind == "b" else contract[i] if kind == "c" else free[axis]

  lhs_shape = tuple(map(dim, lhs_axes))
  rhs_shape = tuple(map(dim, rhs_axes))
  pos = lambda axes, kind, n: tuple(axes.index((kind, i)) for i in range(n))  # noqa: E731
  dn = ((pos(lhs_axes, "c", len(contract)), pos(rhs_axes, "c", len(contract))),
        (pos(lhs_axes, "b", len(batch)), pos(rhs_axes, "b", len(batch))))
  preferred = None
  if dtype == BF16 and draw(st.booleans(), label="preferred f32"):
    preferred = np.float32
  specs = [ArgSpec(lhs_shape, dtype), ArgSpec(rhs_shape, dtype)]
  return program(draw, f"dot_general(dimension_numbers={dn}, preferred={preferred})",
                 lambda api, a, b: api.lax.dot_general(a, b, dn, preferred_element_type=preferred),
                 specs, smooth=dtype != I32, tol=5.0)


def _matmul(draw, dtype):
  n, k, m = (draw(st.integers(1, 3), label="size") for _ in range(3))
  lhs_batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2), label="lhs batch"))
  rhs_batch = tuple(1 if draw(st.booleans(), label="broadcast") else d for d in lhs_batch)
  rhs_batch = rhs_batch[draw(st.integers(0, len(rhs_batch)), label="drop leading"):]
  lhs_shape = (k,) if draw(st.integers(0, 4), label="vector lhs") == 0 else lhs_batch + (n, k)
  rhs_shape = (k,) if draw(st.integers(0, 4), label="vector rhs") == 0 else rhs_batch + (k, m)
  specs = [ArgSpec(lhs_shape, dtype), ArgSpec(rhs_shape, dtype)]
  return program(draw, "matmul", lambda api, a, b: a @ b, specs, smooth=dtype != I32, tol=5.0)


def _einsum(draw, dtype):
  letters = "abcde"
  sizes = {c: draw(st.integers(1, 3), label=f"size {c}") for c in letters}
  num = draw(st.integers(1, 3), label="operands")
  terms = []
  for _ in range(num):
    rank = draw(st.integers(0, 3), label="operand rank")
    terms.append("".join(draw(st.permutations(letters), label="letters")[:rank]))
  used = sorted(set("".join(terms)))
  out = "".join(draw(st.permutations(used), label="out letters")[:draw(
      st.integers(0, len(used)), label="out rank")])
  spec = ",".join(terms) + "->" + out
  specs = [ArgSpec(tuple(sizes[c] for c in t), dtype) for t in terms]
  return program(draw, f"einsum({spec!r})", lambda api, *xs: api.np.einsum(spec, *xs), specs,
                 smooth=dtype != I32, tol=5.0)


# --- reduce_window and pooling -----------------------------------------------------------------
def _window_config(draw, sizes, allow_dilation=True):
  """(window, strides, padding, base_dilation, window_dilation); every output dim >= 1."""
  n = len(sizes)
  window = tuple(draw(st.integers(1, 3), label="window") for _ in range(n))
  strides = tuple(draw(st.integers(1, 3), label="stride") for _ in range(n))
  base = tuple(draw(st.integers(1, 2), label="base dilation") if allow_dilation else 1
               for _ in range(n))
  wdil = tuple(draw(st.integers(1, 2), label="window dilation") if allow_dilation else 1
               for _ in range(n))
  kind = draw(st.sampled_from(("pairs", "pairs", "SAME", "VALID")), label="padding kind")
  if kind == "pairs":
    padding = tuple((draw(st.integers(0, 2), label="lo"), draw(st.integers(0, 2), label="hi"))
                    for _ in range(n))
  else:
    padding = kind
  for d, w, b, wd, i in zip(sizes, window, base, wdil, range(n)):
    dilated_in = (d - 1) * b + 1 if d else 0
    dilated_w = (w - 1) * wd + 1
    extra = 0 if isinstance(padding, str) else sum(padding[i])
    if padding != "SAME" and dilated_in + extra < dilated_w:
      padding = "SAME"  # the window would not fit anywhere
  if not _every_window_reads_input(sizes, window, strides, padding, base, wdil):
    # XLA:CPU miscompiles the transpose (pad + window-dilated reduce_window) of windows that read
    # padding only (tests/lax/test_windowed.py::test_xla_window_of_padding_only_transpose):
    # keep such windows out of the fuzzer, whose reference is jax.jit on the same XLA.
    return window, strides, "VALID", (1,) * n, (1,) * n
  return window, strides, padding, base, wdil


def _every_window_reads_input(sizes, window, strides, padding, base, wdil) -> bool:
  """Whether every window holds at least one operand element (not only padding or holes)."""
  dilated = [(d - 1) * b + 1 if d else 0 for d, b in zip(sizes, base)]
  spans = [(w - 1) * wd + 1 for w, wd in zip(window, wdil)]
  pads = jax.lax.padtype_to_pads(dilated, spans, strides, padding) \
      if isinstance(padding, str) else padding
  for d, w, s, (lo, hi), b, wd, dl, span in zip(sizes, window, strides, pads, base, wdil, dilated,
                                                spans):
    real = {lo + k * b for k in range(d)}
    for start in range(0, dl + lo + hi - span + 1, s):
      if not any(start + t * wd in real for t in range(w)):
        return False
  return True


@st.composite
def window_programs(draw):
  kind = draw(st.sampled_from(("sum", "max", "min", "mul_generic", "max_pool", "avg_pool")),
              label="window op")
  dtype = draw(st.sampled_from(_FLOATS), label="dtype")
  if kind in ("max_pool", "avg_pool"):
    return _pool(draw, kind, dtype)
  rank = draw(st.integers(1, 3), label="rank")
  shape = tuple(draw(st.integers(1, 5), label="dim") for _ in range(rank))
  window, strides, padding, base, wdil = _window_config(draw, shape)
  init, op = {"sum": (0.0, "add"), "max": (-np.inf, "max"), "min": (np.inf, "min"),
              "mul_generic": (1.0, "mul")}[kind]

  def core(api, x):
    return api.lax.reduce_window(x, np.asarray(init, x.dtype), getattr(api.lax, op), window,
                                 strides, padding, base, wdil)

  name = (f"reduce_window[{kind}](window={window}, strides={strides}, padding={padding}, "
          f"base_dilation={base}, window_dilation={wdil})")
  # The generic (non-monoid) reduce_window has no reverse-mode rule in JAX: values and vmap only.
  # JAX has no reverse mode for the generic (non-monoid) reduce_window, nor for max/min windows
  # with window dilation: forward-mode transformations only there. JAX's jacfwd of the generic
  # reduce_window fails too (its batched JVP with unbatched primals: "at vmap out_axes[0], got
  # axis spec None but output was batched").
  reverse = kind in ("sum",) or all(d == 1 for d in wdil)
  return program(draw, name, core, [ArgSpec(shape, dtype)], tol=3.0,
                 reverse=reverse and kind != "mul_generic",
                 skip=("jacfwd",) if kind == "mul_generic" else ())


def _flax_pool(api, x, init, op, window, strides, padding):
  """flax.linen.pooling.pool: reduce_window over the spatial dims of (batch, spatial..., C)."""
  strides = strides or (1,) * len(window)
  if not isinstance(padding, str):
    padding = ((0, 0),) + tuple(padding) + ((0, 0),)
  return api.lax.reduce_window(x, init, op, (1,) + window + (1,), (1,) + strides + (1,), padding)


def _pool(draw, kind, dtype):
  nsp = draw(st.integers(1, 2), label="spatial dims")
  spatial = tuple(draw(st.integers(1, 5), label="spatial size") for _ in range(nsp))
  shape = (draw(st.integers(1, 2), label="batch"),) + spatial + (draw(
      st.integers(1, 3), label="features"),)
  window, strides, padding, _, _ = _window_config(draw, spatial, allow_dilation=False)
  if draw(st.booleans(), label="default strides"):
    strides = None
  include_pad = draw(st.booleans(), label="count_include_pad")

  def core(api, x):
    if api is not JAX:
      if kind == "max_pool":
        return api.nn.max_pool(x, window, strides, padding)
      return api.nn.avg_pool(x, window, strides, padding, count_include_pad=include_pad)
    if kind == "max_pool":
      return _flax_pool(api, x, -np.inf, api.lax.max, window, strides, padding)
    summed = _flax_pool(api, x, 0.0, api.lax.add, window, strides, padding)
    if include_pad:
      return summed / np.asarray(math.prod(window), x.dtype)
    counts = _flax_pool(api, api.np.ones(x.shape[1:], x.dtype)[None], 0.0, api.lax.add, window,
                        strides, padding)
    return summed / counts

  name = f"{kind}(window={window}, strides={strides}, padding={padding}, " \
         f"count_include_pad={include_pad})"
  return program(draw, name, core, [ArgSpec(shape, dtype)], tol=3.0)


# --- convolution ------------------------------------------------------------------------------
@st.composite
def conv_programs(draw):
  dtype = draw(st.sampled_from((F32, F32, F32, BF16)), label="dtype")
  nsp = draw(st.integers(1, 2), label="spatial dims")
  space = "HW"[:nsp] if nsp == 2 else "W"
  fgc = draw(st.integers(1, 2), label="feature_group_count")
  bgc = 1 if fgc > 1 else draw(st.integers(1, 2), label="batch_group_count")
  n = bgc * draw(st.integers(1, 2), label="batch per group")
  i = draw(st.integers(1, 2), label="in features per group")
  o = max(fgc, bgc) * draw(st.integers(1, 2), label="out features per group")
  c = i * fgc
  sizes = tuple(draw(st.integers(1, 5), label="spatial size") for _ in range(nsp))
  kernel = tuple(draw(st.integers(1, 3), label="kernel size") for _ in range(nsp))
  strides = tuple(draw(st.integers(1, 2), label="stride") for _ in range(nsp))
  lhs_dil = tuple(draw(st.integers(1, 2), label="lhs dilation") for _ in range(nsp))
  rhs_dil = tuple(draw(st.integers(1, 2), label="rhs dilation") for _ in range(nsp))
  kind = draw(st.sampled_from(("pairs", "pairs", "SAME", "VALID")), label="padding kind")
  if kind == "pairs":
    # Negative padding only where the stride is 1: XLA:CPU reads the wrong memory otherwise
    # (tests/lax/test_convolution.py::test_xla_convolution_with_negative_padding_and_stride).
    low = lambda k: -1 if strides[k] == 1 else 0  # noqa: E731
    padding = tuple((draw(st.integers(low(k), 2), label="lo"), draw(st.integers(low(k), 2),
                                                                     label="hi"))
                    for k in range(nsp))
  else:
    padding = kind
  if isinstance(padding, str) and any(d > 1 for d in lhs_dil):
    padding = ((0, 0),) * nsp  # JAX takes no string padding with lhs dilation
  for k in range(nsp):
    dilated_in = (sizes[k] - 1) * lhs_dil[k] + 1
    dilated_k = (kernel[k] - 1) * rhs_dil[k] + 1
    extra = sum(padding[k]) if not isinstance(padding, str) else 0
    if padding != "SAME" and dilated_in + extra < dilated_k:  # the kernel must fit: pad it out
      missing = dilated_k - dilated_in - extra
      padding = tuple(p if j != k else (p[0] + missing // 2, p[1] + missing - missing // 2)
                      for j, p in enumerate(padding)) if padding != "VALID" else tuple(
          (0, 0) if j != k else (missing // 2, missing - missing // 2) for j in range(nsp))
  lhs_spec = "".join(draw(st.permutations("NC" + space), label="lhs layout"))
  rhs_spec = "".join(draw(st.permutations("OI" + space), label="rhs layout"))
  out_spec = "".join(draw(st.permutations("NC" + space), label="out layout"))
  dims_of = {"N": n, "C": c, "O": o, "I": i}
  # Strides, paddings and dilations follow the rhs spec's spatial order.
  rhs_space = [ch for ch in rhs_spec if ch in space]
  dims_of.update({ch: sizes[rhs_space.index(ch)] for ch in space})
  lhs_shape = tuple(dims_of[ch] for ch in lhs_spec)
  kernel_of = {ch: kernel[rhs_space.index(ch)] for ch in space}
  rhs_shape = tuple(dims_of[ch] if ch in "OI" else kernel_of[ch] for ch in rhs_spec)
  dn = (lhs_spec, rhs_spec, out_spec)

  def core(api, lhs, rhs):
    return api.lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn,
                                        feature_group_count=fgc, batch_group_count=bgc)

  name = (f"conv_general_dilated(strides={strides}, padding={padding}, lhs_dilation={lhs_dil}, "
          f"rhs_dilation={rhs_dil}, dimension_numbers={dn}, feature_group_count={fgc}, "
          f"batch_group_count={bgc})")
  return program(draw, name, core, [ArgSpec(lhs_shape, dtype), ArgSpec(rhs_shape, dtype)],
                 tol=5.0)
