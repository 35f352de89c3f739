"""Typed PRNG keys as values of jaxprs: the primitives random_seed, random_split, random_fold_in,
random_bits, random_wrap, random_unwrap and random_clone, as JAX 0.10.2 has them.

A key array's aval has an extended dtype, `key<fry>[4]`: its shape is the keys' shape, without
the trailing dims of each key's uint32 data. Compiled programs and device buffers hold the data
(`avals.physical_aval`: `u32[4,2]`), so each primitive lowers by tracing its implementation's
function (`impl.seed`, `impl.split`, `impl.fold_in`, `impl.random_bits`, carried by the key
dtype or the `impl` param) at the physical avals; the bits are those functions' bits, the same
as jax's. `random_wrap` and `random_unwrap` convert between key data and keys and lower to
nothing.

Key-typed values exist in jaxprs; eagerly, a primitive returns an `EagerKeys` (its data and the
key aval), which the transformations' rules pass on (a vmap of a key function run eagerly binds
these primitives on concrete values). User code sees key arrays (revax.random's PRNGKeyArray),
which hold key data or a key-typed tracer.

None of them is differentiable (keys are integers: their tangents are float0, as JAX's
`defjvp_zero`), and each batches by acting on the leading dims of its keys.
"""
from __future__ import annotations

import numpy as np

from revax._src.core.avals import ShapedArray, get_aval, physical_aval, pytype_aval_mappings
from revax._src.core import dtypes
from revax._src.core.extended_dtypes import KeyTy
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, shapes
from revax._src.lax.standard import broadcast_shapes

__all__ = ["random_seed", "random_split", "random_fold_in", "random_bits", "random_wrap",
           "random_unwrap", "random_clone", "is_key_aval", "EagerKeys"]

_U32 = np.dtype(np.uint32)


def is_key_aval(aval) -> bool:
  """Whether `aval` types typed PRNG keys (an extended dtype `key<...>`)."""
  return isinstance(getattr(aval, "dtype", None), KeyTy)


def _key_shaped_array(impl, shape, sharding=None, mat=None) -> ShapedArray:
  return ShapedArray(shape, KeyTy(impl), False, sharding, manual_axis_type=mat)


def _check_keys(name: str, aval) -> None:
  if not is_key_aval(aval):
    raise TypeError(f"{name} takes a key array operand (an extended dtype key<...>), got "
                    f"{aval.str_short() if hasattr(aval, 'str_short') else aval}")


def _extend_sharding(sharding, new_dims: int):
  """The keys' sharding over their dims, not split over `new_dims` appended ones."""
  if sharding is None:
    return None
  from revax._src.core import sharding_types
  parts = tuple(sharding.spec.partitions) + (None,) * new_dims
  return sharding_types.make_sharding(sharding.mesh, parts)


# --- concrete keys -------------------------------------------------------------------------------
class EagerKeys:
  """A concrete key-typed value: what an eager bind of these primitives returns (`data`: the
  uint32 key data, `aval`: key<impl>[shape]). Transformations' rules pass it from one primitive
  to the next (an eager vmap of `revax.random.split`); users see key arrays instead."""
  __slots__ = ("data", "aval")

  def __init__(self, data, impl):
    self.data = data
    shape = tuple(get_aval(data).shape)
    self.aval = _key_shaped_array(impl, shape[:len(shape) - len(impl.key_shape)])

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: self.aval.ndim)

  def __repr__(self):
    return f"EagerKeys({self.aval.str_short()}, data={self.data!r})"


pytype_aval_mappings[EagerKeys] = lambda x: x.aval


def _data_of(x):
  """The uint32 data of a concrete key value (EagerKeys, or a key array that holds data)."""
  if type(x) is EagerKeys:
    return x.data
  data = getattr(x, "_data", None)
  if data is None:
    raise TypeError(f"expected concrete PRNG keys, got {x!r}")
  return data


def _impl_of(aval):
  return aval.dtype._impl


def _as_keys(x):
  """A key array of revax.random as its key-typed value (its random_wrap under a trace when it
  holds data); anything else as it is."""
  typed_value = getattr(x, "_typed_value", None)
  return typed_value() if typed_value is not None else x


