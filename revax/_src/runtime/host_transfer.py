"""Host callbacks through PJRT send/recv host transfers, for plugins without the FFI extension.

A plugin with the FFI extension (XLA:CPU) runs revax's host callbacks as FFI custom calls
(ffi.py). libtpu has no FFI extension; there, as in JAX, a callback is lowered to a chain of
`stablehlo.send` ops (device -> host, one per operand) and `stablehlo.recv` ops (host -> device,
one per result), each with its own channel id, and the caller passes one `PJRT_SendCallbackInfo`
/ `PJRT_RecvCallbackInfo` per channel in `PJRT_ExecuteOptions`. The plugin calls the send
callback with each operand's bytes (row-major: the C API always asks for major-to-minor data)
and the recv callback with a `PJRT_CopyToDeviceStream` to fill with a result's bytes.

This module holds:
- `callback_mechanism(platform)`: "ffi" or "sendrecv", what the lowering rules ask (env
  `REVAX_CALLBACK_MECHANISM=ffi|sendrecv` overrides it, for tests);
- `register_site`: the channels of one lowered callback (a *site*) and what each carries;
- `prepare_program` / `ProgramTransfers`: at compile time, the program's channels read back from
  its text; per execution, fresh per-site state and the callback info arrays (`launch`);
- the C callbacks: a send collects an operand; once a site has all its operands it runs the
  Python function and queues its results; a recv takes a queued result (waiting for it) and
  writes it to the device stream. A failing function (or bad result) fails the execution with
  the error ffi.py's handler would give (`restore_callback_error` finds the original);
- an emulation for plugins that have send/recv callbacks in their C API but whose compiler
  refuses host send/recv (XLA:CPU: "HLO opcode `send` is not supported by XLA:CPU ThunkEmitter"):
  each send/recv is compiled as an FFI call that invokes the very same C callbacks through
  their C function pointers, with a stand-in stream, so that the whole mechanism (lowering,
  channels, per-execution state, the C ABI of the callbacks) runs under CI on a CPU.

Facts for libtpu (see PJRT's host_callback.cc, which JAX uses): empty arrays cannot be
transferred (they are neither sent nor received: the host makes them), a callback without
operands needs one dummy send or it never runs, and a side-effecting callback without results
gets a dummy recv so that the program waits for it. A channel without a callback in the
execute options aborts libtpu, so every channel of a program gets one.
"""
from __future__ import annotations

import collections
import ctypes as C
import itertools
import os
import queue
import re
import sys
import threading

import numpy as np

from revax._src.runtime import client, ffi, pjrt

__all__ = ["callback_mechanism", "MECHANISM_ENV", "register_site", "Site", "prepare_program",
           "ProgramTransfers", "emulated"]

MECHANISM_ENV = "REVAX_CALLBACK_MECHANISM"
MECHANISMS = ("ffi", "sendrecv")
# stablehlo ChannelType: a collective's channel between devices, a send to / recv from the host
DEVICE_TO_DEVICE, SEND_TO_HOST, RECV_FROM_HOST = 1, 2, 3
_DUMMY_SEND = ((1,), np.dtype(np.float32))
_DUMMY_RECV = ((), np.dtype(np.float32))
_PLATFORMS_WITHOUT_HOST_SEND_RECV = frozenset({"cpu"})  # measured: XLA:CPU refuses `send`
_RETAINED_LAUNCHES = 256  # per program: states of launches that may still be running


