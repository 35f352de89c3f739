"""Windowed reductions: reduce_window over padded, strided and dilated windows, and the two
primitives through which max/min windows are differentiated.

A window reduction spreads its operand by `base_dilation`, pads it with (lo, hi) pairs (negative
values cut elements off; the strings 'SAME'/'VALID'/'SAME_LOWER' become pairs through
`padtype_to_pads`), and reduces every window of `window_dimensions` elements spaced by
`window_dilation`, placed every `window_strides` elements. As in XLA, each window folds its
operand elements into the init value and skips padding and base-dilation holes (for a monoid,
the same as filling them with the identity). A 0-d operand is its own window: the result is
computation(init, operand) (XLA's simplifier returns the operand alone; revax folds explicitly).

`reduce_window` recognizes the monoids (add, max and min with their identity as init value) and
binds `reduce_window_sum`, `reduce_window_max` or `reduce_window_min`; any other computation binds
the generic `reduce_window`, which carries the computation as a closed jaxpr on scalars and takes
a pytree of operands (a variadic reduction). All lower to `stablehlo.reduce_window`.

Derivatives: reduce_window_sum is linear; its transpose pads the cotangent (strides become
interior padding) and sums it over windows again, valid for any padding, strides and
dilations. A max (min) window passes on the tangent of the element it selects:
`select_and_gather_add(tangents, operand, ge (le), ...)`, a reduce_window over (value, tangent)
pairs. That is linear in the tangents; its transpose `select_and_scatter_add` adds each
cotangent to the selected element (`stablehlo.select_and_scatter`), and the transpose of that is
`select_and_gather_add` again. The generic reduce_window differentiates forwards by reducing
(primal, tangent) pairs with the JVP of its computation; it has no transpose.

Batching adds a window dimension of size 1 (stride 1, no padding, no dilation) at the batch
dimension: no transposes. Each primitive is one block: wrapper, rules, registration.
"""
from __future__ import annotations

import itertools
import operator
import weakref

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.shape_poly import is_symbolic_dim, max_dim
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Primitive, Tracer
from revax._src.interpreters import ad, batching, dispatch, mlir, staging
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, binary, shapes, slicing
from revax._src.lax.comparison import compare, ge_p, le_p
from revax._src.lax.reductions import _max_identity, _min_identity, combiner_region
from revax._src.lax.standard import as_operand, operand_dtype

__all__ = [
  "reduce_window", "padtype_to_pads", "reduce_window_shape_tuple",
  "reduce_window_sum_p", "reduce_window_max_p", "reduce_window_min_p", "reduce_window_p",
  "select_and_gather_add_p", "select_and_scatter_add_p", "select_and_scatter_p",
]

_LOW_PRECISION = (dtypes.float16, dtypes.bfloat16)