# --- mapping an implementation's one-key functions over leading dims ----------------------------
def _mapped(fn, args, dims, n: int):
  """`fn` applied as vmap over `n` leading dims of the args whose entry of `dims` is 0 (None:
  the argument is shared); the result's mapped dims lead."""
  if n == 0:
    return fn(*args)
  size = get_aval(next(a for a, d in zip(args, dims) if d is not None)).shape[0]

  def inner(*xs):
    return [_mapped(fn, xs, dims, n - 1)]
  (out,), (d,) = batching.batch_flat(inner, list(args), list(dims), size)
  return batch_util.bdim_at(out, d, 0, size)


def _seed_physical(seeds, *, impl):
  return _mapped(impl.seed, (seeds,), (0,), get_aval(seeds).ndim)


def _split_physical(data, *, impl, shape):
  return impl.split(data, shape)  # (it maps over a batch of keys as vmap does)


def _bits_physical(data, *, impl, bit_width, shape):
  return impl.random_bits(data, bit_width, shape)


def _fold_in_physical(data, msgs, *, impl):
  """Each key folded with its message (shapes broadcast): a scalar message folds into every
  key at once (the implementation maps over a batch of keys); otherwise both are broadcast to
  the result's shape and mapped together."""
  k = len(impl.key_shape)
  key_shape = get_aval(data).shape[:get_aval(data).ndim - k]
  msg_shape = get_aval(msgs).shape
  if not msg_shape:
    return impl.fold_in(data, msgs)
  if not key_shape:  # (one key: mapped over the messages alone, as JAX's)
    return _mapped(impl.fold_in, (data, msgs), (None, 0), len(msg_shape))
  shape = broadcast_shapes(key_shape, msg_shape, op_name="random_fold_in")
  data = _broadcast_keys_physical(data, key_shape, shape, impl)
  if msg_shape != shape:
    msgs = shapes.broadcast_in_dim(msgs, shape, tuple(range(len(shape) - len(msg_shape),
                                                            len(shape))))
  return _mapped(impl.fold_in, (data, msgs), (0, 0), len(shape))


def _broadcast_keys_physical(data, key_shape, shape, impl):
  if tuple(key_shape) == tuple(shape):
    return data
  k = len(impl.key_shape)
  lead = len(shape) - len(key_shape)
  dims = tuple(range(lead, len(shape) + k))
  return shapes.broadcast_in_dim(data, tuple(shape) + impl.key_shape, dims)


def _lower_physical(fn, impl_of_params):
  """A lowering rule: `fn` over the operands' physical values (key data), traced at their
  physical avals; `impl_of_params(ctx, params)` gives the implementation."""
  def rule(ctx, *args, **params):
    impl = impl_of_params(ctx, params)
    phys = mlir.LoweringRuleContext(ctx.fb, [physical_aval(a) for a in ctx.avals_in],
                                    [physical_aval(a) for a in ctx.avals_out], ctx.platform)
    inner = mlir.lower_fun(lambda *xs: fn(*xs, impl=impl, **params), multiple_results=False)
    return [inner(phys, *args)]
  return rule


# How an eager bind computes `fn(*datas, impl=impl, **params)` on key data: set by
# revax.random's keys module to a cached jitted call (one executable call, as its eager key
# functions make; op by op, the hash's ~100 integer operations would cost far more).
run_physical = [lambda fn, impl, params, *datas: fn(*datas, impl=impl, **dict(params))]


def _eager(fn, impl_of, wrap_out: bool):
  """An eager implementation: `fn` on the operands' key data (run_physical), the result
  wrapped as EagerKeys when it is keys."""
  def impl_rule(*args, **params):
    impl = impl_of(args, params)
    params.pop("impl", None)
    datas = [_data_of(a) if _is_keys(a) else a for a in args]
    out = run_physical[0](fn, impl, tuple(sorted(params.items())), *datas)
    return EagerKeys(out, impl) if wrap_out else out
  return impl_rule


def _is_keys(x) -> bool:
  return type(x) is EagerKeys or isinstance(getattr(x, "dtype", None), KeyTy)