def callback_mechanism(platform: str | None = None) -> str:
  """How host callbacks reach the host on `platform`: "ffi" (custom calls into a handler
  registered through the plugin's FFI extension) or "sendrecv" (send/recv host transfers).

  Args:
    platform: the lowering's platform (default: the default backend's).

  Returns:
    `REVAX_CALLBACK_MECHANISM` if set, else "ffi" where the plugin has the FFI extension.

  Raises:
    ValueError: the environment variable holds something else.

  Example:
    >>> from revax._src.runtime.host_transfer import callback_mechanism
    >>> callback_mechanism("cpu") in ("ffi", "sendrecv")
    True
  """
  override = os.environ.get(MECHANISM_ENV)
  if override:
    if override not in MECHANISMS:
      raise ValueError(f"{MECHANISM_ENV} must be one of {MECHANISMS}, got {override!r}")
    return override
  backend = _backend_for(platform)
  if backend is None:  # lowering for a platform absent here (exporting for a TPU, say)
    return "sendrecv" if platform == "tpu" else "ffi"  # libtpu has no FFI extension
  key = (backend.platform, platform)
  mechanism = _mechanisms.get(key)
  if mechanism is None:
    try:
      ffi._ffi_extension(backend._api)
      mechanism = "ffi"
    except RuntimeError:
      mechanism = "sendrecv"
    _mechanisms[key] = mechanism
  return mechanism


_mechanisms: dict = {}


def _backend_for(platform: str | None):
  """The backend of `platform` where the client can name one, else the default backend; None
  where `platform` is named but cannot start here."""
  if platform is not None:
    try:
      return client.get_backend(platform)
    except TypeError:  # a client with a single backend
      pass
    except RuntimeError:
      return None
  return client.get_backend()


# ----------------------------------------------------------------------------- sites

class Site:
  """One lowered host callback: its function, what it takes and gives, and its channels.

  Attributes:
    callback: `callback(*operands) -> results` on NumPy arrays.
    operand_specs, result_specs: `(shape, dtype)` of every operand and result.
    sends: `(channel, operand index)` in send order; index None for the dummy send.
    recvs: `(channel, result index)` in recv order; index None for the dummy recv.
  """

  def __init__(self, callback, operand_specs, result_specs, wait: bool):
    self.callback = callback
    self.operand_specs = [(tuple(s), np.dtype(d)) for s, d in operand_specs]
    self.result_specs = [(tuple(s), np.dtype(d)) for s, d in result_specs]
    sent = [i for i, (s, _) in enumerate(self.operand_specs) if _size(s)]
    got = [i for i, (s, _) in enumerate(self.result_specs) if _size(s)]
    self.sends = [(_new_channel(), i) for i in (sent or [None])]
    if not got and wait:
      got = [None]
    self.recvs = [(_new_channel(), i) for i in got]

  def spec_of(self, kind: int, index):
    if kind == SEND_TO_HOST:
      return _DUMMY_SEND if index is None else self.operand_specs[index]
    return _DUMMY_RECV if index is None else self.result_specs[index]


def _size(shape) -> int:
  n = 1
  for d in shape:
    n *= int(d)
  return n


_channel_ids = itertools.count(1)
_channel_lock = threading.Lock()
_sites: dict[int, tuple[Site, int, int | None]] = {}  # channel -> (site, kind, position)


def _new_channel() -> int:
  with _channel_lock:
    return next(_channel_ids)


def register_site(callback, operand_specs, result_specs, *, wait: bool) -> Site:
  """The channels of a new callback site (a lowering emits its sends and recvs).

  Args:
    callback: called on the host with one NumPy array per operand; returns the results
      (checked against `result_specs` as ffi.py's handler checks them).
    operand_specs, result_specs: `(shape, dtype)` pairs.
    wait: whether the program must wait for the callback (side effects): without results it
      then gets a dummy recv.

  Returns:
    The `Site`; its channels stay registered for the life of the process (a compiled program
    may run at any time), as ffi.py's callables do.
  """
  site = Site(callback, operand_specs, result_specs, wait)
  for kind, pairs in ((SEND_TO_HOST, site.sends), (RECV_FROM_HOST, site.recvs)):
    for channel, index in pairs:
      _sites[channel] = (site, kind, index)
  return site


# ----------------------------------------------------------------------------- per execution

