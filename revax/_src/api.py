"""The small public entry points: make_jaxpr, eval_shape, device_put, device_get,
block_until_ready (and devices, device_count, which live in sharded_api.py). The
transformations have modules of their own: jit.py, autodiff.py (jvp, grad, vjp, ...), vmap.py,
ad_checkpoint.py, custom_derivatives.py and invertible.py.
"""
from __future__ import annotations


import numpy as np

from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.core import dtypes, extended_dtypes
from revax._src.core.avals import AbstractToken
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Tracer, _context, eval_trace
from revax._src.interpreters import dispatch, staging
from revax._src.lax.device_put import ArrayCopySemantics, bind_device_put, copy_semantics_of
from revax._src.core.config import config
from revax._src.runtime import placement as _placement
from revax._src.runtime import sharded as _rt_sharded
from revax._src.runtime.array import Array, block_until_ready_all, commit, keep_memory_kind
from revax._src.shape_dtype_struct import ShapeDtypeStruct as ShapeDtypeStruct
from revax._src import sharded_api
from revax._src.runtime.client import Device
from revax._src.sharded_api import device_count as device_count
from revax._src.sharded_api import devices as devices
from revax._src.shape_dtype_struct import abstractify as _abstractify


def make_jaxpr(fun, static_argnums=(), return_shape=False):
  """A function that returns the jaxpr of `fun` traced at the given arguments.

  Args:
    fun: the function to trace.
    static_argnums: positions of arguments to treat as fixed Python values.
    return_shape: also return the output's structure as `ShapeDtypeStruct`s.

  Returns:
    `(*args, **kwargs) -> ClosedJaxpr` (or `(ClosedJaxpr, shapes)` with return_shape).

  Example:
    >>> print(revax.make_jaxpr(revax.numpy.sin)(1.0))
    { lambda ; a:f32[]. let b:f32[] = sin a in (b,) }
  """
  if not callable(fun):
    raise TypeError(f"make_jaxpr expects a callable, got {fun!r} of type {type(fun).__name__}")
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @wrapping.wraps(fun)
  def make(*args, **kwargs):
    static = {i % len(args) for i in static_argnums}
    for i in sorted(static):
      try:
        hash(args[i])
      except TypeError as e:
        raise ValueError(f"Non-hashable static arguments are not supported: make_jaxpr got "
                         f"static argument {i} of type {type(args[i]).__name__} ({args[i]!r}). "
                         "Static arguments must be hashable.") from e
    dyn = [a for i, a in enumerate(args) if i not in static]
    # typed key arrays are typed as keys (key<fry>[]), as JAX's jaxprs type them: traced as
    # key-typed values that the function sees as key arrays, and given back as such values
    leaves, treedef = tree_util.tree_flatten((dyn, kwargs), is_leaf=tree_util.is_array_leaf)
    avals = [x.aval if tree_util.is_array_leaf(x) else _abstractify(x) for x in leaves]
    out_store = {}

    def flat_fun(*flat):
      flat = [extended_dtypes.key_array_type(x, a.dtype._impl)
              if isinstance(getattr(a, "dtype", None), extended_dtypes.KeyTy) else x
              for x, a in zip(flat, avals, strict=True)]
      d, kw = tree_util.tree_unflatten(treedef, flat)
      it = iter(d)
      full = [args[i] if i in static else next(it) for i in range(len(args))]
      out = fun(*full, **kw)
      flat_out, out_store["tree"] = tree_util.tree_flatten(out, is_leaf=tree_util.is_array_leaf)
      return [x._typed_value() if tree_util.is_array_leaf(x) else x for x in flat_out]

    staging_keys, extended_dtypes.key_staging.typed = extended_dtypes.key_staging.typed, True
    try:
      jaxpr, consts = staging.trace_to_jaxpr(flat_fun, avals)
    finally:
      extended_dtypes.key_staging.typed = staging_keys
    closed = ClosedJaxpr(jaxpr, consts)
    if return_shape:
      shapes = [ShapeDtypeStruct(a.shape, a.dtype) for a in jaxpr.out_avals]
      return closed, tree_util.tree_unflatten(out_store["tree"], shapes)
    return closed

  return make




