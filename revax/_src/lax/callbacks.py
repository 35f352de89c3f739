"""Host callbacks: Python functions called from inside transformed and compiled programs.

Three primitives, each lowered to a `stablehlo.custom_call @revax_python_callback` whose
`index` attribute names the Python callable (runtime/ffi.py runs it when XLA reaches the call):

- `pure_callback_p`: a function without side effects. It may be removed when its results are
  unused, and it batches under vmap as its `vmap_method` says; plain differentiation raises
  (wrap it in custom_jvp / custom_vjp to differentiate).
- `io_callback_p`: a function with side effects (never removed). With `ordered=True`, calls run
  in program order: they thread a token from one to the next in each compiled body.
- `debug_callback_p`: a side effect with no results (`revax.debug.print`/`callback`). Under
  vmap it runs once per example, under differentiation on the primal values only.

Every callable receives revax Arrays, as JAX's callbacks receive jax Arrays (strong-typed, on
the host, so `np.asarray(x)` is free and `jnp` functions, `x.block_until_ready()` or
`isinstance(x, revax.Array)` work as in JAX), eager and compiled alike; its results (NumPy or
revax arrays) are checked against the declared shapes and dtypes before anything is written to
XLA's buffers.
"""
from __future__ import annotations

import traceback

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes, vma
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core import effect_types as eff
from revax._src.core.effects import (def_effectful, def_effects, def_ordered,
                                     host_callback_primitives)
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, shapes, slicing
from revax._src.lax.callback_transfers import lower_callback_with_transfers
from revax._src.runtime import ffi, host_transfer
from revax._src.runtime.array import Array
from revax._src.runtime.client import settle_all
from revax._src.runtime.denormals import flush_off, flush_on
from revax._src.runtime.pjrt import RuntimeBackendError

