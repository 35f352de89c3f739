"""pmap: map a function over the leading axis of its inputs, one member per device.

revax's pmap has JAX's signature and values: `pmap(f, axis_name="i")(xs)` is
`jit(vmap(f, axis_name="i"))(xs)` with collectives over "i" (psum, all_gather, ...) combining the
members, and the mapped axis may not be larger than the number of devices, as in JAX. The
program runs as one XLA computation on the first device: the members are not yet placed one per
device (multi-device placement belongs to jit over a mesh with shardings), which changes where
the work runs, never the result.
"""
from __future__ import annotations

import functools

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.jit import jit
from revax._src.vmap import vmap

__all__ = ["pmap"]


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
      return fun(*full)

    mapped = vmap(member_fn, in_axes=tuple(axes), out_axes=out_axes, axis_name=axis_name,
                  axis_size=axis_size)
    return jit(mapped)(*dyn)

  return pmap_f