class _SiteState:
  """A site's state during one execution on one device: the operands received so far and the
  results not yet taken (a queue per result, so a loop's iterations never mix)."""

  def __init__(self, site: Site, streams):
    self.site = site
    self.streams = streams
    self.lock = threading.Lock()
    self.pending: dict[int | None, bytearray] = {}
    self.operands: dict[int | None, np.ndarray] = {}
    self.results = {index: queue.SimpleQueue() for _, index in site.recvs}

  def on_send(self, index, data: bytes, done: bool) -> None:
    """Take a chunk of operand `index`; run the function once every operand is in. On any
    failure every result still gets a (zero) value, so that no recv waits forever."""
    try:
      self._on_send(index, data, done)
    except BaseException:
      self._push([np.zeros(s, d) for s, d in self.site.result_specs])
      raise

  def _on_send(self, index, data: bytes, done: bool) -> None:
    shape, dtype = self.site.spec_of(SEND_TO_HOST, index)
    nbytes = _size(shape) * dtype.itemsize
    with self.lock:
      buffer = self.pending.setdefault(index, bytearray())
      buffer += data
      if len(buffer) < nbytes and not done:
        return  # more chunks of this operand to come
      del self.pending[index]
      if len(buffer) < nbytes:
        raise RuntimeError(f"host transfer of operand {index} carried {len(buffer)} bytes, "
                           f"expected {nbytes} for {dtype}{list(shape)}")
      self.operands[index] = np.frombuffer(bytes(buffer[:nbytes]), dtype).reshape(shape)
      if len(self.operands) < len(self.site.sends):
        return
      operands, self.operands = self.operands, {}
    self._run(operands)

  def _run(self, received) -> None:
    site = self.site
    args = [received[i] if i in received else np.zeros(shape, dtype)
            for i, (shape, dtype) in enumerate(site.operand_specs)]
    self._push(ffi.check_results(site.callback(*args), site.result_specs))

  def _push(self, results) -> None:
    for index, q in self.results.items():
      if index is None:
        q.put(np.zeros((), np.float32))
      else:
        q.put(np.ascontiguousarray(results[index]))

  def on_recv(self, index, stream) -> None:
    value = self.results[index].get()
    self.streams.write(stream, value.tobytes())


class _Entry:
  __slots__ = ("state", "kind", "index")

  def __init__(self, state, kind, index):
    self.state, self.kind, self.index = state, kind, index


_entries: dict[int, _Entry] = {}  # user_arg -> what a callback serves
_entry_ids = itertools.count(1)


class _Chunk(C.Structure):
  """PJRT_Chunk."""
  _fields_ = [("data", C.c_void_p), ("size", C.c_size_t), ("deleter", C.c_void_p),
              ("deleter_arg", C.c_void_p)]


class _CallbackInfo(C.Structure):
  """PJRT_SendCallbackInfo and PJRT_RecvCallbackInfo (same layout)."""
  _fields_ = [("channel_id", C.c_int64), ("user_arg", C.c_void_p), ("callback", C.c_void_p)]


_SEND_FN = C.CFUNCTYPE(C.c_void_p, C.POINTER(_Chunk), C.c_void_p, C.c_size_t, C.c_bool,
                       C.c_void_p)
_RECV_FN = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p)
_DELETER_FN = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p)
_CALLBACK_ERROR_FN = C.CFUNCTYPE(C.c_void_p, C.c_int, C.c_char_p, C.c_size_t)
_INTERNAL = pjrt.ERROR_CODES.index("INTERNAL")


def _as_callback_thread(fn, *args):
  """Run `fn(*args)` marked as a callback thread when it is not the thread that launched the
  program (the device is busy with that program: no other may start from here)."""
  state = client._callback_thread
  if client._get_ident() in client._executing_threads or state.on_xla_thread:
    return fn(*args)
  state.on_xla_thread = True
  try:
    return fn(*args)
  finally:
    state.on_xla_thread = False


