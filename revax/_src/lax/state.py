"""Mutable array references (JAX's `jax.Ref`): `new_ref`, reads, writes, `freeze`.

A `Ref` is a mutable box holding an array; its type is `AbstractRef` (core/avals.py), printed
`Ref{f32[3]}`. Five primitives act on refs, each an effect that dead-code elimination keeps:
`new_ref` (make one from a value), `get` (read `ref[idx]`), `swap` (write `ref[idx] = v` and
return what was there; `set` ignores that), `addupdate` (`ref[idx] += v`) and `freeze` (the final
value). Indices are normalized by state_indexing.py into a static `indexer` param and integer
operands.

Eagerly, a Ref holds an Array and the primitives replace it. Staged programs (jit) and the
linear programs of reverse mode are *discharged* before they are lowered or transposed
(interpreters/discharge.py): each ref becomes the value it holds, threaded through the program,
with the rules below (`discharge_rules`). Refs that a jitted function, a loop body, a branch or
a checkpoint uses from outside are threaded in and out as values by those wrappers (see
`call_threading_refs`), so no higher-order primitive ever takes a ref.

Under differentiation every ref made has a tangent ref (`ad.jvp_with_zero_tangents`); when
linearizing, a known tangent ref written with an unknown value is staged from then on
(`_write_partial_eval`). Under vmap every ref made is batched (`batching.batch_unmapped_inputs`)
and a batched read or write indexes the ref's contents with the batch dimension in front.
"""
from __future__ import annotations

import functools

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import AbstractRef, ShapedArray, get_aval, pytype_aval_mappings
from revax._src.core import effect_types as eff
from revax._src.core.effects import def_effectful, def_effects
from revax._src.core import pretty_printer as pp
from revax._src.core.jaxpr import Literal, binder, pp_eqn_rules
from revax._src.core.trace import Primitive, Tracer, set_current_trace
from revax._src.interpreters import ad, batching, discharge, dispatch, partial_eval, staging
from revax._src.interpreters import invertible as inv
from revax._src.lax import conversion, shapes
from revax._src.lax.batch_util import bdim_at, bdim_to_front, moveaxis
from revax._src.lax.state_indexing import RefIndexer, index_array, normalize_index, update_array
from revax._src.runtime.array import Array

__all__ = ["Ref", "new_ref", "freeze", "ref_get", "ref_set", "ref_swap", "ref_addupdate",
           "write_back", "new_ref_p", "get_p", "swap_p", "addupdate_p", "freeze_p"]


class _RefMeta(type):
  def __instancecheck__(cls, inst):
    return super().__instancecheck__(inst) or (
        isinstance(inst, Tracer) and isinstance(inst.aval, AbstractRef))


class Ref(metaclass=_RefMeta):
  """A mutable array reference (JAX's `jax.Ref`); make one with `revax.new_ref`.

  `ref[idx]` reads, `ref[idx] = v` writes and `ref.addupdate(v, idx)` adds in place; `...` (or
  `()`) indexes the whole array. A traced ref (inside jit, grad, vmap or a loop body) is also an
  instance of `Ref`.

  Example:
    >>> r = revax.new_ref(jnp.zeros(3))
    >>> r[1] = 5.0
    >>> r
    Ref([0., 5., 0.], dtype=float32)
  """
  __slots__ = ("_aval", "_value", "_shared", "__weakref__")

  def __init__(self, aval: AbstractRef, value: Array, shared: bool = True):
    self._aval = aval
    self._value = value
    # whether `_value` may be held elsewhere too (it was handed out by a read, or came from the
    # caller); a jitted call donates the buffers of refs whose contents are theirs alone
    self._shared = shared

  aval = property(lambda self: self._aval)
  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)
  ndim = property(lambda self: self._aval.ndim)
  size = property(lambda self: self._aval.size)
  sharding = property(lambda self: self._value.sharding)
  committed = property(lambda self: True)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __getitem__(self, idx):
    return ref_get(self, idx)

  def __setitem__(self, idx, value):
    ref_set(self, idx, value)

  def addupdate(self, x, idx=()):
    """`self[idx] += x` in place."""
    ref_addupdate(self, idx, x)

  @property
  def at(self):
    raise NotImplementedError()

  def __repr__(self):
    return "Ref" + repr(self._value)[5:]

  def _settle(self) -> Array:
    """The contents, typed as the ref, held from now on. As jax's eager refs: what a read
    returns has the ref's type (a ref keeps the weak type it was made with), while a write
    holds the value written (strong: written values are cast) until the next read."""
    value, weak = self._value, self._aval.inner_aval.weak_type
    if value.aval.weak_type != weak:
      retyped = Array(value.aval.update(weak_type=weak), value._npy, value._buf)
      mesh_sharding = getattr(value, "_mesh_sharding", None)
      if mesh_sharding is not None:
        retyped._mesh_sharding = mesh_sharding
      retyped._committed = value.committed
      self._value = value = retyped
    return value

  def __hash__(self):
    return id(self)