__all__ = ["pure_callback", "io_callback", "debug_callback", "pure_callback_p", "io_callback_p",
           "debug_callback_p", "callback_batch", "custom_call_op", "VMAP_METHODS"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


# ----------------------------------------------------------------------------- shared pieces

def _as_array(value) -> Array:
  """A revax Array holding `value`, a NumPy array the callback machinery owns (an XLA buffer's
  copy, or `_host_args`'s value): strong-typed, as JAX passes its callbacks' arguments."""
  if isinstance(value, Array):
    return value
  value = np.asarray(value)
  return dispatch.wrap_host(value, ShapedArray(value.shape, value.dtype))


class FlatCallback:
  """`callback_func` called on flat arguments (NumPy arrays from XLA's buffers or the eager
  path), given to it as revax Arrays, returning its flat results.

  Hashed by identity (params of a primitive must be hashable; two wrappers of one function are
  two callbacks, as in JAX). `static` holds the non-array leaves, put back in their places.
  """
  __slots__ = ("callback_func", "in_tree", "is_dynamic", "static", "__weakref__")

  def __init__(self, callback_func, in_tree, is_dynamic=None, static=()):
    self.callback_func = callback_func
    self.in_tree = in_tree
    self.is_dynamic = is_dynamic
    self.static = tuple(static)

  @property
  def __name__(self):
    return getattr(self.callback_func, "__name__", type(self.callback_func).__name__)

  def __repr__(self):
    return f"FlatCallback({self.__name__})"

  def __call__(self, *flat_args):
    flat_args = [_as_array(a) for a in flat_args]
    if self.is_dynamic is not None:
      dynamic, static = iter(flat_args), iter(self.static)
      flat_args = [next(dynamic) if d else next(static) for d in self.is_dynamic]
    args, kwargs = tree_util.tree_unflatten(self.in_tree, list(flat_args))
    return tree_util.tree_leaves(self.callback_func(*args, **kwargs))


def _result_avals(result_shape_dtypes):
  """Flat result avals and their tree, from a pytree of objects with .shape and .dtype."""
  leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
  avals = []
  for leaf in leaves:
    if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
      raise ValueError(f"result_shape_dtypes must be a pytree of objects with .shape and .dtype "
                       f"(e.g. revax.ShapeDtypeStruct), got {leaf!r}")
    dtype = np.dtype(leaf.dtype)
    if dtypes.canonicalize_dtype(dtype) != dtype:
      raise ValueError(f"Cannot return 64-bit values when `jax_enable_x64` is disabled: the "
                       f"callback declares a {dtype} result; declare "
                       f"{dtypes.canonicalize_dtype(dtype)} or enable x64")
    avals.append(ShapedArray(tuple(int(d) for d in leaf.shape), dtype))
  return tuple(avals), tree


def _host_args(args):
  """Eager arguments as NumPy values the callback may own: a caller's writeable array is copied
  (it becomes a read-only Array's storage)."""
  values = [np.asarray(dispatch.host_value(a)) for a in args]
  return [v.copy() if v.flags.writeable else v for v in values]


def _run_on_host(callback, args, result_avals, what: str):
  """Eager call: NumPy in, checked NumPy out; a failure is raised as the compiled path raises it
  (a RuntimeBackendError whose __cause__ is the callback's own exception). The callback runs
  with subnormals flushed, as on XLA:CPU's threads, so eager and jitted calls agree."""
  try:
    old = flush_on()
    try:
      results = callback(*_host_args(args))
    finally:
      flush_off(old)
    return ffi.check_results(results, [(a.shape, a.dtype) for a in result_avals])
  except Exception as exc:  # noqa: BLE001 - re-raised below with the original as its cause
    text = "".join(traceback.format_exception(exc)).rstrip()
    raise RuntimeBackendError("INTERNAL", f"{what} failed: {type(exc).__name__}: {exc}\n"
                                          f"{text}") from exc


def _layout(aval: ShapedArray) -> str:
  """Row-major layout (minor-to-major dims) as custom_call's layout attributes spell it."""
  rank = len(aval.shape)
  if not rank:
    return "dense<> : tensor<0xindex>"
  return f"dense<[{', '.join(str(i) for i in reversed(range(rank)))}]> : tensor<{rank}xindex>"


def _layouts(avals, given) -> list[str]:
  """Each aval's layout attribute: row-major, or the given minor-to-major dims (None: row-major)."""
  if given is None:
    return [_layout(a) for a in avals]
  given = list(given)
  if len(given) != len(avals):
    raise ValueError(f"custom call: {len(given)} layouts for {len(avals)} values")
  out = []
  for aval, dims in zip(avals, given, strict=True):
    if dims is None:
      out.append(_layout(aval))
      continue
    dims = tuple(int(d) for d in dims)
    if sorted(dims) != list(range(len(aval.shape))):
      raise ValueError(f"custom call: layout {dims} is not a permutation of the dimensions of "
                       f"a value of shape {aval.shape}")
    out.append(f"dense<[{', '.join(map(str, dims))}]> : tensor<{len(dims)}xindex>" if dims
               else "dense<> : tensor<0xindex>")
  return out


def _attr_value(value) -> str:
  """An MLIR attribute for an FFI attribute value (scalar, string or 1-D array)."""
  if isinstance(value, str):
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
  array = np.asarray(value)
  if array.dtype == np.bool_:
    if array.ndim:
      raise TypeError("FFI attributes cannot be bool arrays")
    return "true" if bool(array) else "false"
  et = mlir.element_type(array.dtype)
  if array.ndim == 0:
    return f"{mlir._fmt_element(array[()], array.dtype)} : {et}"
  if array.ndim == 1:
    items = ", ".join(mlir._fmt_element(x, array.dtype) for x in array)
    return f"array<{et}: {items}>" if items else f"array<{et}>"
  raise TypeError(f"FFI attributes must be scalars, strings or 1-D arrays, got shape "
                  f"{array.shape}")


def custom_call_op(ctx, target: str, operands, *, attributes=(), has_side_effect: bool = False,
                   ordered: bool = False, operand_avals=None, aliases=(),
                   operand_layouts=None, result_layouts=None) -> list[str]:
  """Emit `stablehlo.custom_call @target(operands)` (typed FFI, api_version 4) with results of
  `ctx.avals_out`. `ordered` threads this body's ordering token through the call; `aliases`
  holds (operand index, result index) pairs whose buffers XLA shares."""
  fb = ctx.fb
  operand_avals = list(ctx.avals_in if operand_avals is None else operand_avals)
  result_avals = list(ctx.avals_out)
  operands = list(operands)
  result_types = [mlir.ir_type(a) for a in result_avals]
  operand_layouts = _layouts(operand_avals, operand_layouts)
  result_layouts = _layouts(result_avals, result_layouts)
  if ordered:
    operands = [fb.ordering_token()] + operands
    operand_layouts = ["dense<> : tensor<0xindex>"] + operand_layouts
    result_types = [mlir.TOKEN_TYPE] + result_types
    result_layouts = ["dense<> : tensor<0xindex>"] + result_layouts
  config = ", ".join(f"{name} = {_attr_value(v)}" for name, v in attributes)
  props = {"api_version": "4 : i32", "backend_config": "{" + config + "}",
           "call_target_name": f'"{target}"', "has_side_effect": str(has_side_effect).lower(),
           "operand_layouts": f"[{', '.join(operand_layouts)}]",
           "result_layouts": f"[{', '.join(result_layouts)}]"}
  if aliases:
    shift = 1 if ordered else 0
    single = len(result_types) == 1
    props["output_operand_aliases"] = "[" + ", ".join(
        f"#stablehlo.output_operand_alias<output_tuple_indices = "
        f"[{'' if single else o + shift}], operand_index = {i + shift}, "
        f"operand_tuple_indices = []>" for i, o in aliases) + "]"
  outs = fb.op("stablehlo.custom_call", operands, result_types, props=props)
  if ordered:
    fb.set_ordering_token(outs[0])
    outs = outs[1:]
  return outs


def _lower_python_callback(ctx, *args, callback, has_side_effect, ordered):
  return lower_host_function(ctx, args, callback, has_side_effect=has_side_effect,
                             ordered=ordered)


def lower_host_function(ctx, args, host_fn, *, has_side_effect=False, ordered=False):
  """Lower a call of `host_fn(*numpy operands) -> results` (one per `ctx.avals_out`) the way the
  lowering's platform reaches the host: an FFI custom call where the plugin has the FFI
  extension (XLA:CPU), else send/recv host transfers (libtpu)."""
  if host_transfer.callback_mechanism(ctx.platform) == "sendrecv":
    return lower_callback_with_transfers(ctx, args, host_fn, ordered=ordered,
                                         wait=has_side_effect)
  index = ffi.register_callable(host_fn, ctx.platform)
  return custom_call_op(ctx, ffi.PYTHON_CALLBACK_TARGET, args,
                        attributes=[("index", np.int64(index))],
                        has_side_effect=has_side_effect, ordered=ordered)


def emit_python_callback(ctx, callback, token, operands, operand_avals, result_avals, *,
                         has_side_effect: bool, partitioned: bool = False, sharding=None,
                         operand_layouts=None, result_layouts=None):
  """Lower a call of the host function `callback` inside a lowering rule, as JAX's
  `jax.interpreters.mlir.emit_python_callback` (equinox's noinline lowers its primitive so).

  Args:
    ctx: the rule's LoweringRuleContext.
    callback: `callback(*numpy_arrays) -> sequence of arrays`, one per result aval.
    token: None (an ordered callback threading a token is not supported here).
    operands: the values (of this lowering) passed to `callback`.
    operand_avals, result_avals: their avals and those of the results.
    has_side_effect: whether XLA must keep the call even when its results are unused.
    partitioned, sharding, operand_layouts, result_layouts: JAX's; only the defaults.

  Returns:
    (results, token, keepalive): the result values, None, and an object to keep alive with
    the module.

  Example:
    >>> from revax.interpreters import mlir
    >>> p = revax.extend.core.Primitive("host_double")
    >>> _ = p.def_abstract_eval(lambda x: x)
    >>> _ = p.def_impl(lambda x: x * 2)
    >>> def lower(ctx, x):
    ...   results, _, keep = mlir.emit_python_callback(
    ...       ctx, lambda a: (a * 2,), None, [x], ctx.avals_in, ctx.avals_out,
    ...       has_side_effect=False)
    ...   ctx.module_context.add_keepalive(keep)
    ...   return results
    >>> _ = mlir.register_lowering(p, lower)
    >>> revax.jit(p.bind)(jnp.arange(3.))
    Array([0., 2., 4.], dtype=float32)
  """
  if token is not None:
    raise NotImplementedError("emit_python_callback with an ordering token is not supported by "
                              "revax; use revax.experimental.io_callback(ordered=True)")
  if partitioned or sharding is not None or operand_layouts or result_layouts:
    raise NotImplementedError("emit_python_callback: partitioned, sharding and layouts are not "
                              "supported by revax (only their defaults)")
  sub = mlir.LoweringRuleContext(ctx.fb, list(operand_avals), list(result_avals), ctx.platform)
  results = _lower_python_callback(sub, *operands, callback=callback,
                                   has_side_effect=has_side_effect, ordered=False)
  return list(results), None, callback


def callback_batch(prim, vals, dims, method, *, result_avals, **params):
  """Batching of pure_callback, io_callback and ffi_call, as `method` (a vmap_method) asks;
  `params` are the primitive's other params (bound again unchanged).

  'sequential' / 'sequential_unrolled': a scan over the examples, one call per example;
  'expand_dims': one call, unbatched arguments get a leading axis of size 1;
  'broadcast_all': one call, unbatched arguments are broadcast to the batch size;
  'legacy_vectorized': one call, unbatched arguments as they are. Results are batched at 0.
  """
  from revax._src.lax.control_flow import loops
  size = next(get_aval(v).shape[d] for v, d in zip(vals, dims, strict=True)
              if d is not batching.not_mapped)
  moved = [v if d is batching.not_mapped else batch_util.moveaxis(v, d, 0)
           for v, d in zip(vals, dims, strict=True)]
  batched_avals = tuple(a.update(shape=(size,) + a.shape) for a in result_avals)
  if method == "legacy_vectorized":
    outs = prim.bind(*moved, result_avals=batched_avals, **params)
  elif method in ("expand_dims", "broadcast_all"):
    lead = size if method == "broadcast_all" else 1
    args = [shapes.broadcast(v, (lead,)) if d is batching.not_mapped else v
            for v, d in zip(moved, dims, strict=True)]
    outs = prim.bind(*args, result_avals=batched_avals, **params)
  elif method in ("sequential", "sequential_unrolled"):
    mapped = [d is not batching.not_mapped for d in dims]
    fixed = [v for v, m in zip(moved, mapped, strict=True) if not m]
    xs = [v for v, m in zip(moved, mapped, strict=True) if m]

    def body(carry, x_slices):
      it_x, it_f = iter(x_slices), iter(fixed)
      args = [next(it_x) if m else next(it_f) for m in mapped]
      return carry, prim.bind(*args, result_avals=result_avals, **params)
    unroll = size if method == "sequential_unrolled" else 1
    _, outs = loops.scan(body, (), xs, unroll=max(unroll, 1))
  else:
    raise NotImplementedError(
        f"vmap is only supported for the {prim.name} primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got vmap_method={method!r}.")
  return list(outs), [0] * len(outs)


# ----------------------------------------------------------------------------- pure_callback

def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
  """Call a side-effect-free Python function from inside revax code (jit, vmap, scan, ...).

  Args:
    callback: called with revax Arrays in place of the array leaves of `args`/`kwargs`; returns
      a pytree of arrays matching `result_shape_dtypes` exactly (shapes and dtypes).
    result_shape_dtypes: a pytree of objects with `.shape` and `.dtype`
      (e.g. `revax.ShapeDtypeStruct`).
    *args, **kwargs: the arguments (pytrees of arrays).
    sharding: accepted for JAX compatibility; revax runs the callback on the host.
    vmap_method: how the call batches under vmap: 'sequential', 'sequential_unrolled',
      'expand_dims', 'broadcast_all' or 'legacy_vectorized' (None: vmap raises).

  Returns:
    The callback's results, as revax arrays with the declared structure.

  Example:
    >>> f = revax.jit(lambda x: revax.pure_callback(
    ...     np.sin, revax.ShapeDtypeStruct(x.shape, x.dtype), x))
    >>> f(revax.numpy.ones(2))
    Array([0.84147096, 0.84147096], dtype=float32)
  """
  del sharding
  if vmap_method not in VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                     f"but got: {vmap_method}")
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  result_avals, out_tree = _result_avals(result_shape_dtypes)
  outs = pure_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                              result_avals=result_avals, vmap_method=vmap_method)
  return tree_util.tree_unflatten(out_tree, outs)