def _on_send(chunk_p, callback_error, total_size, done, user_arg):
  """PJRT_SendCallback: never lets an exception escape into C."""
  try:
    chunk = chunk_p.contents
    try:
      data = C.string_at(chunk.data, chunk.size) if chunk.size else b""
    finally:
      if chunk.deleter:
        _DELETER_FN(chunk.deleter)(chunk.data, chunk.deleter_arg)
    entry = _entries.get(user_arg or 0)
    if entry is None:
      raise RuntimeError("a host send arrived for an execution revax no longer tracks")
    _as_callback_thread(entry.state.on_send, entry.index, data, bool(done))
    return None
  except BaseException as exc:  # noqa: BLE001 - goes back to the plugin as the send's error
    try:
      message = ffi._store_error(exc).encode(errors="replace")
      make = _CALLBACK_ERROR_FN(C.c_void_p.from_address(callback_error).value)
      return make(_INTERNAL, message, len(message))
    except BaseException:  # noqa: BLE001
      return None


_recv_errors: dict[int, str] = {}  # user_arg -> why its recv failed (a recv returns nothing)


def _on_recv(stream, user_arg):
  """PJRT_RecvCallback: owns `stream` and destroys it, whatever happens."""
  entry = _entries.get(user_arg or 0)
  try:
    if entry is None:
      raise RuntimeError("a host recv arrived for an execution revax no longer tracks")
    _as_callback_thread(entry.state.on_recv, entry.index, stream)
  except BaseException as exc:  # noqa: BLE001 - nothing can be returned: keep it, and say it
    text = ffi._store_error(exc)
    _recv_errors[user_arg or 0] = text
    try:
      sys.stderr.write(f"revax: a host callback result could not be sent to the device (it "
                       f"gets zeros, so that the program does not wait forever): {text}\n")
      if entry is not None:
        entry.state.streams.write_zeros(stream)
    except BaseException:  # noqa: BLE001
      pass
  finally:
    if entry is not None:
      try:
        entry.state.streams.destroy(stream)
      except BaseException:  # noqa: BLE001
        pass


_send_c = _SEND_FN(_on_send)
_recv_c = _RECV_FN(_on_recv)
_SEND_ADDRESS = C.cast(_send_c, C.c_void_p).value
_RECV_ADDRESS = C.cast(_recv_c, C.c_void_p).value


class _DeviceStreams:
  """Writes to a plugin's PJRT_CopyToDeviceStream (one chunk of the whole result)."""

  def __init__(self, api: pjrt.Api):
    self.api = api
    self._chunks: dict[int, C.Array] = {}  # data address -> buffer, until the plugin frees it

  def _stream_args(self, stream: int) -> C.Array:
    args = (C.c_uint64 * 4)(32, 0, stream, 0)  # struct_size, extension_start, stream, out
    return args

  def write(self, stream: int, data: bytes) -> None:
    api = self.api
    total = self._stream_args(stream)
    self._check(api.functions["CopyToDeviceStream_TotalBytes"](C.addressof(total)))
    if total[3] and total[3] != len(data):
      if total[3] < len(data):
        raise RuntimeError(f"the device expects {total[3]} bytes for a host callback result, "
                           f"the host has {len(data)}")
      data = data + bytes(total[3] - len(data))
    buffer = C.create_string_buffer(data, max(len(data), 1))
    address = C.addressof(buffer)
    self._chunks[address] = buffer
    chunk = _Chunk(address, len(data), _FREE_CHUNK_ADDRESS, None)
    args = (C.c_uint64 * 5)(40, 0, stream, C.addressof(chunk), 0)  # ..., chunk, event out
    self._check(api.functions["CopyToDeviceStream_AddChunk"](C.addressof(args)))
    if args[4]:
      api.destroy_event(args[4])  # the transfer completes on its own

  def write_zeros(self, stream: int) -> None:
    """Fill the stream with zeros (a failed recv: the device must not wait forever)."""
    total = self._stream_args(stream)
    self._check(self.api.functions["CopyToDeviceStream_TotalBytes"](C.addressof(total)))
    self.write(stream, bytes(total[3]))

  def destroy(self, stream: int) -> None:
    args = (C.c_uint64 * 3)(24, 0, stream)
    self._check(self.api.functions["CopyToDeviceStream_Destroy"](C.addressof(args)))

  def _check(self, error) -> None:
    if error:
      raise self.api.take_error(error)

  def free(self, address: int) -> None:
    self._chunks.pop(address, None)


