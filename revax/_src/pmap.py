"""pmap: map a function over the leading axis of its inputs, one member per device.

revax's pmap has JAX's signature and values: `pmap(f, axis_name="i")(xs)` is
`jit(vmap(f, axis_name="i"))(xs)` with collectives over "i" (psum, all_gather, ...) combining the
members, and the mapped axis may not be larger than the number of devices, as in JAX. As JAX
defines it today, a pmap over several devices is a jit of a shard_map over a 1-d mesh of the
first (or the given) devices: one member per device, the collectives XLA's. A mapped size of 1
(or no mapped input) runs as `jit(vmap(f))` on one device.
"""
from __future__ import annotations

import threading

import numpy as np

from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.jit import jit
from revax._src.lax import batch_util
from revax._src.shard_map import shard_map
from revax._src.sharding import Mesh, PartitionSpec
from revax._src.vmap import _axes_leaves, vmap

__all__ = ["pmap"]


# How many pmapped functions are being traced on this thread (a pmap inside one is refused).
_inside = threading.local()


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=()):
  """Map `fun` over axis `in_axes` of its inputs with named-axis collectives, compiled.

  Args:
    fun: the function of one member's values.
    axis_name: the name collectives inside `fun` use for the mapped axis.
    in_axes: an int, None, or a tree prefix of the non-static positional arguments (a tuple
      with one entry per argument), as in `vmap`.
    out_axes: an int, None, or a tree prefix of the output, as in `vmap`.
    static_broadcasted_argnums: positional arguments passed to every member as static values.
    devices: the devices to map over (default: all); the mapped size may not exceed their count.
    backend, donate_argnums: accepted for compatibility.
    axis_size: the mapped size when no input is mapped.

  Returns:
    The mapped function. Keyword arguments are mapped along their axis 0 (as in JAX). It is
    traced once per argument signature (as a jit is), and has `.lower(*args, **kwargs)` giving
    the `Lowered` of that compiled program.

  Raises:
    ValueError: the mapped axis is larger than the number of devices.

  Example:
    >>> revax.pmap(lambda x: lax.psum(x, "i"), axis_name="i")(jnp.ones((1, 3)))  # one device
    Array([[1., 1., 1.]], dtype=float32)
  """
  if not callable(fun):
    raise TypeError(f"pmap expects a callable, got {fun!r}")
  del backend, donate_argnums
  static = ((static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int)
            else tuple(static_broadcasted_argnums))
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)

  def positional_axes(n):
    return in_axes if isinstance(in_axes, tuple) else (in_axes,) * n

  def split(args, kwargs):
    """The non-static positional arguments, and one normalised mapped axis (or None) per leaf
    of them and of the keyword arguments (mapped along their axis 0, as in JAX)."""
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    if isinstance(in_axes, tuple) and len(in_axes) != len(dyn):
      raise ValueError(f"pmap in_axes must have one entry per non-static positional argument "
                       f"({len(dyn)}), got {len(in_axes)}")
    leaves = tree_util.tree_leaves((dyn, kwargs))
    axes = _axes_leaves("in_axes", (positional_axes(len(dyn)), 0), (dyn, kwargs), "pmap")
    norm = []
    for leaf, ax in zip(leaves, axes, strict=True):
      nd = get_aval(leaf).ndim
      if ax is not None and not -nd <= ax < nd:
        raise ValueError(f"pmap was requested to map its argument along axis {ax}, which "
                         f"implies that its rank should be at least "
                         f"{ax + 1 if ax >= 0 else -ax}, but is only {nd} (its shape is "
                         f"{get_aval(leaf).shape})")
      norm.append(None if ax is None else ax % nd)
    return dyn, leaves, norm

  def member_of(args):
    def member_fn(*dyn_args, **kwargs):
      it = iter(dyn_args)
      full = [args[i] if i in static else next(it) for i in range(len(args))]
      _inside.depth = getattr(_inside, "depth", 0) + 1
      try:
        return fun(*full, **kwargs)
      finally:
        _inside.depth -= 1
    return member_fn

  def body(*args, **kwargs):
    dyn, leaves, axes = split(args, kwargs)
    sizes = {get_aval(leaf).shape[ax] for leaf, ax in zip(leaves, axes) if ax is not None}
    size = axis_size if not sizes else max(sizes)
    member_fn = member_of(args)
    store = {}

    def flat_member(*dyn_args, **kw):
      out = member_fn(*dyn_args, **kw)
      out_leaves, store["tree"] = tree_util.tree_flatten(out)
      store["axes"] = _axes_leaves("out_axes", out_axes, out, "pmap")
      return out_leaves

    if size is not None and size > 1 and sizes:
      pool = list(devices) if devices is not None else list(_backend_devices())
      outs = _on_devices(flat_member, (dyn, kwargs), axes, axis_name, pool[:size])
    else:
      outs = vmap(flat_member, in_axes=positional_axes(len(dyn)), axis_name=axis_name,
                  axis_size=axis_size)(*dyn, **kwargs)
    return _place_outputs(outs, store)

  compiled = jit(body, static_argnums=static)

  def check(args, kwargs):
    if getattr(_inside, "depth", 0):
      raise ValueError("pmap inside another pmap is not supported (as in JAX 0.10.2, whose pmap "
                       "is a shard_map over a 1-d mesh); use vmap with an axis_name for the inner "
                       "map, or shard_map over a 2-d mesh")
    available = len(devices) if devices is not None else len(_backend_devices())
    _, leaves, axes = split(args, kwargs)
    sizes = {get_aval(leaf).shape[ax] for leaf, ax in zip(leaves, axes) if ax is not None}
    size = axis_size if not sizes else max(sizes)
    if size is not None and size > available:
      raise ValueError(f"pmap: the mapped axis has size {size}, but only {available} devices are "
                       "available (start revax with REVAX_CPU_DEVICE_COUNT set to use more CPU "
                       "devices)")

  @wrapping.wraps(fun)
  def pmap_f(*args, **kwargs):
    check(args, kwargs)
    return compiled(*args, **kwargs)

  def lower(*args, **kwargs):
    check(args, kwargs)
    return compiled.lower(*args, **kwargs)

  pmap_f.lower = lower
  return pmap_f


