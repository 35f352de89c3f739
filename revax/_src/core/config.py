"""Process-wide configuration options (`revax.config.update("jax_enable_x64", True)`).

Options have JAX's names, with or without the `jax_` prefix, and JAX's meaning where revax honours
them. An option revax cannot honour on this backend accepts only the values that change nothing
here (its JAX default, or values equivalent on the CPU backend) and refuses others with a
ValueError saying so; a name JAX does not have is refused with an AttributeError, as JAX does.
Nothing is accepted and then ignored. Options JAX does not have are named `revax_<name>` (never
with a `jax_` prefix, so no name suggests JAX has it): `revax_pjrt_plugin` selects the PJRT plugin.

Options marked `traced` change what tracing produces (dtypes under x64, checks inserted for
debug_nans); `Config.trace_key` is a tuple of their values that jit adds to its cache keys, so a
function traced under one setting is retraced under another.
"""
from __future__ import annotations

import contextlib
import os

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

_MATMUL_PRECISIONS = (
    None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9", "TF32_TF32_F32",
    "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")
_TRACEBACK_FILTERING = ("off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto")


class _Option:
  """One option: its default, how a value is checked, and whether it changes tracing."""
  __slots__ = ("name", "default", "check", "traced", "doc")

  def __init__(self, name, default, check, traced, doc):
    self.name, self.default, self.check, self.traced, self.doc = name, default, check, traced, doc


def _bool(name, value):
  if isinstance(value, str):
    low = value.lower()
    if low in _TRUE or low in _FALSE:
      return low in _TRUE
  if isinstance(value, (bool, int)) and value in (0, 1):
    return bool(value)
  raise ValueError(f"config option jax_{name} takes a bool, got {value!r}")


def _enum(*allowed, honoured=None, why=""):
  """A check accepting `allowed` values, of which revax honours `honoured` (default: all)."""
  honoured = allowed if honoured is None else honoured

  def check(name, value):
    if value not in allowed:
      raise ValueError(f"config option jax_{name} must be one of {list(allowed)}, got {value!r}")
    if value not in honoured:
      raise ValueError(f"config option jax_{name}={value!r} is not supported by revax ({why}); "
                       f"supported values: {list(honoured)}")
    return value
  check.from_env = True  # REVAX_<NAME> may set it (checked like update's value)
  return check


def _only(*honoured, why):
  """A check for an option revax cannot honour: only values that change nothing are accepted."""
  def check(name, value):
    if value not in honoured:
      raise ValueError(f"config option jax_{name}={value!r} is not supported by revax ({why}); "
                       f"supported values: {list(honoured)}")
    return value
  return check


def _only_false(why):
  def check(name, value):
    if _bool(name, value):
      raise ValueError(f"config option jax_{name}=True is not supported by revax ({why})")
    return False
  return check


def _platforms(name, value):
  """A comma-separated list of platforms, the default first (checked when the backends start:
  runtime/backends.py)."""
  if value is None or value == "":
    return None
  if not isinstance(value, str):
    raise ValueError(f"config option jax_{name} takes a string, got {value!r}")
  names = [p.strip().lower() for p in value.split(",") if p.strip()]
  if not any(n in ("cpu", "host", "tpu") for n in names):
    raise ValueError(f"config option jax_{name}={value!r} is not supported by revax: its "
                     "backends are 'cpu' and 'tpu'")
  return value


def _optional_str(name, value):
  if value is not None and not isinstance(value, (str, os.PathLike)):
    raise ValueError(f"config option jax_{name} takes a path or None, got {value!r}")
  return None if value is None else os.fspath(value)


def _plugin_choice(name, value):
  if value is None or value == "":
    return None
  if not isinstance(value, (str, os.PathLike)):
    raise ValueError(f"config option {name} takes a path, a package name or None, got {value!r}")
  return os.fspath(value)


def _size_limit(name, value):
  if isinstance(value, bool) or not isinstance(value, int) or value < -1:
    raise ValueError(f"config option jax_{name} takes an int >= -1, got {value!r}")
  return value


def _positive_int(name, value):
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise ValueError(f"config option {name} takes an int >= 1, got {value!r}")
  return value