# --- padding strings and window shapes -----------------------------------------------------------
def padtype_to_pads(in_shape, window_shape, window_strides, padding) -> list[tuple[int, int]]:
  """(lo, hi) padding pairs for a padding string, as jax.lax.padtype_to_pads.

  Args:
    in_shape: the operand's shape.
    window_shape: the window's shape (already dilated, if the window is).
    window_strides: the window strides.
    padding: 'VALID' (no padding), 'SAME' (an output of ceil(in / stride) elements, the odd
      element of padding at the end) or 'SAME_LOWER' (the same, the odd element at the start);
      case-insensitive.

  Returns:
    One (lo, hi) pair of Python ints per dimension.

  Example:
    >>> lax.padtype_to_pads((5,), (2,), (2,), "SAME")
    [(0, 1)]
  """
  if not isinstance(padding, str):
    raise TypeError(f"Unknown padding type: {padding}.")
  kind = padding.upper()
  if kind not in ("VALID", "SAME", "SAME_LOWER"):
    raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', "
                       f"got {padding}.")
  if kind == "VALID":
    return [(0, 0)] * len(in_shape)
  pads = []
  for n, w, s in zip(in_shape, window_shape, window_strides, strict=True):
    n, w, s = int(n), int(w), int(s)
    out = -(-n // s)
    total = max((out - 1) * s + w - n, 0)
    pads.append((total // 2, total - total // 2) if kind == "SAME"
                else (total - total // 2, total // 2))
  return pads


def _dilate(n: int, dilation: int) -> int:
  """The size of `n` elements with `dilation - 1` holes between neighbours."""
  return 0 if n == 0 else (n - 1) * dilation + 1


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None) -> tuple[int, ...]:
  """The output shape of a window reduction (no validation; see `reduce_window`):
  `floor((dilated_in + lo + hi - dilated_window) / stride) + 1` per dimension, 0 where the
  window does not fit."""
  ones = (1,) * len(window_dimensions)
  base_dilation = ones if base_dilation is None else base_dilation
  window_dilation = ones if window_dilation is None else window_dilation
  out = []
  for n, w, s, (lo, hi), b, r in zip(operand_shape, window_dimensions, window_strides, padding,
                                      base_dilation, window_dilation, strict=True):
    padded, window = _dilate(n, b) + lo + hi, _dilate(w, r)
    if is_symbolic_dim(padded):  # JAX's stride_dim
      out.append(max_dim((padded - window) // s + 1, 0))
    else:
      out.append(0 if padded < window or padded == 0 else (padded - window) // s + 1)
  return tuple(out)


def _as_ints(xs, what: str) -> tuple[int, ...]:
  try:
    return tuple(operator.index(x) for x in xs)
  except TypeError:
    raise TypeError(f"reduce_window {what} must be a sequence of integers, got {xs!r}") from None


def _as_pairs(padding, op_name: str = "reduce_window") -> tuple[tuple[int, int], ...]:
  """A padding sequence as a tuple of (lo, hi) tuples of ints (lists accepted)."""
  try:
    pairs = tuple(tuple(p) for p in padding)
  except TypeError:
    raise ValueError(f"{op_name} padding must be 'SAME', 'VALID', 'SAME_LOWER' or a sequence of "
                     f"(lo, hi) pairs, got {padding!r}") from None
  if any(len(p) != 2 for p in pairs):
    raise ValueError(f"{op_name} padding must be a sequence of (lo, hi) pairs, got {padding!r}")
  try:
    return tuple((operator.index(lo), operator.index(hi)) for lo, hi in pairs)
  except TypeError:
    raise ValueError(f"{op_name} padding pairs must hold integers, got {padding!r}") from None


def _check_window(op_name: str, shape, window_dimensions, window_strides, padding,
                  base_dilation, window_dilation) -> tuple[int, ...]:
  """Validate a window against an operand shape and return the output shape."""
  ndim = len(shape)
  if len(window_dimensions) != ndim:
    raise TypeError(f"{op_name} got the wrong number of window_dimensions for operand: got "
                    f"operand shape {shape} with window_dimensions {window_dimensions}.")
  for name, value in (("window_strides", window_strides), ("base_dilation", base_dilation),
                      ("window_dilation", window_dilation)):
    if len(value) != ndim:
      raise TypeError(f"{op_name} got inconsistent {name} and window_dimensions: got {name} "
                      f"{value} and window_dimensions {window_dimensions}.")
  for name, value in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                      ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
    if any(v <= 0 for v in value):
      raise TypeError(f"{op_name} {name} must have every element be strictly positive, got "
                      f"{value}.")
  if len(padding) != ndim:
    raise ValueError(f"{op_name} padding must have one (lo, hi) pair per operand dimension: got "
                     f"{len(padding)} pairs {padding} for operand shape {shape}")
  for i, (n, (lo, hi), b) in enumerate(zip(shape, padding, base_dilation)):
    dilated = _dilate(n, b)
    if dilated + lo + hi < 0:
      raise ValueError(f"{op_name} padding {(lo, hi)} of dimension {i} removes more elements than "
                       f"it has: size {n} ({dilated} after base dilation) padded to "
                       f"{dilated + lo + hi}, for padding {padding} and operand shape {shape}")
  return reduce_window_shape_tuple(shape, window_dimensions, window_strides, padding,
                                   base_dilation, window_dilation)


def _window_params(window_dimensions, window_strides, padding, base_dilation,
                   window_dilation) -> dict:
  """Canonical params: tuples of ints, None meaning ones, padding a tuple of pairs."""
  ones = (1,) * len(window_dimensions)
  return dict(
      window_dimensions=_as_ints(window_dimensions, "window_dimensions"),
      window_strides=ones if window_strides is None else _as_ints(window_strides,
                                                                  "window_strides"),
      padding=_as_pairs(padding),
      base_dilation=ones if base_dilation is None else _as_ints(base_dilation, "base_dilation"),
      window_dilation=ones if window_dilation is None else _as_ints(window_dilation,
                                                                    "window_dilation"))


def _insert_unit_window(d: int, **window) -> dict:
  """Window params with a size-1 window (stride 1, no padding, no dilation) at dimension `d`:
  the batch dimension of a batched window reduction."""
  return {k: v[:d] + ((0, 0) if k == "padding" else 1,) + v[d:] for k, v in window.items()}


# --- NumPy implementations: pad, then combine the strided slices of each window position ------
def _np_padded(x, fill, padding, base_dilation):
  config = tuple((lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation, strict=True))
  return shapes._pad_numpy(x, np.asarray(fill, x.dtype), padding_config=config)


def _np_window_slices(out_shape, window_dimensions, window_strides, window_dilation):
  """For each position in the window (row-major order), the slice of the padded operand holding
  that element of every window."""
  for offset in itertools.product(*(range(w) for w in window_dimensions)):
    yield tuple(slice(o * r, o * r + (n - 1) * s + 1, s) if n else slice(0, 0)
                for o, r, n, s in zip(offset, window_dilation, out_shape, window_strides))


def _np_monoid_window(x, identity, combine, *, window_dimensions, window_strides, padding,
                      base_dilation, window_dilation):
  out_shape = reduce_window_shape_tuple(x.shape, window_dimensions, window_strides, padding,
                                        base_dilation, window_dilation)
  dtype = x.dtype
  acc_dtype = dtypes.float32 if dtype in _LOW_PRECISION else dtype
  init = identity(dtype).astype(acc_dtype)
  padded = _np_padded(x, identity(dtype), padding, base_dilation).astype(acc_dtype, copy=False)
  acc = np.full(out_shape, init, acc_dtype)
  with np.errstate(all="ignore"):
    for sl in _np_window_slices(out_shape, window_dimensions, window_strides, window_dilation):
      acc = combine(acc, padded[sl])
  return acc.astype(dtype, copy=False)


# --- lowering helpers ----------------------------------------------------------------------------
def _window_props(window_dimensions, window_strides, padding, base_dilation=None,
                  window_dilation=None) -> dict:
  props = {"padding": mlir.i64_dense(padding, (len(padding), 2)),
           "window_dimensions": mlir.i64_array(window_dimensions),
           "window_strides": mlir.i64_array(window_strides)}
  if base_dilation is not None:
    props.update(base_dilations=mlir.i64_array(base_dilation),
                 window_dilations=mlir.i64_array(window_dilation))
  return props


def _filled(ctx, value, aval: ShapedArray) -> str:
  """An array of `aval` filled with the scalar `value` (a broadcast constant)."""
  scalar = ShapedArray((), aval.dtype)
  c = ctx.constant(np.asarray(value, aval.dtype), scalar)
  if not aval.shape:
    return c
  return ctx.op1("stablehlo.broadcast_in_dim", [c], aval,
                 props={"broadcast_dimensions": mlir.i64_array(())})


# --- the monoid windows: shared rules ------------------------------------------------------------
def _combiner(ctx, monoid, dtype) -> str:
  """The region combining two scalars of a monoid window. For max/min of real floats it is
  `select(a > b or a != a, a, b)` (`<` for min): NaN-propagating and measured 4-9x faster on
  XLA:CPU than `stablehlo.maximum` with fast min/max off (which revax's NaN semantics need)
  or the elementwise max's lowering; ties keep b, so max(-0.0, 0.0) may be either zero."""
  direction = monoid.float_direction
  if direction is None or not dtypes.is_float(dtype):
    return combiner_region(ctx, monoid.combiner(dtype), dtype)
  scalar = ShapedArray((), dtype)
  boolean = ShapedArray((), dtypes.bool_)

  def body(fb, a, b):
    sub = mlir.LoweringRuleContext(fb, [scalar, scalar], [scalar], ctx.platform)
    wins = sub.op1("stablehlo.or", [compare(sub, a, b, direction, scalar),
                                    compare(sub, a, a, "NE", scalar)], boolean)
    return [sub.op1("stablehlo.select", [wins, a, b], scalar)]

  t = mlir.ir_type(scalar)
  return ctx.fb.region([t, t], body)


class _WindowMonoid:
  """What one monoid window needs: its name, dtype check, identity, NumPy combiner and the
  elementwise primitive (per dtype) whose lowering combines two values."""

  def __init__(self, name, check_dtype, identity, numpy_combine, combiner, float_direction=None):
    self.name, self.check_dtype, self.identity = name, check_dtype, identity
    self.numpy_combine, self.combiner = numpy_combine, combiner
    self.float_direction = float_direction  # "GT"/"LT": max/min of floats by compare + select


def _monoid_window_primitive(monoid: _WindowMonoid) -> Primitive:
  name = monoid.name

  def abstract_eval(x, **window):
    monoid.check_dtype(x.dtype)
    shape = _check_window("reduce_window", x.shape, **window)
    return ShapedArray(shape, x.dtype, x.weak_type)

  def numpy_impl(x, **window):
    return _np_monoid_window(x, monoid.identity, monoid.numpy_combine, **window)

  def lower(ctx, x, **window):
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    dtype = aval_in.dtype
    if not aval_in.shape:  # a 0-d operand is its own window: identity combined with it
      return x
    if aval_in.size == 0 or aval_out.size == 0:  # windows of padding only, or no windows
      return _filled(ctx, monoid.identity(dtype), aval_out)
    init = ctx.constant(monoid.identity(dtype), ShapedArray((), dtype))
    return ctx.op1("stablehlo.reduce_window", [x, init], props=_window_props(**window),
                   regions=[_combiner(ctx, monoid, dtype)])

  def batch(vals, dims, **window):
    (x,), (d,) = vals, dims
    return prim.bind(x, **_insert_unit_window(d, **window)), d

  prim = Primitive(name)
  prim.def_abstract_eval(abstract_eval)
  dispatch.def_numpy_impl(prim, numpy_impl)
  mlir.register_lowering(prim, lower)
  batching.primitive_batchers[prim] = batch
  return prim


def _number_dtype(name):
  def check(dtype):
    if dtypes.is_bool(dtype):
      raise TypeError(f"operand to {name} must have a number dtype, got {np.dtype(dtype).name}")
  return check


def _any_dtype(dtype):
  pass


# --- reduce_window_sum ---------------------------------------------------------------------------
def _conv_transpose_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                            base_dilation, window_dilation):
  """Padding of the cotangent (dilated by the strides) such that a window sum over it (the same
  window and window dilation, strided by the base dilation) lands on the operand's elements:
  the input gradient of a convolution with a window of ones."""
  pads = []
  for n, w, s, m, (lo, _), b, r in zip(in_shape, window_dimensions, window_strides, out_shape,
                                        padding, base_dilation, window_dilation, strict=True):
    before = _dilate(w, r) - lo - 1
    after = _dilate(n, b) + _dilate(w, r) - 1 - _dilate(m, s) - before
    pads.append((before, after))
  return pads


def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
  in_shape = x.aval.shape
  out_shape = get_aval(ct).shape
  pads = _conv_transpose_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                                 base_dilation, window_dilation)
  ones = (1,) * len(in_shape)
  if all(lo >= 0 and hi >= 0 for lo, hi in pads):
    # the padding and stride holes folded into the window's own padding and base dilation (a
    # separate pad followed by a window-dilated reduce_window that reads padding only is
    # miscompiled by XLA:CPU, jax.jit included)
    result = reduce_window_sum_p.bind(
        ct, window_dimensions=window_dimensions, window_strides=base_dilation,
        padding=tuple(pads), base_dilation=tuple(window_strides),
        window_dilation=window_dilation)
  else:  # negative pads crop: a pad op, which takes them
    config = tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides, strict=True))
    padded = shapes.pad(ct, np.zeros((), get_aval(ct).dtype), config)
    result = reduce_window_sum_p.bind(
        padded, window_dimensions=window_dimensions, window_strides=base_dilation,
        padding=((0, 0),) * len(in_shape), base_dilation=ones, window_dilation=window_dilation)
  assert get_aval(result).shape == in_shape, (get_aval(result).shape, in_shape)
  return [result]


reduce_window_sum_p = _monoid_window_primitive(_WindowMonoid(
    "reduce_window_sum", _number_dtype("reduce_window_sum"), lambda d: np.zeros((), d), np.add,
    lambda d: binary.add_p))
ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)
inv.not_invertible(reduce_window_sum_p, "many-to-one: a windowed sum")


# --- reduce_window_max ---------------------------------------------------------------------------
def _select_jvp(select_prim):
  """The JVP of a max (min) window: the tangent of the element each window selects."""
  def jvp(t, x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    return select_and_gather_add(t, x, select_prim, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation)
  return jvp


reduce_window_max_p = _monoid_window_primitive(_WindowMonoid(
    "reduce_window_max", _any_dtype, _max_identity, np.maximum,
    lambda d: binary.or_p if dtypes.is_bool(d) else binary.max_p, "GT"))
ad.defjvp(reduce_window_max_p, _select_jvp(ge_p))
inv.not_invertible(reduce_window_max_p, "many-to-one: a windowed maximum")


# --- reduce_window_min ---------------------------------------------------------------------------
reduce_window_min_p = _monoid_window_primitive(_WindowMonoid(
    "reduce_window_min", _any_dtype, _min_identity, np.minimum,
    lambda d: binary.and_p if dtypes.is_bool(d) else binary.min_p, "LT"))
ad.defjvp(reduce_window_min_p, _select_jvp(le_p))
inv.not_invertible(reduce_window_min_p, "many-to-one: a windowed minimum")


# --- reduce_window (the wrapper; the generic primitive) ------------------------------------------
def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
  """Reduce every window of `operand` with `computation`, as jax.lax.reduce_window.

  The operand is spread by `base_dilation` and padded by `padding`; each window of
  `window_dimensions` elements (spaced by `window_dilation`, placed every `window_strides`
  elements) folds its operand elements with `computation`, starting from `init_value` (padding
  and dilation holes are skipped, as in XLA; a window of padding only gives `init_value`).
  Add, max and min with their identity as init value (0, -inf/the dtype's minimum, +inf/its
  maximum) bind `reduce_window_sum`/`_max`/`_min`, which are differentiable in both modes;
  other computations bind the generic `reduce_window` (forward-mode differentiable only).

  Args:
    operand: an array, or a pytree of arrays of one shape (a variadic reduction).
    init_value: a scalar, or a pytree of scalars of the operand's structure.
    computation: `(acc, x) -> acc` on scalars (pytrees of scalars for a pytree operand).
    window_dimensions: the window's size along each dimension (positive).
    window_strides: the step between windows (positive; default 1).
    padding: 'VALID', 'SAME', 'SAME_LOWER' (for the dilated window, see `padtype_to_pads`) or
      one (lo, hi) pair per dimension (negative values remove elements; the padded size must
      not be negative).
    base_dilation: spreading of the operand (default 1: none).
    window_dilation: spacing of a window's elements (default 1: contiguous).

  Returns:
    An array (pytree) of shape `floor((dilated_in + lo + hi - dilated_window) / stride) + 1`
    per dimension (0 where the window does not fit).

  Example:
    >>> x = jnp.arange(24.).reshape(4, 6)
    >>> lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (2, 2), [(0, 0), (0, 0)])  # 2x2 max pool
    Array([[ 7.,  9., 11.],
           [19., 21., 23.]], dtype=float32)
  """
  flat_operands, operand_tree = tree_util.tree_flatten(operand)
  flat_inits, init_tree = tree_util.tree_flatten(init_value)
  if operand_tree != init_tree:
    raise ValueError(f"Operands must have the same tree structure as init_values: {operand_tree} "
                     f"vs. {init_tree}")
  if len(flat_operands) != len(flat_inits):
    raise ValueError(f"Must have same total number of operands as init_values: "
                     f"{len(flat_operands)} vs. {len(flat_inits)}")
  if not flat_operands:
    raise ValueError("reduce_window must have at least one operand.")
  shape = get_aval(flat_operands[0]).shape
  if isinstance(padding, str):
    wd = _as_ints(window_dimensions, "window_dimensions")
    ws = (1,) * len(wd) if window_strides is None else _as_ints(window_strides, "window_strides")
    wr = (1,) * len(wd) if window_dilation is None else _as_ints(window_dilation,
                                                                 "window_dilation")
    if len(ws) != len(wd) or len(wr) != len(wd) or len(shape) != len(wd) or \
        min(ws + wr, default=1) <= 0:
      padding = ((0, 0),) * len(wd)  # the shape rule reports what is wrong
    else:
      padding = padtype_to_pads(shape, tuple(map(_dilate, wd, wr)), ws, padding)
  params = _window_params(window_dimensions, window_strides, padding, base_dilation,
                          window_dilation)
  if len(flat_operands) == 1:
    prim = _monoid_primitive(computation, flat_inits[0], get_aval(flat_operands[0]).dtype)
    if prim is not None:
      return tree_util.tree_unflatten(operand_tree, [prim.bind(flat_operands[0], **params)])
  flat_inits = [as_operand(i, operand_dtype(o)) for i, o in zip(flat_inits, flat_operands)]
  init_avals = tuple(ShapedArray((), get_aval(i).dtype) for i in flat_inits)
  closed = _computation_jaxpr(computation, init_tree, init_avals)
  outs = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=closed, **params)
  return tree_util.tree_unflatten(operand_tree, outs)


_MONOIDS = {"add": (binary.add, lambda d: np.zeros((), d)), "max": (binary.max, _max_identity),
            "min": (binary.min, _min_identity)}


def _monoid_primitive(computation, init, operand_dtype_):
  """reduce_window_sum/max/min if `computation` is add/max/min (revax.lax's function, or any
  function whose jaxpr on two scalars is that one primitive) and `init` is a concrete scalar
  equal to its identity (in the init's own dtype or the operand's); otherwise None."""
  # revax.lax's public add/max/min wrap the internal ones (functools.wraps' __wrapped__)
  plain = getattr(computation, "__wrapped__", computation)
  name = next((n for n, (fn, _) in _MONOIDS.items() if plain is fn), None)
  if name is None:
    name = _traced_monoid_name(computation, operand_dtype_)
  if name is None or not _is_identity(init, _MONOIDS[name][1], operand_dtype_):
    return None
  return {"add": reduce_window_sum_p, "max": reduce_window_max_p,
          "min": reduce_window_min_p}[name]


def _traced_monoid_name(computation, dtype):
  scalar = ShapedArray((), dtype)
  try:
    jaxpr, _ = staging.trace_to_jaxpr(lambda a, b: [computation(a, b)], [scalar, scalar])
  except Exception:  # not a function of two scalars: the generic path reports it
    return None
  if len(jaxpr.eqns) != 1 or len(jaxpr.outvars) != 1:
    return None
  (eqn,) = jaxpr.eqns
  if eqn.primitive.name not in _MONOIDS or eqn.outvars[0] is not jaxpr.outvars[0]:
    return None
  if len(eqn.invars) != 2 or set(map(id, eqn.invars)) != set(map(id, jaxpr.invars)):
    return None
  return eqn.primitive.name


def _is_identity(init, identity, operand_dtype_) -> bool:
  """Whether `init` is a concrete scalar equal to `identity` of its own (canonical) dtype or of
  the operand's (so -inf is the max identity of an integer operand too, as in JAX)."""
  if isinstance(init, Tracer):
    return False
  try:
    value = np.asarray(init)
  except Exception:
    return False
  if value.shape != () or value.dtype == object or value.dtype.kind not in "biufcV":
    return False
  candidates = {dtypes.canonicalize_dtype(value.dtype), np.dtype(operand_dtype_)}
  with np.errstate(all="ignore"):
    return any(bool(value == identity(d)) for d in candidates)


_computation_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _computation_jaxpr(computation, tree, avals) -> ClosedJaxpr:
  """`computation(acc_tree, x_tree) -> acc_tree` traced on scalars to a closed jaxpr taking the
  flat leaves of both trees (memoized per function, so equal calls share one jaxpr and eager
  dispatch compiles once)."""
  try:
    per_fn = _computation_cache.setdefault(computation, {})
  except TypeError:  # not weakly referenceable
    per_fn = {}
  key = (tree, avals)
  closed = per_fn.get(key)
  if closed is not None:
    return closed
  n = len(avals)

  def flat_fun(*xs):
    acc = tree_util.tree_unflatten(tree, xs[:n])
    x = tree_util.tree_unflatten(tree, xs[n:])
    outs, out_tree = tree_util.tree_flatten(computation(acc, x))
    if out_tree != tree:
      raise ValueError(f"reduce_window output must have the same tree structure as the operands "
                       f"{tree} vs. {out_tree}")
    return outs

  jaxpr, consts = staging.trace_to_jaxpr(flat_fun, list(avals) * 2)
  if any(isinstance(c, Tracer) for c in consts):
    raise TypeError("reduce_window's computation must not close over traced values (values "
                    "computed inside jit, grad, vmap, ...): pass them as operands instead")
  out_avals = [v.aval for v in jaxpr.outvars]
  if any(o.shape != () or o.dtype != a.dtype for o, a in zip(out_avals, avals, strict=True)):
    got = ", ".join(a.str_short() for a in out_avals)
    want = ", ".join(a.str_short() for a in avals)
    raise TypeError(f"reduce_window computation must return scalars of the init values' types "
                    f"({want}), got ({got})")
  closed = ClosedJaxpr(jaxpr, consts)
  per_fn[key] = closed
  return closed


def _split(args):
  n = len(args) // 2
  return list(args[:n]), list(args[n:])


def _reduce_window_abstract_eval(*avals, jaxpr, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
  operands, inits = _split(avals)
  if any(o.dtype != i.dtype for o, i in zip(operands, inits, strict=True)):
    raise TypeError(f"reduce_window got inconsistent dtypes for operands and init_values: got "
                    f"operand dtypes {[o.dtype.name for o in operands]} and init_value dtypes "
                    f"{[i.dtype.name for i in inits]}.")
  if any(i.shape for i in inits):
    raise TypeError(f"reduce_window expected init_values to be scalars but init_values have "
                    f"shapes {[i.shape for i in inits]}.")
  if len({o.shape for o in operands}) != 1:
    raise TypeError(f"reduce_window operands must have the same shape, got "
                    f"{', '.join(str(o.shape) for o in operands)}")
  if len(jaxpr.in_avals) != 2 * len(operands) or len(jaxpr.out_avals) != len(operands):
    raise TypeError(f"reduce_window computation takes {len(jaxpr.in_avals)} and returns "
                    f"{len(jaxpr.out_avals)} values, for {len(operands)} operands")
  shape = _check_window("reduce_window", operands[0].shape, window_dimensions, window_strides,
                        padding, base_dilation, window_dilation)
  return [ShapedArray(shape, o.dtype) for o in operands]


def _apply_elementwise(closed: ClosedJaxpr, args):
  """Apply a jaxpr on scalars to arrays of one shape, element by element (vmapped over the
  flattened elements); returns NumPy arrays of that shape."""
  shape = args[0].shape
  size = int(np.prod(shape, dtype=np.int64))
  flat = [np.reshape(a, (size,)) for a in args]
  outs, dims = batching.batch_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                                   flat, [0] * len(flat), size)
  res = []
  for o, d in zip(outs, dims, strict=True):
    o = np.asarray(o)
    o = np.broadcast_to(o, (size,)) if d is None else np.moveaxis(o, d, 0)
    res.append(o.reshape(shape))
  return res


def _reduce_window_numpy(*args, jaxpr, window_dimensions, window_strides, padding, base_dilation,
                         window_dilation):
  """XLA's semantics: each window folds its operand elements into the init values; padding and
  base-dilation holes are skipped (a mask padded alongside says which elements are real)."""
  operands, inits = _split(args)
  out_shape = reduce_window_shape_tuple(operands[0].shape, window_dimensions, window_strides,
                                        padding, base_dilation, window_dilation)
  accs = [np.full(out_shape, i, o.dtype) for o, i in zip(operands, inits)]
  if not int(np.prod(out_shape, dtype=np.int64)) or not operands[0].size:
    return accs
  padded = [_np_padded(o, i, padding, base_dilation) for o, i in zip(operands, inits)]
  real = _np_padded(np.ones(operands[0].shape, np.bool_), False, padding, base_dilation)
  for sl in _np_window_slices(out_shape, window_dimensions, window_strides, window_dilation):
    folded = _apply_elementwise(jaxpr, accs + [p[sl] for p in padded])
    accs = [np.where(real[sl], f, a) for f, a in zip(folded, accs)]
  return [a.astype(o.dtype, copy=False) for a, o in zip(accs, operands)]


def _reduce_window_lower(ctx, *args, jaxpr, **window):
  operands, inits = _split(args)
  if ctx.avals_out[0].size == 0:
    return [_filled(ctx, 0, a) for a in ctx.avals_out]
  consts = lambda fb: [fb.constant(np.asarray(c), v.aval)
                       for v, c in zip(jaxpr.jaxpr.constvars, jaxpr.consts, strict=True)]
  if not ctx.avals_in[0].shape:  # a 0-d operand is its own window: computation(init, operand)
    return mlir.jaxpr_subcomp(ctx.fb, jaxpr.jaxpr, consts(ctx.fb), inits + operands)
  if ctx.avals_in[0].size == 0:  # windows of padding only, which is skipped: the init values
    return [ctx.op1("stablehlo.broadcast_in_dim", [v], aval,
                    props={"broadcast_dimensions": mlir.i64_array(())})
            for v, aval in zip(inits, ctx.avals_out, strict=True)]
  scalar_types = [mlir.ir_type(ShapedArray((), a.dtype)) for a in ctx.avals_in[len(operands):]]
  region = ctx.fb.region(scalar_types * 2,
                         lambda fb, *xs: mlir.jaxpr_subcomp(fb, jaxpr.jaxpr, consts(fb), list(xs)))
  return ctx.op("stablehlo.reduce_window", operands + inits, ctx.avals_out,
                props=_window_props(**window), regions=[region])


def _reduce_window_jvp(primals, tangents, *, jaxpr, **window):
  """Reduce (primal, tangent) pairs with the JVP of the computation: a variadic reduce_window
  over the operands and their tangents (init values pair with their own tangents, which also
  pad). The primal outputs come from a separate reduce_window so that linearization sees them
  as known; the pair reduction has no transpose (reverse mode is not supported)."""
  operands, inits = _split(primals)
  t_operands, t_inits = _split(tangents)
  n = len(operands)
  diff = [dtypes.is_inexact(get_aval(o).dtype) for o in operands]
  primal_out = reduce_window_p.bind(*operands, *inits, jaxpr=jaxpr, **window)
  if not any(diff):
    return primal_out, [ad.Zero(ad.tangent_aval(get_aval(o))) for o in primal_out]
  m = sum(diff)

  def jvp_computation(*xs):
    acc_p, acc_t, x_p, x_t = xs[:n], xs[n:n + m], xs[n + m:2 * n + m], xs[2 * n + m:]

    def with_zeros(ts, ps):
      it = iter(ts)
      return [next(it) if d else ad.Zero.from_value(p) for d, p in zip(diff, ps, strict=True)]

    outs, t_outs = ad.jvp_flat(lambda *ys: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *ys),
                               list(acc_p) + list(x_p),
                               with_zeros(acc_t, acc_p) + with_zeros(x_t, x_p))
    return list(outs) + [ad.instantiate_zeros(t) for t, d in zip(t_outs, diff) if d]

  avals = [ShapedArray((), get_aval(i).dtype) for i in inits]
  t_avals = [a for a, d in zip(avals, diff) if d]
  jvp_jaxpr, consts = staging.trace_to_jaxpr(jvp_computation, (avals + t_avals) * 2)
  closed = ClosedJaxpr(jvp_jaxpr, consts)
  t_ops = [ad.instantiate_zeros(t) for t, d in zip(t_operands, diff) if d]
  t_ins = [ad.instantiate_zeros(t) for t, d in zip(t_inits, diff) if d]
  outs = reduce_window_p.bind(*operands, *t_ops, *inits, *t_ins, jaxpr=closed, **window)
  t_out = iter(outs[n:])
  return primal_out, [next(t_out) if d else ad.Zero(ad.tangent_aval(get_aval(o)))
                      for d, o in zip(diff, primal_out)]


