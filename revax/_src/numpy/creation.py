"""Array creation: array/asarray, zeros/ones/full/empty and their *_like forms, arange, linspace,
eye and identity.

Values known on the host (Python data, NumPy arrays) become host Arrays directly; under jit they
enter the program as constants. Nested lists holding traced values are assembled with lax ops.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from revax._src import api, lax, mesh_placement, sharded_api
from revax._src.core import dtypes, vma
from revax._src.core.avals import ShapedArray
from revax._src.core.shape_poly import is_symbolic_dim
from revax._src.lax.dim_value import dim_as_value
from revax._src.lax.copy import array_copy
from revax._src.core.trace import Tracer, _context, eval_trace
from revax._src.lax.sharding_constraint import placed
from revax._src.numpy import util
from revax._src.numpy.util import aval_of, canonical_dtype_arg, canonicalize_shape
from revax._src.runtime.array import Array, from_numpy
from revax._src.runtime.client import Device
from revax._src import tree_util


# --- placement -------------------------------------------------------------------------------
def _placed(x, device, out_sharding=None):
  """`x` where JAX's `device=` (a Device or a Sharding) or `out_sharding=` puts it; at most one
  may be given. Outside a trace `device` commits the result there (`device_put`); under a
  trace it does nothing, as in JAX (a jitted function's results are placed by jit)."""
  if device is None:
    return placed(x, out_sharding)
  if out_sharding is not None:
    raise ValueError(f"Only one of `device` or `out_sharding` can be set. Got device={device!r} "
                     f"and out_sharding={out_sharding!r}")
  if not (isinstance(device, Device) or sharded_api.is_sharding(device)):
    raise TypeError(f"device must be a Device (revax.devices()[i]) or a Sharding, got "
                    f"{type(device).__name__}: {device!r}")
  if isinstance(x, Tracer) or _context.trace is not eval_trace:
    return x  # (a host constant made under a trace too: the program places its results)
  return api.device_put(x, device)


# --- array / asarray -----------------------------------------------------------------------------
def _leaves(obj, out):
  if isinstance(obj, (list, tuple)):
    for o in obj:
      _leaves(o, out)
  else:
    out.append(obj)
  return out


def _has_traced_leaf(leaves) -> bool:
  return any(isinstance(x, Tracer) for x in leaves)


def _stack_nested(obj, dtype):
  """A nested list/tuple holding tracers as one array: leaves converted, then stacked."""
  if not isinstance(obj, (list, tuple)):
    return lax.convert_element_type(obj, dtype) if isinstance(obj, (Array, Tracer)) else \
        util.scalar_constant(np.asarray(obj), dtype)
  parts = [_stack_nested(o, dtype) for o in obj]
  shapes = {aval_of(p).shape for p in parts}
  if len(shapes) != 1:
    raise ValueError(f"setting an array element with a sequence: the nested sequence is ragged "
                     f"(element shapes {sorted(shapes)})")
  return lax.concatenate([lax.expand_dims(p, (0,)) for p in parts], 0)


def _host_value_of(x):
  return x._value() if type(x) is Array else x


_STACKED_AT_ONCE = 16  # jax's array() concatenates at most this many elements in one step


def _check_nested_shapes(obj) -> tuple:
  """The shape jax's `array` gives a nested sequence holding Arrays, raising what it raises: a
  sub-sequence without Arrays goes through NumPy (ValueError where it is ragged); one with Arrays
  stacks its elements, each given a leading axis, with lax.concatenate 16 at a time (TypeError
  where their ranks or other dimensions differ)."""
  if not isinstance(obj, (list, tuple)):
    return tuple(aval_of(obj).shape) if isinstance(obj, (Array, Tracer)) else np.shape(obj)
  if not any(isinstance(x, (Array, Tracer)) for x in _leaves(obj, [])):
    return np.shape(np.asarray(_map_nested(_host_value_of, obj)))
  shapes = [(1,) + _check_nested_shapes(o) for o in obj]
  while len(shapes) > _STACKED_AT_ONCE:
    shapes = [_concatenated_shape(shapes[i:i + _STACKED_AT_ONCE])
              for i in range(0, len(shapes), _STACKED_AT_ONCE)]
  return _concatenated_shape(shapes)


def _concatenated_shape(shapes):
  """lax.concatenate's shape along axis 0 for operands of `shapes`, or its TypeError."""
  shown = ", ".join(map(str, shapes))
  if len({len(s) for s in shapes}) != 1:
    raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                    f"{shown}.")
  if len({s[1:] for s in shapes}) != 1:
    raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other than "
                    f"the one being concatenated: concatenating along dimension 0 for shapes "
                    f"{shown}.")
  return (sum(s[0] for s in shapes),) + shapes[0][1:]


