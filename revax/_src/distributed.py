"""Multi-process initialization (as jax.distributed), for the single process revax runs in.

revax has no distributed runtime (no coordination service, no cross-process devices). A
one-process "cluster" (`num_processes=1, process_id=0`) initializes (nothing is started, and
process_index/process_count stay 0/1); more processes raise NotImplementedError. Arguments are
checked as JAX checks them, and, as in JAX, initialize must come before the backend exists.
"""
from __future__ import annotations

import os

__all__ = ["initialize", "is_initialized", "shutdown"]

_state = {"initialized": False}


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100, shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None, slice_index: int | None = None,
               partition_index: int | None = None) -> None:
  """Join a cluster of `num_processes` processes coordinated at `coordinator_address`.

  revax supports the one-process cluster only (see the module docstring). Errors as JAX:
  RuntimeError once the backend has been created or after a first initialize, ValueError for a
  missing coordinator address / process count / process id or an id out of range, TypeError for
  non-integer ones.

  Example (at the start of a program, before any computation):
    revax.distributed.initialize("localhost:1234", num_processes=1, process_id=0)
  """
  del (local_device_ids, cluster_detection_method, initialization_timeout,
       heartbeat_timeout_seconds, shutdown_timeout_seconds, slice_index, partition_index)
  from revax._src.runtime import client
  if client._backend is not None or _state["initialized"]:
    raise RuntimeError("jax.distributed.initialize() must be called before any JAX calls that "
                       "might initialise the XLA backend. This includes any computation, but "
                       "also calls to jax.devices, jax.device_put, and others.")
  coordinator_address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
  if coordinator_address is None:
    raise ValueError("coordinator_address should be defined.")
  if num_processes is None:
    raise ValueError("Number of processes must be defined.")
  if process_id is None:
    raise ValueError("The process id of the current process must be defined.")
  if not isinstance(process_id, int):
    raise TypeError("process_id must be a nonnegative int. "
                    f"Got process_id={process_id} of type {type(process_id)}.")
  if not isinstance(num_processes, int):
    raise TypeError("num_processes must be a positive int. "
                    f"Got num_processes={num_processes} of type {type(num_processes)}.")
  if not 0 <= process_id < num_processes:
    raise ValueError("process_id and num_processes must be nonnegative, with process_id < "
                     f"num_processes. Got process_id={process_id}, "
                     f"num_processes={num_processes}.")
  del coordinator_bind_address
  if num_processes != 1:
    raise NotImplementedError(f"revax runs in a single process; num_processes={num_processes} "
                              "needs a distributed runtime revax does not have")
  _state["initialized"] = True


def is_initialized() -> bool:
  """Whether `initialize` has been called (and not undone by `shutdown`)."""
  return _state["initialized"]


def shutdown() -> None:
  """Leave the cluster; nothing happens if `initialize` was not called (as JAX)."""
  _state["initialized"] = False