def _reduce_window_transpose(cts, *args, jaxpr, **window):
  raise NotImplementedError(
      "reverse-mode differentiation of reduce_window with a generic computation is not "
      "supported (it has no transpose); use add, max or min with their identity as init value "
      "(reduce_window_sum/max/min), or forward mode (jvp, jacfwd)")


def _reduce_window_batch(axis_size, vals, dims, *, jaxpr, **window):
  """All operands are batched at one dimension (the one most of them already use; unmapped
  operands are broadcast), where a unit window goes. Batched init values are not supported."""
  operands, inits = _split(vals)
  op_dims, init_dims = _split(dims)
  if any(d is not None for d in init_dims):
    raise NotImplementedError("reduce_window batching is not implemented for initial values: "
                              "the init values of a vmapped reduce_window must not be batched")
  mapped = [d for d in op_dims if d is not None]
  d = max(set(mapped), key=mapped.count)
  operands = [batch_util.bdim_at(x, b, d, axis_size) for x, b in zip(operands, op_dims)]
  outs = reduce_window_p.bind(*operands, *inits, jaxpr=jaxpr,
                              **_insert_unit_window(d, **window))
  return outs, [d] * len(outs)


reduce_window_p = Primitive("reduce_window", multiple_results=True)
reduce_window_p.def_abstract_eval(_reduce_window_abstract_eval)
dispatch.def_numpy_impl(reduce_window_p, _reduce_window_numpy)
mlir.register_lowering(reduce_window_p, _reduce_window_lower)
ad.primitive_jvps[reduce_window_p] = _reduce_window_jvp
ad.primitive_transposes[reduce_window_p] = _reduce_window_transpose
batching.axis_size_batchers[reduce_window_p] = _reduce_window_batch
inv.not_invertible(reduce_window_p, "many-to-one: a windowed reduction")


