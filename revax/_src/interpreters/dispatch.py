"""Eager execution and the compiled-program cache.

Outside any transformation, `bind` lands here. A primitive with a NumPy implementation whose
inputs all live on the host runs in NumPy (microseconds, no compile). Otherwise the primitive is
compiled alone with XLA, once per (primitive, params, input avals), and executed on device
buffers. Either way the output avals come from the primitive's abstract evaluation, which is also
where bad shapes and dtypes are rejected.

`CompiledProgram` is a compiled jaxpr ready to run: it checks its arguments against the avals it
was compiled for (the runtime itself checks only byte sizes) before anything reaches XLA.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import weakref

import numpy as np

from revax._src.core import dtypes
from revax._src.core.config import config
from revax._src.core.avals import AbstractToken, ShapedArray, Token, get_aval, same_type
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from revax._src.core.rules import RuleTable
from revax._src.core.trace import Primitive, set_eager_apply
from revax._src.interpreters import mlir
from revax._src.runtime import array as _array
from revax._src.runtime import placement as _placement
from revax._src.runtime import sharded as _sharded
from revax._src.runtime.array import Array
from revax._src.runtime.denormals import flush_off, flush_on

_logger = logging.getLogger("revax")

numpy_impls = RuleTable("numpy impl")  # primitive -> fn(*ndarrays, **params) -> ndarray(s)
custom_impls = RuleTable("eager impl")  # primitive -> fn(*args, **params), for call primitives

_PY_SCALARS = (bool, int, float, complex)


def def_numpy_impl(prim: Primitive, fn):
  """Register `fn(*ndarrays, **params)` as the eager NumPy implementation of `prim`."""
  numpy_impls[prim] = fn
  return fn


def host_value(x) -> np.ndarray:
  """The NumPy value of an eager argument, in its canonical dtype. It may be the caller's own
  array: implementations never write into their inputs, and `wrap_host` copies a result that
  views it."""
  if type(x) is Array:
    npy = x._npy
    return npy if npy is not None else x._value()
  aval = get_aval(x)
  return np.asarray(x, dtype=aval.dtype)


def _is_host(x) -> bool:
  return x._npy is not None if type(x) is Array else True


def _physical_memory() -> int:
  """The host's physical memory in bytes (0 where the platform does not say)."""
  try:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
  except (ValueError, OSError, AttributeError):
    return 0


_HOST_MEMORY = _physical_memory()


def _size_text(num_bytes: int) -> str:
  """A byte count as NumPy's allocation errors print it ("4.00 TiB")."""
  unit = max(num_bytes.bit_length() - 1, 1) // 10
  n = num_bytes / (1 << (unit * 10))
  if round(n) == 1024:
    unit, n = unit + 1, n / 1024
  name = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")[unit]
  if unit == 0:
    return f"{n:.0f} {name}"
  return f"{n:#.3g} {name}" if round(n) < 1000 else f"{n:#.0f} {name}"


def check_host_copy(x, dtype) -> None:
  """NumPy's MemoryError for a copy of the array `x` (a broadcast view: 4 TiB of one scalar)
  larger than the host's physical memory, raised before allocating: where the kernel overcommits
  memory, NumPy's own allocation succeeds and filling it grows the process until it is killed."""
  nbytes = x.size * np.dtype(dtype).itemsize
  if _HOST_MEMORY and nbytes > _HOST_MEMORY:
    raise MemoryError(f"Unable to allocate {_size_text(nbytes)} for an array with shape "
                      f"{x.shape} and data type {np.dtype(dtype)}")


def to_array(x) -> Array:
  """Wrap an eager value (Array, NumPy array or scalar, Python scalar) as an Array."""
  if type(x) is Array:
    return x
  aval = get_aval(x)
  if type(x) is np.ndarray and x.size * 16 > _HOST_MEMORY > 0:  # (16: the widest item)
    check_host_copy(x, aval.dtype)
  v = np.array(x, dtype=aval.dtype)
  v.flags.writeable = False
  return Array(aval, npy=v)


_abstract_eval_cache: dict = {}


