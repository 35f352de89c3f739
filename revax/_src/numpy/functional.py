"""Functions that turn Python functions into array functions: vectorize, apply_along_axis,
apply_over_axes, fromfunction, and the `ufunc` class (with frompyfunc) whose reduce,
accumulate, outer, at and reduceat methods work for any binary function.

All of them are built on vmap and lax.scan, so they trace once and work under jit, grad and
vmap.
"""
from __future__ import annotations

import functools
import operator
import re

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.trace import Tracer
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.vmap import vmap

_DIM = r"\w+"
_CORE = rf"(?:{_DIM}(?:,{_DIM})*)?"
_ARGS = rf"\({_CORE}\)(?:,\({_CORE}\))*"
_SIGNATURE = re.compile(rf"^{_ARGS}->{_ARGS}$")


def _parse_signature(signature):
  sig = signature.replace(" ", "")
  if not _SIGNATURE.match(sig):
    raise ValueError(f"not a valid gufunc signature: {signature}")
  ins, outs = sig.split("->")
  parse = lambda part: [tuple(re.findall(_DIM, arg)) for arg in re.findall(r"\(([^)]*)\)", part)]
  return parse(ins), parse(outs)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
  """`pyfunc` mapped over the leading (broadcast) dimensions of its arguments with vmap.

  Args:
    pyfunc: a function of arrays.
    excluded: positions (ints) or keyword names of arguments passed through unchanged.
    signature: a generalized-ufunc signature such as '(n),(n)->()' naming the core dimensions
      each argument and output keeps; default: every argument is a scalar.

  Returns:
    The vectorized function.

  Example:
    >>> a, b = jnp.ones((4, 3)), jnp.arange(3.)
    >>> jnp.vectorize(jnp.dot, signature='(n),(n)->()')(a, b)  # a row-wise dot
    Array([3., 3., 3., 3.], dtype=float32)
  """
  if any(not isinstance(e, (int, str)) for e in excluded):
    raise TypeError(f"excluded must be a set of ints and strings, got {excluded}")

  @functools.wraps(pyfunc)
  def wrapped(*args, **kwargs):
    static_pos = {i: a for i, a in enumerate(args) if i in excluded or a is None}
    dynamic = [a for i, a in enumerate(args) if i not in static_pos]
    static_kw = {k: v for k, v in kwargs.items() if k in excluded}
    dyn_kw_names = [k for k in kwargs if k not in excluded]
    dynamic = dynamic + [kwargs[k] for k in dyn_kw_names]
    n_pos = len(args) - len(static_pos)

    def call(*dyn):
      it = iter(dyn[:n_pos])
      full = [static_pos[i] if i in static_pos else next(it) for i in range(len(args))]
      kw = dict(static_kw)
      kw.update(zip(dyn_kw_names, dyn[n_pos:], strict=True))
      return pyfunc(*full, **kw)

    util.check_arraylike("vectorize", *dynamic)
    dynamic = [util.as_array(a) for a in dynamic]
    if signature is None:
      core = [()] * len(dynamic)
    else:
      core, _ = _parse_signature(signature)
      if len(core) != len(dynamic):
        raise TypeError(f"wrong number of positional arguments: expected {len(core)}, got "
                        f"{len(dynamic)}")
    sizes = {}
    loop_shapes = []
    for a, dims in zip(dynamic, core, strict=True):
      shape = aval_of(a).shape
      if len(shape) < len(dims):
        raise ValueError(f"input with shape {shape} does not have enough dimensions for its "
                         f"core dimensions {dims} in signature {signature}")
      for name, size in zip(dims, shape[len(shape) - len(dims):], strict=True):
        if sizes.setdefault(name, size) != size:
          raise ValueError(f"inconsistent size for core dimension {name!r}: {sizes[name]} vs "
                           f"{size}")
      loop_shapes.append(shape[:len(shape) - len(dims)])
    loop = util.broadcast_shapes(*loop_shapes)
    dynamic = [util.broadcast_to(a, loop + aval_of(a).shape[len(ls):])
               for a, ls in zip(dynamic, loop_shapes, strict=True)]
    f = call
    for _ in loop:
      f = vmap(f)
    return f(*dynamic)

  return wrapped


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
  """func1d applied to every 1-D slice of `arr` along `axis` (mapped with vmap); the slice's
  results replace that axis."""
  from revax._src.numpy.shape_ops import moveaxis
  util.check_arraylike("apply_along_axis", arr)
  arr = util.as_array(arr)
  nd = aval_of(arr).ndim
  axis = util.canonicalize_axis(axis, nd)
  f = lambda x: func1d(x, *args, **kwargs)
  for _ in range(nd - 1):
    f = vmap(f)
  out = util.as_array(f(moveaxis(arr, axis, -1)))
  r = aval_of(out).ndim - (nd - 1)
  perm = list(range(axis)) + list(range(nd - 1, nd - 1 + r)) + list(range(axis, nd - 1))
  return lax.transpose(out, tuple(perm))


