"""The small public entry points: make_jaxpr, eval_shape, device_put, device_get, devices,
block_until_ready. The transformations have modules of their own: jit.py, autodiff.py (jvp,
grad, vjp, ...), vmap.py, ad_checkpoint.py, custom_derivatives.py and invertible.py.
"""
from __future__ import annotations

import functools

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval, pytype_aval_mappings
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Tracer
from revax._src.interpreters import dispatch, staging
from revax._src.jit import jit
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
    self.dtype = np.dtype(dtype)
    self.weak_type = bool(weak_type)
    self.sharding = sharding
    self.manual_axis_type = manual_axis_type
    self.is_ref = is_ref

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

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

  Arguments may be arrays or `ShapeDtypeStruct`s.
  """
  leaves, treedef = tree_util.tree_flatten((args, kwargs))
  out_store = {}

  def flat_fun(*flat):
    a, kw = tree_util.tree_unflatten(treedef, flat)
    flat_out, out_store["tree"] = tree_util.tree_flatten(fun(*a, **kw))
    return flat_out

  jaxpr, _ = staging.trace_to_jaxpr(flat_fun, [_abstractify(x) for x in leaves])
  shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in jaxpr.out_avals]
  return tree_util.tree_unflatten(out_store["tree"], shapes)


def devices(backend=None):
  """The devices of `backend` (a platform name such as "cpu", or None for the default one).

  Args:
    backend: the platform name; RuntimeError, as in JAX, for one that is not present.

  Returns:
    A list of Devices, e.g. `[CpuDevice(id=0)]`.

  Example:
    >>> revax.devices("cpu")
    [CpuDevice(id=0)]
  """
  from revax._src.runtime.client import get_backend
  found = get_backend()
  if backend is not None:
    name = getattr(backend, "platform", backend)
    if name != found.platform:
      if name in ("gpu", "cuda", "rocm", "tpu", "cpu"):
        raise RuntimeError(f"Unknown backend: '{name}' requested, but no platforms that are "
                           f"instances of {name} are present. Platforms present are: "
                           f"{found.platform}")
      raise RuntimeError(f"Unknown backend {name}. Available backends are "
                         f"['{found.platform}']")
  return list(found.devices)


def device_count(backend=None) -> int:
  """The number of devices of `backend` (default: the default backend's).

  Example:
    >>> revax.device_count("cpu")
    1
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
    buf = arr._device_buffer(device)
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