def _output_avals(prim, avals, params):
  """The primitive's abstract evaluation, memoized: eager ops repeat the same signatures."""
  try:
    key = (prim, *avals, *params.items()) if params else (prim, *avals)
    out = _abstract_eval_cache.get(key)
  except TypeError:  # unhashable params: the rule still runs (and will say what is wrong)
    return prim.abstract_eval(*avals, **params)
  if out is None:
    out = prim.abstract_eval(*avals, **params)
    if len(_abstract_eval_cache) > 65536:
      _abstract_eval_cache.clear()
    _abstract_eval_cache[key] = out
  return out


def apply_primitive(prim: Primitive, args, params):
  """Evaluate `prim` on concrete values: NumPy on host inputs, else a compiled executable.

  With jax_debug_nans / jax_debug_infs set, an output holding a NaN / inf raises
  FloatingPointError naming the primitive. With a committed input (`Array.committed`) the
  primitive runs on that input's device and its outputs are committed (`_apply_committed`)."""
  if _array.committed_live and _array.any_committed(args):
    out = _apply_committed(prim, args, params)
  elif config.default_device is not None and _placement.default_moved():
    out = _apply_on_device(prim, args, params, _placement.default_device())
  else:
    out = _apply_primitive(prim, args, params)
  if config.debug_checks:
    check_special_values(prim.name, out if prim.multiple_results else [out])
  if mesh_settle is not None:
    out = mesh_settle(prim, args, params, out)
  return out


# Set by mesh_placement.py once a mesh was set: fn(prim, args, params, out) -> out placed over the
# mesh in context (as JAX places eager results under `set_mesh`).
mesh_settle = None


def _apply_committed(prim: Primitive, args, params):
  """`prim` on arguments of which some are committed, as JAX runs it: on the device the
  committed ones share (ValueError when they are on different devices), the others moved there;
  the outputs live there (those a call primitive, a custom impl, placed itself stay where they
  are) and are committed. With a sharded argument the primitive places its own outputs (they
  are committed too)."""
  device = None
  if not (_sharded.live and _sharded.any_sharded(args)):
    device = _placement.placement_needed(args, prim.name)
  else:
    _placement.committed_device(args, prim.name)  # (only for its ValueError on a conflict)
  if device is None:
    out = _apply_primitive(prim, args, params)
  else:
    out, args = _run_placed(prim, args, params, device)
  _array.commit_results(out, args)  # computed from committed arrays: committed (as in JAX)
  return out


def _apply_on_device(prim: Primitive, args, params, device):
  """`prim` on uncommitted arguments under `jax_default_device`: run on `device` (operands
  moved there), outputs left uncommitted, as JAX's."""
  return _run_placed(prim, args, params, device)[0]


def _run_placed(prim: Primitive, args, params, device):
  """`prim` run on `device`, its operands moved there (NumPy implementations read host copies:
  only compiled code needs buffers there); results computed on the host get a buffer there."""
  impl = numpy_impls.get(prim)
  host = prim not in custom_impls and impl is not None and all(map(_is_host, args))
  placed = [_placement.on_device(a, device, upload=not host) for a in args]
  out = _apply_primitive(prim, placed, params)
  if device != _placement._backend_default():  # (a host-only result is on the default one)
    _placement.place_results(out, device)  # (results that have a device keep theirs)
  return out, placed


def check_special_values(name: str, outs) -> None:
  """FloatingPointError if an inexact output holds a NaN (jax_debug_nans) or an inf
  (jax_debug_infs)."""
  for out in outs:
    aval = out.aval if isinstance(out, Array) else None  # sharded Arrays too
    if aval is None or not dtypes.is_inexact(aval.dtype) or aval.size == 0:
      continue
    v = np.asarray(out._value())
    if config.debug_nans and np.isnan(v).any():
      raise FloatingPointError(f"invalid value (nan) encountered in {name}")
    if config.debug_infs and np.isinf(v).any():
      raise FloatingPointError(f"invalid value (inf) encountered in {name}")


# Set by sharded_eager.py: fn(prim, args, params) -> outputs, or None to evaluate as usual. Eager
# primitives on sharded arrays run over their mesh (results stay sharded), as JAX runs them.
sharded_apply = None