def _pure_callback_abstract_eval(*avals, callback, result_avals, vmap_method):
  return list(result_avals)


def _pure_callback_impl(*args, callback, result_avals, vmap_method):
  outs = _run_on_host(callback, args, result_avals, "revax.pure_callback")
  return [dispatch.wrap_host(o, a) for o, a in zip(outs, result_avals, strict=True)]


def _pure_callback_jvp(primals, tangents, **params):
  raise ValueError("Pure callbacks do not support JVP. Please use `revax.custom_jvp` to use "
                   "callbacks while taking gradients.")


def _pure_callback_batch(vals, dims, **params):
  return callback_batch(pure_callback_p, vals, dims, params["vmap_method"], **params)


def _pure_callback_lower(ctx, *args, callback, result_avals, vmap_method):
  return _lower_python_callback(ctx, *args, callback=callback, has_side_effect=False,
                                ordered=False)


pure_callback_p = Primitive("pure_callback", multiple_results=True)
# inside shard_map a callback's results are invariant, whatever its operands do and whatever
# manual_axis_type its result_shape_dtypes declare: JAX's rule
vma.vma_rules[pure_callback_p] = lambda avals, params, outs: outs
vma.no_auto_pvary.add(pure_callback_p)
pure_callback_p.def_abstract_eval(_pure_callback_abstract_eval)
dispatch.custom_impls[pure_callback_p] = _pure_callback_impl
ad.primitive_jvps[pure_callback_p] = _pure_callback_jvp
batching.primitive_batchers[pure_callback_p] = _pure_callback_batch
mlir.register_lowering(pure_callback_p, _pure_callback_lower)
inv.not_invertible(pure_callback_p, "an opaque host function")


