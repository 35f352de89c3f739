"""The small public entry points: make_jaxpr, eval_shape, device_put, device_get, devices,
block_until_ready. The transformations have modules of their own: jit.py, autodiff.py (jvp,
grad, vjp, ...), vmap.py, ad_checkpoint.py, custom_derivatives.py and invertible.py.
"""
from __future__ import annotations

import functools

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes, extended_dtypes
from revax._src.core.avals import ShapedArray, get_aval, pytype_aval_mappings
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Tracer
from revax._src.interpreters import dispatch, staging
from revax._src.jit import jit
from revax._src.core.config import config
from revax._src.runtime import placement as _placement
from revax._src.runtime.array import Array, block_until_ready_all, commit


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

  @functools.wraps(fun)
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
    leaves, treedef = tree_util.tree_flatten((dyn, kwargs))
    avals = [_abstractify(x) for x in leaves]
    out_store = {}

    def flat_fun(*flat):
      d, kw = tree_util.tree_unflatten(treedef, flat)
      it = iter(d)
      full = [args[i] if i in static else next(it) for i in range(len(args))]
      out = fun(*full, **kw)
      flat_out, out_store["tree"] = tree_util.tree_flatten(out)
      return flat_out

    jaxpr, consts = staging.trace_to_jaxpr(flat_fun, avals)
    closed = ClosedJaxpr(jaxpr, consts)
    if return_shape:
      shapes = [ShapeDtypeStruct(a.shape, a.dtype) for a in jaxpr.out_avals]
      return closed, tree_util.tree_unflatten(out_store["tree"], shapes)
    return closed

  return make


class ShapeDtypeStruct:
  """A shape and dtype standing in for an array (what `eval_shape` returns), as JAX's.

  Args:
    shape, dtype: the array's.
    sharding: how it is (to be) laid out, or None.
    weak_type: whether its dtype is weak (a Python scalar's).
    manual_axis_type, is_ref: JAX's; revax keeps them as given (None / False).
  """
  __slots__ = ("shape", "dtype", "weak_type", "sharding", "manual_axis_type", "is_ref")

  def __init__(self, shape, dtype, weak_type=False, *, sharding=None, manual_axis_type=None,
               is_ref=False):
    self.shape = tuple(shape)
    self.dtype = dtype if extended_dtypes.is_extended(dtype) else np.dtype(dtype)  # key<fry>
    self.weak_type = bool(weak_type)
    self.sharding = sharding
    self.manual_axis_type = manual_axis_type
    self.is_ref = is_ref

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  @classmethod
  def like(cls, x) -> "ShapeDtypeStruct":
    """The struct of `x` (an array, a Python or NumPy scalar, another struct): its shape, dtype
    and weak type, and its sharding when it has one and is committed (as JAX's).

    Example:
      >>> revax.ShapeDtypeStruct.like(jnp.ones((2, 3)))
      ShapeDtypeStruct(shape=(2, 3), dtype=float32)
      >>> revax.ShapeDtypeStruct.like(1.0)
      ShapeDtypeStruct(shape=(), dtype=float32, weak_type=True)
    """
    aval = _abstractify(x)
    committed = x.committed if isinstance(x, Array) else True
    sharding = getattr(x, "sharding", None) if committed else None
    return cls(aval.shape, aval.dtype, aval.weak_type, sharding=sharding)

  def update(self, **kwargs) -> "ShapeDtypeStruct":
    """A copy with the given fields replaced (shape, dtype, sharding, weak_type, ...)."""
    fields = {name: getattr(self, name) for name in self.__slots__}
    unknown = set(kwargs) - set(fields)
    if unknown:
      raise TypeError(f"ShapeDtypeStruct.update() got unexpected fields {sorted(unknown)}")
    fields.update(kwargs)
    shape, dtype, weak_type = fields.pop("shape"), fields.pop("dtype"), fields.pop("weak_type")
    return ShapeDtypeStruct(shape, dtype, weak_type, **fields)

  def __repr__(self):
    sharding = f", sharding={self.sharding}" if self.sharding is not None else ""
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak})"

  def __eq__(self, other):
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type
            and self.sharding == other.sharding and self.is_ref == other.is_ref)

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type))


def _abstractify(x) -> ShapedArray:
  if isinstance(x, ShapeDtypeStruct):
    return ShapedArray(x.shape, x.dtype, x.weak_type)
  return get_aval(x)


pytype_aval_mappings[ShapeDtypeStruct] = _abstractify


def eval_shape(fun, *args, **kwargs):
  """The output shapes and dtypes of `fun(*args, **kwargs)`, computed without running it.

  Arguments may be arrays or `ShapeDtypeStruct`s, typed keys among them (structs of a key
  dtype stand for keys; keys in the output are given as such structs, as in JAX).
  """
  leaves, treedef = tree_util.tree_flatten(_structs_as_array_leaves((args, kwargs)))
  out_store = {}

  def flat_fun(*flat):
    a, kw = tree_util.tree_unflatten(treedef, flat)
    flat_out, out_store["tree"] = tree_util.tree_flatten(fun(*a, **kw))
    return flat_out

  jaxpr, _ = staging.trace_to_jaxpr(flat_fun, [_abstractify(x) for x in leaves])
  shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in jaxpr.out_avals]
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


def devices(backend=None):
  """The devices of a backend, e.g. `[CpuDevice(id=0)]`.

  Args:
    backend: "cpu", "tpu" (or a Backend); None for the default backend (the TPU where one is
      attached and libtpu installed, else the CPU).

  Returns:
    The backend's devices, in order.

  Raises:
    RuntimeError: JAX's error for a backend that is not present (e.g. "gpu").
  """
  from revax._src.runtime.client import get_backend
  return list(_backend_of(backend, get_backend).devices)


def _backend_of(backend, get_backend):
  """The Backend a `backend=` argument names (a platform name, a Backend, or None)."""
  if backend is None or isinstance(backend, str):
    return get_backend(backend)
  if hasattr(backend, "devices") and hasattr(backend, "platform"):
    return backend
  raise TypeError(f"backend must be a platform name such as 'cpu' or 'tpu', got {backend!r}")


def device_count(backend=None) -> int:
  """The number of devices of a backend, as `len(revax.devices(backend))`.

  Args:
    backend: "cpu", "tpu" or None (the default backend), as for `devices`.

  Returns:
    The device count: on the CPU 1 unless `REVAX_CPU_DEVICE_COUNT=N` (set before the first
    computation) asked for N.

  Example:
    >>> revax.device_count() == len(revax.devices())
    True
  """
  return len(devices(backend))


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Place arrays (a pytree of them) on `device` (default: the first device) as revax Arrays;
  `device` may also be a sharding (or a pytree prefix of shardings): sharded_api.device_put."""
  from revax._src.runtime.client import Device
  if device is not None and not isinstance(device, Device):
    from revax._src import sharded_api
    return sharded_api.device_put(x, device)

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