pytype_aval_mappings[Ref] = lambda r: r._aval


def _ref_aval(x, fname: str) -> AbstractRef:
  aval = get_aval(x)
  if not isinstance(aval, AbstractRef):
    raise ValueError(f"Can only call `{fname}` on a `Ref`: {x}.")
  return aval


# --- new_ref --------------------------------------------------------------------------------------
def new_ref(init_val, *, memory_space=None, kind=None):
  """A mutable array reference holding `init_val` (JAX's `jax.new_ref`).

  Args:
    init_val: the initial value (an array or scalar).
    memory_space: a memory space (only inside jit, as in JAX; no revax backend has one).
    kind: None, or 'no_grad_no_remat'.

  Returns:
    A `Ref`.

  Example:
    >>> revax.new_ref(jnp.arange(3))
    Ref([0, 1, 2], dtype=int32)
  """
  try:
    aval = get_aval(init_val)
  except TypeError:
    raise TypeError(f"Error interpreting argument to new_ref as a JAX value. The problematic "
                    f"value is of type {type(init_val)} and was passed to new_ref at position "
                    "0.") from None
  if isinstance(aval, AbstractRef):
    raise TypeError(f"new_ref takes an array, not a Ref: {init_val!r}")
  return new_ref_p.bind(init_val, memory_space=memory_space, kind=kind)


def _new_ref_abstract_eval(aval, *, memory_space, kind):
  if isinstance(aval, AbstractRef):
    raise TypeError("Cannot create a Ref of a Ref")
  return AbstractRef(aval, kind=kind, memory_space=memory_space)


def _new_ref_impl(x, *, memory_space, kind):
  if memory_space is not None:
    raise NotImplementedError("array ref with memory space only works inside of a `jit`.")
  value = dispatch.to_array(x)
  if value._buf is None:  # a host value: the ref takes a copy of its own (as JAX copies)
    return Ref(AbstractRef(value.aval, kind=kind),
               dispatch.wrap_host(np.array(value._npy), value.aval), shared=False)
  return Ref(AbstractRef(value.aval, kind=kind), value)


def _new_ref_jvp(primals, tangents, *, memory_space, kind):
  """A ref made under differentiation gets a tangent ref (of zeros when its initial value has
  none), since a differentiated value may be written into it later; a ref of integers or bools
  has none (no value written into it has a tangent)."""
  (x,), (t,) = primals, tangents
  ref = new_ref_p.bind(x, memory_space=memory_space, kind=kind)
  if not dtypes.is_inexact(get_aval(x).dtype):
    return ref, ad.Zero(AbstractRef(ad.tangent_aval(get_aval(x))))
  return ref, new_ref_p.bind(ad.instantiate_zeros(t), memory_space=memory_space, kind=kind)