# --- select_and_gather_add -----------------------------------------------------------------------
_SELECT = {"ge": ("GE", _max_identity, np.greater_equal),
           "le": ("LE", _min_identity, np.less_equal)}


def _check_select_prim(op_name, select_prim):
  if select_prim is not ge_p and select_prim is not le_p:
    raise ValueError(f"{op_name} select_prim must be revax.lax's ge_p (max windows) or le_p (min "
                     f"windows), got {select_prim!r}")


def _check_float(op_name, avals, names):
  for a, name in zip(avals, names):
    if not dtypes.is_float(a.dtype):
      raise TypeError(f"{op_name} {name} must have a floating-point dtype, got {a.dtype.name}")
  if len({a.dtype for a in avals}) != 1:
    raise TypeError(f"{op_name} {' and '.join(names)} must have the same dtype, got "
                    f"{', '.join(a.dtype.name for a in avals)}")


def select_and_gather_add(tangents, operand, select_prim, window_dimensions, window_strides,
                          padding, base_dilation=None, window_dilation=None):
  """For each window of `operand`, the element of `tangents` at the position of the window's
  maximum (`select_prim` ge_p) or minimum (le_p): the JVP of a max (min) window. Linear in
  `tangents`; ties go to the first position in the window; padding and base-dilation holes hold
  the window's identity (-inf/+inf) with a zero tangent.

  Args:
    tangents, operand: floating-point arrays of one shape and dtype.
    select_prim: revax.lax.ge_p or le_p.
    window_dimensions, window_strides, padding, base_dilation, window_dilation: the window, as
      in `reduce_window` (padding as (lo, hi) pairs).

  Returns:
    An array of the window reduction's output shape.
  """
  params = _window_params(window_dimensions, window_strides, padding, base_dilation,
                          window_dilation)
  return select_and_gather_add_p.bind(tangents, operand, select_prim=select_prim, **params)