_device_streams: dict[int, _DeviceStreams] = {}
_STREAM_FUNCTIONS = ("CopyToDeviceStream_TotalBytes", "CopyToDeviceStream_AddChunk",
                     "CopyToDeviceStream_Destroy")


def _free_chunk(data, arg):
  for streams in list(_device_streams.values()):
    streams.free(data)


_free_chunk_c = _DELETER_FN(_free_chunk)
_FREE_CHUNK_ADDRESS = C.cast(_free_chunk_c, C.c_void_p).value


class _Launch:
  """The options of one execution, and what they point to (alive until the execution ends)."""
  __slots__ = ("options", "address", "keys", "_keep")

  def __init__(self, options, keys, keep):
    self.options = options
    self.address = C.addressof(options)
    self.keys = keys
    self._keep = keep

  def release(self) -> None:
    for key in self.keys:
      _entries.pop(key, None)
    self.keys = ()


class ProgramTransfers:
  """The host transfers of one compiled program: its sites, and per execution their state.

  Attributes:
    channels: `(channel, kind)` of every send/recv in the program.
    emulated: whether the program's sends and recvs were compiled as FFI calls (see
      `emulated`), not as host transfers.
  """

  def __init__(self, channels, streams, emulated: bool):
    self.channels = channels
    self.streams = streams
    self.emulated = emulated
    self._launches: collections.deque = collections.deque()
    self._lock = threading.Lock()

  def attach(self, executable) -> None:
    """Make `executable` pass this program's callbacks at every execution (client.py's ctypes
    path builds the options per execution; the compiled call path cannot, so it is off)."""
    executable._host_transfers = self
    executable._runner = None
    executable._sharded_runner = None

  def launch(self, template, num_devices: int) -> _Launch:
    """PJRT_ExecuteOptions for one execution: a copy of `template` whose send/recv callback
    lists (one per device) serve fresh per-site states."""
    if self.emulated and num_devices > 1:
      raise NotImplementedError(
          "host callbacks as emulated send/recv transfers (REVAX_CALLBACK_MECHANISM=sendrecv on "
          "a CPU) run in single-device programs only; use the FFI mechanism for this program")
    options = type(template)()
    C.memmove(C.addressof(options), C.addressof(template), C.sizeof(options))
    sends = [(c, k) for c, k in self.channels if k == SEND_TO_HOST]
    recvs = [(c, k) for c, k in self.channels if k == RECV_FROM_HOST]
    keep, keys = [], []
    send_lists = (C.c_void_p * num_devices)()
    recv_lists = (C.c_void_p * num_devices)()
    for device in range(num_devices):
      states: dict[int, _SiteState] = {}
      for lists, pairs, address in ((send_lists, sends, _SEND_ADDRESS),
                                    (recv_lists, recvs, _RECV_ADDRESS)):
        infos = (_CallbackInfo * max(len(pairs), 1))()
        for info, (channel, kind) in zip(infos, pairs):
          site, _, index = _sites[channel]
          state = states.get(id(site))
          if state is None:
            state = states[id(site)] = _SiteState(site, self.streams)
          key = next(_entry_ids)
          _entries[key] = _Entry(state, kind, index)
          keys.append(key)
          info.channel_id, info.user_arg, info.callback = channel, key, address
        # PJRT_ExecuteOptions.send_callbacks is PJRT_SendCallbackInfo**: per device, a pointer
        # to that device's ARRAY of infos (not to an array of pointers: libtpu then read an
        # address as the first channel id, "Unknown host callback with rendezvous channel
        # 139331671347472")
        keep.append(infos)
        lists[device] = C.addressof(infos)
      if self.emulated:
        _emulation.current.update(_emulation_keys(keys, self.channels, device))
    options.send_callbacks = C.addressof(send_lists)
    options.recv_callbacks = C.addressof(recv_lists)
    options.num_send_ops, options.num_recv_ops = len(sends), len(recvs)
    keep += [send_lists, recv_lists]
    launch = _Launch(options, keys, keep)
    with self._lock:
      self._launches.append(launch)
      if len(self._launches) > _RETAINED_LAUNCHES:
        self._launches.popleft().release()
    return launch