def _new_ref_batch(axis_size, vals, dims, *, memory_space, kind):
  (x,), (d,) = vals, dims
  x = bdim_to_front(x, d, axis_size)
  return new_ref_p.bind(x, memory_space=memory_space, kind=kind), 0


new_ref_p = Primitive("new_ref")
new_ref_p.def_abstract_eval(_new_ref_abstract_eval)
dispatch.custom_impls[new_ref_p] = _new_ref_impl
ad.primitive_jvps[new_ref_p] = _new_ref_jvp
ad.jvp_with_zero_tangents.add(new_ref_p)
batching.axis_size_batchers[new_ref_p] = _new_ref_batch
batching.batch_unmapped_inputs.add(new_ref_p)
inv.not_invertible(new_ref_p, "it creates mutable state")
discharge.ref_creating[new_ref_p] = lambda x, **params: x
def_effectful(new_ref_p)
def_effects(new_ref_p, lambda eqn: {eff.internal_mutable_array_effect})


# --- get ------------------------------------------------------------------------------------------
def ref_get(ref, idx=None):
  """`ref[idx]`: the elements of the Ref at a NumPy-style index (JAX's `jax.ref.get`).

  Args:
    ref: a Ref.
    idx: integers, static slices, integer arrays and at most one Ellipsis; None, `...` or `()`
      for the whole array.

  Returns:
    An array (not a Ref).

  Example:
    >>> r = revax.new_ref(jnp.arange(5))
    >>> revax.ref.get(r, slice(1, 3))
    Array([1, 2], dtype=int32)
  """
  aval = _ref_aval(ref, "ref_get")
  indexer, idxs = normalize_index(aval.shape, idx)
  return get_p.bind(ref, *idxs, indexer=indexer)


def _get_abstract_eval(ref_aval, *idx_avals, indexer):
  if not isinstance(ref_aval, AbstractRef):
    raise ValueError(f"`get` must be called on `Ref` types: {ref_aval}.")
  inner = ref_aval.inner_aval
  return inner if indexer is None else inner.update(shape=indexer.out_shape())


def _get_impl(ref, *idxs, indexer):
  _get_abstract_eval(get_aval(ref), indexer=indexer)
  out = index_array(ref._settle(), indexer, idxs)
  if out is ref._value:
    ref._shared = True
  return out


def _get_discharge(x, *idxs, indexer):
  return [None] * (1 + len(idxs)), index_array(x, indexer, idxs)


def _get_jvp(primals, tangents, *, indexer):
  ref, *idxs = primals
  out = get_p.bind(ref, *idxs, indexer=indexer)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(get_aval(out)))
  return out, get_p.bind(tangents[0], *idxs, indexer=indexer)


def _unbatched_ref_error(op: str, ref):
  return Exception(f"performing {op} operation with vmapped value on an unbatched array "
                   f"reference of type {get_aval(ref)}. Move the array reference to be an "
                   "argument to the vmapped function?")


def _batched_index(axis_size, indexer, idxs, dims):
  """The index of a batched read or write, as an index of the ref's contents with their batch
  dimension moved to the front: (indexer, operands, batch dim of the indexed value)."""
  shape = (axis_size,) + indexer.shape
  if all(d is None for d in dims):  # the batch dimension is taken whole, as a slice
    new = RefIndexer(shape, (("s", 0, axis_size, 1),) + indexer.entries, indexer.int_shape)
    ints_lead = indexer.num_ints and not indexer.ints_adjacent()
    return new, list(idxs), len(indexer.int_shape) if ints_lead else 0
  # a batched index: the batch dimension becomes an integer indexer (an iota) beside them
  int_shape = (axis_size,) + indexer.int_shape
  ops = [shapes.broadcasted_iota(np.int32, int_shape, 0)]
  operand_dims = [k for k, e in enumerate(indexer.entries) if e[0] != "s"]
  for k, i, d in zip(operand_dims, idxs, dims, strict=True):
    if indexer.entries[k][0] == "d":  # a traced slice start
      if d is not None:
        raise NotImplementedError("vmap of a Ref slice whose traced start is batched")
      ops.append(i)
    else:
      ops.append(bdim_to_front(i, d, axis_size))
  return RefIndexer(shape, (("i",),) + indexer.entries, int_shape), ops, 0