def _impl_of_first_operand(args, params):
  x = args[0]
  return x.aval.dtype._impl if type(x) is EagerKeys else x.dtype._impl


def _no_tangents(prim):
  """JAX's `defjvp_zero`: keys and bits are integers, their tangents symbolic float0 zeros."""
  ad.zero_output_jvp(prim, "keys and random bits are integers")


def _keys_at_front(x, d, size):
  """Key-typed `x` with its batch dim (or a broadcast one) first: moved as its data is."""
  if d == 0:
    return x
  aval = get_aval(x)
  impl = _impl_of(aval)
  data = batch_util.bdim_at(random_unwrap(x), d, 0, size)
  return random_wrap(data, impl=impl)


# --- random_seed ---------------------------------------------------------------------------------
def random_seed(seeds, *, impl):
  """Keys of `impl` from integer seeds (one key per element of `seeds`)."""
  return random_seed_p.bind(seeds, impl=impl)


def _random_seed_abstract_eval(seeds, *, impl):
  if not (dtypes.is_integer(seeds.dtype) or dtypes.is_bool(seeds.dtype)):
    raise TypeError(f"random_seed takes integer seeds, got {seeds.str_short()}")
  return _key_shaped_array(impl, seeds.shape, seeds.sharding, seeds._mat)


random_seed_p = Primitive("random_seed")
random_seed_p.def_abstract_eval(_random_seed_abstract_eval)
dispatch.custom_impls[random_seed_p] = _eager(_seed_physical, lambda a, p: p["impl"], True)
_no_tangents(random_seed_p)
batching.defvectorized(random_seed_p)
mlir.register_lowering(random_seed_p, _lower_physical(_seed_physical,
                                                      lambda ctx, p: p.pop("impl")))
inv.not_invertible(random_seed_p, "a hash of integer seeds")


# --- random_split --------------------------------------------------------------------------------
def random_split(keys, shape):
  """Each key split into keys of `shape` (appended to the keys' shape)."""
  return random_split_p.bind(_as_keys(keys), shape=tuple(shape))


def _random_split_abstract_eval(keys, *, shape):
  _check_keys("random_split", keys)
  return _key_shaped_array(_impl_of(keys), keys.shape + tuple(shape),
                           _extend_sharding(keys.sharding, len(shape)), keys._mat)


def _keyed_hash(name: str, abstract_eval, physical, returns_keys: bool) -> Primitive:
  """A primitive of key arrays computed by the impl's `physical` function on their data
  (random_split, random_bits): eager through one cached program, vectorized, no tangents,
  lowered on the data."""
  prim = Primitive(name)
  prim.def_abstract_eval(abstract_eval)
  dispatch.custom_impls[prim] = _eager(physical, _impl_of_first_operand, returns_keys)
  _no_tangents(prim)
  batching.defvectorized(prim)
  mlir.register_lowering(prim, _lower_physical(physical,
                                               lambda ctx, p: _impl_of(ctx.avals_in[0])))
  inv.not_invertible(prim, "a keyed hash")
  return prim


random_split_p = _keyed_hash("random_split", _random_split_abstract_eval, _split_physical, True)


# --- random_fold_in ------------------------------------------------------------------------------
def random_fold_in(keys, msgs):
  """Each key combined with its uint32 message (shapes broadcast)."""
  return random_fold_in_p.bind(_as_keys(keys), msgs)


def _random_fold_in_abstract_eval(keys, msgs):
  _check_keys("random_fold_in", keys)
  if msgs.dtype != _U32:
    raise TypeError(f"random_fold_in takes uint32 messages, got {msgs.str_short()}")
  shape = broadcast_shapes(keys.shape, msgs.shape, op_name="random_fold_in")
  sharding = keys.sharding if shape == keys.shape else None
  return _key_shaped_array(_impl_of(keys), shape, sharding, keys._mat)