def _backend_devices():
  from revax._src.runtime.client import get_backend
  return get_backend().devices


def _on_devices(flat_member, call, axes, axis_name, devices):
  """One member per device: a shard_map over a 1-d mesh of `devices`, each device getting its
  slice of the mapped axes (moved to the front; `axes`, one per leaf of `call`, the
  (positional, keyword) arguments) and dropping it for `flat_member`."""
  name = axis_name if isinstance(axis_name, str) else "_pmap"
  mesh = Mesh(np.array(devices, dtype=object), (name,))
  leaves, tree = tree_util.tree_flatten(call)
  front = [leaf if ax is None else batch_util.moveaxis(leaf, ax, 0)
           for leaf, ax in zip(leaves, axes)]
  in_specs = tuple(PartitionSpec() if ax is None else PartitionSpec(name) for ax in axes)

  def member(*blocks):
    pos, kw = tree_util.tree_unflatten(
        tree, [b if ax is None else b[0] for b, ax in zip(blocks, axes)])
    return [leaf[None] for leaf in flat_member(*pos, **kw)]

  return shard_map(member, mesh=mesh, in_specs=in_specs, out_specs=PartitionSpec(name))(*front)


def _place_outputs(outs, store):
  """The members' outputs (mapped axis in front) with that axis moved to its out_axes; an
  output whose out_axes is None is the first member's, as JAX's pmap returns it."""
  for leaf, ax in zip(outs, store["axes"], strict=True):
    nd = get_aval(leaf).ndim
    if ax is not None and not -nd <= ax < nd:
      raise ValueError(f"pmap out_axes {ax} is out of bounds for an output of rank {nd}")
  finals = [leaf[0] if ax is None else batch_util.moveaxis(leaf, 0, ax)
            for leaf, ax in zip(outs, store["axes"], strict=True)]
  return tree_util.tree_unflatten(store["tree"], finals)
