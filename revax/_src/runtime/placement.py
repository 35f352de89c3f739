"""Where a computation on Arrays runs, by JAX's rule for committed arrays.

An Array is committed to its device when it was placed there explicitly (`device_put` with a
device) or computed from committed arrays (`Array.committed`; sharded arrays always are). A
computation (an eager primitive or a jit call) runs on the one device its committed
single-device inputs share, and the arrays that are not committed move there; with no committed
input it runs on the default device (sharded inputs are placed by the sharded call paths).
Committed inputs on different devices (or sets of devices) are an error, a ValueError naming two
of them, worded as JAX words it:

    Received incompatible devices for jitted computation. Got argument x of f with shape
    float32[3] and with device ids [1] on platform CPU and argument y of f with shape float32[3]
    and with device ids [2] on platform CPU

Only the callers' slow paths come here: while no Array was ever committed
(`array.committed_live` is False) nothing is looked at.
"""
from __future__ import annotations

import numpy as np

from revax._src.core.config import config

from revax._src.core.avals import get_aval
from revax._src.runtime.array import Array


def committed_device(values, fun_name: str, names=None):
  """The device the committed single-device Arrays among `values` share, or None if there are
  none (or the committed ones are sharded arrays). ValueError if two committed arrays (sharded
  ones included) are on different devices.

  Args:
    values: the computation's arguments (anything; only Arrays count).
    fun_name: the computation's name, for the message (a primitive's or a jitted function's).
    names: a thunk giving one name per value, called only for the message; default
      `args[i]` (what JAX says of a primitive's operands).
  """
  ids = first = None
  for i, v in enumerate(values):
    if isinstance(v, Array) and v.committed:
      these = _device_keys(v)
      if ids is None:
        ids, first = these, i
      elif these != ids:
        raise incompatible_devices_error(values, (first, i), fun_name, names)
  if ids is None or type(values[first]) is not Array:
    return None  # (a sharded array places the computation itself)
  return values[first].device


def _device_keys(v: Array) -> tuple:
  """The (platform, id) of the devices `v` lives on, sorted (ids repeat across backends)."""
  if type(v) is Array:
    device = v.device
    return ((device.platform, device.id),)
  return tuple(sorted((d.platform, d.id) for d in v.devices()))


def _device_ids(v: Array) -> tuple:
  """The ids of the devices `v` lives on, sorted (for messages, as JAX prints them)."""
  return tuple(i for _, i in _device_keys(v))


def incompatible_devices_error(values, pair, fun_name: str, names=None) -> ValueError:
  """The ValueError for the committed `values[pair[0]]` and `values[pair[1]]` on different
  devices."""
  listed = None
  if names is not None:
    try:
      listed = list(names())
    except Exception:  # noqa: BLE001 - naming is best effort; the error itself must be raised
      listed = None
  parts = []
  for i in pair:
    v = values[i]
    name = listed[i] if listed is not None and i < len(listed) else f"args[{i}]"
    ids = ", ".join(map(str, _device_ids(v)))
    platform = next(iter(v.devices())).platform.upper()
    parts.append(f"argument {name} of {fun_name} with shape {v.aval.str_short(False)} and with "
                 f"device ids [{ids}] on platform {platform}")
  return ValueError("Received incompatible devices for jitted computation. Got "
                    + " and ".join(parts))


def on_device(x, device, upload: bool = True):
  """`x` (an Array, NumPy array or scalar) as an Array that can run on `device`: itself when its
  device buffer is there already, or when it is host-only and either `upload` is False (NumPy
  implementations read the host copy) or `device` is the default one (where compiled programs
  upload host values anyway); otherwise a new Array with the same value and commitment whose
  buffer is on `device`."""
  if not isinstance(x, Array):
    aval = get_aval(x)
    v = np.array(x, dtype=aval.dtype)
    v.flags.writeable = False
    x = Array(aval, npy=v)
  buf = x._buf
  if buf is None and (not upload or device == _backend_default()):
    return x  # (uploaded where it is needed; to the default device, kept for the next use)
  if buf is not None and buf.device == device:
    return x
  # (not `x._device_buffer(device)`: it would keep the buffer, and `x` would then report
  # `device` as its own, where JAX leaves an uncommitted argument where it was)
  npy = x._npy if x._npy is not None else x._value()
  out = Array(x.aval, npy, device.client.buffer_from_numpy(npy, device))
  if x.committed:
    out._committed = True
  return out


def place_results(outs, device) -> None:
  """Give each host-only Array among `outs` (a NumPy implementation's fresh results) a buffer on
  `device`, so that it lives where the computation ran."""
  for o in (outs if isinstance(outs, (list, tuple)) else (outs,)):
    if type(o) is Array and o._buf is None and o._npy is not None:
      o._buf = o._device_buffer(device)


_default = None


def default_device():
  """Where computations without committed inputs run: `jax_default_device` (the
  `revax.default_device` context) when set, else the default backend's first device."""
  chosen = config.default_device
  if chosen is not None:
    if isinstance(chosen, str):
      from revax._src.runtime.client import get_backend
      return get_backend(chosen).devices[0]
    return chosen
  global _default
  if _default is None:
    from revax._src.runtime.client import get_backend
    _default = get_backend().devices[0]  # (the default backend is made once per process)
  return _default


def default_moved() -> bool:
  """Whether `jax_default_device` sends uncommitted work off the default backend's first
  device (then eager ops place their operands like committed ones, without committing)."""
  return config.default_device is not None and default_device() is not _backend_default()


def _backend_default():
  global _default
  if _default is None:
    from revax._src.runtime.client import get_backend
    _default = get_backend().devices[0]
  return _default


def placement_needed(values, fun_name: str):
  """The device a computation on `values` (some of them committed) must be placed on, or None
  when it runs as usual: its committed inputs are on the default device and no input has a
  buffer elsewhere (the common case, checked first at the cost of a few attribute reads per
  value). ValueError as `committed_device` for committed inputs on different devices."""
  default = _backend_default()
  for v in values:
    if type(v) is Array:
      buf = v._buf
      if buf is not None and buf.device is not default:
        break
  else:
    return None
  device = committed_device(values, fun_name)
  return device if device is not None else default_device()


def on_default_device(x: Array) -> bool:
  """Whether `x` lives on the default device (or only on the host)."""
  buf = x._buf
  return buf is None or buf.device is default_device()