def _select_and_gather_add_abstract_eval(tangents, operand, *, select_prim, **window):
  _check_select_prim("select_and_gather_add", select_prim)
  if tangents.shape != operand.shape:
    raise TypeError(f"select_and_gather_add tangents and operand shapes must match, got "
                    f"{tangents.shape} and {operand.shape}.")
  _check_float("select_and_gather_add", (tangents, operand), ("tangents", "operand"))
  shape = _check_window("select_and_gather_add", operand.shape, **window)
  return ShapedArray(shape, tangents.dtype, tangents.weak_type)


def _select_and_gather_add_numpy(t, x, *, select_prim, window_dimensions, window_strides,
                                 padding, base_dilation, window_dilation):
  _, identity, select = _SELECT[select_prim.name]
  out_shape = reduce_window_shape_tuple(x.shape, window_dimensions, window_strides, padding,
                                        base_dilation, window_dilation)
  xp = _np_padded(x, identity(x.dtype), padding, base_dilation)
  tp = _np_padded(t, 0, padding, base_dilation)
  best_x = np.full(out_shape, identity(x.dtype), x.dtype)
  best_t = np.zeros(out_shape, t.dtype)
  with np.errstate(invalid="ignore"):
    for sl in _np_window_slices(out_shape, window_dimensions, window_strides, window_dilation):
      keep = select(best_x, xp[sl])
      best_x = np.where(keep, best_x, xp[sl])
      best_t = np.where(keep, best_t, tp[sl])
  return best_t


