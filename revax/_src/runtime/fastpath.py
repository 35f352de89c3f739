"""The compiled call path: `_fastpath.c`, where it was built, set up from pjrt.py's struct layouts.

jit's repeated call (a `call_plans.CallPlan`), `Executable` runs and a `Buffer`'s finalizer each go through
a handful of PJRT functions. Through ctypes every one of those calls costs about a microsecond of
argument conversion, and wrapping each output in a `Buffer` and an `Array` costs more Python
bytecode than the small programs themselves take to run. The C extension does the same steps,
in the same order, with the same checks:

- `Runner.call(leaves)`: the plan's whole repeated call. Each argument must be an `Array` (the
  exact class) with the plan's aval and a live device buffer, else it answers None and the
  general path runs the call (converting, uploading or raising the error that input deserves);
  then execute and make one `Buffer` and `Array` per output. The call returns once the work is
  queued: outputs still being computed get the plan's pending infos, and the launch's completion
  event joins the device's `Window`; where the program finished at once (or the plan has no
  window: programs with host callbacks), the event is awaited and its error raised at the call.
- `Runner.call_sharded(leaves, launch_id)`: the same for a jit signature over a mesh (a sharded
  plan, call_plans.py): each argument must be a `ShardedArray` with the plan's sharding and
  aval and live shards; the launch is queued without waiting and its outputs are new
  `ShardedArray`s (client.py's `call_planned` keeps the launch in flight).
- `Runner.run(pointers, device, window)`: execute on buffer pointers (`Executable._run`), with
  the same asynchronous return.
- `Window`: one device's completion events in flight, at most `limit` (client.py).
- `Waiter.wait(buffers)`: await each Buffer's ready event and mark it computed.
- `Runner.run_sharded(lists, wait, launch_id)`: a multi-device launch, each under its own
  launch id; without `wait` it returns once queued, with the devices' completion events for
  `Runner.settle(events)` (client.py's `_InFlight` keeps one launch in flight).
- `Freer.free(pointer)`: `PJRT_Buffer_Destroy`.

The extension is optional: `pip install` builds it where a C compiler is present (setup.py),
and revax takes the ctypes path where it is missing, where it is stale (its `ABI` differs from
`ABI` here), or where env `REVAX_FASTPATH=0` turns it off (the tests run both paths).

It never learns a struct layout on its own: each Args struct is handed over as a filled-in
template (bytes) with the offsets of the fields a call changes, all read from pjrt.py.
"""
from __future__ import annotations

import ctypes as C
import os

from revax._src.runtime import pjrt

ABI = 6  # must equal FASTPATH_ABI in _fastpath.c


def _load():
  if os.environ.get("REVAX_FASTPATH", "1").strip().lower() in ("0", "false", "no", "off"):
    return None
  try:
    from revax._src.runtime import _fastpath
  except ImportError:  # not built: no C compiler at install time
    return None
  return _fastpath if getattr(_fastpath, "ABI", None) == ABI else None


_module = _load()
available: bool = _module is not None


def configure(array_type: type, buffer_type: type, executing_threads: set) -> None:
  """Tell the extension the classes whose slots it reads and writes (once, at import)."""
  if _module is not None:
    _module.configure(array_type, buffer_type, executing_threads)


def configure_info(info_type: type) -> None:
  """Tell the extension the Buffer info class (once, at import)."""
  if _module is not None:
    _module.configure_info(info_type)


def configure_sharded(sharded_type: type, info_type: type) -> None:
  """Tell the extension the sharded Array class and the Buffer info class (once, at import)."""
  if _module is not None:
    _module.configure_sharded(sharded_type, info_type)


def _address(fn) -> int:
  return C.cast(fn, C.c_void_p).value


def _template(name: str, **fields) -> tuple[bytes, type]:
  args = pjrt.ARGS[name](**fields)
  args.struct_size = pjrt.ARGS[name].STRUCT_SIZE
  return C.string_at(C.addressof(args), pjrt.ARGS[name].STRUCT_SIZE), pjrt.ARGS[name]


def freer(api: pjrt.Api):
  """A `Freer` for buffers of `api`'s plugin, or None without the extension."""
  if _module is None:
    return None
  template, cls = _template("Buffer_Destroy")
  return _module.Freer(_address(api.functions["Buffer_Destroy"]), template, cls.buffer.offset)


def waiter(api: pjrt.Api):
  """A `Waiter` for buffers of `api`'s plugin, or None without the extension."""
  if _module is None:
    return None
  fns = api.functions
  ready_template, ready_cls = _template("Buffer_ReadyEvent")
  event_template, event_cls = _template("Event_Await")
  return _module.Waiter(
      tuple(_address(fns[name]) for name in ("Buffer_ReadyEvent", "Event_Await",
                                             "Event_Destroy")),
      ready_template, (ready_cls.buffer.offset, ready_cls.event.offset), event_template,
      event_cls.event.offset)


def window(api: pjrt.Api, limit: int):
  """A `Window` (one device's computations in flight, at most `limit`), or None without the
  extension (client.py then keeps its own in Python)."""
  if _module is None:
    return None
  fns = api.functions
  event_template, event_cls = _template("Event_Await")
  ready_template, ready_cls = _template("Event_IsReady")
  error_template, error_cls = _template("Error_Destroy")
  return _module.Window(
      tuple(_address(fns[name]) for name in ("Event_Await", "Event_Destroy", "Event_IsReady",
                                             "Error_Destroy")),
      event_template, event_cls.event.offset, ready_template,
      (ready_cls.event.offset, ready_cls.is_ready.offset), error_template,
      error_cls.error.offset, limit)


def runner(api: pjrt.Api, executable: int, options: C.Structure, num_outputs: int,
           portable: bool, num_devices: int = 1):
  """A `Runner` of the loaded executable at `executable`, or None without the extension.

  Args:
    api: the plugin's API.
    executable: the PJRT_LoadedExecutable pointer.
    options: the PJRT_ExecuteOptions every call passes (kept alive by the caller).
    num_outputs: outputs per execution.
    portable: whether the device is chosen per call (`execute_device`).
    num_devices: the devices one execution runs on (`run_sharded` when more than one).
  """
  if _module is None:
    return None
  exec_template, cls = _template("LoadedExecutable_Execute", executable=executable,
                                 options=C.addressof(options), num_devices=num_devices)
  event_template, event_cls = _template("Event_Await")
  if event_cls.event.offset != pjrt.ARGS["Event_Destroy"].event.offset:
    return None  # Event_Destroy reuses Await's Args: both must place `event` alike
  fns = api.functions
  offsets = (cls.argument_lists.offset, cls.num_args.offset, cls.output_lists.offset,
             cls.device_complete_events.offset, cls.execute_device.offset)
  # each launch copies these options and sets its own launch_id (Runner.run_sharded)
  opts = pjrt.ExecuteOptions
  options_template = C.string_at(C.addressof(options), opts.STRUCT_SIZE)
  return _module.Runner(_address(fns["LoadedExecutable_Execute"]), _address(fns["Event_Await"]),
                        _address(fns["Event_Destroy"]), exec_template, offsets, event_template,
                        event_cls.event.offset, num_outputs, portable, num_devices,
                        options_template, cls.options.offset, opts.launch_id.offset)