def array(object, dtype=None, copy: bool = True, order=None, ndmin: int = 0, *,  # noqa: A002
          device=None, out_sharding=None):
  """An array from `object`: an array, a NumPy array or scalar, a Python scalar, or nested
  lists/tuples of those.

  The dtype follows JAX: the promotion of the leaves (Python scalars weakly typed), so
  `array([1, 2.5])` is float32 and `array([int8(1), 2])` is int8. A Python scalar gives a weakly
  typed 0-d array, as in JAX. 64-bit dtypes become 32-bit ones unless x64 is enabled.

  Args:
    object: the value.
    dtype: optional dtype of the result.
    copy: a NumPy value is always copied (it may be mutated later, through itself or through
      the base of a view); with copy=True (the default) an Array gets storage of its own, as
      in JAX, so donating the copy to a jit leaves the original alive (equinox's filter_jit
      tests); with copy=False it is shared.
    order: only None, 'K', 'A' and 'C' (row-major) are accepted.
    ndmin: prepend size-1 dimensions until the result has at least this many.
    device: a Device or Sharding to commit the result to (None: as it is).
    out_sharding: where to place the result (a sharding; None: as it is).

  Returns:
    A revax Array (or a tracer, if `object` holds traced values).

  Example:
    >>> jnp.array([[1, 2], [3, 4]], dtype=jnp.float32)
    Array([[1., 2.],
           [3., 4.]], dtype=float32)
  """
  if tree_util.is_array_leaf(object):  # typed keys stay keys
    return object.as_array(dtype, copy)
  if (jax_array := getattr(object, "__jax_array__", None)) is not None:  # as JAX: converted
    object = jax_array()
  if order not in (None, "K", "A", "C"):
    raise NotImplementedError(f"array: only C (row-major) order is supported, got order={order!r}")
  dtype = canonical_dtype_arg(dtype)
  if isinstance(object, Array) and copy and dtype is None:
    out = _fresh_copy(object)
  elif isinstance(object, Tracer):  # a traced copy binds copy_p, as JAX's
    out = array_copy(object) if copy else object
    out = out if dtype is None else lax.convert_element_type(out, dtype)
  elif isinstance(object, Array):
    out = object if dtype is None else lax.convert_element_type(object, dtype)
  elif isinstance(object, (list, tuple)):
    out = _array_from_sequence(object, dtype)
  elif type(object) in (bool, int, float, complex):
    d, weak = dtypes.scalar_dtype(object)
    if type(object) is int and dtypes.is_integer(d if dtype is None else dtype):
      np.array(object, dtype=d if dtype is None else dtype)  # OverflowError where it cannot fit
    out = util.scalar_constant(object, d, weak) if dtype is None else \
        util.scalar_constant(object, dtype)
  else:
    value = np.asarray(object)
    if object is None:  # JAX's type for None
      raise ValueError("revax.numpy.array: cannot make an array from NoneType (None is not a "
                       "valid value for an array)")
    if value.dtype == object_dtype:
      raise TypeError(f"revax.numpy.array: cannot make an array from {type(object).__name__}")
    out = from_numpy(value if dtype is None else value.astype(dtype), fresh=dtype is not None)
  nd = aval_of(out).ndim
  if ndmin > nd:
    out = lax.expand_dims(out, tuple(range(ndmin - nd)))
  if mesh_placement.active and device is None and out_sharding is None and \
      not isinstance(object, (Array, Tracer)):
    out = mesh_placement.settle_created(out)  # under set_mesh: over the mesh, as JAX's
  return _placed(out, device, out_sharding)


object_dtype = np.dtype(object)