# ----------------------------------------------------------------------------- io_callback

def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
  """Call a Python function with side effects from inside revax code.

  Unlike `pure_callback` it is never removed as dead code, and with `ordered=True` calls run in
  program order (also inside scan, while_loop and cond). It cannot be differentiated, and an
  ordered one cannot be vmapped (an unordered one runs once per example).

  Args:
    callback: called with revax Arrays; returns arrays matching `result_shape_dtypes`.
    result_shape_dtypes: a pytree of objects with `.shape` and `.dtype` (None for no result).
    *args, **kwargs: the arguments (pytrees of arrays).
    sharding: accepted for JAX compatibility.
    ordered: run in program order with the other ordered callbacks.

  Returns:
    The callback's results as revax arrays.

  Example:
    >>> from revax.experimental import io_callback
    >>> log = []
    >>> f = revax.jit(lambda x: io_callback(log.append, None, x, ordered=True))
    >>> f(1.0)
    >>> f(2.0)
    >>> log
    [Array(1., dtype=float32), Array(2., dtype=float32)]
  """
  del sharding
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  result_avals, out_tree = _result_avals(result_shape_dtypes)

  def returning(*a, **k):
    out = callback(*a, **k)
    return () if not result_avals and out is None else out

  outs = io_callback_p.bind(*flat_args, callback=FlatCallback(returning, in_tree),
                            result_avals=result_avals, ordered=bool(ordered))
  return tree_util.tree_unflatten(out_tree, outs)


