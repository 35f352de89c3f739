"""Random programs over the structural op families: reductions with random axes, reshape /
transpose / indexing / slicing / pad / concatenate with random parameters, cumulative ops and
sorting, where/select/clamp.

Each program is one family op, with a random monotone function in front of its floating inputs
(order-preserving, so the inputs stay tie-free) and a random smooth function after it.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from hypothesis import strategies as st

from tests.fuzz.harness import (BF16, BOOL, F16, F32, I32, PYFLOAT, ArgSpec, Program, default_diff,
                                is_inexact)

# --- shared pieces ----------------------------------------------------------------------------
PRE = {  # odd and increasing: keep values distinct, ordered and away from 0
    "id": lambda api, x: x,
    "tanh": lambda api, x: api.np.tanh(x),
    "arctan": lambda api, x: api.np.arctan(x),
    "scale": lambda api, x: x * 1.5,
}
POST = {  # well conditioned at any magnitude (sin of a large product would not be)
    "id": lambda api, x: x,
    "arctan": lambda api, x: api.np.arctan(x),
    "square": lambda api, x: x * x,
    "tanh": lambda api, x: api.np.tanh(x),
}

FLOATS = (F32, F32, F32, BF16)


@st.composite
def shapes(draw, min_rank=0, max_rank=3, min_dim=1, max_dim=4, zero=False):
  rank = draw(st.integers(min_rank, max_rank), label="rank")
  low = 0 if zero and draw(st.integers(0, 5), label="zero-size?") == 0 else min_dim
  return tuple(draw(st.integers(low, max_dim), label="dim") for _ in range(rank))


def _is_float_dtype(dtype):
  return dtype == PYFLOAT or (not isinstance(dtype, str) and is_inexact(dtype))


def program(draw, name, core, specs, *, smooth=True, tol=1.0, diff=None, pre=True, reverse=True,
            skip=()):
  """A Program from `core(api, *args)`, with drawn pre/post functions around it."""
  pre_name = draw(st.sampled_from(sorted(PRE)), label="pre") if pre else "id"
  post_name = draw(st.sampled_from(sorted(POST)), label="post") if smooth else "id"
  pre_fn, post_fn = PRE[pre_name], POST[post_name]
  floats = [i for i, s in enumerate(specs) if not s.is_python and _is_float_dtype(s.dtype)]

  def build(api):
    def f(*args):
      args = [pre_fn(api, a) if i in floats else a for i, a in enumerate(args)]
      out = core(api, *args)
      return api.top.tree_util.tree_map(
          lambda o: post_fn(api, o) if is_inexact(o.dtype) else o, out)
    return f

  full = f"{post_name}({name}({pre_name}(...)))"
  lowp = any(s.dtype in (BF16, F16) for s in specs if not s.is_python)
  return Program(full, build, tuple(specs), default_diff(specs) if diff is None else diff,
                 tol=tol * (2.0 if lowp else 1.0), smooth=smooth, reverse=reverse, skip=skip)


@st.composite
def _axes(draw, ndim, allow_none=True, allow_tuple=True, allow_negative=True):
  """None, an int, or a tuple of distinct ints (any order; maybe negative)."""
  kinds = (["none"] if allow_none else []) + (["int"] if ndim else []) + \
      (["tuple"] if allow_tuple else [])
  kind = draw(st.sampled_from(kinds), label="axis kind")
  if kind == "none":
    return None
  if kind == "int":
    axis = draw(st.integers(0, ndim - 1), label="axis")
    return axis - ndim if allow_negative and draw(st.booleans(), label="negative") else axis
  chosen = draw(st.permutations(range(ndim)), label="axes order")
  chosen = chosen[:draw(st.integers(0, ndim), label="how many axes")]
  if allow_negative:
    chosen = [a - ndim if draw(st.booleans(), label="negative") else a for a in chosen]
  return tuple(chosen)


def _positive_axes(axis, ndim):
  if axis is None:
    return tuple(range(ndim))
  if isinstance(axis, int):
    return (axis % ndim,)
  return tuple(a % ndim for a in axis)


# --- reductions -------------------------------------------------------------------------------
# name -> (function of (api, x, axis, keepdims), needs nonempty reduced axes, float output?)
REDUCERS = {
    "sum": (lambda api, x, a, k: api.np.sum(x, axis=a, keepdims=k), False),
    "prod": (lambda api, x, a, k: api.np.prod(x, axis=a, keepdims=k), False),
    "max": (lambda api, x, a, k: api.np.max(x, axis=a, keepdims=k), True),
    "min": (lambda api, x, a, k: api.np.min(x, axis=a, keepdims=k), True),
    "mean": (lambda api, x, a, k: api.np.mean(x, axis=a, keepdims=k), True),
    "var": (lambda api, x, a, k: api.np.var(x, axis=a, keepdims=k), True),
    "logsumexp": (lambda api, x, a, k: api.nn.logsumexp(x, axis=a, keepdims=k), True),
    "lax_reduce_sum": (lambda api, x, a, k: api.lax.reduce_sum(x, a), False),
    "lax_reduce_max": (lambda api, x, a, k: api.lax.reduce_max(x, a), True),
    "lax_reduce_min": (lambda api, x, a, k: api.lax.reduce_min(x, a), True),
    "lax_reduce_prod": (lambda api, x, a, k: api.lax.reduce_prod(x, a), False),
}
INT_REDUCERS = {
    "argmax": lambda api, x, a, k: api.np.argmax(x, axis=a, keepdims=k),
    "argmin": lambda api, x, a, k: api.np.argmin(x, axis=a, keepdims=k),
    "any_positive": lambda api, x, a, k: api.np.any(x > 0, axis=a, keepdims=k),
    "all_positive": lambda api, x, a, k: api.np.all(x > 0, axis=a, keepdims=k),
    "count_nonzero": lambda api, x, a, k: api.np.count_nonzero(x > 0.5, axis=a, keepdims=k),
}


@st.composite
def reduction_programs(draw):
  names = sorted(REDUCERS) + sorted(INT_REDUCERS)
  name = draw(st.sampled_from(names), label="reducer")
  dtype = draw(st.sampled_from(FLOATS + (I32,)), label="dtype")
  if name.endswith("prod") and dtype == BF16:
    dtype = F32  # a product of a dozen bfloat16 values differs in the last bits
  needs_nonempty = REDUCERS[name][1] if name in REDUCERS else name.startswith("arg")
  shape = draw(shapes(max_rank=4, zero=not needs_nonempty), label="shape")
  ndim = len(shape)
  keepdims = draw(st.booleans(), label="keepdims")
  if name.startswith("lax_"):
    axis = tuple(sorted(draw(st.sets(st.integers(0, ndim - 1)), label="axes"))) if ndim else ()
  elif name.startswith("arg"):
    axis = draw(_axes(ndim, allow_tuple=False), label="axis") if ndim else None
  else:
    axis = draw(_axes(ndim), label="axis") if ndim else draw(st.sampled_from((None, ())))
  if needs_nonempty and any(shape[a] == 0 for a in _positive_axes(axis, ndim)):
    axis = None
  fn = REDUCERS[name][0] if name in REDUCERS else INT_REDUCERS[name]
  smooth = name in REDUCERS and dtype != I32
  if name in ("var",) and dtype == I32:
    dtype = F32
  spec = ArgSpec(shape, dtype)
  return program(draw, f"{name}[axis={axis}, keepdims={keepdims}]",
                 lambda api, x: fn(api, x, axis, keepdims), [spec], smooth=smooth,
                 tol=4.0 if name in ("var", "prod", "lax_reduce_prod", "logsumexp") else 2.0,
                 pre=dtype != I32)


# --- shapes, indexing and slicing -------------------------------------------------------------
def _factor_shape(draw, size):
  """A random shape with `size` elements (rank 0-4)."""
  dims, left = [], size
  if size == 0:
    rank = draw(st.integers(1, 3), label="reshape rank")
    dims = [draw(st.integers(0, 3), label="dim") for _ in range(rank)]
    dims[draw(st.integers(0, rank - 1), label="zero at")] = 0
    return tuple(dims)
  while left > 1 and len(dims) < 4:
    divisors = [d for d in range(1, left + 1) if left % d == 0]
    d = draw(st.sampled_from(divisors), label="factor")
    dims.append(d)
    left //= d
  if left > 1:
    dims.append(left)
  for _ in range(draw(st.integers(0, 1), label="ones")):
    dims.insert(draw(st.integers(0, len(dims)), label="one at"), 1)
  return tuple(dims)


def _basic_index(draw, shape):
  """A NumPy basic index: ints, slices (any start/stop/step, out of range too), None, Ellipsis."""
  idx = []
  used = 0
  for d in shape:
    if draw(st.integers(0, 5), label="stop indexing") == 0:
      break
    kind = draw(st.sampled_from(("int", "slice", "slice", "none", "full")), label="index kind")
    if kind == "int" and d > 0:
      idx.append(draw(st.integers(-d, d - 1), label="int index"))
    elif kind == "none":
      idx.append(None)
      continue
    elif kind == "full":
      idx.append(slice(None))
    else:
      opt = st.one_of(st.none(), st.integers(-d - 2, d + 2))
      step = draw(st.sampled_from((None, 1, 2, 3, -1, -2)), label="step")
      idx.append(slice(draw(opt, label="start"), draw(opt, label="stop"), step))
    used += 1
  if used < len(shape) and draw(st.booleans(), label="ellipsis"):
    idx.insert(draw(st.integers(0, len(idx)), label="ellipsis at"), Ellipsis)
  return tuple(idx)


@st.composite
def shape_programs(draw):
  kinds = ("reshape", "lax_reshape", "transpose", "moveaxis", "basic_index", "lax_slice",
           "dynamic_slice", "dynamic_update_slice", "take", "index_array", "at_add", "at_static",
           "pad", "concatenate", "stack", "rev", "broadcast_in_dim", "expand_squeeze", "tile",
           "repeat", "broadcast_to")
  kind = draw(st.sampled_from(kinds), label="shape op")
  dtype = draw(st.sampled_from(FLOATS + (I32,)), label="dtype")
  shape = draw(shapes(max_rank=4, zero=True), label="shape")
  ndim, size = len(shape), math.prod(shape)
  x = ArgSpec(shape, dtype)
  def p(name, core, specs, **kw):
    return program(draw, name, core, specs, pre=dtype != I32, smooth=dtype != I32, **kw)
  if kind == "reshape":
    new = list(_factor_shape(draw, size))
    if size and new and draw(st.booleans(), label="-1"):
      new[draw(st.integers(0, len(new) - 1), label="-1 at")] = -1
    new = tuple(new)
    return p(f"reshape{new}", lambda api, a: api.np.reshape(a, new), [x])
  if kind == "lax_reshape":
    new = _factor_shape(draw, size)
    dims = tuple(draw(st.permutations(range(ndim)), label="dimensions")) \
        if draw(st.booleans(), label="with dimensions") else None
    return p(f"lax.reshape{new}, dimensions={dims}",
             lambda api, a: api.lax.reshape(a, new, dimensions=dims), [x])
  if kind == "transpose":
    perm = tuple(draw(st.permutations(range(ndim)), label="perm"))
    if draw(st.booleans(), label="lax"):
      return p(f"lax.transpose{perm}", lambda api, a: api.lax.transpose(a, perm), [x])
    return p(f"transpose{perm}", lambda api, a: api.np.transpose(a, perm), [x])
  if kind == "moveaxis" and ndim:
    src = draw(st.integers(-ndim, ndim - 1), label="source")
    dst = draw(st.integers(-ndim, ndim - 1), label="destination")
    return p(f"moveaxis({src}, {dst})", lambda api, a: api.np.moveaxis(a, src, dst), [x])
  if kind == "basic_index" or (kind == "moveaxis" and not ndim):
    idx = _basic_index(draw, shape)
    return p(f"getitem{idx!r}", lambda api, a: a[idx], [x])
  if kind == "at_static":  # x.at[basic index].set/add/mul/min/max(values)
    idx = _basic_index(draw, shape)
    op = draw(st.sampled_from(("set", "add", "multiply", "min", "max")), label="at op")
    upd = ArgSpec(np.zeros(shape)[idx].shape, dtype)
    return p(f"at[{idx!r}].{op}", lambda api, a, u: getattr(api.np.asarray(a).at[idx], op)(u),
             [x, upd])
  if kind == "lax_slice":
    starts, limits, strides = [], [], []
    for d in shape:
      s = draw(st.integers(0, d), label="start")
      starts.append(s)
      limits.append(draw(st.integers(s, d), label="limit"))
      strides.append(draw(st.integers(1, 3), label="stride"))
    strides = tuple(strides) if draw(st.booleans(), label="strides") else None
    return p(f"lax.slice({starts}, {limits}, {strides})",
             lambda api, a: api.lax.slice(a, tuple(starts), tuple(limits), strides), [x])
  if kind in ("dynamic_slice", "dynamic_update_slice") and ndim:
    # Start indices are int32 scalar arguments (batched under vmap), out of range too: clamped.
    idx_specs = [ArgSpec((), I32, f"range:-2:{d + 3}") for d in shape]
    sizes = tuple(draw(st.integers(0, d), label="slice size") for d in shape)
    if kind == "dynamic_slice":
      return p(f"lax.dynamic_slice(sizes={sizes})",
               lambda api, a, *i: api.lax.dynamic_slice(a, list(i), sizes), [x] + idx_specs)
    upd = ArgSpec(sizes, dtype)
    return p("lax.dynamic_update_slice",
             lambda api, a, u, *i: api.lax.dynamic_update_slice(a, u, list(i)),
             [x, upd] + idx_specs)
  if kind in ("take", "index_array", "at_add") and ndim and shape[0]:
    n = shape[0]
    idx_shape = draw(shapes(max_rank=2, max_dim=3), label="index shape")
    idx = ArgSpec(idx_shape, I32, f"range:{-n}:{n}")
    if kind == "take":
      axis = draw(st.integers(0, ndim - 1), label="take axis")
      m = shape[axis]
      if not m:
        return p("identity", lambda api, a: a, [x])
      idx = ArgSpec(idx_shape, I32, f"range:0:{m}")
      return p(f"take(axis={axis})", lambda api, a, i: api.np.take(a, i, axis=axis), [x, idx])
    if kind == "index_array":
      return p("getitem[int array, ...]", lambda api, a, i: a[i, ...], [x, idx])
    upd = ArgSpec(idx_shape + shape[1:], dtype)
    return p("at[int array].add", lambda api, a, i, u: a.at[i].add(u), [x, idx, upd])
  if kind == "pad":
    config = []
    for d in shape:
      interior = draw(st.integers(0, 2), label="interior")
      full = d + max(d - 1, 0) * interior
      lo = draw(st.integers(-min(full, 2), 3), label="lo")
      hi = draw(st.integers(-min(full + lo, 2) if full + lo > 0 else 0, 3), label="hi")
      config.append((lo, hi, interior))
    config = tuple(config)
    value = ArgSpec((), dtype if dtype != BF16 else BF16)
    return p(f"lax.pad{config}", lambda api, a, v: api.lax.pad(a, v, config), [x, value])
  if kind in ("concatenate", "stack"):
    count = draw(st.integers(1, 3), label="operands")
    if kind == "stack":
      axis = draw(st.integers(-ndim - 1, ndim), label="stack axis")
      specs = [x] * count
      return p(f"stack(axis={axis})", lambda api, *a: api.np.stack(a, axis=axis), specs)
    if not ndim:
      shape, ndim = (2,), 1
    axis = draw(st.integers(0, ndim - 1), label="concat axis")
    specs = [ArgSpec(shape[:axis] + (draw(st.integers(0, 3), label="size"),) + shape[axis + 1:],
                     dtype) for _ in range(count)]
    if draw(st.booleans(), label="lax"):
      return p(f"lax.concatenate(dimension={axis})",
               lambda api, *a: api.lax.concatenate(a, axis), specs)
    signed = axis - ndim if draw(st.booleans(), label="negative") else axis
    return p(f"concatenate(axis={signed})", lambda api, *a: api.np.concatenate(a, axis=signed),
             specs)
  if kind == "rev":
    dims = tuple(sorted(draw(st.sets(st.integers(0, max(ndim - 1, 0)), max_size=ndim),
                             label="rev dims"))) if ndim else ()
    return p(f"lax.rev{dims}", lambda api, a: api.lax.rev(a, dims), [x])
  if kind == "broadcast_in_dim":
    extra = draw(st.integers(0, 2), label="new dims")
    out_rank = ndim + extra
    dims = tuple(sorted(draw(st.permutations(range(out_rank)), label="dims")[:ndim]))
    out_shape = [draw(st.integers(1, 3), label="new size") for _ in range(out_rank)]
    for d, k in zip(dims, shape):
      out_shape[d] = k if k != 1 or not draw(st.booleans(), label="expand 1") else 3
    out_shape = tuple(out_shape)
    return p(f"lax.broadcast_in_dim({out_shape}, {dims})",
             lambda api, a: api.lax.broadcast_in_dim(a, out_shape, dims), [x])
  if kind == "broadcast_to":
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2), label="leading"))
    target = lead + tuple(3 if d == 1 and draw(st.booleans(), label="grow") else d for d in shape)
    return p(f"broadcast_to{target}", lambda api, a: api.np.broadcast_to(a, target), [x])
  if kind == "expand_squeeze":
    axis = draw(st.integers(-ndim - 1, ndim), label="expand axis")
    return p(f"squeeze(expand_dims({axis}))",
             lambda api, a: api.np.squeeze(api.np.expand_dims(a, axis) * 2.0, axis) - 1.0, [x])
  if kind == "tile":
    reps = tuple(draw(st.lists(st.integers(0, 3), max_size=3), label="reps"))
    return p(f"tile{reps}", lambda api, a: api.np.tile(a, reps), [x])
  # repeat
  axis = draw(st.integers(-ndim, ndim - 1), label="repeat axis") if ndim else None
  k = draw(st.integers(0, 3), label="repeats")
  return p(f"repeat({k}, axis={axis})", lambda api, a: api.np.repeat(a, k, axis=axis), [x])


# --- cumulative ops and sorting --------------------------------------------------------------
@st.composite
def scan_sort_programs(draw):
  kinds = ("cumsum", "cumprod", "cummax", "cummin", "np_cumsum", "np_cumprod", "sort", "np_sort",
           "sort_multi", "sort_key_val", "argsort", "top_k")
  kind = draw(st.sampled_from(kinds), label="op")
  dtype = draw(st.sampled_from(FLOATS), label="dtype")
  shape = draw(shapes(min_rank=1, max_rank=3, zero=True), label="shape")
  ndim = len(shape)
  axis = draw(st.integers(0, ndim - 1), label="axis")
  x = ArgSpec(shape, dtype)
  p = functools.partial(program, draw)
  reverse = draw(st.booleans(), label="reverse")
  if kind in ("cumsum", "cumprod", "cummax", "cummin"):
    if kind == "cumprod" and dtype == BF16:
      x = ArgSpec(shape, F32)
    return p(f"lax.{kind}(axis={axis}, reverse={reverse})",
             lambda api, a: getattr(api.lax, kind)(a, axis=axis, reverse=reverse), [x],
             tol=3.0)
  if kind in ("np_cumsum", "np_cumprod"):
    flat = draw(st.booleans(), label="flatten")
    ax = None if flat else axis - ndim
    fn = kind[3:]
    if fn == "cumprod":
      x = ArgSpec(shape, F32)
    return p(f"{fn}(axis={ax})", lambda api, a: getattr(api.np, fn)(a, axis=ax), [x], tol=3.0)
  if kind == "sort":
    return p(f"lax.sort(dimension={axis})", lambda api, a: api.lax.sort(a, dimension=axis), [x])
  if kind == "np_sort":
    ax = None if draw(st.integers(0, 3), label="flatten") == 0 else axis - ndim
    descending = draw(st.booleans(), label="descending")
    return p(f"sort(axis={ax}, descending={descending})",
             lambda api, a: api.np.sort(a, axis=ax, descending=descending), [x])
  if kind == "sort_multi":
    # An integer first key with ties, broken by a distinct float second key.
    keys = ArgSpec(shape, I32, "range:0:3")
    y = ArgSpec(shape, dtype)
    return p(f"lax.sort((int keys, x, y), dimension={axis}, num_keys=2)",
             lambda api, k, a, b: api.lax.sort((k, a, b), dimension=axis, num_keys=2),
             [keys, x, y])
  if kind == "sort_key_val":
    vals = ArgSpec(shape, dtype)
    return p(f"lax.sort_key_val(dimension={axis})",
             lambda api, k, v: api.lax.sort_key_val(k, v, dimension=axis), [x, vals])
  if kind == "argsort":
    descending = draw(st.booleans(), label="descending")
    return p(f"argsort(axis={axis}, descending={descending})",
             lambda api, a: api.np.argsort(a, axis=axis, descending=descending), [x],
             smooth=False)
  k = draw(st.integers(0, shape[-1]), label="k")
  return p(f"lax.top_k(k={k})", lambda api, a: api.lax.top_k(a, k), [x])


# --- where, select, clamp ---------------------------------------------------------------------
@st.composite
def select_programs(draw):
  kind = draw(st.sampled_from(("where", "where_scalar", "select_n_bool", "select_n_int", "clamp",
                               "clip")), label="op")
  dtype = draw(st.sampled_from(FLOATS), label="dtype")
  shape = draw(shapes(max_rank=3, zero=True), label="shape")
  p = functools.partial(program, draw)
  if kind in ("where", "where_scalar"):
    def sub(s):  # a broadcast-compatible shape
      r = draw(st.integers(0, len(s)), label="rank")
      return tuple(1 if draw(st.integers(0, 2), label="to 1") == 0 else d
                   for d in s[len(s) - r:])
    cond = ArgSpec(sub(shape), BOOL)
    x = ArgSpec(sub(shape), dtype)
    y = ArgSpec((), PYFLOAT) if kind == "where_scalar" else ArgSpec(shape, dtype)
    return p("where", lambda api, c, a, b: api.np.where(c, a, b), [cond, x, y])
  if kind in ("select_n_bool", "select_n_int"):
    n = 2 if kind == "select_n_bool" else draw(st.integers(1, 4), label="cases")
    scalar = draw(st.booleans(), label="scalar predicate")
    which = ArgSpec(() if scalar else shape, BOOL) if kind == "select_n_bool" else \
        ArgSpec(() if scalar else shape, I32, f"range:0:{n}")
    cases = [ArgSpec(shape, dtype) for _ in range(n)]
    return p(f"lax.select_n({n} cases)", lambda api, w, *c: api.lax.select_n(w, *c),
             [which] + cases)
  # Float32 only, lo < 0 < hi and nonempty: ties (and JAX's zero gradients where lo > hi, and
  # its failing grad of a zero-size clamp with scalar bounds) stay out.
  shape = draw(shapes(max_rank=3), label="shape")
  scalar = draw(st.booleans(), label="scalar bounds")
  lo = ArgSpec(() if scalar else shape, F32, "negative")
  hi = ArgSpec(() if scalar else shape, F32, "positive")
  x = ArgSpec(shape, F32)
  if kind == "clamp":
    # JAX's clamp JVP fails for tangents of scalar bounds ("select cases must have the same
    # shapes"): differentiate those only with respect to x.
    return p("lax.clamp(lo, x, hi)", lambda api, lo, a, hi: api.lax.clamp(lo, a, hi), [lo, x, hi],
             diff=(1,) if scalar else None)
  return p("clip(x, lo, hi)", lambda api, a, lo, hi: api.np.clip(a, lo, hi), [x, lo, hi])