def _nonneg_float(name, value):
  if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
    raise ValueError(f"config option jax_{name} takes a number >= 0, got {value!r}")
  return float(value)


def _nonneg_int(name, value):
  if isinstance(value, bool) or not isinstance(value, int) or value < -1:
    raise ValueError(f"config option jax_{name} takes an int, got {value!r}")
  return value


_OPTIONS = {o.name: o for o in [
    _Option("enable_x64", False, _bool, True, "64-bit dtypes (float64, int64) by default"),
    _Option("debug_nans", False, _bool, True,
            "raise FloatingPointError naming the primitive that produced a NaN"),
    _Option("debug_infs", False, _bool, True,
            "raise FloatingPointError naming the primitive that produced an inf"),
    _Option("disable_jit", False, _bool, False, "run jitted functions op by op, uncompiled"),
    _Option("enable_checks", False, _bool, True, "type-check every traced jaxpr"),
    _Option("log_compiles", False, _bool, False, "log every XLA compilation (logger 'revax')"),
    _Option("traceback_filtering", "auto", _enum(*_TRACEBACK_FILTERING), False,
            "hide revax's internal frames from tracebacks of errors raised through its API"),
    _Option("default_matmul_precision", None, _enum(*_MATMUL_PRECISIONS), True,
            "default precision of dots and convolutions (XLA:CPU computes each in its dtype)"),
    _Option("numpy_rank_promotion", "allow",
            _enum("allow", "warn", "raise"), True,
            "what happens when NumPy-style broadcasting adds leading dimensions"),
    _Option("numpy_dtype_promotion", "standard",
            _enum("standard", "strict"), True,
            "dtype promotion rules"),
    _Option("default_prng_impl", "threefry2x32",
            _enum("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32",
                  honoured=("threefry2x32", "rbg", "unsafe_rbg"),
                  why="revax implements the threefry2x32, rbg and unsafe_rbg PRNGs"), True,
            "the PRNG implementation of new keys and of raw keys (env REVAX_DEFAULT_PRNG_IMPL)"),
    _Option("threefry_partitionable", True,
            _only(True, why="revax computes threefry random bits the partitionable way only"),
            True, "how threefry random bits are derived"),
    _Option("platforms", None, _platforms, False, "platforms to initialize, in order"),
    _Option("platform_name", None, _platforms, False, "the platform to use (older spelling)"),
    _Option("num_cpu_devices", -1, _nonneg_int, False,
            "number of CPU devices (before the backend starts; REVAX_CPU_DEVICE_COUNT)"),
    _Option("check_tracer_leaks", False, _bool, True,
            "after each jit (staging) or vmap trace, raise if a tracer of it is still alive"),
    _Option("debug_key_reuse", False, _only_false("key-reuse checking is not implemented"), False,
            "raise KeyReuseError when a PRNG key is used twice"),
    _Option("explain_cache_misses", False, _only_false("cache-miss explanations are not "
                                                       "implemented"), False,
            "log why a jitted function retraced"),
    _Option("enable_compilation_cache",
            os.environ.get("REVAX_COMPILATION_CACHE", "1").strip().lower() in _TRUE, _bool, False,
            "keep compiled programs on disk for later processes (on by default; env "
            "REVAX_COMPILATION_CACHE=0 turns it off)"),
    _Option("compilation_cache_dir", os.environ.get("REVAX_COMPILATION_CACHE_DIR") or None,
            _optional_str, False,
            "directory of the persistent compilation cache (None: $XDG_CACHE_HOME/revax or "
            "~/.cache/revax)"),
    _Option("compilation_cache_max_size",
            int(os.environ.get("REVAX_COMPILATION_CACHE_MAX_SIZE", str(1 << 30))), _size_limit,
            False, "bytes the cache directory may hold; -1: no limit"),
    _Option("persistent_cache_min_compile_time_secs",
            float(os.environ.get("REVAX_COMPILATION_CACHE_MIN_COMPILE_TIME_SECS", "0.05")),
            _nonneg_float, False, "programs that compiled faster than this are not written"),
    _Option("persistent_cache_min_entry_size_bytes", 0, _size_limit, False,
            "entries smaller than this are not written"),
    _Option("transfer_guard", "allow",
            _only("allow", why="transfers are not guarded"), False,
            "guard against implicit host/device transfers"),
    *[_Option("transfer_guard_" + kind, None,
               _only(None, "allow", why="transfers are not guarded"), False,
               f"guard against implicit {kind.replace('_', ' ')} transfers")
      for kind in ("host_to_device", "device_to_host", "device_to_device")],
    _Option("no_tracing", False, _bool, False,
            "raise RuntimeError when a jitted function is traced (a cache miss)"),
    _Option("no_execution", False, _bool, False,
            "raise RuntimeError when a compiled program is about to run"),
    _Option("softmax_custom_jvp", False, _bool, False,
            "JAX's switch between two derivations of softmax's JVP; revax's softmax has the "
            "same (custom) derivative either way"),
    _Option("default_device", None, lambda name, value: value, True,
            "the device uncommitted arrays and computations go to (None: the default "
            "backend's first device; a Device, or a platform name such as 'cpu')"),
    _Option("allow_f16_reductions", True,
            _only(True, why="revax does not change how float16 reductions accumulate"), False,
            "allow reductions in float16"),
    _Option("array_garbage_collection_guard", None,
            _only(None, "allow", why="arrays are not guarded against garbage collection"), False,
            "what happens when an Array is garbage collected while referenced by a cycle"),
    _Option("auto_pcast", True,
            _only(True, why="revax has no varying-manual-axes types to cast between"), False,
            "insert pcast automatically in shard_map bodies"),
    _Option("enable_custom_prng", False,
            _only_false("revax's keys are threefry2x32 keys only"), False,
            "allow custom PRNG implementations"),
    _Option("legacy_prng_key", "allow",
            _enum("allow", "warn", "error", honoured=("allow",),
                  why="raw uint32 keys are always accepted"), False,
            "what happens when a raw uint32 key array is passed to a random function"),
    _Option("remove_size_one_mesh_axis_from_type", False,
            _only_false("revax's array types carry no mesh axes"), False,
            "drop size-one mesh axes from sharded array types"),
    _Option("thread_guard", False,
            _only_false("revax does not guard against multi-threaded use of one mesh"), False,
            "raise when a mesh context is used from several threads"),
    _Option("jax2tf_associative_scan_reductions", False,
            _only_false("revax has no jax2tf"), False,
            "jax2tf: lower reductions of associative scans differently"),
    _Option("revax_max_inflight_computations", 32, _positive_int, False,
            "computations queued per device (calls return before their work ends) before a "
            "new call first waits for the oldest to finish, as JAX bounds its in-flight work"),
    _Option("revax_pjrt_plugin", None, _plugin_choice, False,
            "the PJRT plugin: a path to its shared library or the name of an installed package "
            "holding one (before the backend starts; env PJRT_PLUGIN; default: xla-cpu-pjrt)"),
]}