def _io_callback_abstract_eval(*avals, callback, result_avals, ordered):
  return list(result_avals)


def _io_callback_impl(*args, callback, result_avals, ordered):
  outs = _run_on_host(callback, args, result_avals, "revax.experimental.io_callback")
  return [dispatch.wrap_host(o, a) for o, a in zip(outs, result_avals, strict=True)]


def _io_callback_jvp(primals, tangents, **params):
  raise ValueError("IO callbacks do not support JVP.")


def _io_callback_batch(vals, dims, *, callback, result_avals, ordered):
  if ordered:
    raise ValueError("Cannot `vmap` ordered IO callback.")
  return callback_batch(io_callback_p, vals, dims, "sequential", result_avals=result_avals,
                        callback=callback, ordered=ordered)


def _io_callback_lower(ctx, *args, callback, result_avals, ordered):
  return _lower_python_callback(ctx, *args, callback=callback, has_side_effect=True,
                                ordered=ordered)


io_callback_p = Primitive("io_callback", multiple_results=True)
vma.vma_rules[io_callback_p] = lambda avals, params, outs: outs  # (as pure_callback's)
vma.no_auto_pvary.add(io_callback_p)
io_callback_p.def_abstract_eval(_io_callback_abstract_eval)
dispatch.custom_impls[io_callback_p] = _io_callback_impl
ad.primitive_jvps[io_callback_p] = _io_callback_jvp
batching.primitive_batchers[io_callback_p] = _io_callback_batch
mlir.register_lowering(io_callback_p, _io_callback_lower)
inv.not_invertible(io_callback_p, "a side effect")
def_effectful(io_callback_p)
def_ordered(io_callback_p, lambda params: params["ordered"])
def_effects(io_callback_p,
            lambda eqn: {eff.ordered_io_effect if eqn.params["ordered"] else eff.io_effect})