def _fresh_copy(x: Array) -> Array:
  """A new Array with storage of its own holding `x`'s value, where `x` is (a donated copy must
  not free `x`): a jitted identity, whose result XLA writes into a new buffer (nothing is
  donated), queued on the device like any call, never through the host; the result is committed
  and sharded as `x` is. Inside a host callback running on one of XLA's threads, where no
  program may start, the copy is made on the host."""
  from revax._src.runtime import client
  if client.execution_refused():  # in a host callback on an XLA thread: a host copy
    return Array(x.aval, npy=np.array(x._value()))
  global _identity
  if _identity is None:
    from revax._src.jit import jit
    _identity = jit(lambda v: v)
  return _identity(x)


_identity = None


def _dims_as_values(obj):
  """`obj` with its symbolic sizes (as in `jnp.array(x.shape)`) as traced values."""
  if isinstance(obj, (list, tuple)):
    return type(obj)(_dims_as_values(o) for o in obj)
  return dim_as_value(obj) if is_symbolic_dim(obj) else obj


def _array_from_sequence(obj, dtype):
  obj = _dims_as_values(obj)
  leaves = _leaves(obj, [])
  for x in leaves:
    if not (isinstance(x, (Array, Tracer, np.ndarray, np.generic))
            or type(x) in (bool, int, float, complex)):
      raise TypeError(f"revax.numpy.array: unexpected element of type {type(x).__name__} in a "
                      "nested sequence")
  if dtype is None:
    dtype = (dtypes.promote_types_weak(*((a.dtype, a.weak_type) for a in map(aval_of, leaves)))[0]
             if leaves else dtypes.default_float_dtype())
  if any(isinstance(x, (Array, Tracer)) for x in leaves):
    _check_nested_shapes(obj)  # (jax's errors for ragged nestings of Arrays)
  if _has_traced_leaf(leaves):
    return _stack_nested(obj, dtype)
  value = np.array(_map_nested(_host_value_of, obj), dtype=dtype)
  return from_numpy(value, fresh=True)


def _map_nested(fn, obj):
  if isinstance(obj, (list, tuple)):
    return [_map_nested(fn, o) for o in obj]
  return fn(obj)


def asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
  """`array(a, dtype)` without a copy: arrays are returned as they are when the dtype agrees
  (and no `out_sharding` asks to place them).

  Example:
    >>> jnp.asarray(np.arange(3))  # NumPy's int64 becomes int32 (x64 is off)
    Array([0, 1, 2], dtype=int32)
  """
  if tree_util.is_array_leaf(a):
    return a.as_array(dtype, copy)
  return array(a, dtype=dtype, copy=bool(copy), order=order, device=device,
               out_sharding=out_sharding)


# --- filled arrays -------------------------------------------------------------------------------
def _check_shape(shape, fun_name):
  shape = canonicalize_shape(shape)
  if any(d < 0 for d in shape):
    raise TypeError(f"{fun_name}: negative dimensions are not allowed, got shape {shape}")
  return shape


