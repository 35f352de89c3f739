"""JAX's `linear_util` (`jax.extend.linear_util`) and the flattening helpers of `jax.api_util`.

A `WrappedFun` is a Python function together with transformations to apply around it when it is
called (`call_wrapped`), and stores through which those transformations hand back auxiliary
results (an output tree known only after the call). revax's own transformations take plain
functions; this module exists for libraries that build functions the JAX way, such as flax's
`lu.wrap_init` + `api_util.flatten_fun` + `pe.trace_to_jaxpr_nounits`.
"""
from __future__ import annotations

from revax._src import tree_util

__all__ = ["Store", "StoreException", "WrappedFun", "wrap_init", "transformation",
           "transformation_with_aux", "transformation2", "transformation_with_aux2", "cache",
           "merge_linear_aux", "flatten_fun", "flatten_fun_nokwargs", "debug_info"]


class StoreException(Exception):
  """Raised when a store is read before it is filled, or filled twice."""


class _Empty:
  def __repr__(self):
    return "<empty store>"


_EMPTY = _Empty()


class Store:
  """A box a transformation fills while the wrapped function runs; read it by calling it."""
  __slots__ = ("_val",)

  def __init__(self):
    self._val = _EMPTY

  def store(self, val) -> None:
    if self._val is not _EMPTY:
      raise StoreException("Store occupied")
    self._val = val

  def reset(self) -> None:
    self._val = _EMPTY

  @property
  def val(self):
    if self._val is _EMPTY:
      raise StoreException("Store empty")
    return self._val

  def __call__(self):
    return self.val

  def __nonzero__(self):
    return self._val is not _EMPTY

  __bool__ = __nonzero__


class WrappedFun:
  """`f` with transformations applied around it at call time (innermost first).

  Attributes:
    f: the plain function.
    params: keyword arguments `f` is called with.
    debug_info: what error messages say about `f` (may be None).
  """

  def __init__(self, f, transforms=(), params=(), debug_info=None):
    self.f = f
    self.transforms = tuple(transforms)  # (function, extra args), innermost first
    self.params = tuple(params)
    self.debug_info = debug_info

  @property
  def __name__(self):
    return getattr(self.f, "__name__", "<unnamed wrapped function>")

  def wrap(self, fn, extra) -> "WrappedFun":
    """This function with `fn(inner, *extra, *args, **kwargs)` applied around it."""
    return WrappedFun(self.f, self.transforms + ((fn, extra),), self.params, self.debug_info)

  def call_wrapped(self, *args, **kwargs):
    """Call `f` with every transformation applied around it."""
    def call(i, *a, **kw):
      if i < 0:
        return self.f(*a, **dict(self.params), **kw)
      fn, extra = self.transforms[i]
      return fn(_Inner(lambda *a2, **kw2: call(i - 1, *a2, **kw2)), *extra, *a, **kw)
    return call(len(self.transforms) - 1, *args, **kwargs)

  def __repr__(self):
    return f"Wrapped function: {self.__name__} ({len(self.transforms)} transformations)"


class _Inner:
  """The function below a `transformation2`: call it to run the rest of the stack."""
  __slots__ = ("_call",)

  def __init__(self, call):
    self._call = call

  def __call__(self, *args, **kwargs):
    return self._call(*args, **kwargs)

  call_wrapped = __call__


def _send_twice(gen, ans):
  try:
    out = gen.send(ans)
  except StopIteration as stop:  # (a generator may also return its result)
    return stop.value
  return out


def wrap_init(f, params=None, *, debug_info=None) -> WrappedFun:
  """Wrap the plain function `f` (called with `params` as keyword arguments).

  Args:
    f: a Python function.
    params: a dict of keyword arguments to call it with.
    debug_info: accepted as JAX accepts it (what errors say about `f`).

  Returns:
    A `WrappedFun`.

  Example:
    >>> from revax.extend import linear_util as lu
    >>> lu.wrap_init(lambda x: x + 1).call_wrapped(1)
    2
  """
  return WrappedFun(f, (), tuple((params or {}).items()), debug_info)


def transformation2(fn):
  """Decorate `fn(f, *extra, *args, **kwargs)`: `transformed(wrapped, *extra)` is `wrapped` with
  `fn` applied around it, `f` being the function below.

  Example:
    >>> from revax.extend import linear_util as lu
    >>> @lu.transformation2
    ... def double(f, *args):
    ...   return 2 * f(*args)
    >>> double(lu.wrap_init(lambda x: x + 1)).call_wrapped(1)
    4
  """
  def transformed(wrapped: WrappedFun, *extra) -> WrappedFun:
    return wrapped.wrap(fn, extra)
  return transformed