# ----------------------------------------------------------------------------- debug_callback

def _is_array_leaf(x) -> bool:
  try:
    get_aval(x)
    return True
  except TypeError:
    return False


def debug_callback(callback, *args, ordered: bool = False, **kwargs) -> None:
  """Call `callback(*args, **kwargs)` for its side effect, with revax Arrays for array leaves.

  It is never removed as dead code; under vmap it runs once per example, under differentiation
  on the primal values. Non-array leaves (strings, ...) are passed through unchanged.
  """
  flat, in_tree = tree_util.tree_flatten((args, kwargs))
  is_dynamic = tuple(_is_array_leaf(x) for x in flat)
  dynamic = [x for x, d in zip(flat, is_dynamic, strict=True) if d]
  static = [x for x, d in zip(flat, is_dynamic, strict=True) if not d]

  def no_result(*a, **k):
    callback(*a, **k)
    return ()

  debug_callback_p.bind(*dynamic, callback=FlatCallback(no_result, in_tree, is_dynamic, static),
                        ordered=bool(ordered))


def _debug_callback_abstract_eval(*avals, callback, ordered):
  return []


def _debug_callback_impl(*args, callback, ordered):
  """Eager: the callback gets each argument as an Array of the argument's own type, weak type
  included (a Python scalar arrives weak-typed, as JAX's eager debug callbacks give it)."""
  values = _host_args(args)
  callback(*[a if type(a) is Array else dispatch.wrap_host(v, get_aval(a))
             for a, v in zip(args, values, strict=True)])
  return []


def _debug_callback_jvp(primals, tangents, **params):
  return debug_callback_p.bind(*primals, **params), []


def _debug_callback_batch(vals, dims, **params):
  """One call per example, in order (as JAX unrolls it)."""
  size = next(get_aval(v).shape[d] for v, d in zip(vals, dims, strict=True)
              if d is not batching.not_mapped)
  for i in range(size):
    args = []
    for v, d in zip(vals, dims, strict=True):
      if d is batching.not_mapped:
        args.append(v)
        continue
      aval = get_aval(v)
      start = [0] * aval.ndim
      limit = list(aval.shape)
      start[d], limit[d] = i, i + 1
      piece = slicing.slice(v, start, limit)
      args.append(shapes.reshape(piece, aval.shape[:d] + aval.shape[d + 1:]))
    debug_callback_p.bind(*args, **params)
  return [], []


def _debug_callback_lower(ctx, *args, callback, ordered):
  return _lower_python_callback(ctx, *args, callback=callback, has_side_effect=True,
                                ordered=ordered)


debug_callback_p = Primitive("debug_callback", multiple_results=True)
vma.vma_rules[debug_callback_p] = lambda avals, params, outs: outs  # (no results to type)
vma.no_auto_pvary.add(debug_callback_p)
debug_callback_p.def_abstract_eval(_debug_callback_abstract_eval)
dispatch.custom_impls[debug_callback_p] = _debug_callback_impl
ad.primitive_jvps[debug_callback_p] = _debug_callback_jvp
batching.primitive_batchers[debug_callback_p] = _debug_callback_batch
mlir.register_lowering(debug_callback_p, _debug_callback_lower)
inv.not_invertible(debug_callback_p, "a side effect with no outputs")
def_effectful(debug_callback_p)
def_ordered(debug_callback_p, lambda params: params["ordered"])
def_effects(debug_callback_p,
            lambda eqn: {eff.ordered_debug_effect if eqn.params["ordered"] else eff.debug_effect})
host_callback_primitives.update((pure_callback_p, io_callback_p, debug_callback_p))


def effects_barrier() -> None:
  """Wait until the effects (callbacks) of every computation started so far have happened.

  A call of a program with host callbacks returns only once the program has finished (as
  JAX's does on CPU), so its callbacks have run by then; other programs return as soon as they
  are queued. This waits for every program queued so far to finish (on a TPU, whose runtime
  bounds its own queue and reports no completions to revax, for those with effects, as jax's).

  Example:
    >>> seen = []
    >>> f = revax.jit(lambda x: revax.debug.callback(seen.append, x))
    >>> f(jnp.float32(1.0))
    >>> revax.effects_barrier()
    >>> len(seen)
    1
  """
  settle_all()