def _read_front(ref, rd, axis_size):
  return bdim_to_front(get_p.bind(ref, indexer=None), rd, axis_size)


def _get_batch(axis_size, vals, dims, *, indexer):
  ref, *idxs = vals
  rd, *idims = dims
  if indexer is None:
    return get_p.bind(ref, indexer=None), rd
  new, ops, out_dim = _batched_index(axis_size, indexer, idxs, idims)
  return index_array(_read_front(ref, rd, axis_size), new, ops), out_dim


def _write_batch(axis_size, vals, dims, indexer, add: bool):
  """(old value, its batch dim) of a batched swap (`add`: the new contents of an addupdate)."""
  ref, val, *idxs = vals
  rd, vd, *idims = dims
  if rd is None:
    raise _unbatched_ref_error("an addupdate" if add else "a set/swap", ref)
  if indexer is None:
    val = bdim_at(val, vd, rd, axis_size)
    if add:
      return addupdate_p.bind(ref, val, indexer=None), None
    return swap_p.bind(ref, val, indexer=None), rd
  new, ops, out_dim = _batched_index(axis_size, indexer, idxs, idims)
  full = _read_front(ref, rd, axis_size)
  val = bdim_at(val, vd, out_dim, axis_size)
  old = None if add else index_array(full, new, ops)
  updated = update_array(full, new, ops, val, add=add)
  swap_p.bind(ref, moveaxis(updated, 0, rd), indexer=None)
  return old, out_dim


get_p = Primitive("get")
get_p.def_abstract_eval(_get_abstract_eval)
dispatch.custom_impls[get_p] = _get_impl
ad.primitive_jvps[get_p] = _get_jvp
batching.axis_size_batchers[get_p] = _get_batch
inv.not_invertible(get_p, "it reads mutable state")
discharge.discharge_rules[get_p] = _get_discharge
discharge.ref_reads.add(get_p)
def_effectful(get_p)
def_effects(get_p, lambda eqn: {eff.ReadEffect(0)})


# --- swap and set ---------------------------------------------------------------------------------
def _implicit_cast(dtype, value):
  """JAX's cast of a written value: a weak float into a float ref, any integer into an integer
  ref (as jax.ref.swap does, precedence and all); a weakly typed value of the ref's dtype is
  made strong (JAX's convert_element_type[weak_type=False] before the write)."""
  try:
    aval = get_aval(value)
  except TypeError:
    return value
  if not isinstance(aval, ShapedArray) or (aval.dtype == dtype and not aval.weak_type):
    return value
  if aval.dtype == dtype:
    return conversion.convert_element_type(value, dtype, weak_type=False)
  if ((aval.weak_type and dtypes.is_float(dtype) and dtypes.is_float(aval.dtype))
      or (dtypes.is_integer(dtype) and dtypes.is_integer(aval.dtype))):
    return conversion.convert_element_type(value, dtype)
  return value


def ref_swap(ref, idx, value, _function_name="ref_swap"):
  """Write `value` at `ref[idx]` and return what was there (JAX's `jax.ref.swap`).

  Args:
    ref: a Ref (written in place).
    idx: a NumPy-style index (see `ref_get`).
    value: an array of the indexed shape and the Ref's dtype.

  Returns:
    The previous value at `idx`.

  Example:
    >>> r = revax.new_ref(jnp.arange(5))
    >>> revax.ref.swap(r, 3, 10)
    Array(3, dtype=int32)
    >>> r
    Ref([ 0,  1,  2, 10,  4], dtype=int32)
  """
  aval = _ref_aval(ref, _function_name)
  value = _implicit_cast(aval.dtype, value)
  indexer, idxs = normalize_index(aval.shape, idx)
  return swap_p.bind(ref, value, *idxs, indexer=indexer)