def _apply_primitive(prim: Primitive, args, params):
  custom = custom_impls.get(prim)
  if custom is not None:
    return custom(*args, **params)
  if _sharded.live and sharded_apply is not None and _sharded.any_sharded(args):
    out = sharded_apply(prim, args, params)
    if out is not None:
      return out
  avals = [a.aval if type(a) is Array else get_aval(a) for a in args]
  out_aval = _output_avals(prim, avals, params)
  impl = numpy_impls.get(prim)
  if impl is not None and all(map(_is_host, args)):
    old = flush_on()  # as XLA:CPU computes: subnormals read and written as zero
    host_args = list(map(host_value, args))
    try:
      out = impl(*host_args, **params)
    finally:
      flush_off(old)
    out = _not_an_input(out, host_args, prim.multiple_results)
    if prim.multiple_results:
      return [wrap_host(o, a) for o, a in zip(out, out_aval, strict=True)]
    return wrap_host(out, out_aval)
  return _run_compiled(prim, avals, args, params)


def _run_compiled(prim: Primitive, avals, args, params):
  program = _primitive_program(prim, tuple(avals), _hashable_params(params))
  outs = program.call_arrays(args)
  return outs if prim.multiple_results else outs[0]


def apply_lowered(prim: Primitive, args, params):
  """`prim` on eager values, compiled alone through its lowering rule whatever eager impl it
  has (JAX's `xla.apply_primitive`: a library primitive's `def_impl` may be that, so this must
  not consult `custom_impls`)."""
  return _run_compiled(prim, [a.aval if type(a) is Array else get_aval(a) for a in args], args,
                       params)


def _not_an_input(out, host_args, multiple_results):
  """A NumPy implementation's outputs, where one that is a caller's writeable input itself (an
  identity such as squeeze or rev of no axes) is replaced by a copy: the Array must own its
  memory, and wrapping the caller's array would freeze it."""
  outs = out if multiple_results else (out,)
  if any(o is a and isinstance(a, np.ndarray) and a.flags.writeable
         for o in outs for a in host_args):
    outs = [o.copy() if any(o is a for a in host_args) else o for o in outs]
    return outs if multiple_results else outs[0]
  return out


def _shares_writeable_memory(v: np.ndarray) -> bool:
  """Whether `v` is a view of an array that can still be written (a caller's array)."""
  base = v.base
  while isinstance(base, np.ndarray):
    if base.flags.writeable:
      return True
    base = base.base
  return False


def wrap_host(value, aval: ShapedArray) -> Array:
  """An Array owning `value` (a NumPy implementation's result), made read-only; a result that
  views memory someone can still write is copied first (Arrays are immutable)."""
  v = value if type(value) is np.ndarray else np.asarray(value)
  if v.dtype != aval.dtype:
    v = v.astype(aval.dtype)
  elif v.base is not None and _shares_writeable_memory(v):
    v = v.copy()
  if v.shape != aval.shape:
    raise AssertionError(f"NumPy implementation returned shape {v.shape}, expected {aval.shape}")
  v.flags.writeable = False
  return Array(aval, npy=v)


def _hashable_params(params):
  try:
    key = tuple(sorted(params.items()))
    hash(key)
    return key
  except TypeError as e:
    raise TypeError(f"primitive params must be hashable (use tuples, not lists): {params}") from e


_program_cache: dict = {}
_cache_lock = threading.Lock()


def primitive_program(prim, avals, params) -> "CompiledProgram":
  """The compiled (cached) program of one equation of `prim` on `avals` with `params` (for
  custom eager implementations that compile in some cases only)."""
  return _primitive_program(prim, tuple(avals), _hashable_params(params))


def _primitive_program(prim, avals, params_key) -> "CompiledProgram":
  # (the trace epoch names the lowering-relevant config, e.g. jax_default_matmul_precision)
  key = (prim, avals, params_key, config.trace_epoch)
  program = _program_cache.get(key)
  if program is None:
    params = dict(params_key)
    invars = [Var(a) for a in avals]
    out = prim.abstract_eval(*avals, **params)
    outvars = [Var(a) for a in (out if prim.multiple_results else [out])]
    jaxpr = Jaxpr([], invars, outvars, [JaxprEqn(prim, invars, outvars, params)])
    closed = ClosedJaxpr(jaxpr, [])
    program = compile_jaxpr(closed, prim.name)
    program._keep = closed  # (its recipe is weak: the cache holds the jaxpr here)
    with _cache_lock:
      program = _program_cache.setdefault(key, program)
  return program