def _full_name(key: str) -> str:
  """An option's full name: JAX's `jax_` names, and the few that have no `jax_` prefix (revax's
  own `revax_*` options, JAX's `jax2tf_*`) as they are."""
  return key if key.startswith(("revax_", "jax2tf_")) else "jax_" + key


class Config:
  """Holds revax's options. Each reads its default from the environment (REVAX_<NAME>)."""

  def __init__(self):
    self._values = {}
    for name, opt in _OPTIONS.items():
      env = os.environ.get("REVAX_" + name.upper())
      value = opt.default
      if env is not None and opt.check is _bool:
        value = env.lower() in _TRUE
      elif env is not None and getattr(opt.check, "from_env", False):
        value = opt.check(name, env)
      self._values[name] = value
    self._listeners = []
    self._validators = {}
    self._traced = tuple(n for n, o in _OPTIONS.items() if o.traced)
    self._trace_epochs = {}
    self._user_values = []  # the current values of make_user_context's contexts
    self._refresh()

  def _refresh(self):
    """Mirror every value as a plain attribute (hot paths read `config.enable_x64` without
    going through __getattr__) and recompute the tracing key and its small-int epoch."""
    values = self._values
    self.__dict__.update(values)
    self.x64_enabled = values["enable_x64"]
    self.debug_checks = values["debug_nans"] or values["debug_infs"]
    self.trace_key = self._make_trace_key()
    self.trace_epoch = self._trace_epochs.setdefault(self.trace_key, len(self._trace_epochs))

  def _make_trace_key(self):
    return tuple(self._values[n] for n in self._traced) + tuple(self._user_values)

  def add_user_context(self, default) -> int:
    """A new jit-cache-sensitive user value (revax.make_user_context); returns its index."""
    hash(default)
    self._user_values.append(default)
    self._refresh()
    return len(self._user_values) - 1

  def set_user_context(self, index: int, value) -> None:
    """Set user context `index`: jit retraces functions traced under another value."""
    try:
      hash(value)
    except TypeError:
      raise TypeError(f"a user context value must be hashable (it keys jit's caches), got "
                      f"{value!r}") from None
    self._user_values[index] = value
    self._refresh()

  @staticmethod
  def _canonical(name: str) -> str:
    key = name[len("jax_"):] if isinstance(name, str) and name.startswith("jax_") else name
    if key not in _OPTIONS or (key != name and key.startswith("revax_")):
      raise AttributeError(f"Unrecognized config option: {name}")
    return key

  def update(self, name: str, value) -> None:
    """Set option `name` (JAX's name, with or without `jax_`) to `value`.

    Args:
      name: e.g. "jax_enable_x64" or "enable_x64".
      value: the new value; checked against the option's allowed values.

    Raises:
      AttributeError: no such option.
      ValueError: a value the option does not take, or one revax cannot honour here.

    Example:
      >>> revax.config.update("jax_enable_x64", True)
      >>> jnp.arange(2.0).dtype
      dtype('float64')
      >>> revax.config.update("jax_enable_x64", False)
      >>> jnp.arange(2.0).dtype
      dtype('float32')
    """
    key = self._canonical(name)
    opt = _OPTIONS[key]
    value = opt.check(key, value)
    for fn in self._validators.get(key, ()):
      fn(value)
    self._values[key] = value
    self._refresh()
    for fn in self._listeners:
      fn(key)

  def read(self, name: str):
    """The current value of option `name` (with or without `jax_`)."""
    return self._values[self._canonical(name)]

  @property
  def values(self) -> dict:
    """{jax_<name>: value} for every option (revax's own: {revax_<name>: value})."""
    return {_full_name(k): v for k, v in self._values.items()}

  def parse_flags_with_absl(self) -> None:
    """Set the options given on the command line (before any `--`) as `--jax_<name>=value`,
    `--jax_<name>` or `--nojax_<name>` (bools), as JAX's method does through absl (flax's tests
    call it at import); other arguments, and names that are not options, are left alone.
    Only the first call reads the command line, as in JAX.

    Example:
      >>> revax.config.parse_flags_with_absl()  # (pytest's arguments: nothing to set)
    """
    if self.__dict__.get("_parsed_flags"):
      return
    self.__dict__["_parsed_flags"] = True
    import itertools
    import sys
    for arg in itertools.takewhile(lambda a: a != "--", sys.argv[1:]):
      if arg.startswith("--nojax_") and "=" not in arg:
        name, value = arg[len("--no"):], False
      elif arg.startswith("--jax_"):
        name, eq, value = arg[2:].partition("=")
        value = value if eq else True
      else:
        continue
      key = name[len("jax_"):]
      if key not in _OPTIONS:
        continue  # (absl's known_only: not one of ours)
      default = _OPTIONS[key].default
      if isinstance(value, str) and type(default) in (int, float):
        value = type(default)(value)
      self.update(key, value)

  def on_change(self, fn) -> None:
    """Call `fn(name)` after every update."""
    self._listeners.append(fn)

  def add_validator(self, name: str, fn) -> None:
    """Call `fn(value)` before option `name` takes a new value; it raises to refuse it (a layer
    above core uses this, e.g. the runtime refuses a device count once the backend started)."""
    self._validators.setdefault(self._canonical(name), []).append(fn)

  @contextlib.contextmanager
  def override(self, name: str, value):
    """Set option `name` to `value` for the duration of a with-block (process-wide)."""
    key = self._canonical(name)
    old = self._values[key]
    self.update(key, value)
    try:
      yield
    finally:
      self.update(key, old)

  def __getattr__(self, name):
    if name.startswith("_"):
      raise AttributeError(name)
    key = name[len("jax_"):] if name.startswith("jax_") else name
    try:
      return self.__dict__["_values"][key]
    except KeyError:
      raise AttributeError(f"revax.config has no option {name!r}") from None