def ref_set(ref, idx, value) -> None:
  """`ref[idx] = value` in place (JAX's `jax.ref.set`).

  Args:
    ref: a Ref.
    idx: a NumPy-style index (see `ref_get`).
    value: an array of the indexed shape and the Ref's dtype.

  Example:
    >>> r = revax.new_ref(jnp.zeros(3))
    >>> revax.ref.set(r, 1, 10.0)
    >>> r
    Ref([ 0., 10.,  0.], dtype=float32)
  """
  ref_swap(ref, idx, value, _function_name="ref_set")  # (its old value unused: a top-level
  # jaxpr prints it `_`, the write as `a[...] <- v`, a nested one names it, as JAX's printer)


def _check_value(name, ref_aval, val_aval, indexer):
  if isinstance(val_aval, AbstractRef):
    raise ValueError("Cannot store a Ref into another Ref. Did you forget to load from it "
                     "using `[...]`?")
  expected = ref_aval.shape if indexer is None else indexer.out_shape()
  transforms = "()" if indexer is None else f"({indexer},)"
  if tuple(expected) != val_aval.shape:
    raise ValueError(f"Invalid shape for `{name}`. Ref shape: {ref_aval.shape}. Expected shape: "
                     f"{tuple(expected)}. Value shape: {val_aval.shape}. Transforms: "
                     f"{transforms}. ")
  if ref_aval.dtype != val_aval.dtype:
    raise ValueError(f"Invalid dtype for `{name}`. Ref dtype: {ref_aval.dtype}. Value dtype: "
                     f"{val_aval.dtype}. ")


def _swap_abstract_eval(ref_aval, val_aval, *idx_avals, indexer):
  if not isinstance(ref_aval, AbstractRef):
    raise ValueError(f"`swap` must be called on `Ref` types: {ref_aval}.")
  _check_value("swap", ref_aval, val_aval, indexer)
  inner = ref_aval.inner_aval
  return inner if indexer is None else inner.update(shape=indexer.out_shape())


def _swap_impl(ref, val, *idxs, indexer):
  _swap_abstract_eval(ref._aval, get_aval(val), indexer=indexer)
  old = index_array(ref._value, indexer, idxs)
  new = update_array(ref._value, indexer, idxs, val, add=False)
  ref._value, ref._shared = dispatch.to_array(new), new is val or type(new) is not Array
  return old


def _swap_discharge(x, val, *idxs, indexer):
  old = index_array(x, indexer, idxs)
  return [update_array(x, indexer, idxs, val, add=False)] + [None] * (1 + len(idxs)), old


def _swap_jvp(primals, tangents, *, indexer):
  ref, val, *idxs = primals
  ref_t, val_t = tangents[0], tangents[1]
  out = swap_p.bind(ref, val, *idxs, indexer=indexer)
  zero_out = ad.Zero(ad.tangent_aval(get_aval(out)))
  if type(ref_t) is ad.Zero and type(val_t) is ad.Zero:
    return out, zero_out
  if type(ref_t) is ad.Zero:
    raise Exception("performing a set/swap operation with a differentiated value on a "
                    f"non-differentiated array reference of type {get_aval(ref)}. Move the "
                    "array reference to be an argument of the differentiated function?")
  if get_aval(ref).kind == "no_grad_no_remat":
    return out, zero_out
  val_t = ad.instantiate_zeros(val_t)
  return out, swap_p.bind(ref_t, val_t, *idxs, indexer=indexer)


def _swap_batch(axis_size, vals, dims, *, indexer):
  return _write_batch(axis_size, vals, dims, indexer, add=False)