def _select_and_gather_add_lower(ctx, tangents, operand, *, select_prim, **window):
  """A variadic reduce_window over (operand, tangents) pairs keeping the pair whose value is
  selected (ge/le of the values), from the init pair (identity, 0)."""
  t_aval, x_aval = ctx.avals_in
  out_aval = ctx.avals_out[0]
  direction, identity, _ = _SELECT[select_prim.name]
  scalar = ShapedArray((), x_aval.dtype)
  if not x_aval.shape:  # a 0-d operand is its own window: its tangent, unless init is selected
    init_wins = compare(ctx, ctx.constant(identity(x_aval.dtype), scalar), operand, direction,
                        scalar)
    return ctx.op1("stablehlo.select", [init_wins, _filled(ctx, 0, out_aval), tangents])
  if x_aval.size == 0 or out_aval.size == 0:  # windows of padding only, or no windows
    return _filled(ctx, 0, out_aval)
  st = mlir.ir_type(scalar)

  def body(fb, kx, vx, ky, vy):
    sub = mlir.LoweringRuleContext(fb, [scalar, scalar], [scalar], ctx.platform)
    which = compare(sub, kx, ky, direction, scalar)
    return [sub.op1("stablehlo.select", [which, kx, ky], scalar),
            sub.op1("stablehlo.select", [which, vx, vy], scalar)]

  region = ctx.fb.region([st, st, st, st], body)
  inits = [ctx.constant(identity(x_aval.dtype), scalar), ctx.constant(np.zeros((), t_aval.dtype),
                                                                        scalar)]
  _, out = ctx.op("stablehlo.reduce_window", [operand, tangents] + inits,
                  [out_aval.update(dtype=x_aval.dtype), out_aval],
                  props=_window_props(**window), regions=[region])
  return out


def _select_and_gather_add_transpose(ct, tangents, operand, *, select_prim, window_dimensions,
                                     window_strides, padding, base_dilation, window_dilation):
  """select_and_scatter_add of the cotangent. Base dilation: the operand is spread with the
  identity (so holes are never selected over a real element) and the result is read back at
  the real elements' positions."""
  assert ad.is_undefined_primal(tangents) and not ad.is_undefined_primal(operand)
  if type(ct) is ad.Zero:
    return [ad.Zero(tangents.aval), None]
  dilated = any(b != 1 for b in base_dilation)
  if dilated:
    _, identity, _ = _SELECT[select_prim.name]
    operand = shapes.pad(operand, identity(get_aval(operand).dtype),
                         tuple((0, 0, b - 1) for b in base_dilation))
  result = select_and_scatter_add(ct, operand, select_prim, window_dimensions, window_strides,
                                  padding, window_dilation)
  if dilated:
    shape = get_aval(result).shape
    result = slicing.slice(result, (0,) * len(shape), shape, base_dilation)
  return [result, None]


def _select_and_gather_add_jvp(t, tangents, operand, *, select_prim, **window):
  return select_and_gather_add_p.bind(t, operand, select_prim=select_prim, **window)


def _pair_batch(prim, axis_size, vals, dims, params):
  """Batch a primitive of two same-shaped arrays with a window: both at one batch dim (the
  mapped one's; an unmapped one is broadcast there), where a unit window goes."""
  (a, b), (da, db) = vals, dims
  d = da if da is not None else db
  a, b = batch_util.bdim_at(a, da, d, axis_size), batch_util.bdim_at(b, db, d, axis_size)
  return prim.bind(a, b, **params), d


def _select_and_gather_add_batch(axis_size, vals, dims, *, select_prim, **window):
  d = dims[0] if dims[0] is not None else dims[1]
  return _pair_batch(select_and_gather_add_p, axis_size, vals, dims,
                     dict(select_prim=select_prim, **_insert_unit_window(d, **window)))


select_and_gather_add_p = Primitive("select_and_gather_add")
select_and_gather_add_p.def_abstract_eval(_select_and_gather_add_abstract_eval)
dispatch.def_numpy_impl(select_and_gather_add_p, _select_and_gather_add_numpy)
mlir.register_lowering(select_and_gather_add_p, _select_and_gather_add_lower)
ad.defjvp(select_and_gather_add_p, _select_and_gather_add_jvp, None)
ad.primitive_transposes[select_and_gather_add_p] = _select_and_gather_add_transpose
batching.axis_size_batchers[select_and_gather_add_p] = _select_and_gather_add_batch
inv.not_invertible(select_and_gather_add_p, "many-to-one: it keeps one value per window")


# --- select_and_scatter_add ----------------------------------------------------------------------
def select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
                           padding, window_dilation=None):
  """Add each element of `source` (one per window of `operand`) to the position of its
  window's maximum (`select_prim` ge_p) or minimum (le_p), as `stablehlo.select_and_scatter`
  with an add scatter: the transpose of `select_and_gather_add`. Ties go to the first position
  in the window; a window whose selected element is padding drops its source value.

  Args:
    source: an array of the window reduction's output shape.
    operand: the array whose windows select (same floating-point dtype as `source`).
    select_prim: revax.lax.ge_p or le_p.
    window_dimensions, window_strides, padding, window_dilation: the window (padding as (lo,
      hi) pairs; window_dilation, which XLA's select_and_scatter lacks, is an extension: such
      windows select by a reduce_window over (value, index) pairs and scatter-add).

  Returns:
    An array of `operand`'s shape.
  """
  params = _window_params(window_dimensions, window_strides, padding, None, window_dilation)
  del params["base_dilation"]
  return select_and_scatter_add_p.bind(source, operand, select_prim=select_prim, **params)


def _select_and_scatter_add_abstract_eval(source, operand, *, select_prim, window_dimensions,
                                          window_strides, padding, window_dilation):
  _check_select_prim("select_and_scatter_add", select_prim)
  _check_float("select_and_scatter_add", (source, operand), ("source", "operand"))
  shape = _check_window("select_and_scatter_add", operand.shape, window_dimensions,
                        window_strides, padding, (1,) * len(window_dimensions), window_dilation)
  if source.shape != shape:
    raise TypeError(f"select_and_scatter_add source must have the shape of the windows' output "
                    f"{shape}, got {source.shape} (operand shape {operand.shape})")
  return ShapedArray(operand.shape, source.dtype, source.weak_type)


def _select_and_scatter_add_numpy(source, x, *, select_prim, window_dimensions, window_strides,
                                  padding, window_dilation):
  """Pad with the identity, select in each window (the first element, replaced by each later
  one the select does not prefer it to), add the source at the selected positions, and cut the
  padding off again."""
  _, identity, select = _SELECT[select_prim.name]
  ones = (1,) * x.ndim
  xp = _np_padded(x, identity(x.dtype), padding, ones)
  acc_dtype = dtypes.float32 if source.dtype in _LOW_PRECISION else source.dtype
  out = np.zeros(xp.size, acc_dtype)
  if source.size:
    index = np.arange(xp.size).reshape(xp.shape)
    best_x = best_i = None
    with np.errstate(invalid="ignore"):
      for sl in _np_window_slices(source.shape, window_dimensions, window_strides,
                                  window_dilation):
        if best_x is None:
          best_x, best_i = xp[sl], index[sl]
          continue
        keep = select(best_x, xp[sl])
        best_x = np.where(keep, best_x, xp[sl])
        best_i = np.where(keep, best_i, index[sl])
    np.add.at(out, best_i.reshape(-1), source.reshape(-1).astype(acc_dtype))
  out = out.reshape(xp.shape).astype(source.dtype)
  return shapes._pad_numpy(out, np.zeros((), source.dtype),
                           padding_config=tuple((-lo, -hi, 0) for lo, hi in padding))