def _random_fold_in_batch(axis_size, vals, dims):
  """Broadcasting (JAX's `defbroadcasting`): the mapped operands' batch dims first, an unmapped
  operand left as it is (it broadcasts from the right), ranks equalized with unit dims after
  the batch dim where a mapped operand has fewer per-example dims than the other."""
  keys, msgs = vals
  dk, dm = dims
  rk = get_aval(keys).ndim - (dk is not None)
  rm = get_aval(msgs).ndim - (dm is not None)
  if dk is not None:
    keys = _keys_at_front(keys, dk, axis_size)
    if rk < rm:
      keys = _reshape_keys(keys, (axis_size,) + (1,) * (rm - rk) + get_aval(keys).shape[1:])
  if dm is not None:
    msgs = batch_util.bdim_at(msgs, dm, 0, axis_size)
    if rm < rk:
      shape = get_aval(msgs).shape
      msgs = shapes.reshape(msgs, shape[:1] + (1,) * (rk - rm) + shape[1:])
  return random_fold_in_p.bind(_as_keys(keys), msgs), 0


def _reshape_keys(keys, shape):
  impl = _impl_of(get_aval(keys))
  return random_wrap(shapes.reshape(random_unwrap(keys), tuple(shape) + impl.key_shape),
                     impl=impl)


random_fold_in_p = Primitive("random_fold_in")
random_fold_in_p.def_abstract_eval(_random_fold_in_abstract_eval)
dispatch.custom_impls[random_fold_in_p] = _eager(_fold_in_physical, _impl_of_first_operand,
                                                 True)
_no_tangents(random_fold_in_p)
batching.axis_size_batchers[random_fold_in_p] = _random_fold_in_batch
mlir.register_lowering(random_fold_in_p, _lower_physical(
    _fold_in_physical, lambda ctx, p: _impl_of(ctx.avals_in[0])))
inv.not_invertible(random_fold_in_p, "a keyed hash")


# --- random_bits ---------------------------------------------------------------------------------
def random_bits(keys, bit_width: int, shape):
  """Uniform unsigned bits of `bit_width` and `shape` from each key (keys' shape first)."""
  return random_bits_p.bind(_as_keys(keys), bit_width=bit_width, shape=tuple(shape))


def _random_bits_abstract_eval(keys, *, bit_width, shape):
  _check_keys("random_bits", keys)
  if bit_width not in (8, 16, 32, 64):
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  return ShapedArray(keys.shape + tuple(shape), np.dtype(f"uint{bit_width}"), False,
                     _extend_sharding(keys.sharding, len(shape)), manual_axis_type=keys._mat)


random_bits_p = _keyed_hash("random_bits", _random_bits_abstract_eval, _bits_physical, False)


# --- random_wrap and random_unwrap ---------------------------------------------------------------
def random_wrap(data, *, impl):
  """Keys of `impl` whose data is `data` (uint32, its trailing dims the implementation's key
  shape)."""
  return random_wrap_p.bind(data, impl=impl)


def _random_wrap_abstract_eval(data, *, impl):
  k = len(impl.key_shape)
  if data.dtype != _U32 or data.ndim < k or data.shape[data.ndim - k:] != tuple(impl.key_shape):
    raise TypeError(f"random_wrap takes uint32 key data whose shape ends with "
                    f"{tuple(impl.key_shape)} (the key shape of {impl.name}), got "
                    f"{data.str_short()}")
  sharding = data.sharding
  if sharding is not None:
    from revax._src.core import sharding_types
    parts = tuple(sharding.spec.partitions)[:data.ndim - k]
    sharding = sharding_types.make_sharding(sharding.mesh, parts)
  return _key_shaped_array(impl, data.shape[:data.ndim - k], sharding, data._mat)


def _random_wrap_batch(axis_size, vals, dims, *, impl):
  (x,), (d,) = vals, dims
  return random_wrap(batch_util.bdim_at(x, d, 0, axis_size), impl=impl), 0


random_wrap_p = Primitive("random_wrap")
random_wrap_p.def_abstract_eval(_random_wrap_abstract_eval)
dispatch.custom_impls[random_wrap_p] = lambda data, *, impl: EagerKeys(data, impl)
_no_tangents(random_wrap_p)
batching.axis_size_batchers[random_wrap_p] = _random_wrap_batch
mlir.register_lowering(random_wrap_p, lambda ctx, data, *, impl: [data])
inv.not_invertible(random_wrap_p, "keys from integer data (nothing differentiable)")