swap_p = Primitive("swap")
swap_p.def_abstract_eval(_swap_abstract_eval)
dispatch.custom_impls[swap_p] = _swap_impl
ad.primitive_jvps[swap_p] = _swap_jvp
batching.axis_size_batchers[swap_p] = _swap_batch
# (as jax: under vmap a write's batching rule runs even when nothing is batched, and refuses a
# ref that is not, whatever the value: every example would write it)
batching.batch_unmapped_inputs.add(swap_p)
inv.not_invertible(swap_p, "it writes mutable state")
discharge.discharge_rules[swap_p] = _swap_discharge
def_effectful(swap_p)
def_effects(swap_p, lambda eqn: {eff.WriteEffect(0)})


def _write_partial_eval(trace, args, params, unknowns, prim=swap_p):
  """Partial evaluation of a write of an unknown value into a known ref (a tangent ref made from
  known zeros, when linearizing): the ref's contents now depend on unknowns, so it is staged
  (a staged `new_ref` of its current contents) and stands for the known ref from then on."""
  ref = args[0]
  if not unknowns[0]:
    with set_current_trace(trace.parent_trace):
      contents = get_p.bind(ref, indexer=None)
    aval = get_aval(ref)
    staged = staging.DynamicJaxprTrace.process_primitive(
        trace, new_ref_p, [contents], {"memory_space": aval.memory_space, "kind": aval.kind})
    trace.staged_refs[id(ref)] = (ref, staged)
    args = [staged] + list(args[1:])
  return staging.DynamicJaxprTrace.process_primitive(trace, prim, args, params)


partial_eval.partial_eval_rules[swap_p] = _write_partial_eval


# --- addupdate ------------------------------------------------------------------------------------
def ref_addupdate(ref, idx, x) -> None:
  """`ref[idx] += x` in place (JAX's `jax.ref.addupdate`); `x` must have the indexed shape and
  the Ref's dtype (no broadcasting or casting, as in JAX).

  Args:
    ref: a Ref.
    idx: a NumPy-style index (see `ref_get`).
    x: the array to add.

  Example:
    >>> r = revax.new_ref(jnp.arange(5))
    >>> revax.ref.addupdate(r, 2, jnp.int32(10))
    >>> r
    Ref([ 0,  1, 12,  3,  4], dtype=int32)
  """
  aval = _ref_aval(ref, "ref_addupdate")
  indexer, idxs = normalize_index(aval.shape, idx)
  addupdate_p.bind(ref, x, *idxs, indexer=indexer)


def _addupdate_abstract_eval(ref_aval, val_aval, *idx_avals, indexer):
  if not isinstance(ref_aval, AbstractRef):
    raise ValueError(f"`addupdate` must be called on `Ref` types: {ref_aval}.")
  _check_value("addupdate", ref_aval, val_aval, indexer)
  return []


def _addupdate_impl(ref, val, *idxs, indexer):
  _addupdate_abstract_eval(ref._aval, get_aval(val), indexer=indexer)
  ref._value = dispatch.to_array(update_array(ref._value, indexer, idxs, val, add=True))
  ref._shared = False
  return []


def _addupdate_discharge(x, val, *idxs, indexer):
  return [update_array(x, indexer, idxs, val, add=True)] + [None] * (1 + len(idxs)), []


def _addupdate_jvp(primals, tangents, *, indexer):
  ref, val, *idxs = primals
  ref_t, val_t = tangents[0], tangents[1]
  addupdate_p.bind(ref, val, *idxs, indexer=indexer)
  if type(val_t) is not ad.Zero or type(ref_t) is not ad.Zero:
    if type(ref_t) is ad.Zero:
      raise Exception("performing an addupdate operation with a differentiated value on a "
                      f"non-differentiated array reference of type {get_aval(ref)}. Move the "
                      "array reference to be an argument of the differentiated function?")
    if get_aval(ref).kind != "no_grad_no_remat":
      addupdate_p.bind(ref_t, ad.instantiate_zeros(val_t), *idxs, indexer=indexer)
  return [], []


