"""Multi-host helpers (JAX's `jax.experimental.multihost_utils`) for revax's one process.

revax runs a single controller process that holds every device, so these do what JAX's do when
`jax.process_count() == 1`: gathering and broadcasting across processes return this process's
data as NumPy arrays, barriers and equality checks across processes have nothing to wait for or
compare with, and host-local and global arrays are the same arrays (every array is fully
addressable). Converting host-local data to a global array places it with
`NamedSharding(global_mesh, pspec)`; under a transformation both conversions are the identity,
as JAX's primitives are (their lowering returns the operand and, in one process, the local and
global types agree).
"""
from __future__ import annotations

import contextlib
import zlib
from typing import Any

import numpy as np

from revax._src import tree_util
from revax._src.api import device_put
from revax._src.core import dtypes
from revax._src.core.trace import Tracer
from revax._src.runtime.basearray import Array
from revax._src.sharded_api import process_count
from revax._src.sharding import NamedSharding, PartitionSpec

__all__ = ["ProcessFailureError", "assert_equal", "broadcast_one_to_all",
           "global_array_to_host_local_array", "host_local_array_to_global_array",
           "live_devices", "process_allgather", "reached_preemption_sync_point",
           "sync_global_devices"]


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
  """Broadcast data from a source host (host 0 by default) to all other hosts.

  Args:
    in_tree: pytree of arrays - each array *must* have the same shape across the hosts.
    is_source: optional bool denoting whether the caller is the source. Only the source host
      contributes the data. If None, host 0 is used.

  Returns:
    A pytree matching in_tree where the leaves now all contain the data from the first host
    (NumPy arrays: in one process, this process's own data).

  Example:
    >>> from revax.experimental import multihost_utils
    >>> multihost_utils.broadcast_one_to_all({"step": jnp.int32(3)})
    {'step': array(3, dtype=int32)}
  """
  del is_source  # one process: it is the source
  return tree_util.tree_map(np.asarray, in_tree)


def _allgather_leaf(inp, tiled: bool):
  out = np.asarray(inp)  # every revax array is fully addressable by its one process
  return out if tiled else np.expand_dims(out, axis=0)


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
  """Gather data from across processes.

  Args:
    in_tree: pytree of arrays - each array *must* have the same shape across the hosts.
    tiled: Whether to stack or concat the output. Defaults to False i.e. stack into a new
      positional axis at index 0.

  Returns:
    Pytrees of NumPy arrays: with one process, each leaf's value with a new leading axis of
    size 1 (`tiled=False`) or unchanged (`tiled=True`).

  Example:
    >>> from revax.experimental import multihost_utils
    >>> multihost_utils.process_allgather(jnp.arange(3))
    array([[0, 1, 2]], dtype=int32)
  """
  return tree_util.tree_map(lambda x: _allgather_leaf(x, tiled), in_tree)


def sync_global_devices(name: str):
  """Creates a barrier across all hosts/devices (with one process, it checks nothing but that
  `name` is a string)."""
  h = np.uint32(zlib.crc32(name.encode()))
  assert_equal(h, f"sync_global_devices name mismatch ('{name}')")


def assert_equal(in_tree, fail_message: str = ""):
  """Verifies that all the hosts have the same tree of values (compared with `np.equal`, so a
  NaN is never equal to itself, as in JAX).

  Raises:
    AssertionError: with `fail_message` when a leaf differs.
  """
  def concat_in_tree(x):
    x = np.asarray(x)
    if x.ndim == 0:
      x = np.expand_dims(x, axis=0)
    return np.concatenate([x] * process_count())

  out = process_allgather(in_tree, tiled=True)
  expected_in_tree = tree_util.tree_map(concat_in_tree, in_tree)
  if not tree_util.tree_all(tree_util.tree_map(lambda *x: np.all(np.equal(*x)),
                                               expected_in_tree, out)):
    raise AssertionError(f"{fail_message}. Expected: {out}; got: {in_tree}.")


def reached_preemption_sync_point(step_id: int) -> bool:
  """Whether all hosts have reached a preemption sync step: always False in revax, which (like
  JAX without `jax.distributed.initialize`) has no distributed client to deliver notices."""
  del step_id
  return False