def _select_and_scatter_add_by_index(source, operand, *, select_prim, window_dimensions,
                                     window_strides, padding, window_dilation):
  """select_and_scatter_add for dilated windows: each window's selected element's flat index,
  from a reduce_window over (value, index) pairs (the select's winner, the first in the window
  on ties), then a scatter-add of the source at those indices (windows of padding only keep the
  out-of-range init index, and their values are dropped)."""
  from revax._src.lax import comparison
  aval = get_aval(operand)
  size = aval.size
  _, identity, _ = _SELECT[select_prim.name]
  strictly = comparison.gt if select_prim is ge_p else comparison.lt
  index = shapes.reshape(shapes.iota(np.int32, size), aval.shape)

  def pick(a, b):
    (va, ia), (vb, ib) = a, b
    a_wins = binary.bitwise_or(strictly(va, vb),
                               binary.bitwise_and(comparison.eq(va, vb), comparison.lt(ia, ib)))
    return comparison.select_n(a_wins, vb, va), comparison.select_n(a_wins, ib, ia)

  _, selected = reduce_window((operand, index), (identity(aval.dtype), np.int32(size)), pick,
                              window_dimensions, window_strides, padding, None, window_dilation)
  dnums = slicing.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))
  n_src = get_aval(source).size
  out = slicing.scatter_add(shapes.broadcast_in_dim(np.zeros((), get_aval(source).dtype), (size,),
                                                    ()),
                            shapes.reshape(selected, (n_src, 1)), shapes.reshape(source, (n_src,)),
                            dnums, mode=slicing.GatherScatterMode.FILL_OR_DROP)
  return shapes.reshape(out, aval.shape)


def _inactive_dims(window_dimensions, window_strides, padding) -> list[int]:
  """The dimensions a window leaves alone (size 1, stride 1, no padding)."""
  return [d for d, (w, s, p) in enumerate(zip(window_dimensions, window_strides, padding))
          if w == 1 and s == 1 and tuple(p) == (0, 0)]


def _needs_minor_inactive(window_dimensions, window_strides, padding) -> bool:
  """Whether the TPU compiler would refuse this select_and_scatter: it implements windows whose
  two minor-most dimensions are inactive only ("Select and Scatter with less than 2 inactive
  dims", "a window bound or window stride in one of the two minor-most dimensions"; JAX 0.10.2
  fails the same way on a 2-d max-pool gradient)."""
  n = len(window_dimensions)
  inactive = _inactive_dims(window_dimensions, window_strides, padding)
  return n < 2 or not {n - 1, n - 2} <= set(inactive)


def _to_minor_inactive(window_dimensions, window_strides, padding):
  """How to lay an operand out for the TPU compiler's select_and_scatter: (move, pick, back),
  where `move(x)` moves the dimensions the window leaves alone last (unit dimensions appended
  until there are two of them), `pick(values, fill)` reorders a per-dimension window parameter
  the same way, and `back(out, shape)` returns a result of the moved layout to `shape`'s."""
  n = len(window_dimensions)
  inactive = _inactive_dims(window_dimensions, window_strides, padding)
  perm = tuple([d for d in range(n) if d not in inactive] + inactive)
  extra = max(0, 2 - len(inactive))

  def move(x):
    x = shapes.transpose(x, perm)
    return shapes.reshape(x, get_aval(x).shape + (1,) * extra)

  def pick(values, fill):
    return tuple(values[d] for d in perm) + (fill,) * extra

  def back(out, shape):
    out = shapes.reshape(out, tuple(shape[d] for d in perm))
    return shapes.transpose(out, tuple(np.argsort(perm)))
  return move, pick, back


def _select_and_scatter_add_minor_inactive(source, operand, *, select_prim, window_dimensions,
                                           window_strides, padding, window_dilation):
  """select_and_scatter_add laid out as the TPU compiler implements it (`_to_minor_inactive`:
  the two minor-most dimensions inactive); the result is moved back."""
  move, pick, back = _to_minor_inactive(window_dimensions, window_strides, padding)
  out = select_and_scatter_add_p.bind(
      move(source), move(operand), select_prim=select_prim,
      window_dimensions=pick(window_dimensions, 1), window_strides=pick(window_strides, 1),
      padding=pick(tuple(map(tuple, padding)), (0, 0)), window_dilation=pick(window_dilation, 1))
  return back(out, get_aval(operand).shape)


def _select_and_scatter_add_lower(ctx, source, operand, *, select_prim, window_dimensions,
                                  window_strides, padding, window_dilation):
  """`stablehlo.select_and_scatter` on the operand padded explicitly with the select's identity
  (XLA:CPU mishandles the op's own padding), with no padding of its own; the padding is then
  cut off the result (a pad by the negated amounts, which restores zeros where negative padding
  had removed elements). Dilated windows go through `_select_and_scatter_add_by_index`."""
  s_aval, x_aval = ctx.avals_in
  if any(r != 1 for r in window_dilation) and s_aval.size and x_aval.size:
    return mlir.lower_fun(_select_and_scatter_add_by_index, multiple_results=False)(
        ctx, source, operand, select_prim=select_prim, window_dimensions=window_dimensions,
        window_strides=window_strides, padding=padding, window_dilation=window_dilation)
  if (ctx.platform == "tpu" and s_aval.size and x_aval.size and x_aval.shape
      and _needs_minor_inactive(window_dimensions, window_strides, padding)):
    return mlir.lower_fun(_select_and_scatter_add_minor_inactive, multiple_results=False)(
        ctx, source, operand, select_prim=select_prim, window_dimensions=window_dimensions,
        window_strides=window_strides, padding=padding, window_dilation=window_dilation)
  out_aval = ctx.avals_out[0]
  direction, identity, _ = _SELECT[select_prim.name]
  scalar = ShapedArray((), x_aval.dtype)
  if s_aval.size == 0 or x_aval.size == 0 or not x_aval.shape:
    return source if not x_aval.shape else _filled(ctx, 0, out_aval)
  padded_shape = tuple(n + lo + hi for n, (lo, hi) in zip(x_aval.shape, padding))
  padded_aval = x_aval.update(shape=padded_shape)
  zero = ctx.constant(np.zeros((), x_aval.dtype), scalar)
  has_padding = any(lo or hi for lo, hi in padding)
  x = operand
  if has_padding:
    fill = ctx.constant(identity(x_aval.dtype), scalar)
    lo, hi = zip(*padding)
    x = ctx.op1("stablehlo.pad", [operand, fill], padded_aval,
                props={"edge_padding_low": mlir.i64_array(lo),
                       "edge_padding_high": mlir.i64_array(hi),
                       "interior_padding": mlir.i64_array((0,) * len(lo))})
  st = mlir.ir_type(scalar)

  def select_body(fb, a, b):
    sub = mlir.LoweringRuleContext(fb, [scalar, scalar], [scalar], ctx.platform)
    return [compare(sub, a, b, direction, scalar)]

  def scatter_body(fb, a, b):
    sub = mlir.LoweringRuleContext(fb, [scalar, scalar], [scalar], ctx.platform)
    return [sub.op1("stablehlo.add", [a, b], scalar)]

  regions = [ctx.fb.region([st, st], select_body), ctx.fb.region([st, st], scatter_body)]
  props = _window_props(window_dimensions, window_strides, ((0, 0),) * len(padding))
  out = ctx.op1("stablehlo.select_and_scatter", [x, source, zero], padded_aval, props=props,
                regions=regions)
  if not has_padding:
    return out
  lo, hi = zip(*padding)
  return ctx.op1("stablehlo.pad", [out, zero], out_aval,
                 props={"edge_padding_low": mlir.i64_array([-v for v in lo]),
                        "edge_padding_high": mlir.i64_array([-v for v in hi]),
                        "interior_padding": mlir.i64_array((0,) * len(lo))})


def _select_and_scatter_add_jvp(t, source, operand, *, select_prim, **window):
  return select_and_scatter_add_p.bind(t, operand, select_prim=select_prim, **window)


def _select_and_scatter_add_transpose(ct, source, operand, *, select_prim, window_dimensions,
                                      window_strides, padding, window_dilation):
  assert ad.is_undefined_primal(source) and not ad.is_undefined_primal(operand)
  if type(ct) is ad.Zero:
    return [ad.Zero(source.aval), None]
  ones = (1,) * len(window_dimensions)
  return [select_and_gather_add_p.bind(ct, operand, select_prim=select_prim,
                                       window_dimensions=window_dimensions,
                                       window_strides=window_strides, padding=padding,
                                       base_dilation=ones, window_dilation=window_dilation),
          None]