# --- compiling and running jaxprs ----------------------------------------------------------------
def check_arg_avals(name: str, expected, received) -> None:
  """TypeError unless `received` avals match `expected` in shape and dtype, one for one."""
  received = list(received)
  ok = len(expected) == len(received) and all(map(same_type, received, expected))
  if not ok:
    want = ", ".join(a.str_short() for a in expected)
    got = ", ".join(a.str_short() for a in received)
    bad = [i for i, (g, w) in enumerate(zip(received, expected)) if not same_type(g, w)]
    detail = (f"{len(expected)} arguments expected, {len(received)} received"
              if len(expected) != len(received) else f"argument(s) {bad} differ")
    raise TypeError(f"compiled function {name} was compiled for argument types ({want}) but "
                    f"received ({got}): {detail}")


class CompiledProgram:
  """An XLA executable for a closed jaxpr, with the avals it accepts and returns."""

  def __init__(self, executable, in_avals, out_avals, text: str, name: str):
    self.executable = executable
    self.in_avals = list(in_avals)
    self.out_avals = list(out_avals)
    self.text = text
    self.name = name
    # float0 values (tangents of integers) have no PJRT type: they enter as bool zeros (the
    # lowering's i1) and leave as NumPy float0 zeros, as eager evaluation and JAX give them.
    self._float0_in = tuple(i for i, a in enumerate(self.in_avals)
                            if type(a) is not AbstractToken and a.dtype == dtypes.float0)
    self._float0_out = tuple(i for i, a in enumerate(self.out_avals)
                             if type(a) is not AbstractToken and a.dtype == dtypes.float0)
    # XLA tokens enter and leave as `Token`s holding their buffers
    self.has_tokens = any(type(a) is AbstractToken for a in (*self.in_avals, *self.out_avals))
    self._recipe = None  # (weakref to the closed jaxpr, aliases, XLA options): to compile
    # elsewhere
    self._keep = None
    self._others: dict = {}  # another backend -> its executable of this program

  def executable_for(self, backend):
    """This program's executable on `backend` (lowered and compiled for it on first use)."""
    executable = self.executable
    if backend is executable._backend:
      return executable
    other = self._others.get(backend)
    if other is None:
      if self._recipe is None:
        raise ValueError(f"program {self.name} was compiled for {executable._backend.platform} "
                         f"and cannot run on {backend.platform} buffers")
      closed, aliases, options = self._recipe
      closed = closed()
      if closed is None:
        raise ValueError(f"program {self.name} can no longer be compiled for "
                         f"{backend.platform}: its jaxpr is gone")
      other = self._others.setdefault(
          backend, compile_jaxpr(closed, self.name, aliases, backend, options).executable)
    return other

  def check_avals(self, avals) -> None:
    check_arg_avals(self.name, self.in_avals, avals)

  def call_arrays(self, args) -> list[Array]:
    """Run on eager values (Arrays, NumPy arrays, scalars); returns device-backed Arrays."""
    self.check_avals([a.aval if type(a) is Array else get_aval(a) for a in args])
    return self.run_unchecked(args)

  def run_unchecked(self, args) -> list[Array]:
    """`call_arrays` for arguments already known to have the right avals."""
    if self._float0_in:
      args = list(args)
      for i in self._float0_in:
        shape = self.in_avals[i].shape
        args[i] = Array(ShapedArray(shape, dtypes.bool_), npy=np.zeros(shape, np.bool_))
    if self.has_tokens:
      return self._run_with_tokens(args)
    bufs, pending = [], None
    for a in args:
      if type(a) is not Array:
        a = to_array(a)
      buf = a._buf
      if buf is None:
        pending = pending or []
        pending.append((len(bufs), a))
      bufs.append(buf)
    if pending:  # host-only values go where the others are, else to the default device
      device = next((b.device for b in bufs if b is not None), None)
      if device is None and config.default_device is not None:
        device = _placement.default_device()
      for i, a in pending:
        bufs[i] = a._device_buffer(device)
    executable = self.executable
    if bufs and bufs[0]._info.backend is not executable._backend:
      executable = self.executable_for(bufs[0]._info.backend)
    outs = executable.execute(bufs)
    outs = [Array(aval, None, b) for aval, b in zip(self.out_avals, outs)]
    for i in self._float0_out:
      outs[i] = np.zeros(self.out_avals[i].shape, dtypes.float0)
    return outs

  def _run_with_tokens(self, args) -> list:
    """`run_unchecked` of a program taking or returning XLA tokens: a `Token` argument passes
    its buffer (the program runs where the token is), a token result becomes a `Token`."""
    tokens = [i for i, a in enumerate(self.in_avals) if type(a) is AbstractToken]
    device = next((args[i]._buf.device for i in tokens), None)
    arrays = [a if type(a) is Array else to_array(a) for i, a in enumerate(args)
              if i not in tokens]
    device = device or next((a._buf.device for a in arrays if a._buf is not None), None)
    if device is None and config.default_device is not None:
      device = _placement.default_device()
    it = iter(arrays)
    bufs = [args[i]._buf if i in tokens else next(it)._device_buffer(device)
            for i in range(len(args))]
    executable = self.executable
    if bufs and bufs[0]._info.backend is not executable._backend:
      executable = self.executable_for(bufs[0]._info.backend)
    outs = executable.execute(bufs)
    outs = [Token(b) if type(aval) is AbstractToken else Array(aval, None, b)
            for aval, b in zip(self.out_avals, outs, strict=True)]
    for i in self._float0_out:
      outs[i] = np.zeros(self.out_avals[i].shape, dtypes.float0)
    return outs

  def memory_stats(self):
    return self.executable.memory_stats()