def random_unwrap(keys):
  """The uint32 data of keys (shape: the keys' shape and the key shape)."""
  return random_unwrap_p.bind(_as_keys(keys))


def _random_unwrap_abstract_eval(keys):
  _check_keys("random_unwrap", keys)
  return physical_aval(keys)


random_unwrap_p = Primitive("random_unwrap")
random_unwrap_p.def_abstract_eval(_random_unwrap_abstract_eval)
dispatch.custom_impls[random_unwrap_p] = _data_of
_no_tangents(random_unwrap_p)
batching.defvectorized(random_unwrap_p)
mlir.register_lowering(random_unwrap_p, lambda ctx, keys: [keys])
inv.not_invertible(random_unwrap_p, "integer key data (nothing differentiable)")


# --- random_clone --------------------------------------------------------------------------------
def random_clone(keys):
  """`keys` as a new value (JAX's random_clone: the identity, which jax's key reuse checker
  treats as a fresh key)."""
  return random_clone_p.bind(_as_keys(keys))


random_clone_p = Primitive("random_clone")
random_clone_p.def_abstract_eval(lambda x: x)
dispatch.custom_impls[random_clone_p] = lambda x: x
_no_tangents(random_clone_p)
batching.defvectorized(random_clone_p)
mlir.register_lowering(random_clone_p, lambda ctx, x: [x])
inv.not_invertible(random_clone_p, "keys (nothing differentiable)")


# --- other primitives on keys: structural ops (slice, reshape, select_n, ...) on key data ------
def _lower_on_key_data(ctx, prim, args, params):
  """Lower `prim` on operands or results of key types (e.g. `slice` of key<fry>[4]) as the
  primitive on the keys' data with the trailing key-data dims mapped over (vmap: each key word
  goes through the operation as one array of the keys' shape), the way the structural operations
  JAX allows on key arrays act on their data. Only operations whose results are all keys of
  one implementation qualify (NotImplementedError otherwise)."""
  impls = {a.dtype._impl for a in (*ctx.avals_in, *ctx.avals_out) if is_key_aval(a)}
  if len(impls) != 1 or not all(is_key_aval(a) for a in ctx.avals_out):
    raise NotImplementedError(
        f"revax cannot compile '{prim.name}' on values of types "
        f"{', '.join(a.str_short() for a in ctx.avals_in)} -> "
        f"{', '.join(a.str_short() for a in ctx.avals_out)}: only operations from keys to keys "
        "of one implementation act on key data; take revax.random.key_data first")
  (impl,) = impls
  words = len(impl.key_shape)
  is_key = [is_key_aval(a) for a in ctx.avals_in]

  def on_data(*datas):
    fn = lambda *xs: _as_list(prim.bind(*xs, **params))
    for _ in range(words):
      fn = _map_last(fn, is_key)
    return fn(*datas)

  phys = mlir.LoweringRuleContext(ctx.fb, [physical_aval(a) for a in ctx.avals_in],
                                  [physical_aval(a) for a in ctx.avals_out], ctx.platform)
  return mlir.lower_fun(on_data, multiple_results=True)(phys, *args)


def _as_list(x):
  return list(x) if isinstance(x, (list, tuple)) else [x]


def _map_last(fn, mapped):
  """`fn` vmapped over the last axis of the arguments flagged in `mapped`, its results' mapped
  axis last."""
  def wrapped(*xs):
    size = next(get_aval(x).shape[-1] for x, m in zip(xs, mapped) if m)
    dims = [get_aval(x).ndim - 1 if m else None for x, m in zip(xs, mapped)]
    outs, out_dims = batching.batch_flat(fn, list(xs), dims, size)
    return [batch_util.bdim_at(o, d, get_aval(o).ndim - (d is not None), size)
            for o, d in zip(outs, out_dims)]
  return wrapped


mlir.extended_lowering = _lower_on_key_data
mlir.key_aware.update((random_seed_p, random_split_p, random_fold_in_p, random_bits_p,
                       random_wrap_p, random_unwrap_p, random_clone_p))
