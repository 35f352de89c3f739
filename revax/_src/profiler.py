"""revax's profiler: host-side trace annotations written as a Chrome/Perfetto trace, and a
device memory profile of the live Arrays in pprof format.

What it records (and what it does not): JAX's profiler collects XLA's own device and host
activity through the TSL profiler (an XSpace protobuf, `*.xplane.pb`). revax has no such
collector. A trace (`start_trace`/`stop_trace`, or `trace`) records the spans of
`TraceAnnotation`, `StepTraceAnnotation` and `annotate_function` entered while it runs, with
their thread and keyword arguments, and writes them where JAX writes its trace:
`<log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz` (Chrome trace-event JSON,
which TensorBoard's trace viewer and ui.perfetto.dev read), plus `perfetto_trace.json.gz` when
asked. No XLA operation appears in it unless an annotation wraps it. There is no profiler server
(`start_server` raises NotImplementedError) and no XSpace reader (`ProfileData`).

`device_memory_profile` describes the Arrays alive in the process (one sample per Array: count
and bytes, located at a "function" named by its type), gzip-compressed pprof, as JAX returns.
"""
from __future__ import annotations

import functools
import gzip
import json
import os
import pathlib
import socket
import threading
import time

__all__ = ["ProfileOptions", "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "register_subprocess", "save_device_memory_profile",
           "start_server", "start_trace", "stop_server", "stop_trace", "trace"]


class ProfileOptions:
  """Options of a profile (JAX's fields and defaults). revax's trace records annotations only,
  so it reads none of them; they are kept so code that sets them runs unchanged."""

  def __init__(self):
    self.advanced_configuration = {}
    self.duration_ms = 0
    self.enable_hlo_proto = True
    self.host_tracer_level = 2
    self.include_dataset_ops = True
    self.python_tracer_level = 1
    self.raise_error_on_start_failure = False
    self.repository_path = ""
    self.session_id = ""
    self.start_timestamp_ns = 0


class _Session:
  """A running trace: where it goes and the events recorded so far."""

  def __init__(self, log_dir, create_perfetto_link, create_perfetto_trace):
    self.log_dir = str(log_dir)
    self.create_perfetto_link = create_perfetto_link
    self.create_perfetto_trace = create_perfetto_trace or create_perfetto_link
    self.events = []
    self.start_ns = time.perf_counter_ns()


_lock = threading.Lock()
_session: _Session | None = None


