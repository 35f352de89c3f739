"""Operators, methods and properties of revax.Array and of tracers, installed from revax.numpy.

Arrays and tracers share one set of methods, so `x + y`, `x[idx]`, `x.sum()` and `x.at[i].set(v)`
mean the same eagerly, under jit and under every transformation. Binary operators return
NotImplemented for operands revax does not know (lists included), so Python can try the other
operand's method.
"""
from __future__ import annotations

from revax._src.core.avals import AbstractRef
from revax._src.core.trace import Tracer, _context, eval_trace
from revax._src.core.config import config
from revax._src.interpreters.host_plans import PlanCache
from revax._src.lax import state
from revax._src.numpy.functional import ufunc
from revax._src.core import mesh_context as _mesh_context
from revax._src.runtime.array import Array
from revax._src.runtime import array as _array
from revax._src.runtime import placement as _placement


def _defer_to_unrecognized_arg(binary_op, swap=False):
  """`x op y`; NotImplemented for operand types revax does not know (so Python can try theirs)."""
  from revax._src.numpy.util import from_jax_array, is_operand

  def method(self, other):
    other = from_jax_array(other)  # as JAX's operators: through `__jax_array__`
    if not is_operand(other):
      return NotImplemented
    return binary_op(other, self) if swap else binary_op(self, other)
  return method


def _array_binary_method(binary_op, swap=False):
  """`x op y` on Arrays: two eager host arrays take their host plan (the NumPy implementation
  of the one primitive the operation binds at these types), unless one is committed to another
  device than the default one (the dispatcher places that) or a mesh is set (the dispatcher
  places the result on it); anything else, the general path."""
  general = _defer_to_unrecognized_arg(binary_op, swap)
  op = (lambda x, y: binary_op(y, x)) if swap else binary_op

  plans = PlanCache(op)

  def method(self, other):
    # (with debug_nans/debug_infs on, every primitive goes through the checked general path: a
    # plan cached before the flag was set would skip the check)
    if type(other) is Array and _context.trace is eval_trace and not config.debug_checks and (
        _mesh_context.settle_jit is None or _mesh_context._state.mesh is None):
      x, y = self._npy, other._npy
      if x is not None and y is not None:
        avals = (self.aval, other.aval)
        plan = plans.get(avals) or plans.plan(avals)
        if plan:
          if _array.committed_live and (self.committed or other.committed):
            if not (_placement.on_default_device(self) and _placement.on_default_device(other)):
              return general(self, other)  # the dispatcher places it (and commits its result)
            return _array.commit(plan(x, y))  # computed from a committed array: committed
          return plan(x, y)
    return general(self, other)
  return method


# operator name -> revax.numpy function name
_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
           "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
           "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
           "lshift": "left_shift", "rshift": "right_shift", "divmod": "divmod"}
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
            "gt": "greater", "ge": "greater_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "invert"}

# method name -> revax.numpy function name; the array is the first argument
_METHODS = {
    "all": "all", "any": "any", "argmax": "argmax", "argmin": "argmin", "astype": "astype",
    "argsort": "argsort", "clip": "clip", "conj": "conj", "conjugate": "conjugate",
    "cumprod": "cumprod", "cumsum": "cumsum", "sort": "sort",
    "dot": "dot", "max": "max", "mean": "mean", "min": "min", "nonzero": "nonzero",
    "prod": "prod", "ptp": "ptp", "ravel": "ravel", "repeat": "repeat", "round": "round",
    "squeeze": "squeeze", "std": "std", "sum": "sum", "swapaxes": "swapaxes", "take": "take",
    "var": "var",
}


def _reshape_method(self, *args, order="C"):
  """x.reshape(2, 3) or x.reshape((2, 3))."""
  from revax._src.numpy.shape_ops import _reshape
  shape = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
  return _reshape(self, shape, order, None, TypeError)  # JAX's method raises TypeError


