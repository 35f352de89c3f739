"""Top-level utilities of JAX's namespace beyond the transformations: jacobian, named scopes,
compile-time evaluation, cache and live-array management, typeof, custom_gradient.
"""
from __future__ import annotations

import contextlib
import gc
import platform
import sys
import threading
import weakref

from revax._src.core import wrapping
from revax._src.autodiff import jacrev
from revax._src import sharding
from revax._src.core import mesh_context, sharding_types
from revax._src.core.avals import AbstractRef, AbstractToken, ShapedArray, get_aval
from revax._src.core.trace import Trace, Tracer, current_trace, eval_trace, set_current_trace
from revax._src.custom_derivatives import custom_vjp
from revax._src.runtime.array import Array


def jacobian(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
  """The Jacobian of `fun` by reverse mode (JAX's `jacobian`, which is `jacrev`).

  Args:
    fun: function of arrays (pytrees of them) to differentiate.
    argnums: which positional argument(s) to differentiate with respect to.
    has_aux: whether `fun` returns `(output, aux)`.
    holomorphic: whether `fun` is holomorphic (complex inputs and outputs).
    allow_int: allow integer inputs (their Jacobian blocks are float0).

  Returns:
    A function giving the Jacobian with the output's structure outside the input's.

  Example:
    >>> revax.jacobian(lambda x: x ** 2)(jnp.arange(3.0))
    Array([[0., 0., 0.],
           [0., 2., 0.],
           [0., 0., 4.]], dtype=float32)
  """
  return jacrev(fun, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic,
                allow_int=allow_int)


# --- named scopes --------------------------------------------------------------------------------
class _NameStack(threading.local):
  def __init__(self):
    self.names: list[str] = []


_name_stack = _NameStack()


def current_name_stack() -> str:
  """The active named scopes joined by '/', e.g. 'layer1/attention' ('' outside any)."""
  return "/".join(_name_stack.names)


@contextlib.contextmanager
def named_scope(name: str):
  """Context manager that names the operations staged inside it (scopes nest: 'a/b').

  Args:
    name: the scope's name; must be a string.

  Example:
    >>> x, w = jnp.ones((2, 3)), jnp.ones((3, 4))
    >>> with revax.named_scope("dense"):
    ...   y = x @ w
    >>> y.shape
    (2, 4)
  """
  if not isinstance(name, str):
    raise TypeError("named_scope name argument must be a string.")
  _name_stack.names.append(name)
  try:
    yield
  finally:
    _name_stack.names.pop()


def named_call(fun, *, name=None):
  """`fun` wrapped so that its operations run inside `named_scope(name or fun.__name__)`.

  Args:
    fun: the function to wrap.
    name: the scope's name (default: the function's name).

  Returns:
    A function computing the same values as `fun`.
  """
  scope = name if name is not None else getattr(fun, "__name__", "fun")

  @wrapping.wraps(fun)
  def named(*args, **kwargs):
    with named_scope(scope):
      return fun(*args, **kwargs)

  return named


# --- compile-time evaluation ---------------------------------------------------------------------
class _CompileTimeEvalTrace(Trace):
  """Evaluates primitives whose operands are all concrete right away; hands the others (those
  with tracers) to the trace that was current when the context was entered."""

  def __init__(self, parent: Trace):
    self.parent = parent

  def process_primitive(self, primitive, args, params):
    if any(isinstance(a, Tracer) for a in args):
      with set_current_trace(self.parent):
        return self.parent.process_primitive(primitive, args, params)
    with set_current_trace(eval_trace):
      return eval_trace.process_primitive(primitive, args, params)

  def __repr__(self):
    return f"CompileTimeEvalTrace({self.parent!r})"


@contextlib.contextmanager
def ensure_compile_time_eval():
  """Within this block, operations on concrete values are computed now, even while tracing
  for jit (their results are concrete Arrays, usable as Python values); operations involving
  traced values are still traced.

  Example:
    >>> @revax.jit
    ... def f(x):
    ...   with revax.ensure_compile_time_eval():
    ...     n = int(jnp.sum(jnp.arange(4)))  # a Python int while tracing
    ...   return x * n
    >>> f(2.0)
    Array(12., dtype=float32, weak_type=True)
  """
  parent = current_trace()
  if parent is eval_trace:
    yield
    return
  with set_current_trace(_CompileTimeEvalTrace(parent)):
    yield


# --- arrays and caches ---------------------------------------------------------------------------
def live_arrays(platform=None):
  """Every revax Array alive in this process (`platform`, if given, must be the backend's).

  Args:
    platform: optional platform name such as "cpu".

  Returns:
    A list of Arrays.
  """
  if platform is not None and platform != default_backend():
    return []
  return [o for o in gc.get_objects() if type(o) is Array]


# Caches of libraries cleared with revax's own (jax.extend.backend.register_backend_cache):
# each object has cache_clear(), e.g. a functools.lru_cache over compiled programs (held weakly,
# as JAX holds them: registering keeps no cache alive).
registered_caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def register_cache(cache, for_what: str) -> None:
  """Have `clear_caches` also call `cache.cache_clear()` (JAX's util.register_cache).

  Args:
    cache: an object with `cache_clear()`, e.g. a `functools.lru_cache` function.
    for_what: what the cache holds (for debugging).
  """
  if not callable(getattr(cache, "cache_clear", None)):
    raise TypeError(f"register_backend_cache takes an object with cache_clear() (e.g. a "
                    f"functools.lru_cache function), got {cache!r}")
  registered_caches[cache] = for_what


def clear_caches():
  """Drop every cache of traced and compiled programs (jit's per-function caches, the eager
  program cache, compiled control-flow and window programs, and the caches libraries
  registered with `register_cache`). Later calls trace and compile again."""
  from revax._src import jit as jit_module
  from revax._src import program_cache
  from revax._src.interpreters import dispatch
  from revax._src.lax import windowed
  from revax._src.lax.control_flow import common
  for jitted in list(jit_module.all_jitted):
    jitted.clear_cache()
  program_cache._programs.clear()
  dispatch._program_cache.clear()
  dispatch._abstract_eval_cache.clear()
  windowed._computation_cache.clear()
  common._compiled_programs.clear()
  for cache in list(registered_caches):
    cache.cache_clear()


def default_backend() -> str:
  """The platform name of the default backend: "tpu" where a chip is attached and libtpu is
  installed (`pip install 'revax[tpu]'`), else "cpu" (`jax_platforms` / REVAX_PLATFORMS
  choose)."""
  from revax._src.runtime.client import get_backend
  return get_backend().platform


def typeof(x):
  """The abstract value (shape, dtype, weak type and sharding) of `x`, e.g. `f32[8@x]`.

  As in JAX its `.sharding` is always a NamedSharding over an AbstractMesh: how `x` is split over
  the Explicit axes of its mesh (a spec of Nones, over the mesh in context or an empty one,
  when it is not). It can be passed back where a sharding is taken inside the program
  (reshard, with_sharding_constraint, `out_sharding=`): the concrete mesh with its axes is found
  in context or on the value.
  Typed PRNG keys give their key aval, e.g. `key<fry>[]`."""
  if isinstance(x, Tracer):
    aval = x.aval
  else:
    try:
      aval = get_aval(x)
    except TypeError:
      aval = getattr(x, "aval", None)  # typed PRNG keys (random/keys.py) carry their key aval
      if not isinstance(aval, ShapedArray):
        raise
  if isinstance(aval, (AbstractRef, AbstractToken)):  # a Ref's type: Ref{f32[3]}; Tok
    return aval
  return aval.update(sharding=_type_sharding(x, aval))


def _type_sharding(x, aval):
  """The sharding a type shows, as JAX's: a NamedSharding over an AbstractMesh, its spec one
  entry per dimension (the split over Explicit axes, None elsewhere). Its mesh is the one the
  value is split or placed over; for an Array on one device or a tracer, the abstract mesh in
  context; for NumPy values and Python scalars, the empty one."""
  if aval.sharding is not None:
    mesh = aval.sharding.mesh.abstract_mesh
  elif isinstance(x, Array) and isinstance(getattr(x, "sharding", None), sharding.NamedSharding):
    mesh = x.sharding.mesh.abstract_mesh
  elif isinstance(x, (Array, Tracer)):
    mesh = mesh_context.abstract_mesh() or sharding.EMPTY_ABSTRACT_MESH
  else:
    mesh = sharding.EMPTY_ABSTRACT_MESH
  parts = sharding_types.spec_parts(aval)
  return sharding.NamedSharding(mesh, sharding.PartitionSpec(
      *parts, unreduced=sharding_types.unreduced_of(aval),
      reduced=sharding_types.reduced_of(aval)))


def print_environment_info(return_string: bool = False) -> str | None:
  """Versions of revax, NumPy and Python, the PJRT plugin, the devices and the host.

  Starts the backend (as JAX's does) to report the plugin it loaded and its devices; if the
  plugin cannot load, the report says why instead of raising, so it can go into a bug report.

  Args:
    return_string: return the text instead of printing it.

  Returns:
    The text if `return_string`, else None.
  """
  import importlib.metadata
  import os

  import numpy as np

  from revax._src.runtime import client, plugins
  try:
    version = importlib.metadata.version("revax")
  except importlib.metadata.PackageNotFoundError:
    version = "unknown"
  lines = [f"revax:   {version}", f"numpy:   {np.__version__}",
           f"python:  {sys.version.replace(chr(10), ' ')}"]
  try:
    backend = client.get_backend()
  except (RuntimeError, ValueError, OSError) as e:
    lines.append(f"pjrt plugin: not loaded: {e}")
  else:
    lines += plugins.describe(backend)
    devices = backend.devices
    lines.append(f"device info: {devices[0].device_kind}-{len(devices)}, "
                 f"{len(devices)} local devices")
    lines.append("process_count: 1")
  lines.append(f"platform: {platform.uname()}")
  lines += [f"{k}={v}" for k, v in sorted(os.environ.items())
            if k.startswith(("REVAX_", "XLA_", "PJRT_"))]
  text = "\n".join(lines)
  if return_string:
    return text
  print(text)
  return None


# --- custom_gradient -----------------------------------------------------------------------------
def custom_gradient(fun):
  """A function with a hand-written gradient: `fun(*args)` returns `(value, vjp)` where
  `vjp(ct)` gives a tuple of cotangents, one per positional argument.

  The backward pass calls `fun` again on the saved arguments to obtain `vjp` (so `vjp`'s
  closure need not be stored); `fun` must therefore be free of side effects.

  Example:
    >>> @revax.custom_gradient
    ... def f(x):
    ...   return x ** 2, lambda g: (g * 3 * x,)  # deliberately not 2x
    >>> f(2.0), revax.grad(f)(2.0)
    (4.0, Array(6., dtype=float32, weak_type=True))
  """

  @custom_vjp
  def wrapped(*args):
    value, _ = fun(*args)
    return value

  def fwd(*args):
    value, _ = fun(*args)
    return value, args

  def bwd(args, ct):
    _, vjp = fun(*args)
    cts = vjp(ct)
    if not isinstance(cts, (tuple, list)):
      cts = (cts,)
    return tuple(cts)

  wrapped.defvjp(fwd, bwd)
  wrapping.update_wrapper(wrapped, fun)
  return wrapped