config = Config()


_NO_VALUE = object()


class State:
  """A config option as a context manager factory, like JAX's top-level `jax.enable_x64`,
  `jax.debug_nans`, ...: `with revax.debug_nans(True): ...` sets it inside the block (for the
  whole process, not per thread); `.value` reads it."""

  def __init__(self, name: str):
    self._name = name

  def __call__(self, new_val=_NO_VALUE):
    """A context manager setting the option inside the block; a boolean option without an
    argument is set to True (as JAX's), any other needs the value."""
    if new_val is _NO_VALUE:
      if not isinstance(_OPTIONS[self._name].default, bool):
        raise TypeError(f"Context manager for {self._name} config option requires an argument "
                        "representing the new value for the config option.")
      new_val = True
    return config.override(self._name, new_val)

  @property
  def value(self):
    return config.read(self._name)

  def __repr__(self):
    return f"State({_full_name(self._name)}={self.value!r})"


def disable_jit(disable: bool = True):
  """Context manager running jitted functions op by op (eagerly) inside the with-block.

  Args:
    disable: whether jit is disabled inside the block.

  Example:
    >>> @revax.jit
    ... def f(x):
    ...   print("x is", x)  # under jit, a tracer; with jit disabled, the value
    ...   return x * 2
    >>> with revax.disable_jit():
    ...   f(jnp.arange(3))
    x is [0 1 2]
    Array([0, 2, 4], dtype=int32)
  """
  return config.override("disable_jit", disable)