def start_trace(log_dir, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
  """Start a trace that `stop_trace` writes to `log_dir` (see the module docstring for what it
  records). Only one trace runs at a time: RuntimeError if one is running.

  Args:
    log_dir: directory the trace is written under (usually a TensorBoard log directory).
    create_perfetto_link: also write `perfetto_trace.json.gz`, serve it on 127.0.0.1:9001 and
      print a ui.perfetto.dev link; `stop_trace` blocks until the UI has loaded it.
    create_perfetto_trace: also write `perfetto_trace.json.gz` next to the trace.
    profiler_options: accepted for JAX compatibility; not read.
  """
  global _session
  del profiler_options
  with _lock:
    if _session is not None:
      raise RuntimeError("Profile has already been started. Only one profile may be run at a "
                         "time.")
    _session = _Session(log_dir, create_perfetto_link, create_perfetto_trace)


def stop_trace() -> None:
  """Stop the running trace and write it under its `log_dir`; RuntimeError if none runs."""
  global _session
  with _lock:
    session = _session
    if session is None:
      raise RuntimeError("No profile started")
    _session = None
  trace_file = _write_trace(session)
  if session.create_perfetto_trace:
    perfetto_file = _write_perfetto_trace(trace_file)
    if session.create_perfetto_link:
      _host_perfetto_trace(perfetto_file)


class trace:  # noqa: N801 (JAX's name; a context manager)
  """A trace of the enclosed code (`start_trace` on entry, `stop_trace` on exit).

  Example:
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as log_dir:
    ...   with revax.profiler.trace(log_dir):
    ...     with revax.profiler.TraceAnnotation("step"):
    ...       y = (jnp.ones(3) * 2).block_until_ready()
  """

  def __init__(self, log_dir, create_perfetto_link=False, create_perfetto_trace=False,
               profiler_options: ProfileOptions | None = None):
    self._args = (log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)

  def __enter__(self):
    start_trace(*self._args)
    return self

  def __exit__(self, *exc):
    stop_trace()
    return False


def _write_trace(session: _Session) -> pathlib.Path:
  run = time.strftime("%Y_%m_%d_%H_%M_%S", time.localtime())
  folder = pathlib.Path(session.log_dir).absolute() / "plugins" / "profile" / run
  folder.mkdir(parents=True, exist_ok=True)
  pid = os.getpid()
  events = [{"ph": "M", "pid": pid, "name": "process_name",
             "args": {"name": f"/host:CPU (revax annotations, pid {pid})"}}]
  for name, tid, start, end, args in session.events:
    events.append({"ph": "X", "pid": pid, "tid": tid, "name": name,
                   "ts": (start - session.start_ns) / 1e3, "dur": (end - start) / 1e3,
                   "args": {k: str(v) for k, v in args.items()}})
  doc = {"displayTimeUnit": "ns", "metadata": {"producer": "revax"}, "traceEvents": events}
  path = folder / f"{socket.gethostname()}.trace.json.gz"
  with gzip.open(path, "wt") as f:
    json.dump(doc, f)
  return path


def _write_perfetto_trace(trace_file: pathlib.Path) -> pathlib.Path:
  """The trace without its `metadata` field (which Perfetto rejects), as JAX writes it."""
  with gzip.open(trace_file, "rt") as f:
    doc = json.load(f)
  del doc["metadata"]
  path = trace_file.parent / "perfetto_trace.json.gz"
  with gzip.open(path, "wt") as f:
    json.dump(doc, f)
  return path


def _host_perfetto_trace(path: pathlib.Path) -> None:
  """Serve `path` on 127.0.0.1:9001 until ui.perfetto.dev has fetched it (as JAX does)."""
  import http.server
  import socketserver

  class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
      super().__init__(*args, directory=str(path.parent), **kwargs)

    def end_headers(self):
      self.send_header("Access-Control-Allow-Origin", "*")
      super().end_headers()

    def do_GET(self):  # noqa: N802 (http.server's name)
      self.server.last_request = self.path
      super().do_GET()

  socketserver.TCPServer.allow_reuse_address = True
  with socketserver.TCPServer(("127.0.0.1", 9001), Handler) as httpd:
    print(f"Open URL in browser: https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/"
          f"{path.name}")
    while getattr(httpd, "last_request", None) != "/" + path.name:
      httpd.handle_request()


class TraceAnnotation:
  """A span named `name` in the running trace (if any), over the enclosed code; keyword
  arguments are recorded as the event's arguments. Costs a clock read when no trace runs.

  Example:
    >>> x = jnp.ones((100, 100))
    >>> with revax.profiler.TraceAnnotation("my_label", batch=3):
    ...   result = jnp.dot(x, x.T).block_until_ready()
  """

  def __init__(self, name: str, **kwargs):
    self.name, self.kwargs = name, kwargs
    self._start = None

  @staticmethod
  def is_enabled() -> bool:
    """Whether a trace is running (annotations are recorded)."""
    return _session is not None

  def set_metadata(self, **kwargs) -> None:
    """Add arguments to the event (before it ends)."""
    self.kwargs.update(kwargs)

  def __enter__(self):
    self._start = time.perf_counter_ns()
    return self

  def __exit__(self, *exc):
    session = _session
    if session is not None and self._start >= session.start_ns:
      session.events.append((self._event_name(), threading.get_ident(), self._start,
                             time.perf_counter_ns(), dict(self.kwargs)))
    return False

  def _event_name(self):
    return self.name


class StepTraceAnnotation(TraceAnnotation):
  """A training-step span: `StepTraceAnnotation("train", step_num=k)` records an event named
  "train k" (the step number is also among its arguments)."""

  def _event_name(self):
    step = self.kwargs.get("step_num")
    return self.name if step is None else f"{self.name} {step}"


def annotate_function(func, name: str | None = None, **decorator_kwargs):
  """`func` with each call wrapped in a `TraceAnnotation` named `name` (default: its qualified
  name); `decorator_kwargs` become the event's arguments.

  Example:
    >>> import functools
    >>> @functools.partial(revax.profiler.annotate_function, name="event_name")
    ... def f(x):
    ...   return jnp.dot(x, x.T).block_until_ready()
    >>> result = f(jnp.ones((100, 100)))
  """
  name = name or getattr(func, "__qualname__", None) or func.__name__

  @functools.wraps(func)
  def wrapper(*args, **kwargs):
    with TraceAnnotation(name, **decorator_kwargs):
      return func(*args, **kwargs)
  return wrapper


def start_server(port: int, requires_backend: bool = True):
  """JAX starts a TSL profiler (gRPC) server that TensorBoard samples; revax has no such server.
  Raises NotImplementedError (use `trace`/`start_trace` to record annotations)."""
  del port, requires_backend
  raise NotImplementedError("revax has no profiler server (JAX's is XLA's TSL profiler service); "
                            "use revax.profiler.trace / start_trace to record annotations")


def stop_server() -> None:
  """Stop the profiler server: as no server can be started, always JAX's ValueError."""
  raise ValueError("No active profiler server.")


def register_subprocess(pid: int, port: int):
  """JAX registers a subprocess's profiler server; revax has none, so this fails with the
  RuntimeError JAX raises when registration fails."""
  raise RuntimeError(f"could not register subprocess {pid} (port {port}): revax has no profiler "
                     "server to aggregate subprocess profiles")


# --- device memory profile (pprof) ---------------------------------------------------------------
def _varint(n: int) -> bytes:
  out = bytearray()
  while True:
    b = n & 0x7F
    n >>= 7
    if n:
      out.append(b | 0x80)
    else:
      out.append(b)
      return bytes(out)


def _field(number: int, value) -> bytes:
  """One protobuf field: an int (varint) or bytes (length-delimited)."""
  if isinstance(value, int):
    return _varint(number << 3) + _varint(value)
  return _varint(number << 3 | 2) + _varint(len(value)) + value


def _packed(number: int, values) -> bytes:
  return _field(number, b"".join(_varint(v) for v in values))


def device_memory_profile(backend: str | None = None) -> bytes:
  """The live Arrays as a gzip-compressed pprof `Profile` protocol buffer (as JAX returns).

  Each Array is one sample with values (allocations=1, space=its bytes), located at a function
  named by its type (e.g. `float32[1000,1000]`), so `pprof -top` lists memory by array type.
  JAX's profile also holds the Python stack of each allocation; revax does not record those.

  Args:
    backend: optional backend name; RuntimeError for an unknown one, as JAX.
  """
  from revax._src.api_extras import default_backend, live_arrays
  if backend is not None and backend != default_backend():
    raise RuntimeError(f"Backend '{backend}' is not in the list of known backends: "
                       f"['{default_backend()}'].")
  strings = {"": 0}

  def s(text):
    return strings.setdefault(text, len(strings))

  sample_types = (_field(1, _field(1, s("allocations")) + _field(2, s("count"))) +
                  _field(1, _field(1, s("space")) + _field(2, s("bytes"))))
  samples, functions, locations, ids = b"", b"", b"", {}
  for arr in live_arrays():
    try:
      key = f"{arr.dtype.name}[{','.join(map(str, arr.shape))}]"
      nbytes = int(arr.nbytes)
    except Exception:  # an Array being torn down  # noqa: BLE001
      continue
    if key not in ids:
      ids[key] = len(ids) + 1
      functions += _field(5, _field(1, ids[key]) + _field(2, s(key)) + _field(3, s(key)))
      locations += _field(4, _field(1, ids[key]) + _field(4, _field(1, ids[key])))
    samples += _field(2, _packed(1, [ids[key]]) + _packed(2, [1, nbytes]))
  table = b"".join(_field(6, t.encode()) for t in strings)
  profile = sample_types + samples + locations + functions + table
  return gzip.compress(profile)


def save_device_memory_profile(filename, backend: str | None = None) -> None:
  """Write `device_memory_profile(backend)` to `filename`."""
  profile = device_memory_profile(backend)
  with open(filename, "wb") as f:
    f.write(profile)