def _emulation_keys(keys, channels, device):
  """(channel, entry key) of one device's entries, in the order `launch` made them."""
  sends = [c for c, k in channels if k == SEND_TO_HOST]
  recvs = [c for c, k in channels if k == RECV_FROM_HOST]
  per_device = len(sends) + len(recvs)
  mine = keys[device * per_device:(device + 1) * per_device]
  return zip(sends + recvs, mine, strict=True)


# ----------------------------------------------------------------------------- compile time

_TRANSFER = re.compile(
    r'"stablehlo\.(send|recv)"\((?P<operands>[^)]*)\) <\{channel_handle = '
    r'#stablehlo\.channel_handle<handle = (?P<channel>\d+), type = (?P<kind>\d+)>, '
    r'is_host_transfer = true\}> \{mhlo\.frontend_attributes = \{[^}]*\}\} : '
    r'\((?P<in_types>[^)]*)\) -> (?P<out_types>.*)$',
    re.MULTILINE)


def prepare_program(code: bytes, backend) -> tuple[bytes, ProgramTransfers | None]:
  """The program to compile and its host transfers (None when it has none).

  On a platform whose compiler cannot compile host send/recv, each one is rewritten as an FFI
  call that runs the same callbacks (`emulated`).

  Raises:
    ValueError: a channel appears twice (a lowering was reused) or is not one revax made.
  """
  text = code.decode()
  channels = []
  for match in _TRANSFER.finditer(text):
    channel, kind = int(match["channel"]), int(match["kind"])
    if channel not in _sites or _sites[channel][1] != kind:
      raise ValueError(f"host transfer channel {channel} was not made by revax's lowering")
    channels.append((channel, kind))
  if not channels:
    return code, None
  if len({c for c, _ in channels}) != len(channels):
    raise ValueError("a host callback's send/recv channel appears twice in one program; each "
                     "lowering of a callback must make its own channels")
  emulate = backend.platform in _PLATFORMS_WITHOUT_HOST_SEND_RECV
  if emulate:
    _emulation.ensure_handler(backend)
    text = _TRANSFER.sub(_emulated_op, text)
    streams = _emulation.streams
  else:
    api = backend._api
    missing = [f for f in _STREAM_FUNCTIONS if f not in api.functions]
    if missing:
      raise RuntimeError(f"host callbacks need send/recv callbacks, but the PJRT plugin "
                         f"{api.path} lacks {', '.join('PJRT_' + f for f in missing)}")
    streams = _device_streams.get(id(api))
    if streams is None:
      streams = _device_streams[id(api)] = _DeviceStreams(api)
  return text.encode(), ProgramTransfers(channels, streams, emulate)


# ----------------------------------------------------------------------------- emulation

EMULATED_TARGET = "revax_emulated_host_transfer"


def _emulated_op(match) -> str:
  operands = [o.strip() for o in match["operands"].split(",") if o.strip()]
  in_types = [t.strip() for t in match["in_types"].split(",") if t.strip()]
  if match.group(1) == "send":  # (value, token) -> token: the token goes first for the FFI call
    operands, in_types = operands[-1:] + operands[:-1], in_types[-1:] + in_types[:-1]
  props = (f'api_version = 4 : i32, backend_config = {{channel = {match["channel"]} : i64}}, '
           f'call_target_name = "{EMULATED_TARGET}", has_side_effect = true')
  return (f'"stablehlo.custom_call"({", ".join(operands)}) <{{{props}}}> : '
          f'({", ".join(in_types)}) -> {match["out_types"]}')


class _EmulatedStreams:
  """Stand-in PJRT_CopyToDeviceStreams: a "stream" is the address of a result's buffer."""

  def __init__(self):
    self.sizes: dict[int, int] = {}

  def write(self, stream: int, data: bytes) -> None:
    size = self.sizes.pop(stream)
    if size != len(data):
      raise RuntimeError(f"emulated recv expects {size} bytes, got {len(data)}")
    if data:
      C.memmove(stream, data, len(data))

  def write_zeros(self, stream: int) -> None:
    pass  # the emulated recv reports the failure itself

  def destroy(self, stream: int) -> None:
    self.sizes.pop(stream, None)