def zeros(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of zeros (float32 unless `dtype` says otherwise), placed as `device` (a Device or
  Sharding) or `out_sharding` (a sharding) says; None: as it is.

  Example:
    >>> jnp.zeros((2, 3), jnp.int32)
    Array([[0, 0, 0],
           [0, 0, 0]], dtype=int32)
  """
  shape = _check_shape(shape, "zeros")
  return _placed(util.full_of(shape, 0, canonical_dtype_arg(dtype) or dtypes.default_float_dtype()),
                 device, out_sharding)


def ones(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of ones (float32 unless `dtype` says otherwise), placed as `device` or
  `out_sharding` says."""
  shape = _check_shape(shape, "ones")
  return _placed(util.full_of(shape, 1, canonical_dtype_arg(dtype) or dtypes.default_float_dtype()),
                 device, out_sharding)


def empty(shape, dtype=None, *, device=None, out_sharding=None):
  """Same as `zeros` (XLA has no uninitialized memory to hand out)."""
  return zeros(shape, dtype, device=device, out_sharding=out_sharding)


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
  """An array of `shape` filled with `fill_value` (a scalar, or an array broadcast to `shape`),
  placed as `device` (a Device or Sharding) or `out_sharding` (a sharding) says.

  Without `dtype` the dtype (and weak type) is that of `fill_value`: `full(3, 2)` is a weakly
  typed int32 array.
  """
  shape = _check_shape(shape, "full")
  util.check_arraylike("full", fill_value)
  return _placed(util.broadcast_to(asarray(fill_value, dtype=dtype), shape), device, out_sharding)


def _like(fun_name, a, dtype, shape):
  if not util.is_operand(a) and hasattr(a, "shape") and hasattr(a, "dtype"):
    # a ShapeDtypeStruct (anything with a shape and a dtype), as JAX's *_like accept
    aval = ShapedArray(tuple(a.shape), np.dtype(a.dtype), bool(getattr(a, "weak_type", False)))
  else:
    (a,) = util.ensure_arraylike(fun_name, a)
    aval = aval_of(a)
  out_shape = aval.shape if shape is None else _check_shape(shape, fun_name)
  if dtype is None:
    return out_shape, aval.dtype, aval.weak_type
  return out_shape, canonical_dtype_arg(dtype), False


def _like_device(a, shape, weak, device, out_sharding):
  """Where a `*_like(a)` result goes: `device` when given; else, as JAX's lax.full_like, the
  placement of `a` when `a` is a committed concrete array and the result is not weakly typed
  (a sharded `a` only for a result of its shape), so the result is committed there too."""
  if device is not None or out_sharding is not None or weak or not isinstance(a, Array) or \
      not a.committed:
    return device
  if type(a) is Array:
    return a.device
  return a.sharding if tuple(shape) == a.shape else None


@tree_util.accepts_array_leaves()
def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """Zeros with the shape and dtype of `a` (weakly typed if `a` is), placed as `device` (a
  Device or Sharding) or `out_sharding` (a sharding) says; None: where a committed `a` is (as
  in JAX), else as it is."""
  shape, dt, weak = _like("zeros_like", a, dtype, shape)
  device = _like_device(a, shape, weak, device, out_sharding)
  return _vary_like(_placed(util.full_of(shape, 0, dt, weak), device, out_sharding), a)


@tree_util.accepts_array_leaves()
def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """Ones with the shape and dtype of `a` (weakly typed if `a` is), placed as `device` or
  `out_sharding` says (None: as `zeros_like`)."""
  shape, dt, weak = _like("ones_like", a, dtype, shape)
  device = _like_device(a, shape, weak, device, out_sharding)
  return _vary_like(_placed(util.full_of(shape, 1, dt, weak), device, out_sharding), a)


@tree_util.accepts_array_leaves()
def empty_like(a, dtype=None, shape=None, *, device=None):
  """Same as `zeros_like`."""
  return zeros_like(a, dtype, shape, device=device)


@tree_util.accepts_array_leaves()
def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
  """`fill_value` broadcast to the shape of `a`, in the dtype of `a` unless `dtype` is given,
  placed as `device` or `out_sharding` says (None: as `zeros_like`). As jax's, a fill value
  that is not a scalar makes a strongly typed result, placed only where `device` says."""
  shape, dt, weak = _like("full_like", a, dtype, shape)
  util.check_arraylike("full_like", fill_value)
  fill = asarray(fill_value)
  if aval_of(fill).shape:
    weak = False
  else:
    device = _like_device(a, shape, weak, device, out_sharding)
  fill = lax.convert_element_type(fill, dt, weak)
  return _vary_like(_placed(util.broadcast_to(fill, shape), device, out_sharding), a)


def _vary_like(val, a):
  """Inside shard_map, `val` varying over the manual axes `a` varies over (as JAX's *_like)."""
  if not vma.active():
    return val
  try:
    varying = vma.varying(aval_of(a))
  except TypeError:  # (a list or a scalar: invariant)
    return val
  return vma.cast_to(val, aval_of(val), varying)


# --- ranges --------------------------------------------------------------------------------------
def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
  """Evenly spaced values in [start, stop), as np.arange (arguments must be concrete), placed
  as `device` (a Device or Sharding) or `out_sharding` (a sharding) says; None: as it is.

  The dtype is the promotion of the arguments (int32 for Python ints, float32 for floats).

  Example:
    >>> jnp.arange(5)
    Array([0, 1, 2, 3, 4], dtype=int32)
    >>> jnp.arange(0., 1., .25)
    Array([0.  , 0.25, 0.5 , 0.75], dtype=float32)
  """
  if is_symbolic_dim(start) or is_symbolic_dim(stop) or is_symbolic_dim(step):
    return _placed(_symbolic_arange(start, stop, step, dtype), device, out_sharding)
  dt = canonical_dtype_arg(dtype)
  for a, n in zip((start, stop, step), ("start", "stop", "step")):
    if a is not None and tuple(getattr(a, "shape", None) or np.shape(a)):  # ValueError as JAX
      raise ValueError(f"arange: arguments must be scalars; got {n} of shape {np.shape(a)}")
  args = [a for a in (start, stop, step) if a is not None]
  start_v, stop_v, step_v = (None if a is None else util.concrete_scalar(a, "arange", n)
                             for a, n in zip((start, stop, step), ("start", "stop", "step")))
  if dt is None:
    dt = dtypes.promote_types_weak(*((a.dtype, a.weak_type) for a in map(aval_of, args)))[0]
  if any(dtypes.is_complex(aval_of(a).dtype) for a in args):
    raise ValueError("Passing complex start/stop/step to jnp.arange is no longer supported "
                     "starting in JAX v0.10.0.")
  # jax's three forms, in its arithmetic: start + step * iota in the working dtype (float32 for
  # narrower floats), iota, start + iota (sizes from the Python/NumPy scalars)
  if stop_v is None:
    start_v, stop_v = 0, start_v
  if step is not None:
    if step_v == 0:
      raise ZeroDivisionError("arange: step must not be zero")
    working = (dtypes.float32 if dtypes.is_float(dt) and dtypes.finfo(dt).bits < 32 else dt)
    size = max(0, int(np.ceil((stop_v - start_v) / step_v)))
    out = lax.convert_element_type(lax.add(
        lax.convert_element_type(start_v, working),
        lax.mul(lax.convert_element_type(step_v, working),
                lax.broadcasted_iota(working, (size,), 0))), dt)
  elif start_v == 0:
    out = lax.broadcasted_iota(dt, (max(0, int(np.ceil(stop_v))),), 0)
  else:
    out = lax.add(lax.convert_element_type(start_v, dt),
                  lax.broadcasted_iota(dt, (max(0, int(np.ceil(stop_v - start_v))),), 0))
  return _placed(out, device, out_sharding)


def _symbolic_arange(start, stop, step, dtype):
  """arange(n) of a symbolic size n: an iota (JAX supports only this form)."""
  if stop is not None or step is not None:
    raise NotImplementedError(
        "jnp.arange with a symbolic dimension is supported only as arange(n) (as in JAX); got "
        f"arange({start}, {stop}, {step})")
  dt = canonical_dtype_arg(dtype) or dtypes.default_int_dtype()
  return lax.iota(dt, start)


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0, *, device=None):
  """`num` evenly spaced values from `start` to `stop` (inclusive unless endpoint=False).

  jax's formula, compiled as jax's `_linspace` is (eagerly too): sample k is
  start * (1 - k / div) + stop * (k / div) in the computation dtype, div = num - 1 (num without
  the endpoint), the endpoint appended as `stop` itself; integer dtypes take the floor.

  Args:
    start, stop: the bounds (arrays broadcast together; traced too).
    num: the number of samples (static). endpoint: whether `stop` is the last sample.
    retstep: also return the step. dtype: the result dtype (default: the inexact promotion of
      start and stop). axis: where the samples run in the result. device: where to commit it.

  Returns:
    The samples, and the step too if `retstep`.

  Example:
    >>> jnp.linspace(0., 1., 5)
    Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
  """
  if not is_symbolic_dim(num):
    num = operator.index(util.concrete_scalar(num, "linspace", "num"))
  axis = operator.index(util.concrete_scalar(axis, "linspace", "axis"))
  dtype = canonical_dtype_arg(dtype)
  fun = _linspace_impl if is_symbolic_dim(num) else _linspace
  out = fun(start, stop, num=num, endpoint=bool(endpoint), retstep=bool(retstep), dtype=dtype,
            axis=axis)
  if retstep:
    return _placed(out[0], device), out[1]
  return _placed(out, device)