def eval_shape(fun, *args, **kwargs):
  """The output shapes and dtypes of `fun(*args, **kwargs)`, computed without running it.

  Arguments may be arrays or `ShapeDtypeStruct`s, typed keys among them (structs of a key
  dtype stand for keys; keys in the output are given as such structs, as in JAX).
  """
  if getattr(fun, "_compiler_options", None):
    # a jit with XLA options: its own trace, as JAX's eval_shape of a jitted function (staged
    # as a nested call it would be refused: only a top-level jit takes options)
    return fun.eval_shape(*args, **kwargs)
  leaves, treedef = tree_util.tree_flatten(_structs_as_array_leaves((args, kwargs)))
  out_store = {}

  def flat_fun(*flat):
    a, kw = tree_util.tree_unflatten(treedef, flat)
    flat_out, out_store["tree"] = tree_util.tree_flatten(fun(*a, **kw))
    return flat_out

  jaxpr, _ = staging.trace_to_jaxpr(flat_fun, [_abstractify(x) for x in leaves])
  shapes = [a if type(a) is AbstractToken else ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
            for a in jaxpr.out_avals]
  out = tree_util.tree_unflatten(out_store["tree"], shapes)
  return tree_util.tree_map(
      lambda x: ShapeDtypeStruct(x.shape, x.dtype) if tree_util.is_array_leaf(x) else x, out,
      namespace=tree_util.USER_NAMESPACE)


def _structs_as_array_leaves(tree):
  """`tree` with its ShapeDtypeStructs of an extended dtype (key<fry>) as the array leaves
  (typed keys) their dtype makes over structs of their data (`dtype.abstract_leaf`)."""
  def leaf(x):
    if isinstance(x, ShapeDtypeStruct) and extended_dtypes.is_extended(x.dtype):
      return x.dtype.abstract_leaf(x.shape, ShapeDtypeStruct)
    return x
  return tree_util.tree_map(leaf, tree, namespace=tree_util.USER_NAMESPACE)


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Place arrays (a pytree of them) on `device` (default: the first device) as revax Arrays;
  `device` may also be a sharding (or a pytree prefix of shardings): sharded_api.device_put."""
  if device is not None and not isinstance(device, Device):
    return sharded_api.device_put(x, device)
  copy = copy_semantics_of(donate, may_alias)
  if _context.trace is not eval_trace:  # traced: the device_put primitive, as JAX's
    leaves, treedef = tree_util.tree_flatten(x)
    if not any(isinstance(leaf, Tracer) for leaf in leaves) and device is None and \
        copy is ArrayCopySemantics.REUSE_INPUT:
      return x  # (JAX folds away such a put of constants)
    n = len(leaves)
    outs = bind_device_put(leaves, [device] * n, [src] * n, [copy] * n)
    return tree_util.tree_unflatten(treedef, outs)

  def put(leaf):
    if isinstance(leaf, Tracer) or (device is None and isinstance(leaf, Array)
                                    and type(leaf) is not Array):
      return leaf  # a sharded Array stays where it is
    if getattr(leaf, "dtype", None) == dtypes.float0:
      return leaf  # tangents of integers hold no data: they stay NumPy float0 arrays, as in JAX
    arr = dispatch.to_array(leaf)
    target = device
    if target is None and arr._buf is None and config.default_device is not None:
      target = _placement.default_device()  # (jax_default_device: where uncommitted data goes)
    buf = arr._device_buffer(target)
    out = Array(arr.aval, npy=arr._npy, buf=buf)
    if buf is arr._buf:  # (the same buffer: in the memory it is in)
      keep_memory_kind(arr, out)
    if device is None and getattr(arr, "_mesh_sharding", None) is not None:
      return _rt_sharded.mark(out, arr._mesh_sharding)  # (x's mesh of one device stays)
    # committed to a device named; device_put(x) keeps x's commitment (as in JAX)
    return commit(out) if device is not None or arr.committed else out
  return tree_util.tree_map(put, x)


def device_get(x):
  """Bring arrays (a pytree of them) to the host as NumPy arrays."""
  return tree_util.tree_map(lambda l: np.asarray(l) if isinstance(l, Array) else l, x)


def block_until_ready(x):
  """Wait for every array in the pytree `x` to be computed; returns `x`."""
  # Builtin containers are walked here (measured: optree's tree_leaves costs ~0.3 us per leaf,
  # most of this function's time on a jitted call's output); other nodes go through tree_leaves.
  stack = [x]
  others = []
  pop, push = stack.pop, stack.extend
  while stack:
    node = pop()
    kind = type(node)
    if kind is Array:
      others.append(node)
    elif kind is tuple or kind is list:
      push(node)
    elif kind is dict:
      push(node.values())
    elif node is not None:
      others.extend(tree_util.tree_leaves(node))
  block_until_ready_all(others)
  return x