class _Emulation:
  def __init__(self):
    self.current: dict = {}  # channel -> entry key (user_arg) of the latest launch
    self.streams = _EmulatedStreams()
    self.ready = False

  def ensure_handler(self, backend) -> None:
    if not self.ready:
      ffi.register_handler(EMULATED_TARGET, C.cast(_emulated_handler_c, C.c_void_p).value,
                           backend.platform)
      self.ready = True


_emulation = _Emulation()


def emulated() -> bool:
  """Whether host transfers are emulated with FFI calls on the default backend."""
  return client.get_backend().platform in _PLATFORMS_WITHOUT_HOST_SEND_RECV


_callback_errors: dict[int, bytes] = {}
_callback_error_ids = itertools.count(1)


def _make_callback_error(code, message, size):
  """The PJRT_CallbackError an emulated transfer gives the callbacks: an id for the message."""
  key = next(_callback_error_ids)
  _callback_errors[key] = C.string_at(message, size)
  return key


_make_callback_error_c = _CALLBACK_ERROR_FN(_make_callback_error)
_callback_error_pointer = C.c_void_p(C.cast(_make_callback_error_c, C.c_void_p).value)


def _emulated_transfer(frame) -> None:
  channel = _channel_attr(frame.attrs)
  found = _emulation.current.get(channel)
  if found is None:
    raise RuntimeError(f"emulated host transfer on channel {channel} outside an execution")
  key = found
  _, kind, index = _sites[channel]
  buffers = [b for b in ffi._buffers(frame.args if kind == SEND_TO_HOST else frame.rets)
             if b.dtype != ffi._FFI_TOKEN]
  if kind == SEND_TO_HOST:
    value = ffi._read_buffer(buffers[0])
    data = C.create_string_buffer(value.tobytes(), max(value.nbytes, 1))
    chunk = _Chunk(C.addressof(data), value.nbytes, None, None)
    send = _SEND_FN(_SEND_ADDRESS)  # through the C pointer, as a plugin calls it
    error = send(C.pointer(chunk), C.addressof(_callback_error_pointer), value.nbytes, True, key)
    if error:
      raise RuntimeError(_callback_errors.pop(error).decode(errors="replace"))
  else:
    shape, dtype = ffi._buffer_spec(buffers[0])
    stream = buffers[0].data
    _emulation.streams.sizes[stream] = _size(shape) * dtype.itemsize
    _RECV_FN(_RECV_ADDRESS)(stream, key)
    if stream in _emulation.streams.sizes:  # the callback did not write the result
      del _emulation.streams.sizes[stream]
      raise RuntimeError(_recv_errors.pop(key, f"emulated recv on channel {channel} got no "
                                                "result"))


def _channel_attr(attrs) -> int:
  for i in range(attrs.size):
    name = ffi._ByteSpan.from_address(C.c_void_p.from_address(attrs.names + 8 * i).value)
    if C.string_at(name.ptr, name.len) == b"channel":
      scalar = ffi._Scalar.from_address(C.c_void_p.from_address(attrs.attrs + 8 * i).value)
      return C.c_int64.from_address(scalar.value).value
  raise RuntimeError("emulated host transfer without a `channel` attribute")


def _emulated_handler(frame_address):
  """The FFI handler of emulated transfers: never lets an exception escape into C."""
  try:
    frame = ffi._CallFrame.from_address(frame_address)
    if ffi.answer_metadata(frame) or frame.stage != ffi._STAGE_EXECUTE:
      return None
    _emulated_transfer(frame)
    return None
  except BaseException as exc:  # noqa: BLE001
    try:
      text = str(exc) if ffi._MARKER in str(exc) else ffi._store_error(exc)
      return ffi._make_error(ffi._CallFrame.from_address(frame_address).api, text)
    except BaseException:  # noqa: BLE001
      return None


_emulated_handler_c = ffi._HANDLER(_emulated_handler)