def _transpose_method(self, *args):
  """x.transpose(), x.transpose(1, 0) or x.transpose((1, 0))."""
  from revax._src.numpy.shape_ops import transpose
  if not args:
    axes = None
  elif len(args) == 1 and (args[0] is None or isinstance(args[0], (tuple, list))):
    axes = args[0]
  else:
    axes = args
  return transpose(self, axes)


def _flatten_method(self, order="C"):
  from revax._src.numpy.shape_ops import ravel
  return ravel(self, order)


def _getitem(self, idx):
  if type(self) is not Array and isinstance(self.aval, AbstractRef):  # a traced Ref
    return state.ref_get(self, idx)
  from revax._src.numpy.indexing import getitem
  return getitem(self, idx)


def _setitem(self, idx, value):
  if type(self) is not Array and isinstance(self.aval, AbstractRef):  # a traced Ref
    return state.ref_set(self, idx, value)
  raise TypeError(f"revax arrays are immutable and do not support in-place item assignment. "
                  f"Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method "
                  f"(got an assignment to an array of type {self.aval.str_short()}).")


def _addupdate_method(self, x, idx=()):
  if not isinstance(self.aval, AbstractRef):
    raise AttributeError(f"{type(self).__name__} of type {self.aval.str_short()} has no "
                         "attribute 'addupdate' (only Refs do)")
  return state.ref_addupdate(self, idx, x)


def _at(self):
  from revax._src.numpy.indexing import _IndexUpdateHelper
  return _IndexUpdateHelper(self)


def _copy(self):
  from revax._src.numpy.creation import array
  return array(self, copy=True)  # storage of its own (donating the copy keeps self alive)


def _prop(namespace, fname):
  fn = getattr(namespace, fname)
  return property(lambda self: fn(self))


def _method(namespace, fname):
  fn = getattr(namespace, fname)

  def method(self, *args, **kwargs):
    return fn(self, *args, **kwargs)
  method.__name__ = fname
  method.__doc__ = fn.__doc__
  return method


def _function(namespace, fname):
  """`namespace.fname` as a plain function: a ufunc object (jnp.add, jnp.negative, ...) gives
  the function it calls, so that operators bind as methods and skip the ufunc's checks."""
  fn = getattr(namespace, fname, None)
  return fn._call if isinstance(fn, ufunc) else fn


def install(namespace) -> None:
  """Install operators and methods that `namespace` (revax.numpy) provides on Array and Tracer."""
  for cls in (Array, Tracer):
    binary = _array_binary_method if cls is Array else _defer_to_unrecognized_arg
    for op, fname in _BINARY.items():
      fn = _function(namespace, fname)
      if fn is None:
        continue
      setattr(cls, f"__{op}__", binary(fn))
      setattr(cls, f"__r{op}__", binary(fn, swap=True))
    for op, fname in _COMPARE.items():
      fn = _function(namespace, fname)
      if fn is not None:
        setattr(cls, f"__{op}__", binary(fn))
    for op, fname in _UNARY.items():
      fn = _function(namespace, fname)
      if fn is not None:
        setattr(cls, f"__{op}__", fn)
    for name, fname in _METHODS.items():
      if hasattr(namespace, fname):
        setattr(cls, name, _method(namespace, fname))
    cls.__getitem__ = _getitem
    cls.__setitem__ = _setitem
    if cls is Tracer:  # a traced Ref's in-place addition (`ref.addupdate(x, idx)`)
      cls.addupdate = _addupdate_method
    cls.reshape = _reshape_method
    cls.transpose = _transpose_method
    cls.flatten = _flatten_method
    cls.copy = _copy
    cls.at = property(_at)
    cls.T = property(lambda self: namespace.transpose(self))
    cls.mT = property(lambda self: namespace.matrix_transpose(self))
    cls.real = _prop(namespace, "real")
    cls.imag = _prop(namespace, "imag")