def _linspace_impl(start, stop, num, endpoint, retstep, dtype, axis):
  """jax's `_linspace`, step by step."""
  if num < 0:
    raise ValueError(f"Number of samples, {num}, must be non-negative.")
  util.check_arraylike("linspace", start, stop)
  start, stop = asarray(start), asarray(stop)
  if dtype is None:
    dtype = util.to_inexact_dtype(util.result_type_of(start, stop)[0])
  computation_dtype = util.to_inexact_dtype(dtype)
  start = lax.convert_element_type(start, computation_dtype)
  stop = lax.convert_element_type(stop, computation_dtype)
  bounds_shape = list(util.broadcast_shapes(aval_of(start).shape, aval_of(stop).shape))
  broadcast_start = util.broadcast_to(start, tuple(bounds_shape))
  broadcast_stop = util.broadcast_to(stop, tuple(bounds_shape))
  axis = len(bounds_shape) + axis + 1 if axis < 0 else axis
  if not 0 <= axis <= len(bounds_shape):
    raise ValueError(f"axis {axis} is out of bounds for array of dimension "
                     f"{len(bounds_shape) + 1}")
  bounds_shape.insert(axis, 1)
  div = (num - 1) if endpoint else num
  if num > 1:
    delta = lax.div(lax.sub(stop, start), util.scalar_constant(div, computation_dtype))
    iota_shape = [1] * len(bounds_shape)
    iota_shape[axis] = div
    real_dtype = dtypes.finfo(computation_dtype).dtype
    step = lax.div(lax.reshape(lax.iota(real_dtype, div), tuple(iota_shape)),
                   util.scalar_constant(div, real_dtype))
    step = lax.convert_element_type(step, computation_dtype)
    out_shape = list(bounds_shape)
    out_shape[axis] = div
    out_shape = tuple(out_shape)

    def spread(x):  # (jnp's broadcasting of the products, with lax operations)
      return util.broadcast_to(x, out_shape)
    one_minus = lax.sub(util.full_of(tuple(iota_shape), 1, computation_dtype), step)
    out = lax.add(
        lax.mul(spread(lax.reshape(broadcast_start, tuple(bounds_shape))), spread(one_minus)),
        lax.mul(spread(lax.reshape(broadcast_stop, tuple(bounds_shape))), spread(step)))
    if endpoint:
      out = lax.concatenate([out, lax.expand_dims(broadcast_stop, (axis,))], axis)
  elif num == 1:
    delta = (util.full_of((), np.nan, computation_dtype) if endpoint
             else lax.sub(stop, start))
    out = lax.reshape(broadcast_start, tuple(bounds_shape))
  else:
    empty_shape = list(util.broadcast_shapes(aval_of(start).shape, aval_of(stop).shape))
    empty_shape.insert(axis, 0)
    delta = util.full_of((), np.nan, computation_dtype)
    out = zeros(tuple(empty_shape), dtype)
  if dtypes.is_integer(dtype) and not dtypes.is_integer(aval_of(out).dtype):
    out = lax.floor(out)
  result = lax.convert_element_type(out, dtype)
  return (result, delta) if retstep else result