def apply_over_axes(func, a, axes):
  """func(a, axis) applied for each axis in turn; a reduced axis is kept as size 1."""
  util.check_arraylike("apply_over_axes", a)
  a = util.as_array(a)
  for axis in axes:
    b = util.as_array(func(a, axis))
    if aval_of(b).ndim == aval_of(a).ndim:
      a = b
    elif aval_of(b).ndim == aval_of(a).ndim - 1:
      a = lax.expand_dims(b, (util.canonicalize_axis(axis, aval_of(a).ndim),))
    else:
      raise ValueError("function is not returning an array of the correct shape")
  return a


def fromfunction(function, shape, *, dtype=float, **kwargs):
  """An array whose element at index (i, j, ...) is function(i, j, ...), the function mapped
  over the index grid with vmap (each call sees scalar indices of `dtype`)."""
  shape = util.canonicalize_shape(shape)
  dtype = util.canonical_dtype_arg(dtype)
  f = lambda *idx: function(*idx, **kwargs)
  for i in reversed(range(len(shape))):
    f = vmap(f, in_axes=tuple(0 if j == i else None for j in range(len(shape))))
  return f(*(lax.iota(dtype, d) for d in shape))


class ufunc:
  """A universal function built from a Python function of `nin` scalars: calling it broadcasts
  (vectorize), and binary ones (nin=2, nout=1) get reduce, accumulate, reduceat, outer and at.

  Args:
    func: the scalar function.
    nin, nout: its numbers of inputs and outputs.
    name: the ufunc's name.
    identity: the reduction's identity (for empty reductions and where=).
    call, reduce, accumulate, at, reduceat: optional faster implementations of the methods.
  """

  def __init__(self, func, /, nin: int, nout: int, *, name=None, nargs=None, identity=None,
               call=None, reduce=None, accumulate=None, at=None, reduceat=None):
    self.__name__ = name or getattr(func, "__name__", "ufunc")
    self._func = func
    self.nin = operator.index(nin)
    self.nout = operator.index(nout)
    self.nargs = self.nin if nargs is None else nargs
    self.identity = identity
    self._call = call or vectorize(func)
    self._reduce, self._accumulate, self._at, self._reduceat = reduce, accumulate, at, reduceat

  def __repr__(self):
    return f"<jnp.ufunc '{self.__name__}'>"

  def __hash__(self):
    return hash((self._func, self.__name__, self.identity, self.nin, self.nout))

  def __eq__(self, other):
    return isinstance(other, ufunc) and (self._func, self.__name__, self.identity, self.nin,
                                         self.nout) == (other._func, other.__name__,
                                                        other.identity, other.nin, other.nout)

  def __call__(self, *args, out=None, where=None):
    if out is not None:
      raise NotImplementedError(f"out argument of {self}")
    if where is not None:
      raise NotImplementedError(f"where argument of {self}")
    if len(args) != self.nin:
      raise TypeError(f"{self.__name__}() takes {self.nin} positional argument(s) but "
                      f"{len(args)} were given")
    return self._call(*args)

  def _binary(self, method):
    if self.nin != 2 or self.nout != 1:
      raise ValueError(f"{method} only supported for binary ufuncs (nin=2, nout=1) returning "
                       f"one value; got nin={self.nin}, nout={self.nout}")

  def outer(self, A, B, /):
    """call(a, b) for every pair of elements of A and B (result shape A.shape + B.shape)."""
    self._binary("outer")
    util.check_arraylike(f"{self.__name__}.outer", A, B)
    A, B = util.as_array(A), util.as_array(B)
    na, nb = aval_of(A).ndim, aval_of(B).ndim
    shape = aval_of(A).shape + aval_of(B).shape
    return self(lax.broadcast_in_dim(A, shape, tuple(range(na))),
                lax.broadcast_in_dim(B, shape, tuple(range(na, na + nb))))

  def reduce(self, a, axis=0, dtype=None, out=None, keepdims: bool = False, initial=None,
             where=None):
    """Fold call over `axis` (None: all axes) left to right, starting from `initial`."""
    from revax._src.numpy.shape_ops import moveaxis, ravel
    self._binary("reduce")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
    if where is not None and not dtypes.is_bool(aval_of(util.as_array(where)).dtype):
      raise ValueError(f"where argument must have dtype=bool; got "
                       f"dtype={aval_of(util.as_array(where)).dtype}")
    if self._reduce is not None and getattr(self._reduce, "takes_every_argument", False):
      return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                          where=where)  # (JAX's fast paths take them all)
    if self._reduce is not None and where is None and initial is None and dtype is None:
      return self._reduce(a, axis=axis, keepdims=keepdims)
    util.check_arraylike(f"{self.__name__}.reduce", a)
    a = util.as_array(a)
    if dtype is not None:
      a = lax.convert_element_type(a, util.canonical_dtype_arg(dtype))
    nd = aval_of(a).ndim
    if axis is None or isinstance(axis, tuple):
      axes = util.canonicalize_axes(axis, nd)
      keep_shape = tuple(1 if d in axes else s for d, s in enumerate(aval_of(a).shape))
      rest = [d for d in range(nd) if d not in axes]
      moved = lax.transpose(a, tuple(axes) + tuple(rest))
      flat = lax.reshape(moved, (int(np.prod([aval_of(a).shape[d] for d in axes], dtype=int)),)
                         + tuple(aval_of(a).shape[d] for d in rest))
      if where is not None:
        w = util.broadcast_to(util.as_array(where), aval_of(a).shape)
        w = lax.reshape(lax.transpose(w, tuple(axes) + tuple(rest)), aval_of(flat).shape)
        where = w
      res = self._fold(flat, initial, where)
      return lax.reshape(res, keep_shape) if keepdims else res
    axis = util.canonicalize_axis(axis, nd)
    if where is not None:
      where = moveaxis(util.broadcast_to(util.as_array(where), aval_of(a).shape), axis, 0)
    res = self._fold(moveaxis(a, axis, 0), initial, where)
    return lax.expand_dims(res, (axis,)) if keepdims else res

  def _fold(self, x, initial, where):
    n = aval_of(x).shape[0]
    if where is not None:
      if self.identity is None:
        raise ValueError(f"reduction operation {self.__name__!r} does not have an identity, so "
                         f"to use a where mask one has to specify 'initial'") if initial is None \
            else None
      fill = self.identity if self.identity is not None else initial
      x = lax.select_n(lax.convert_element_type(where, dtypes.bool_),
                       lax.full_like(x, fill), x)
    if initial is None and self.identity is not None:
      initial = self.identity  # fold from the identity, as JAX does
    if initial is None:
      if n == 0:
        if self.identity is None:
          raise ValueError(f"zero-size array to reduction operation {self.__name__} which has "
                           f"no identity")
        return util.full_of(aval_of(x).shape[1:], self.identity, aval_of(x).dtype)
      carry, xs = x[0], x[1:]
    else:
      carry = util.broadcast_to(lax.convert_element_type(util.as_array(initial),
                                                         aval_of(x).dtype), aval_of(x).shape[1:])
      xs = x
    step = lambda c, v: (lax.convert_element_type(util.as_array(self(c, v)), aval_of(c).dtype),
                         None)
    carry, _ = lax.scan(step, carry, xs)
    return carry

  def accumulate(self, a, axis: int = 0, dtype=None, out=None):
    """The running fold of call along `axis` (out[i] = call(out[i-1], a[i]))."""
    from revax._src.numpy.shape_ops import moveaxis
    self._binary("accumulate")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
    if self._accumulate is not None and dtype is None:
      return self._accumulate(a, axis)
    util.check_arraylike(f"{self.__name__}.accumulate", a)
    a = util.as_array(a)
    if dtype is not None:
      a = lax.convert_element_type(a, util.canonical_dtype_arg(dtype))
    axis = util.canonicalize_axis(axis, aval_of(a).ndim)
    x = moveaxis(a, axis, 0)
    if aval_of(x).shape[0] == 0:
      return a

    def step(c, v):
      c = lax.convert_element_type(util.as_array(self(c, v)), aval_of(c).dtype)
      return c, c

    _, ys = lax.scan(step, x[0], x[1:])
    return moveaxis(lax.concatenate([lax.expand_dims(x[0], (0,)), ys], 0), 0, axis)

  def at(self, a, indices, b=None, /, *, indices_are_sorted: bool = False,
         unique_indices: bool = False, inplace: bool = True):
    """A copy of `a` with call applied at `indices` (with `b` for binary ufuncs), one index at a
    time so repeated indices accumulate; `inplace=False` is required."""
    if inplace:
      raise NotImplementedError("jax.numpy.ufunc.at() does not support inplace=True; use "
                                "inplace=False")
    if self._at is not None:
      return self._at(a, indices, b, indices_are_sorted=indices_are_sorted,
                      unique_indices=unique_indices)
    util.check_arraylike(f"{self.__name__}.at", a, indices)
    a = util.as_array(a)
    idx = util.as_array(indices)
    if aval_of(idx).ndim == 0:
      idx = lax.reshape(idx, (1,))
    idx = lax.reshape(idx, (aval_of(idx).size,))
    m = aval_of(idx).shape[0]
    if self.nin == 2:
      if b is None:
        raise ValueError(f"{self.__name__}.at requires a value b for a binary ufunc")
      bb = util.broadcast_to(lax.convert_element_type(util.as_array(b), aval_of(a).dtype),
                             (m,) + aval_of(a).shape[1:])
    elif self.nin != 1 or b is not None:
      raise ValueError(f"{self.__name__}.at: b must be given exactly for binary ufuncs")

    def body(i, acc):
      j = idx[i]
      new = self(acc[j], bb[i]) if self.nin == 2 else self(acc[j])
      return acc.at[j].set(lax.convert_element_type(util.as_array(new), aval_of(acc).dtype))

    return lax.fori_loop(0, m, body, a)

  def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
    """Reductions of the slices a[indices[i]:indices[i+1]] along `axis` (a[indices[i]] where
    indices[i] >= indices[i+1]); `indices` must be concrete."""
    from revax._src.numpy.shape_ops import stack
    self._binary("reduceat")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
    if self._reduceat is not None:
      return self._reduceat(a, indices, axis=axis, dtype=dtype)
    util.check_arraylike(f"{self.__name__}.reduceat", a, indices)
    if isinstance(indices, Tracer):
      raise NotImplementedError(f"{self.__name__}.reduceat needs concrete indices")
    a = util.as_array(a)
    axis = util.canonicalize_axis(axis, aval_of(a).ndim)
    n = aval_of(a).shape[axis]
    idx = [int(i) for i in np.asarray(indices).reshape(-1)]
    parts = []
    lead = (slice(None),) * axis
    for k, start in enumerate(idx):
      stop = idx[k + 1] if k + 1 < len(idx) else n
      if stop <= start:
        parts.append(a[lead + (start,)])
      else:
        parts.append(self.reduce(a[lead + (slice(start, stop),)], axis=axis, dtype=dtype))
    return stack(parts, axis=axis)


def frompyfunc(func, /, nin: int, nout: int, *, identity=None):
  """A `ufunc` from a Python function of `nin` scalars returning `nout` values."""
  return ufunc(func, nin, nout, identity=identity)