def _select_and_scatter_add_batch(axis_size, vals, dims, *, select_prim, **window):
  d = dims[0] if dims[0] is not None else dims[1]
  return _pair_batch(select_and_scatter_add_p, axis_size, vals, dims,
                     dict(select_prim=select_prim, **_insert_unit_window(d, **window)))


select_and_scatter_add_p = Primitive("select_and_scatter_add")
select_and_scatter_add_p.def_abstract_eval(_select_and_scatter_add_abstract_eval)
dispatch.def_numpy_impl(select_and_scatter_add_p, _select_and_scatter_add_numpy)
mlir.register_lowering(select_and_scatter_add_p, _select_and_scatter_add_lower)
ad.defjvp(select_and_scatter_add_p, _select_and_scatter_add_jvp, None)
ad.primitive_transposes[select_and_scatter_add_p] = _select_and_scatter_add_transpose
batching.axis_size_batchers[select_and_scatter_add_p] = _select_and_scatter_add_batch
inv.not_invertible(select_and_scatter_add_p, "many-to-one: overlapping windows add up")


# --- select_and_scatter --------------------------------------------------------------------------
def select_and_scatter(operand, select, window_dimensions, window_strides, padding, source,
                       init_value, scatter):
  """XLA's SelectAndScatter with arbitrary computations (JAX's private `_select_and_scatter`):
  in each window of `operand` the element `select` prefers (select(a, b) true keeps `a`, the
  earlier one) receives that window's `source` value, combined by `scatter` into an output
  filled with `init_value`.

  Args:
    operand: the array the windows slide over.
    select: a function of two scalars of the operand's dtype to a bool scalar.
    window_dimensions, window_strides: one int per dimension.
    padding: one (lo, hi) pair per dimension.
    source: one value per window (the shape of the windows' output).
    init_value: the scalar the output starts from.
    scatter: a function of two scalars to one (how values landing on one element combine).

  Returns:
    An array of the operand's shape and dtype.

  Example:
    >>> from revax._src.lax.windowed import select_and_scatter
    >>> select_and_scatter(jnp.array([1., 3., 2., 0.]), lax.ge, (2,), (2,), ((0, 0),),
    ...                    jnp.array([10., 20.]), np.float32(0), lax.add)
    Array([ 0., 10., 20.,  0.], dtype=float32)
  """
  scalar = ShapedArray((), get_aval(init_value).dtype)
  select_jaxpr, select_consts = staging.trace_to_jaxpr(lambda a, b: [select(a, b)],
                                                       [scalar, scalar])
  scatter_jaxpr, scatter_consts = staging.trace_to_jaxpr(lambda a, b: [scatter(a, b)],
                                                         [scalar, scalar])
  return select_and_scatter_p.bind(
      operand, source, init_value, select_jaxpr=select_jaxpr,
      select_consts=tuple(select_consts), scatter_jaxpr=scatter_jaxpr,
      scatter_consts=tuple(scatter_consts), window_dimensions=tuple(window_dimensions),
      window_strides=tuple(window_strides), padding=tuple(map(tuple, padding)))


def _select_and_scatter_abstract_eval(operand, source, init_value, *, select_jaxpr,
                                      select_consts, scatter_jaxpr, scatter_consts,
                                      window_dimensions, window_strides, padding):
  if len(window_dimensions) != len(window_strides):
    raise TypeError(f"select_and_scatter got inconsistent window_strides and window_dimensions: "
                    f"got window_strides {window_strides} and window_dimensions "
                    f"{window_dimensions}.")
  if len({operand.dtype, source.dtype, init_value.dtype}) != 1:
    raise TypeError(f"select_and_scatter requires arguments to have the same dtypes, got "
                    f"{operand.dtype.name}, {source.dtype.name}, {init_value.dtype.name}")
  return ShapedArray(operand.shape, operand.dtype,
                     operand.weak_type and source.weak_type and init_value.weak_type)


def _select_and_scatter_minor_inactive(operand, source, init_value, *, window_dimensions,
                                       window_strides, padding, **params):
  """select_and_scatter laid out as the TPU compiler implements it (`_to_minor_inactive`); jax
  0.10.2 leaves such windows to XLA:TPU, which refuses them."""
  move, pick, back = _to_minor_inactive(window_dimensions, window_strides, padding)
  out = select_and_scatter_p.bind(
      move(operand), move(source), init_value, window_dimensions=pick(window_dimensions, 1),
      window_strides=pick(window_strides, 1), padding=pick(tuple(map(tuple, padding)), (0, 0)),
      **params)
  return back(out, get_aval(operand).shape)


def _select_and_scatter_lower(ctx, operand, source, init_value, *, select_jaxpr, select_consts,
                              scatter_jaxpr, scatter_consts, window_dimensions, window_strides,
                              padding):
  x_aval, s_aval = ctx.avals_in[:2]
  if (ctx.platform == "tpu" and s_aval.size and x_aval.size and x_aval.shape
      and _needs_minor_inactive(window_dimensions, window_strides, padding)):
    return mlir.lower_fun(_select_and_scatter_minor_inactive, multiple_results=False)(
        ctx, operand, source, init_value, select_jaxpr=select_jaxpr,
        select_consts=select_consts, scatter_jaxpr=scatter_jaxpr,
        scatter_consts=scatter_consts, window_dimensions=window_dimensions,
        window_strides=window_strides, padding=padding)
  scalar = ShapedArray((), ctx.avals_in[0].dtype)
  t = mlir.ir_type(scalar)

  def body(jaxpr, consts):
    def emit(fb, a, b):
      const_vals = [fb.constant(np.asarray(c), v.aval)
                    for v, c in zip(jaxpr.constvars, consts, strict=True)]
      return mlir.jaxpr_subcomp(fb, jaxpr, const_vals, [a, b])
    return emit

  regions = [ctx.fb.region([t, t], body(select_jaxpr, select_consts)),
             ctx.fb.region([t, t], body(scatter_jaxpr, scatter_consts))]
  return ctx.op1("stablehlo.select_and_scatter", [operand, source, init_value],
                 props=_window_props(window_dimensions, window_strides, padding),
                 regions=regions)


def _select_and_scatter_batch(axis_size, vals, dims, *, window_dimensions, window_strides,
                              padding, **params):
  """The operand and source batched at the front, with a window of one element there (each
  example slides its own windows); a batched init value has no such form."""
  operand, source, init_value = vals
  if dims[2] is not None:
    raise NotImplementedError("select_and_scatter with a batched init_value: XLA takes one "
                              "scalar init value")
  operand = batch_util.bdim_to_front(operand, dims[0], axis_size)
  source = batch_util.bdim_to_front(source, dims[1], axis_size)
  out = select_and_scatter_p.bind(
      operand, source, init_value, window_dimensions=(1,) + tuple(window_dimensions),
      window_strides=(1,) + tuple(window_strides), padding=((0, 0),) + tuple(padding), **params)
  return out, 0


select_and_scatter_p = Primitive("select_and_scatter")
select_and_scatter_p.def_abstract_eval(_select_and_scatter_abstract_eval)
mlir.register_lowering(select_and_scatter_p, _select_and_scatter_lower)
ad.not_differentiable(select_and_scatter_p, "jax defines no derivative of select_and_scatter "
                      "(its max/min pooling gradients use select_and_scatter_add)")
batching.axis_size_batchers[select_and_scatter_p] = _select_and_scatter_batch
inv.not_invertible(select_and_scatter_p, "many-to-one: the elements not selected are lost")