_linspace = util.jitted_as_in_jax(
    static_argnames=("num", "endpoint", "retstep", "dtype", "axis"))(_linspace_impl)


def eye(N, M=None, k: int = 0, dtype=None, *, device=None):
  """An N x M array with ones on the k-th diagonal and zeros elsewhere (committed to `device`, a
  Device or Sharding, when given).

  Example:
    >>> jnp.eye(2, 3, k=1)
    Array([[0., 1., 0.],
           [0., 0., 1.]], dtype=float32)
  """
  def size(d, name):
    return d if is_symbolic_dim(d) else operator.index(util.concrete_scalar(d, "eye", name))
  N = size(N, "N")
  M = N if M is None else size(M, "M")
  k = operator.index(util.concrete_scalar(k, "eye", "k"))
  if N < 0 or M < 0:
    raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
  dt = canonical_dtype_arg(dtype) or dtypes.default_float_dtype()
  rows = lax.broadcasted_iota(dtypes.int32, (N, M), 0)
  cols = lax.broadcasted_iota(dtypes.int32, (N, M), 1)
  return _placed(lax.convert_element_type(
      lax.eq(lax.add(rows, util.full_of((N, M), k, dtypes.int32)), cols), dt), device)


def identity(n, dtype=None):
  """The n x n identity matrix."""
  return eye(n, dtype=dtype)