def _addupdate_batch(axis_size, vals, dims, *, indexer):
  _write_batch(axis_size, vals, dims, indexer, add=True)
  return [], []


addupdate_p = Primitive("addupdate", multiple_results=True)
addupdate_p.def_abstract_eval(_addupdate_abstract_eval)
dispatch.custom_impls[addupdate_p] = _addupdate_impl
ad.primitive_jvps[addupdate_p] = _addupdate_jvp
partial_eval.partial_eval_rules[addupdate_p] = functools.partial(_write_partial_eval,
                                                                 prim=addupdate_p)
batching.axis_size_batchers[addupdate_p] = _addupdate_batch
batching.batch_unmapped_inputs.add(addupdate_p)
inv.not_invertible(addupdate_p, "it writes mutable state")
discharge.discharge_rules[addupdate_p] = _addupdate_discharge
def_effectful(addupdate_p)
def_effects(addupdate_p, lambda eqn: {eff.AccumEffect(0)})


# --- freeze ---------------------------------------------------------------------------------------
def freeze(ref):
  """The final value of `ref`, as an array (JAX's `jax.freeze`).

  Args:
    ref: a Ref.

  Returns:
    An array holding the Ref's contents.

  Example:
    >>> r = revax.new_ref(jnp.arange(3))
    >>> r[1] = 7
    >>> revax.freeze(r)
    Array([0, 7, 2], dtype=int32)
  """
  return freeze_p.bind(ref)


def _freeze_abstract_eval(ref_aval):
  if not isinstance(ref_aval, AbstractRef):
    raise ValueError(f"`freeze` must be called on `Ref` types: {ref_aval}.")
  return ref_aval.inner_aval


def _freeze_jvp(primals, tangents):
  (ref,), (ref_t,) = primals, tangents
  out = freeze_p.bind(ref)
  if type(ref_t) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(get_aval(out)))
  return out, freeze_p.bind(ref_t)


freeze_p = Primitive("freeze")
freeze_p.def_abstract_eval(_freeze_abstract_eval)
def _freeze_impl(ref):
  _freeze_abstract_eval(get_aval(ref))
  ref._shared = True
  return ref._settle()


dispatch.custom_impls[freeze_p] = _freeze_impl
ad.primitive_jvps[freeze_p] = _freeze_jvp
batching.primitive_batchers[freeze_p] = lambda vals, dims: (freeze_p.bind(vals[0]), dims[0])
inv.not_invertible(freeze_p, "it reads mutable state")
discharge.ref_reading[freeze_p] = lambda x: x
def_effectful(freeze_p)
def_effects(freeze_p, lambda eqn: {eff.internal_mutable_array_effect})


# --- empty_ref and free_ref -----------------------------------------------------------------------
def empty_ref(ty, memory_space=None):
  """A Ref of type `ty` (anything with `shape` and `dtype`) whose contents are not yet set
  (revax fills it with zeros; JAX leaves them unspecified).

  Args:
    ty: the type of the contents (a ShapeDtypeStruct, an array, ...).
    memory_space: a memory space (only inside jit, as in JAX).

  Returns:
    A `Ref`.

  Example:
    >>> revax.ref.empty_ref(revax.ShapeDtypeStruct((2,), jnp.float32)).shape
    (2,)
  """
  from revax._src.lax.creation import full
  return new_ref(full(tuple(ty.shape), 0, ty.dtype), memory_space=memory_space)


def free_ref(ref):
  """Declare that `ref` is no longer used (JAX's `jax.free_ref`).

  Args:
    ref: a Ref.

  Returns:
    ().

  Example:
    >>> revax.free_ref(revax.new_ref(1.0))
    ()
  """
  _ref_aval(ref, "free_ref")
  return ()


# --- printing, as JAX prints ref operations in jaxprs -------------------------------------------
def _pp_operand(names, a) -> str:
  return str(a.val) if isinstance(a, Literal) else names(a)