def default_compile_backend():
  """The backend a program compiles for when no argument names one: `jax_default_device`'s
  where set, else the default backend (a TPU where one is attached)."""
  from revax._src.runtime.client import get_backend
  return (_placement.default_device().client if config.default_device is not None
          else get_backend())


def compile_jaxpr(closed: ClosedJaxpr, name: str = "main", aliases=(),
                  backend=None, option_overrides=(), result_kinds=None) -> CompiledProgram:
  """Lower `closed` to StableHLO and compile it with XLA for `backend` (default: the default
  backend; `aliases`: donated parameters and the results that may reuse their buffers, see
  `mlir.lower_jaxpr_to_module`; `option_overrides`: (name, value) XLA options, JAX's
  `compiler_options`). The program compiles again for another backend when it is run on that
  backend's buffers (`CompiledProgram.executable_for`). Under `jax_default_device` the default
  is that device's backend: the program runs there, and a program only that backend can
  compile (an FFI target of the CPU plugin, complex128 beside a TPU) compiles. `result_kinds`:
  the memory kind jit's out_shardings name per result (or None; mlir.lower_jaxpr_to_module)."""
  if backend is None:
    backend = default_compile_backend()
  text = mlir.lower_jaxpr_to_module(closed, name, platform=backend.platform, aliases=aliases,
                                    result_kinds=result_kinds)
  # as JAX logs compilations: at WARNING with jax_log_compiles, else at DEBUG
  level = logging.WARNING if config.log_compiles else logging.DEBUG
  if _logger.isEnabledFor(level):
    _logger.log(level, "Compiling %s with XLA for argument types (%s)", name,
                ", ".join(a.str_short() for a in closed.in_avals))
  start = time.perf_counter()
  executable = backend.compile(text, option_overrides=tuple(option_overrides))
  if _logger.isEnabledFor(level):
    _logger.log(level, "Finished XLA compilation of jit(%s) in %.9f sec", name,
                time.perf_counter() - start)
  from revax._src.interpreters import discharge
  program = CompiledProgram(executable, closed.in_avals, discharge.result_avals(closed), text,
                            name)
  # (weakly: jit keeps programs in a WeakKeyDictionary keyed by `closed`)
  program._recipe = (weakref.ref(closed), aliases, tuple(option_overrides))
  return program


set_eager_apply(apply_primitive)