def transformation_with_aux2(fn, use_eq_store=False):
  """Decorate `fn(f, store, *extra, *args)`: `transformed(wrapped, *extra)` returns the wrapped
  function and a thunk reading what `fn` put in `store` during the call."""
  del use_eq_store

  def transformed(wrapped: WrappedFun, *extra):
    store = Store()
    return wrapped.wrap(fn, (store, *extra)), lambda: store.val
  return transformed


def transformation(gen):
  """Decorate a generator `gen(*extra, *args)` that yields `(args, kwargs)` for the function
  below, receives its result, and yields the transformed result (JAX's older form)."""
  def transformed(wrapped: WrappedFun, *extra) -> WrappedFun:
    return wrapped.wrap(_gen_fn(gen, None), extra)
  return transformed


def transformation_with_aux(gen, use_eq_store=False):
  """As `transformation`, for a generator that yields `(result, aux)`; returns the wrapped
  function and a thunk reading `aux`."""
  del use_eq_store

  def transformed(wrapped: WrappedFun, *extra):
    store = Store()
    return wrapped.wrap(_gen_fn(gen, store), extra), lambda: store.val
  return transformed


def _gen_fn(gen, store):
  def fn(inner, *args, **kwargs):
    g = gen(*args, **kwargs)
    sub_args, sub_kwargs = next(g)
    out = _send_twice(g, inner(*sub_args, **sub_kwargs))
    if store is not None:
      out, aux = out
      store.store(aux)
    return out
  return fn


def cache(call, *, explain=None):
  """Memoize `call(wrapped_fun, *args)` (revax re-runs it: WrappedFuns here are not hashable by
  their transformations, so nothing is cached)."""
  del explain

  def memoized(fun: WrappedFun, *args):
    return call(fun, *args)
  return memoized


def merge_linear_aux(aux1, aux2):
  """The one of two aux thunks that was filled (JAX's `merge_linear_aux`)."""
  try:
    out1 = aux1()
  except StoreException:
    return False, aux2()
  return True, out1


def _flatten_fun(f, in_tree, *args_flat):
  py_args, py_kwargs = tree_util.tree_unflatten(in_tree, args_flat)
  ans = f(*py_args, **py_kwargs)
  return tree_util.tree_flatten(ans)


def flatten_fun(fun: WrappedFun, in_tree):
  """`fun(*args, **kwargs)` as a function of the flat leaves of `(args, kwargs)` (tree
  `in_tree`) returning flat leaves; also a thunk giving the output's tree after the call.

  Example:
    >>> from revax.extend import linear_util as lu
    >>> from revax import api_util
    >>> leaves, tree = revax.tree_util.tree_flatten(((1, 2), {}))
    >>> f, out_tree = api_util.flatten_fun(lu.wrap_init(lambda a, b: {"s": a + b}), tree)
    >>> f.call_wrapped(*leaves), out_tree().num_leaves
    ([3], 1)
  """
  def fn(inner, store, in_tree, *args_flat):
    leaves, tree = _flatten_fun(inner, in_tree, *args_flat)
    store.store(tree)
    return leaves
  store = Store()
  return fun.wrap(fn, (store, in_tree)), lambda: store.val


def flatten_fun_nokwargs(fun: WrappedFun, in_tree):
  """As `flatten_fun`, for an `in_tree` of the positional arguments only."""
  def fn(inner, store, in_tree, *args_flat):
    py_args = tree_util.tree_unflatten(in_tree, args_flat)
    leaves, tree = tree_util.tree_flatten(inner(*py_args))
    store.store(tree)
    return leaves
  store = Store()
  return fun.wrap(fn, (store, in_tree)), lambda: store.val


def debug_info(traced_for: str, fun, args, kwargs, *, static_argnums=(), static_argnames=(),
               result_paths_thunk=None, sourceinfo=None, signature=None):
  """What error messages say about `fun` traced for `traced_for` (a `DebugInfo`).

  Example:
    >>> from revax import api_util
    >>> api_util.debug_info("jit", lambda x: x, (1,), {}).traced_for
    'jit'
  """
  del args, kwargs, static_argnums, static_argnames, result_paths_thunk, sourceinfo, signature
  return DebugInfo(traced_for, getattr(fun, "__qualname__", repr(fun)))


class DebugInfo:
  """The function a WrappedFun traces and what traces it (JAX's `api_util.debug_info`)."""
  __slots__ = ("traced_for", "func_name")

  def __init__(self, traced_for: str, func_name: str):
    self.traced_for = traced_for
    self.func_name = func_name

  def with_unknown_names(self) -> "DebugInfo":
    return self

  def __repr__(self):
    return f"DebugInfo({self.traced_for!r}, {self.func_name!r})"
