"""pmap: map a function over the leading axis of its inputs, one member per device.

revax's pmap has JAX's signature and values: `pmap(f, axis_name="i")(xs)` is
`jit(vmap(f, axis_name="i"))(xs)` with collectives over "i" (psum, all_gather, ...) combining the
members, and the mapped axis may not be larger than the number of devices, as in JAX. As JAX
defines it today, a pmap over several devices is a jit of a shard_map over a 1-d mesh of the
first (or the given) devices: one member per device, the collectives XLA's. A mapped size of 1
(or no mapped input) runs as `jit(vmap(f))` on one device.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.jit import jit
from revax._src.lax import batch_util
from revax._src.shard_map import shard_map
from revax._src.sharding import Mesh, PartitionSpec
from revax._src.vmap import vmap

__all__ = ["pmap"]


# How many pmapped functions are being traced on this thread (a pmap inside one is refused).
_inside = threading.local()


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=()):
  """Map `fun` over axis `in_axes` of its inputs with named-axis collectives, compiled.

  Args:
    fun: the function of one member's values.
    axis_name: the name collectives inside `fun` use for the mapped axis.
    in_axes, out_axes: as in `vmap`.
    static_broadcasted_argnums: positional arguments passed to every member as static values.
    devices: the devices to map over (default: all); the mapped size may not exceed their count.
    backend, donate_argnums: accepted for compatibility.
    axis_size: the mapped size when no input is mapped.

  Returns:
    The mapped function.

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

  @functools.wraps(fun)
  def pmap_f(*args, **kwargs):
    if kwargs:
      raise TypeError("pmap does not support keyword arguments; pass them positionally")
    if getattr(_inside, "depth", 0):
      raise ValueError("pmap inside another pmap is not supported (as in JAX 0.10.2, whose pmap "
                       "is a shard_map over a 1-d mesh); use vmap with an axis_name for the inner "
                       "map, or shard_map over a 2-d mesh")
    from revax._src.runtime.client import get_backend
    available = len(devices) if devices is not None else len(get_backend().devices)
    dyn = [a for i, a in enumerate(args) if i not in static]
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(dyn)
    if isinstance(in_axes, (tuple, list)) and len(in_axes) != len(dyn):
      raise ValueError(f"pmap in_axes must have one entry per non-static positional argument "
                       f"({len(dyn)}), got {len(in_axes)}")
    sizes = {get_aval(leaf).shape[ax] for a, ax in zip(dyn, axes, strict=True) if ax is not None
             for leaf in tree_util.tree_leaves(a) if get_aval(leaf).ndim > ax}
    size = axis_size if not sizes else max(sizes)
    if size is not None and size > available:
      raise ValueError(f"pmap: the mapped axis has size {size}, but only {available} devices are "
                       "available (start revax with REVAX_CPU_DEVICE_COUNT set to use more CPU "
                       "devices)")

    def member_fn(*dyn_args):
      it = iter(dyn_args)
      full = [args[i] if i in static else next(it) for i in range(len(args))]
      _inside.depth = getattr(_inside, "depth", 0) + 1
      try:
        return fun(*full)
      finally:
        _inside.depth -= 1

    if size is not None and size > 1 and any(ax is not None for ax in axes):
      pool = list(devices) if devices is not None else list(get_backend().devices)
      return _on_devices(member_fn, dyn, axes, out_axes, axis_name, pool[:size])
    mapped = vmap(member_fn, in_axes=tuple(axes), out_axes=out_axes, axis_name=axis_name,
                  axis_size=axis_size)
    return jit(mapped)(*dyn)

  return pmap_f


def _on_devices(member_fn, dyn, axes, out_axes, axis_name, devices):
  """One member per device: jit of a shard_map over a 1-d mesh of `devices`, each device
  getting its slice of the mapped axis (moved to the front) and dropping it for `member_fn`."""
  name = axis_name if isinstance(axis_name, str) else "_pmap"
  mesh = Mesh(np.array(devices, dtype=object), (name,))
  front = [tree_util.tree_map(lambda leaf, ax=ax: batch_util.moveaxis(leaf, ax, 0), a)
           if ax is not None else a for a, ax in zip(dyn, axes, strict=True)]
  in_specs = tuple(PartitionSpec(name) if ax is not None else PartitionSpec() for ax in axes)
  store = {}

  def member(*blocks):
    args = [tree_util.tree_map(lambda leaf: leaf[0], b) if ax is not None else b
            for b, ax in zip(blocks, axes, strict=True)]
    out = member_fn(*args)
    store["tree"] = tree_util.tree_structure(out)
    return tree_util.tree_map(lambda leaf: leaf[None], out)

  outs = jit(shard_map(member, mesh=mesh, in_specs=in_specs, out_specs=PartitionSpec(name)))(
      *front)
  leaves = tree_util.tree_leaves(outs)
  o_axes = (out_axes if isinstance(out_axes, (tuple, list)) else [out_axes] * len(leaves))
  if len(o_axes) != len(leaves):
    o_axes = tree_util.tree_leaves(out_axes)
  leaves = [batch_util.moveaxis(leaf, 0, ax) if ax else leaf for leaf, ax in
            zip(leaves, o_axes, strict=True)]
  return tree_util.tree_unflatten(tree_util.tree_structure(outs), leaves)