def _pp_ref(names, ref, indexer, idxs) -> str:
  """`a[...]`, `a[1:3,i]`, `a[b:b+2]`: a ref at an index."""
  if indexer is None:
    return f"{names(ref)}[...]"
  ops = iter(idxs)
  parts = []
  for e, n in zip(indexer.entries, indexer.shape):
    if e[0] == "i":
      parts.append(_pp_operand(names, next(ops)))
    elif e[0] == "d":
      start = _pp_operand(names, next(ops))
      parts.append(f"{start}:{start}+{e[1]}")
    else:
      _, start, size, stride = e
      end = start + size
      parts.append(f"{start or ''}:{'' if end == n else end}")
  return f"{names(ref)}[{','.join(parts)}]"


def _pp_get(eqn, names) -> pp.Doc:
  ref, *idxs = eqn.invars
  out = binder(names, eqn.outvars[0])  # (named before the ref, as JAX's)
  return pp.text(f"{out} <- {_pp_ref(names, ref, eqn.params['indexer'], idxs)}")


def _pp_swap(eqn, names) -> pp.Doc:
  ref, val, *idxs = eqn.invars
  at = _pp_ref(names, ref, eqn.params["indexer"], idxs)
  if names.is_dropped(eqn.outvars[0]):  # an unused result at top level (JAX's test)
    return pp.text(f"{at} <- {names(val)}")  # (a literal value with its type, as JAX prints it)
  return pp.text(f"{binder(names, eqn.outvars[0])}, {at} <- {at}, {names(val)}")


def _pp_addupdate(eqn, names) -> pp.Doc:
  ref, val, *idxs = eqn.invars
  return pp.text(f"{_pp_ref(names, ref, eqn.params['indexer'], idxs)} += {names(val)}")


pp_eqn_rules[get_p] = _pp_get
pp_eqn_rules[swap_p] = _pp_swap
pp_eqn_rules[addupdate_p] = _pp_addupdate


# --- threading refs through higher-order primitives -----------------------------------------------
def is_ref(x) -> bool:
  """Whether `x` is a mutable array ref (a Ref or a traced one)."""
  return isinstance(x, Ref)


def check_distinct_refs(refs, what: str) -> None:
  """ValueError when one ref is passed to `what` twice (its two uses could not be threaded
  apart)."""
  seen = set()
  for r in refs:
    if id(r) in seen:
      raise ValueError(f"only one reference to a mutable array may be passed as an argument to "
                       f"{what}, but the mutable array reference of type {get_aval(r)} "
                       "appeared twice.")
    seen.add(id(r))


def write_back(ref, contents) -> None:
  """Make `contents` (the final contents of `ref` computed by a program that took them as a
  value: a loop, a branch, a jitted call) the contents of `ref`, as they are: unlike a user's
  write, their weak type is not cast away (as jax, whose discharged programs hand refs their
  contents unchanged)."""
  swap_p.bind(ref, contents, indexer=None)


def call_threading_refs(jaxprs, operands, bind, what: str):
  """Bind a primitive whose closed `jaxprs` each take `operands`, some of them refs, on the
  refs' contents instead: `bind(pure_jaxprs, values)` binds it on the discharged jaxprs (which
  also return the refs' final contents, after their outputs), and those contents are written
  back into the refs. Returns the original outputs."""
  mask = [is_ref(x) for x in operands]
  refs = [x for x, m in zip(operands, mask) if m]
  check_distinct_refs(refs, what)
  pure = [discharge.discharge_state(j) for j in jaxprs]
  outs = bind(pure, [ref_get(x) if m else x for x, m in zip(operands, mask)])
  n = len(jaxprs[0].out_avals)
  positions = [k for k, m in enumerate(mask) if m]
  for ref, k, new in zip(refs, positions, outs[n:], strict=True):
    if any(discharge.writes_ref(j.jaxpr, k) for j in jaxprs):
      write_back(ref, new)
  return outs[:n]