def transfer_guard(new_val: str):
  """Context manager for jax_transfer_guard ("allow" only: revax does not guard transfers)."""
  return config.override("transfer_guard", new_val)


enable_x64 = State("enable_x64")
debug_nans = State("debug_nans")
debug_infs = State("debug_infs")
enable_checks = State("enable_checks")
log_compiles = State("log_compiles")
default_matmul_precision = State("default_matmul_precision")
numpy_rank_promotion = State("numpy_rank_promotion")
numpy_dtype_promotion = State("numpy_dtype_promotion")
default_prng_impl = State("default_prng_impl")
explain_cache_misses = State("explain_cache_misses")
check_tracer_leaks = State("check_tracer_leaks")
threefry_partitionable = State("threefry_partitionable")
debug_key_reuse = State("debug_key_reuse")
transfer_guard_host_to_device = State("transfer_guard_host_to_device")
transfer_guard_device_to_host = State("transfer_guard_device_to_host")
transfer_guard_device_to_device = State("transfer_guard_device_to_device")
no_tracing = State("no_tracing")
no_execution = State("no_execution")
softmax_custom_jvp = State("softmax_custom_jvp")
default_device = State("default_device")
allow_f16_reductions = State("allow_f16_reductions")
array_garbage_collection_guard = State("array_garbage_collection_guard")
auto_pcast = State("auto_pcast")
enable_custom_prng = State("enable_custom_prng")
legacy_prng_key = State("legacy_prng_key")
remove_size_one_mesh_axis_from_type = State("remove_size_one_mesh_axis_from_type")
thread_guard = State("thread_guard")
jax2tf_associative_scan_reductions = State("jax2tf_associative_scan_reductions")


def checking_leaks():
  """Context manager turning on jax_check_tracer_leaks inside the block (as jax.checking_leaks):
  when a jit (any staging: make_jaxpr, scan, eval_shape, ...) or vmap trace ends, a tracer of
  it still referenced raises an Exception, as in JAX (jvp/grad traces are not checked, as
  in JAX)."""
  return config.override("check_tracer_leaks", True)
