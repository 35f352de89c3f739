"""Device meshes for `revax.sharding.Mesh` (JAX's `jax.experimental.mesh_utils`).

`create_device_mesh` arranges devices into an array of the requested shape. JAX's picks, on TPUs,
an order that follows the chips' physical torus (from each device's `coords`); revax's devices
carry no coordinates, so on every platform the devices keep their order (sorted by id on GPUs,
as JAX does there), which is what JAX returns on CPU. A handler registered in
`device_kind_handler_dict` for a device kind takes precedence, as in JAX.

`create_hybrid_device_mesh` tiles one such mesh per granule (slice, or process with
`process_is_granule=True`) into the outer `dcn_mesh_shape`. revax runs in one process, whose
index every device shares.
"""
from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from revax._src.api import devices as _all_devices

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "device_kind_handler_dict"]

# Functions that build the mesh for a device kind, called as
# `handler(mesh_shape, devices, contiguous_submeshes=...)`; one may return None to fall back to
# the general rule. JAX registers its TPU generations' torus layouts here; revax has none.
device_kind_handler_dict: dict[str, Callable[..., np.ndarray | None]] = {}


def _canonicalize_axis_sizes(axis_sizes) -> tuple[int, ...] | None:
  try:
    return tuple(int(s) for s in axis_sizes)
  except (TypeError, ValueError):
    return None


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
  """Creates a device mesh for `revax.sharding.Mesh`.

  Args:
    mesh_shape: shape of logical mesh, ordered by increasing network-intensity e.g.
      [replica, data, mdl] where mdl has the most network communication requirements.
    devices: optionally, the devices to construct a mesh for. Defaults to `revax.devices()`.
    contiguous_submeshes: whether each process's local devices should form a contiguous
      submesh; revax has one process, whose devices are the whole mesh.
    allow_split_physical_axes: whether physical axes may be split (used by JAX's TPU torus
      layouts only).

  Raises:
    ValueError: if the number of devices doesn't equal the product of `mesh_shape`.

  Returns:
    A NumPy array (dtype object) of devices with `mesh_shape` as its shape.

  Example:
    >>> from revax.experimental import mesh_utils
    >>> mesh_utils.create_device_mesh((1,), revax.devices()[:1])
    array([CpuDevice(id=0)], dtype=object)
  """
  del allow_split_physical_axes  # only JAX's TPU torus layouts split physical axes
  if devices is None:
    devices = _all_devices()
  new_mesh_shape = _canonicalize_axis_sizes(mesh_shape)
  if new_mesh_shape is None:
    raise ValueError(f"`mesh_shape` passed to `create_device_mesh` should be a sequence of "
                     f"ints. Got {mesh_shape}")
  if math.prod(new_mesh_shape) != len(devices):
    raise ValueError(f"Number of devices {len(devices)} must equal the product of mesh_shape "
                     f"{new_mesh_shape}")
  last_device = devices[-1]
  handler = device_kind_handler_dict.get(last_device.device_kind, None)
  if handler is not None:
    result = handler(new_mesh_shape, devices, contiguous_submeshes=contiguous_submeshes)
    if result is not None:
      return result
  if last_device.platform == "gpu":
    devices = sorted(devices, key=lambda d: d.id)
  out = np.empty(len(devices), dtype=object)  # never let NumPy look inside a device
  out[:] = list(devices)
  return out.reshape(new_mesh_shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
  """Creates a device mesh for hybrid (e.g., ICI and DCN) parallelism.

  Args:
    mesh_shape: shape of the logical mesh for the faster/inner network, ordered by increasing
      network intensity, e.g. [replica, data, mdl].
    dcn_mesh_shape: shape of the logical mesh for the slower/outer network, in the same order
      as mesh_shape.
    devices: optionally, the devices to construct a mesh for. Defaults to `revax.devices()`.
    process_is_granule: if True, processes are the units of the outer network; otherwise the
      devices' `slice_index` attributes are (CPU devices have none, as in JAX).
    should_sort_granules_by_key: whether granules are sorted by their slice or process index.
    allow_split_physical_axes: passed on to `create_device_mesh`.

  Raises:
    ValueError: if the devices lack the granule attribute, if the number of granules doesn't
      equal the product of `dcn_mesh_shape`, or if a granule's devices do not fill `mesh_shape`.

  Returns:
    A NumPy array of devices with shape `mesh_shape * dcn_mesh_shape` (elementwise).

  Example:
    >>> from revax.experimental import mesh_utils
    >>> mesh_utils.create_hybrid_device_mesh((1,), (1,), revax.devices()[:1],
    ...                                      process_is_granule=True)
    array([CpuDevice(id=0)], dtype=object)
  """
  if devices is None:
    devices = _all_devices()
  attr = "process_index" if process_is_granule else "slice_index"
  if not process_is_granule and not hasattr(devices[0], attr):
    raise ValueError(f"Device {devices[0]} does not have attribute {attr}. See "
                     "`process_is_granule` option.")
  granule_dict = collections.defaultdict(list)
  for dev in devices:
    granule_dict[getattr(dev, attr)].append(dev)
  granules = ([granule_dict[key] for key in sorted(granule_dict.keys())]
              if should_sort_granules_by_key else list(granule_dict.values()))
  if np.prod(dcn_mesh_shape) != len(granules):
    raise ValueError(f"Number of slices {len(granules)} must equal the product of "
                     f"dcn_mesh_shape {dcn_mesh_shape}")
  per_granule_meshes = [create_device_mesh(mesh_shape, granule,
                                           allow_split_physical_axes=allow_split_physical_axes)
                        for granule in granules]
  granule_mesh = np.arange(len(granules)).reshape(dcn_mesh_shape)
  blocks = np.vectorize(lambda i: per_granule_meshes[i], otypes=[object])(granule_mesh)
  return np.block(blocks.tolist())