def _flatten_pspecs(name: str, tree, pspecs) -> list:
  """One PartitionSpec (or None) per leaf of `tree`, from `pspecs`: a pytree prefix of it."""
  is_leaf = lambda s: s is None or isinstance(s, PartitionSpec)  # noqa: E731
  if is_leaf(pspecs):
    return [pspecs] * len(tree_util.tree_leaves(tree))
  try:
    return tree_util.prefix_leaves(pspecs, tree, is_leaf=is_leaf)
  except (ValueError, TypeError) as e:
    raise ValueError(f"pytree structure error: {name} must be a PartitionSpec or a pytree "
                     f"prefix of the values with a PartitionSpec at each leaf: {e}") from None


def _check_pspec(pspec):
  if pspec is None:
    raise ValueError("`None` is not a valid input to the pspecs argument. Please use "
                     "jax.sharding.PartitionSpec() if you wanted to replicate your input.")


def _host_value(arr):
  """A non-array leaf as NumPy (float0 tangents as bool zeros, which XLA can hold)."""
  if not hasattr(arr, "shape"):
    arr = np.array(arr)
  if arr.dtype == dtypes.float0:
    arr = np.zeros(arr.shape, dtype=np.dtype(bool))
  return arr


def _local_to_global(arr, global_mesh, pspec):
  _check_pspec(pspec)
  if isinstance(arr, Tracer):
    return arr
  arr = arr if isinstance(arr, Array) else _host_value(arr)
  return device_put(arr, NamedSharding(global_mesh, pspec))


def host_local_array_to_global_array(local_inputs: Any, global_mesh, pspecs: Any):
  """Converts a host local value to a globally sharded array.

  Each device of `global_mesh` gets its slice of the data according to `pspecs`. In one
  process the host-local data is the whole array, so this is `device_put` with
  `NamedSharding(global_mesh, pspec)` for each leaf (and the identity under jit, grad, vmap).

  Args:
    local_inputs: A Pytree of host local values.
    global_mesh: A `revax.sharding.Mesh`.
    pspecs: A Pytree of `revax.sharding.PartitionSpec`s (a prefix of `local_inputs`).

  Returns:
    A pytree of global arrays.

  Raises:
    ValueError: if a pspec is None (use `PartitionSpec()` to replicate).
  """
  flat, tree = tree_util.tree_flatten(local_inputs)
  specs = _flatten_pspecs("input pspecs", local_inputs, pspecs)
  out = [_local_to_global(x, global_mesh, s) for x, s in zip(flat, specs, strict=True)]
  return tree_util.tree_unflatten(tree, out)


def _global_to_local(arr, global_mesh, pspec):
  _check_pspec(pspec)
  if isinstance(arr, (Tracer, Array)):
    return arr  # already fully addressable: host local
  return device_put(_host_value(arr), NamedSharding(global_mesh, pspec))


def global_array_to_host_local_array(global_inputs: Any, global_mesh, pspecs: Any):
  """Converts a global array to a host local array.

  In one process every array is fully addressable, hence already host local: arrays come back
  as they are; NumPy values are placed with `NamedSharding(global_mesh, pspec)`.

  Args:
    global_inputs: A Pytree of global arrays.
    global_mesh: A `revax.sharding.Mesh`.
    pspecs: A Pytree of `revax.sharding.PartitionSpec`s (a prefix of `global_inputs`).

  Returns:
    A Pytree of host local arrays.

  Raises:
    ValueError: if a pspec is None (use `PartitionSpec()` to replicate).
  """
  flat, tree = tree_util.tree_flatten(global_inputs)
  specs = _flatten_pspecs("output pspecs", global_inputs, pspecs)
  out = [_global_to_local(x, global_mesh, s) for x, s in zip(flat, specs, strict=True)]
  return tree_util.tree_unflatten(tree, out)


class ProcessFailureError(Exception):
  """Raised by live_devices when one or more processes have failed.

  Attributes:
    failed_devices: A set of devices whose processes failed.
  """

  def __init__(self, failed_devices: set):
    self.failed_devices = failed_devices
    super().__init__(f"Devices failed: {failed_devices}")


class _LiveDevices:
  """`with live_devices(devices) as alive:` runs a block on the live subset of `devices`. It
  needs a distributed client to ask which processes live; revax has none (as JAX without
  `jax.distributed.initialize`), so entering it raises RuntimeError."""

  def __init__(self):
    self.devices = None

  @contextlib.contextmanager
  def __call__(self, devices):
    del devices
    raise RuntimeError("Distributed JAX not initialized.")
    yield  # pragma: no cover (makes this a generator)


live_devices = _LiveDevices()
