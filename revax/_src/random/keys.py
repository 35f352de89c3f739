"""PRNG keys: creating them from seeds, splitting, folding in data, and typed keys.

revax implements JAX's default PRNG, threefry2x32, with JAX 0.10.2's key representations:
`PRNGKey(seed)` returns a raw key, a `uint32[2]` array (JAX's legacy keys), and `key(seed)`
returns a typed key, a `PRNGKeyArray` of shape () whose dtype prints as `key<fry>`. Every
function of revax.random takes either; given raw keys it returns raw keys, given typed keys it
returns typed keys. `key_data` and `wrap_key_data` convert between them. A typed key array is a
pytree leaf to users (revax.tree_util, as in JAX) and a node over its `uint32[..., 2]` data to
revax's transformations (`tree_util.register_array_leaf`), so jit, vmap, grad and the loops
trace its data.
Eagerly, seeding, splitting and folding in are small jitted programs (as in JAX): an eager call
then costs one cached executable call (microseconds), where evaluating the hash's ~100 integer
operations one by one in NumPy costs hundreds.
Under a transformation they bind revax.lax's key primitives (lax/prng_keys.py: random_seed,
random_split, random_fold_in, random_bits, random_wrap, random_unwrap) on key-typed values
(`key<fry>[2]`), so jaxprs show them as JAX's do: a typed key array then holds a key-typed
tracer rather than data (`_base`), and its data (`_data`) is that tracer's random_unwrap; raw
keys are wrapped and unwrapped around each primitive, as in JAX. make_jaxpr types the key
arrays among its arguments and results as keys (`a:key<fry>[]`).
"""
from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes, extended_dtypes
from revax._src.core import sharding_types as st
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.config import config
from revax._src.core.shape_poly import canonical_dim
from revax._src.runtime import basearray
from revax._src.core.trace import Tracer, eval_trace
from revax._src.core.trace import _context as _trace_context
from revax._src.core.extended_dtypes import key_staging as _key_staging
from revax._src.jit import jit
from revax._src.lax import binary, comparison, conversion, prng, prng_keys, reductions, shapes
from revax._src.random import prng_impls as _prng_impls
from revax._src.random.prng_impls import (KeyTy, PRNGImpl, PRNGSpec, prngs, threefry_prng_impl)
from revax._src.runtime.array import Array
from revax._src.vmap import vmap

_U32 = np.dtype(np.uint32)
IMPL_NAME = "threefry2x32"
KeyDtype = KeyTy
KEY_DTYPE = KeyTy(threefry_prng_impl)  # key<fry>


def default_prng_impl() -> PRNGImpl:
  """The implementation new keys get: config jax_default_prng_impl (env
  REVAX_DEFAULT_PRNG_IMPL)."""
  return prngs[config.default_prng_impl]


def resolve_prng_impl(impl_spec) -> PRNGImpl:
  """The implementation `impl_spec` names: None (the default), a name, a PRNGSpec, a key
  dtype or an implementation; ValueError for an unknown name, TypeError for anything else."""
  if impl_spec is None:
    return default_prng_impl()
  if isinstance(impl_spec, PRNGImpl):
    return impl_spec
  if isinstance(impl_spec, (PRNGSpec, KeyTy)):
    return impl_spec._impl
  if type(impl_spec) is str:
    if impl_spec in prngs:
      return prngs[impl_spec]
    names = ", ".join(f'"{n}"' for n in prngs)
    raise ValueError(f'unrecognized PRNG implementation "{impl_spec}". Did you mean one of: '
                     f'{names}?')
  raise TypeError(f"unrecognized type {type(impl_spec)} for specifying PRNG implementation.")


# --- typed keys ----------------------------------------------------------------------------------
class PRNGKeyArray:
  """An array of typed PRNG keys (what `revax.random.key` returns), backed by uint32 key data
  of shape `self.shape + impl.key_shape`. Index it like an array; `key_data` returns its data.

  `_base` holds either that data (an array, a uint32 tracer or a ShapeDtypeStruct) or, under a
  transformation, a key-typed tracer (aval `key<fry>[shape]`, what lax's key primitives
  return); `_data` is the data either way (the tracer's random_unwrap)."""
  __slots__ = ("_base", "_impl", "_unwrapped")

  def __init__(self, data, impl: PRNGImpl = threefry_prng_impl):
    if type(data) is prng_keys.EagerKeys:
      data = data.data
    self._base, self._impl = data, impl
    self._unwrapped = None  # (trace, the key-typed base's random_unwrap in that trace)

  def _base_is_keys(self) -> bool:
    return isinstance(self._base, Tracer) and prng_keys.is_key_aval(self._base.aval)

  def _keys_staged(self) -> bool:
    """Whether shape operations apply to the keys themselves (slice, reshape, ... of key<fry>
    values, as JAX stages them): while make_jaxpr traces (extended_dtypes.key_staging). Else
    they apply to the data, so that programs carry key-typed values only between key
    primitives (an eager loop body or an eager vmap then never meets a key-typed shape
    operation, which revax evaluates only in compiled programs)."""
    return _key_staging.typed and self._base_is_keys()

  @property
  def _data(self):
    """The keys' uint32 data, of shape `self.shape + impl.key_shape`."""
    base = self._base
    if type(base) is not Array and isinstance(base, Tracer) and prng_keys.is_key_aval(base.aval):
      trace, cached = self._unwrapped or (None, None)
      if trace is not _trace_context.trace:  # (one random_unwrap per trace that asks)
        cached = prng_keys.random_unwrap(base)
        self._unwrapped = (_trace_context.trace, cached)
      return cached
    return base

  def _typed_value(self):
    """The keys as a key-typed value of the current transformation (a random_wrap of their
    data when they hold data): what lax's key primitives take, and what make_jaxpr gives as
    its key-typed results."""
    if self._base_is_keys():
      return self._base
    return prng_keys.random_wrap(self._base, impl=self._impl)

  @property
  def shape(self):
    if self._base_is_keys():
      return self._base.aval.shape
    data_shape = tuple(self._base.shape)  # (an array, a tracer or a ShapeDtypeStruct)
    return data_shape[:len(data_shape) - len(self._impl.key_shape)]

  @property
  def ndim(self) -> int:
    return len(self.shape)

  @property
  def size(self) -> int:
    return math.prod(self.shape)

  @property
  def itemsize(self) -> int:
    return self.dtype.itemsize

  @property
  def nbytes(self) -> int:
    return self.size * self.dtype.itemsize

  @property
  def dtype(self) -> KeyTy:
    return KeyTy(self._impl)

  @property
  def aval(self) -> ShapedArray:
    """The keys' abstract value, e.g. `key<fry>[shape]` (what `revax.typeof` gives, as in JAX),
    split as their data is over the keys' dimensions (`key<fry>[4@a]`)."""
    if self._base_is_keys():
      return self._base.aval
    aval = ShapedArray(self.shape, self.dtype)
    data_sharding = getattr(get_aval(self._data), "sharding", None)
    if data_sharding is None:
      return aval
    return aval.update(sharding=self._over_keys(data_sharding))

  def _over_keys(self, sharding):
    """`sharding` of the key data restricted to the keys' dimensions (the trailing key-word
    dimension is never split), one entry per key dimension, as JAX reports it; over a mesh of
    one device JAX reports the data's sharding itself."""
    if sharding.mesh.size == 1:
      return sharding
    spec = tuple(sharding.spec.partitions)
    parts = (spec + (None,) * (len(self._impl.key_shape) + self.ndim - len(spec)))[:self.ndim]
    return st.make_sharding(sharding.mesh, parts)

  @property
  def sharding(self):
    """Where the keys live, as JAX's key arrays report it: their data's sharding (a
    NamedSharding over the keys' dimensions)."""
    s = self._data.sharding
    return self._over_keys(s) if hasattr(s, "spec") else s

  @property
  def is_fully_replicated(self) -> bool:
    return self._data.is_fully_replicated

  @property
  def addressable_shards(self) -> list:
    """Each device's block of keys, as JAX's: a Shard whose data is a key array and whose
    index covers the key data's dimensions (the key-word dimension whole)."""
    return [type(s)(s.device, s.index, PRNGKeyArray(s.data, self._impl), s.replica_id)
            for s in self._data.addressable_shards]

  # where the keys live: their data's device(s) and commitment (Array.committed)
  def devices(self) -> set:
    return self._data.devices()

  @property
  def device(self):
    return self._data.device

  @property
  def committed(self) -> bool:
    return self._data.committed

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    return (self[i] for i in range(len(self)))

  def __getitem__(self, index):
    if not isinstance(index, tuple):
      index = (index,)
    if any(i is Ellipsis for i in index):
      raise IndexError("PRNG key arrays do not support Ellipsis in indices")
    if sum(i is not None for i in index) > self.ndim:
      raise IndexError(f"too many indices for a key array of shape {self.shape}")
    if self._keys_staged():  # (indexing the keys themselves: slice, squeeze, ... on key<fry>)
      return PRNGKeyArray(self._base[index], self._impl)
    return PRNGKeyArray(self._data[index], self._impl)

  def __repr__(self):
    if isinstance(self._base, Tracer):
      return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{self._base}"
    data = np.asarray(self._data)
    return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{data}"

  # --- the shape methods of JAX's key arrays (flax's nnx.Rngs copies and reshapes keys): each
  # applies to the keys' shape, the trailing key-data dimension kept as it is
  def copy(self) -> "PRNGKeyArray":
    return PRNGKeyArray(shapes.reshape(self._data, get_aval(self._data).shape), self._impl)

  def reshape(self, *shape, order: str = "C") -> "PRNGKeyArray":
    if order != "C":
      raise NotImplementedError(f"key array reshape with order={order!r}")
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    shape = tuple(int(d) for d in shape)
    if -1 in shape:
      known = math.prod(d for d in shape if d != -1)
      shape = tuple(self.size // known if d == -1 else d for d in shape)
    if math.prod(shape) != self.size:
      raise TypeError(f"cannot reshape a key array of shape {self.shape} (size {self.size}) "
                      f"into shape {shape}")
    if self._keys_staged():
      return PRNGKeyArray(shapes.reshape(self._base, shape), self._impl)
    return PRNGKeyArray(shapes.reshape(self._data, shape + self._impl.key_shape), self._impl)

  def ravel(self) -> "PRNGKeyArray":
    return self.reshape(self.size)

  flatten = ravel

  def squeeze(self, axis=None) -> "PRNGKeyArray":
    if axis is None:
      axes = tuple(i for i, d in enumerate(self.shape) if d == 1)
    else:
      axes = tuple(a % self.ndim for a in ((axis,) if isinstance(axis, int) else axis))
      if any(self.shape[a] != 1 for a in axes):
        raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                         f"one, got shape={self.shape} and dimensions={axes}")
    return self.reshape(tuple(d for i, d in enumerate(self.shape) if i not in axes))

  def transpose(self, *axes) -> "PRNGKeyArray":
    axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
    perm = tuple(range(self.ndim))[::-1] if not axes else tuple(a % self.ndim for a in axes)
    if self._keys_staged():
      return PRNGKeyArray(shapes.transpose(self._base, perm), self._impl)
    words = tuple(range(self.ndim, self.ndim + len(self._impl.key_shape)))
    return PRNGKeyArray(shapes.transpose(self._data, perm + words), self._impl)

  T = property(lambda self: self.transpose())

  def swapaxes(self, axis1: int, axis2: int) -> "PRNGKeyArray":
    perm = list(range(self.ndim))
    a, b = axis1 % self.ndim, axis2 % self.ndim
    perm[a], perm[b] = perm[b], perm[a]
    return self.transpose(tuple(perm))

  def block_until_ready(self) -> "PRNGKeyArray":
    if hasattr(self._data, "block_until_ready"):
      self._data.block_until_ready()
    return self

  def _compare(self, other, name, op, combine):
    if not isinstance(other, PRNGKeyArray) or other._impl != self._impl:
      try:
        other_dtype = other.dtype if isinstance(other, PRNGKeyArray) else \
            get_aval(other).dtype.name
      except TypeError:
        other_dtype = type(other).__name__
      raise TypeError(f"{name} does not accept dtypes {self.dtype}, {other_dtype}.")
    same = op(self._data, other._data)  # uint32[..., *key_shape], broadcast as the keys' shapes
    ndim = get_aval(same).ndim
    return combine(same, tuple(range(ndim - len(self._impl.key_shape), ndim)))

  def __bool__(self):
    raise TypeError("key array cannot be converted to boolean.")

  def __eq__(self, other):
    """Elementwise: whether each key equals the other's (both typed keys), as a bool array."""
    return self._compare(other, "equal", comparison.eq, reductions.reduce_and)

  def __ne__(self, other):
    return self._compare(other, "not_equal", comparison.ne, reductions.reduce_or)

  __hash__ = None  # as JAX's key arrays (and every Array): unhashable

  # --- the array functions JAX allows on key arrays (revax.numpy's and revax.lax's shape
  # functions, where, take, ...: those decorated with `tree_util.accepts_array_leaves`)
  @classmethod
  def apply_to_data(cls, fn, args, kwargs, operands):
    """`fn(*args, **kwargs)` on key arrays as on arrays of the keys' shape: applied to their
    data with the key-word axis mapped (vmap over the trailing axis), results wrapped as keys.
    The arguments at positions `operands` (items of a sequence there) must all be keys of one
    dtype (else ValueError, JAX's type-promotion error) and no other argument a key (else
    TypeError)."""
    name = getattr(fn, "__name__", "function")
    ops = []
    for i in operands:
      if i < len(args) and args[i] is not None:
        ops += list(args[i]) if isinstance(args[i], (list, tuple)) else [args[i]]
    leaves, treedef = tree_util.tree_flatten((args, kwargs), namespace=tree_util.USER_NAMESPACE)
    positions = [i for i, x in enumerate(leaves) if isinstance(x, PRNGKeyArray)]
    keys = [o for o in ops if isinstance(o, PRNGKeyArray)]
    if len({_dtype_name(o) for o in ops}) > 1:  # keys with other values, or other keys
      raise ValueError(f"dtype={keys[0].dtype if keys else ops[0]} is not a valid dtype for "
                       f"JAX type promotion.")
    if not keys or len(positions) != len(keys):
      shown = leaves[positions[0]].dtype
      raise TypeError(f"{name} does not accept a key array ({shown}) there: only as its array "
                      f"operand(s)")
    impl = keys[0]._impl

    def on_words(*data):
      filled = list(leaves)
      for i, d in zip(positions, data, strict=True):
        filled[i] = d
      fargs, fkwargs = tree_util.tree_unflatten(treedef, filled)
      return fn(*fargs, **fkwargs)

    out = vmap(on_words, in_axes=-1, out_axes=-1)(*(leaves[i]._data for i in positions))
    return tree_util.tree_map(lambda d: PRNGKeyArray(d, impl), out)

  @property
  def at(self) -> "_KeyIndexUpdate":
    """`keys.at[index].set(other_keys)` / `.get()`, as JAX's key arrays have."""
    return _KeyIndexUpdate(self)

  def array_equal(self, other):
    """Whether `other` is a key array of this dtype and shape holding the same keys (a 0-d
    bool array; False for anything else, as JAX's jnp.array_equal)."""
    if not isinstance(other, PRNGKeyArray) or other.dtype != self.dtype or \
        other.shape != self.shape:
      return conversion.convert_element_type(np.False_, np.dtype(bool))
    same = self == other
    return reductions.reduce_and(same, tuple(range(self.ndim)))

  def as_array(self, dtype=None, copy=None) -> "PRNGKeyArray":
    """What jnp.asarray / jnp.array / jnp.astype / lax.convert_element_type make of key
    arrays: the keys (copied if `copy`); any other dtype: ValueError, as JAX's."""
    if dtype is not None and dtype != self.dtype:
      if extended_dtypes.is_extended(dtype):  # another key type (JAX's message)
        raise ValueError(f"cannot directly convert between extended dtypes: from {self.dtype} "
                         f"to {dtype}. Instead, convert to and from their representation "
                         f"dtypes, e.g.:\n{self.dtype} -> uint32 -> uint32 -> {dtype}")
      raise ValueError(f"Cannot convert_element_type from {self.dtype} to "
                       f"{getattr(dtype, '__name__', dtype)}")
    return self.copy() if copy else self

  def astype(self, dtype):
    # (JAX's key arrays have the method but do not implement it: jnp.astype converts keys)
    raise NotImplementedError("Cannot call abstract method astype")

  def __array__(self, dtype=None, copy=None):
    raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
                    "revax.random.key_data(arr) if you wish to extract the underlying integer "
                    "array.")

  # arithmetic, ordering and the like: TypeError, as JAX's (they are not defined on keys); the
  # text is JAX's: its dtype rule's when every operand is a key (`accepted`: the categories it
  # lists), NumPy's when the operator first asks for a NumPy dtype ("Cannot interpret")
  def _no_arithmetic(name, accepted=None, numpy_first=False, mixed=None, reflected=False):
    def refuse(self, *others):
      if numpy_first is True or numpy_first == "keys" and all(
          isinstance(o, PRNGKeyArray) for o in others):
        raise TypeError(f"Cannot interpret '{self.dtype}' as a data type")
      if accepted is not None and all(isinstance(o, PRNGKeyArray) for o in others):
        if not others:
          raise TypeError(f"{name} does not accept dtype {self.dtype}. Accepted dtypes are "
                          f"subtypes of {accepted}.")
        raise TypeError(f"{name} does not accept dtype {self.dtype} at position 0. Accepted "
                        f"dtypes at position 0 are subtypes of {accepted}.")
      operands = (*others, self) if reflected else (self, *others)
      shown = ", ".join(_dtype_name(x) for x in operands)
      raise TypeError(f"{mixed or name} does not accept dtypes {shown}.")  # (jnp's name)
    return refuse

  _MIXED = {"sub": "subtract", "mul": "multiply", "lt": "less", "le": "less_equal",
            "gt": "greater", "ge": "greater_equal", "and": "bitwise_and",
            "or": "bitwise_or", "xor": "bitwise_xor"}
  _NUMBERS, _ORDERED, _LOGICAL = ("integer, floating, complexfloating", "integer, floating, bool",
                                  "integer, bool")
  for _op, _name, _accepted in (
      ("add", "add", _NUMBERS), ("radd", "add", _NUMBERS), ("sub", "sub", _NUMBERS),
      ("rsub", "sub", _NUMBERS), ("mul", "mul", _NUMBERS), ("rmul", "mul", _NUMBERS),
      ("matmul", "dot_general", None), ("lt", "lt", _ORDERED), ("le", "le", _ORDERED),
      ("gt", "gt", _ORDERED), ("ge", "ge", _ORDERED), ("neg", "neg", _NUMBERS),
      ("abs", "abs", "floating, complexfloating, signedinteger"),
      ("invert", "not", _LOGICAL), ("and", "and", _LOGICAL), ("or", "or", _LOGICAL),
      ("xor", "xor", _LOGICAL)):
    locals()[f"__{_op}__"] = _no_arithmetic(
        _name, _accepted, mixed=_MIXED.get(_name), reflected=_op in ("radd", "rsub", "rmul"))
  for _op, _name in (("truediv", "true_divide"), ("rtruediv", "true_divide"),
                     ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"),
                     ("lshift", "left_shift"), ("rshift", "right_shift")):
    locals()[f"__{_op}__"] = _no_arithmetic(_name, numpy_first=True if _op == "pow" else "keys",
                                            reflected=_op == "rtruediv")

  for _op, _name in (("rand", "bitwise_and"), ("ror", "bitwise_or"), ("rxor", "bitwise_xor"),
                     ("rfloordiv", "floor_divide"), ("rmod", "remainder"), ("rpow", "power"),
                     ("rlshift", "left_shift"), ("rrshift", "right_shift")):
    locals()[f"__{_op}__"] = _no_arithmetic(_name, reflected=True)  # (a non-key on the left)

  def __pos__(self):
    return self  # (as JAX's: unary plus of a key array is the key array)
  del _op, _name, _accepted, _no_arithmetic, _NUMBERS, _ORDERED, _LOGICAL, _MIXED


def _abstract(name: str, is_property: bool):
  def method(self, *args, **kwargs):
    raise NotImplementedError(f"Cannot call abstract method {name}")
  method.__name__ = name
  method.__doc__ = f"Not defined for keys: raises NotImplementedError, as JAX's key arrays do."
  return property(method) if is_property else method


# The Array methods JAX's key arrays leave abstract: calling one raises its NotImplementedError
for _name in ("all", "any", "argmax", "argmin", "argpartition", "argsort", "byteswap", "choose",
              "clip", "compress", "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot",
              "item", "max", "mean", "min", "nonzero", "prod", "ptp", "repeat", "round",
              "searchsorted", "sort", "std", "sum", "to_device", "trace", "var", "view"):
  if not hasattr(PRNGKeyArray, _name):
    setattr(PRNGKeyArray, _name, _abstract(_name, False))
for _name in ("flat", "imag", "mT", "real"):
  if not hasattr(PRNGKeyArray, _name):
    setattr(PRNGKeyArray, _name, _abstract(_name, True))

extended_dtypes.key_array_type = PRNGKeyArray  # (KeyTy.abstract_leaf makes these)


class _KeyIndexUpdate:
  """`keys.at`: `keys.at[index]` gives the updater of the keys at `index`."""
  __slots__ = ("_keys",)

  def __init__(self, keys):
    self._keys = keys

  def __getitem__(self, index):
    return _KeyIndexUpdater(self._keys, index)


class _KeyIndexUpdater:
  """`keys.at[index]`: `set(values)` (keys of the same dtype) and `get()`."""
  __slots__ = ("_keys", "_index")

  def __init__(self, keys, index):
    self._keys, self._index = keys, index

  def get(self, **kwargs) -> PRNGKeyArray:
    return self._keys[self._index]

  def set(self, values, **kwargs) -> PRNGKeyArray:
    if not isinstance(values, PRNGKeyArray) or values.dtype != self._keys.dtype:
      raise TypeError(f"Cannot set keys of dtype {self._keys.dtype} to values of dtype "
                      f"{_dtype_name(values)}")
    index = self._index

    def set_words(data, value_data):
      return data.at[index].set(value_data, **kwargs)
    set_words.__name__ = "scatter"
    return PRNGKeyArray.apply_to_data(set_words, (self._keys, values), {}, (0, 1))


def _dtype_name(x) -> str:
  if isinstance(x, PRNGKeyArray):
    return str(x.dtype)
  try:
    return get_aval(x).dtype.name
  except TypeError:
    return type(x).__name__


# a leaf to users (revax.tree_util, as JAX's key arrays), a node over its data to transformations
def _flatten_keys(k):
  """A key array's one child for transformations: its data, or while make_jaxpr traces
  (extended_dtypes.key_staging) its keys as a key-typed value."""
  if _key_staging.typed and isinstance(k._base, (Tracer, Array)):  # (not an axis spec's leaf)
    return (k._typed_value(),), k._impl
  return (k._data,), k._impl


tree_util.register_array_leaf(PRNGKeyArray, _flatten_keys,
                              lambda impl, children: PRNGKeyArray(children[0], impl))
basearray.Array.register(PRNGKeyArray)  # isinstance(key, revax.Array), as in JAX


def _check_key_data(data, impl: PRNGImpl):
  """TypeError unless `data` is key data of `impl`: uint32 ending in its key shape."""
  if isinstance(data, (bool, int, float, complex)) or not hasattr(data, "dtype"):
    raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data to have ndim, "
                    f"shape, and dtype attributes. Got {data!r}")
  aval = get_aval(data)
  ndim = len(impl.key_shape)
  if aval.ndim < ndim:
    raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.ndim >= {ndim}; got "
                    f"ndim={aval.ndim}")
  if aval.shape[aval.ndim - ndim:] != impl.key_shape:
    raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.shape to end with "
                    f"{impl.key_shape}; got shape={aval.shape} for impl={impl.name}")
  if aval.dtype != _U32:
    raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; got "
                    f"dtype={aval.dtype.name}")


def _key_parts(name: str, key, allow_batched: bool, data: bool = True):
  """(key data, implementation, typed?) of `key`; raw keys are of the default implementation.
  With `data=False` a typed key's data is not asked for (None: under a transformation, asking
  binds a random_unwrap)."""
  if isinstance(key, PRNGKeyArray):
    impl, typed = key._impl, True
    if not data:
      if not allow_batched and key.ndim:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{key.shape} != (). Use revax.vmap for batching.")
      return None, impl, typed
    data = key._data
  elif isinstance(key, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)):
    impl = default_prng_impl()
    _check_key_data(key, impl)
    data, typed = key, False
  else:
    raise TypeError(f"unexpected PRNG key type {type(key)}")
  if not allow_batched and get_aval(data).ndim > len(impl.key_shape):
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{np.shape(key) if not typed else key.shape} != (). Use revax.vmap for "
                     f"batching.")
  return data, impl, typed


def tracing() -> bool:
  """Whether a key function runs under a transformation (it then binds lax's key primitives;
  eagerly it calls its cached executable; a leaked tracer passed eagerly raises there)."""
  return _trace_context.trace is not eval_trace


def typed_keys(name: str, key, *, allow_batched: bool = False):
  """(key-typed value, typed?) of a raw or typed key under a transformation: a typed key array's
  keys, or a raw key's data wrapped by random_wrap (as JAX's functions of raw keys do)."""
  _, impl, typed = _key_parts(name, key, allow_batched, data=False)
  if typed:
    return key._typed_value(), True
  return prng_keys.random_wrap(key, impl=impl), False


def return_typed(typed: bool, keys):
  """Key-typed `keys` in the caller's representation: a key array, or (raw) their data."""
  if typed:
    return PRNGKeyArray(keys, keys.aval.dtype._impl)
  return prng_keys.random_unwrap(keys)


def check_prng_key(name: str, key, *, allow_batched: bool = False):
  """The key data of `key` (raw or typed) and whether it was typed: threefry2x32 data bare
  (uint32[..., 2]), other implementations' as `prng.KeyBits` (data and implementation), which
  the key-data helpers of revax.lax's prng module dispatch on.

  Raises TypeError for anything that is not a key and ValueError for a batch of keys where one
  key is expected (unless `allow_batched`)."""
  data, impl, typed = _key_parts(name, key, allow_batched)
  return (data if impl is threefry_prng_impl else prng.KeyBits(data, impl)), typed


def return_keys(typed: bool, keys):
  """Key data (bare threefry2x32 data or `KeyBits`) in the caller's representation."""
  data, impl = (keys.data, keys.impl) if isinstance(keys, prng.KeyBits) else \
      (keys, threefry_prng_impl)
  return PRNGKeyArray(data, impl) if typed else data


_physical_fns: dict = {}  # (fn, impl, params) -> fn jitted at them


def _run_physical(fn, impl, params, *datas):
  """A key primitive's computation on key data, jitted: what its eager bind runs (under an
  eager vmap, for instance). One jitted function per (computation, implementation, params),
  so that a call passes only arrays (the jit's fast call path)."""
  jitted = _physical_fns.get((fn, impl, params))
  if jitted is None:
    jitted = _physical_fns[(fn, impl, params)] = jit(
        functools.partial(fn, impl=impl, **dict(params)))
  return jitted(*datas)


prng_keys.run_physical[0] = _run_physical


# --- seeds ---------------------------------------------------------------------------------------
def python_int_seed(seed):
  """A Python int seed as JAX takes it: int64 (OverflowError outside it), its low 32 bits when
  x64 is off; any other seed as it is."""
  if isinstance(seed, int) and not isinstance(seed, bool):
    seed = np.int64(seed)
    if not config.x64_enabled:
      seed = seed.astype(np.int32)
  return seed


def _seed_operand(ctor_name: str, seed):
  if isinstance(seed, PRNGKeyArray):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
  seed = python_int_seed(seed)
  try:
    aval = get_aval(seed)
  except TypeError:
    raise TypeError(f"{ctor_name} seed must be an integer scalar, got {seed!r}") from None
  if aval.shape:
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                    f"{aval.shape} != (). Use revax.vmap for batching")
  return seed, aval


def _check_integer_seed(seed) -> None:
  """A seed is an integer (or a bool). Checked on the traced seed, as JAX checks it inside its
  jitted seeding: the message shows the seed's type (`JitTracer(~float32[])` for 1.5)."""
  dtype = get_aval(seed).dtype
  if not (dtypes.is_integer(dtype) or dtypes.is_bool(dtype)):
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")


def _key_data_from_seed(ctor_name: str, seed, impl: PRNGImpl):
  seed, _ = _seed_operand(ctor_name, seed)
  if tracing():
    _check_integer_seed(seed)
    return prng_keys.random_seed(seed, impl=impl)  # (keys: the caller wraps or unwraps them)
  return _seed(seed, impl)


@functools.partial(jit, static_argnums=1)
def _seed(seed, impl):
  _check_integer_seed(seed)
  return impl.seed(seed)


def PRNGKey(seed, *, impl=None):
  """A raw key: a uint32 array of the implementation's key shape (JAX's legacy keys), from an
  integer seed.

  Args:
    seed: a 64- or 32-bit integer (a Python int keeps its low 32 bits unless x64 is enabled).
    impl: optional implementation ("threefry2x32", "rbg", "unsafe_rbg", a PRNGSpec or a key
      dtype); default: config jax_default_prng_impl. Raw keys carry no implementation: pass
      them to functions with that implementation as the default.

  Returns:
    The key, a uint32 array of shape (2,) (threefry2x32) or (4,) (rbg, unsafe_rbg).

  Example:
    >>> revax.random.PRNGKey(42)
    Array([ 0, 42], dtype=uint32)
    >>> revax.random.PRNGKey(42, impl="rbg")
    Array([ 0, 42,  0, 42], dtype=uint32)
  """
  impl = resolve_prng_impl(impl)
  seed, _ = _seed_operand("PRNGKey", seed)
  if tracing():
    _check_integer_seed(seed)
    return prng_keys.random_unwrap(prng_keys.random_seed(seed, impl=impl))
  return _seed(seed, impl)


def key(seed, *, impl=None, dtype=None):
  """A typed key (shape (), dtype key<fry>, key<rbg> or key<urbg>) from an integer seed.

  Args:
    seed: a 64- or 32-bit integer.
    impl: optional implementation ("threefry2x32", "rbg", "unsafe_rbg", a PRNGSpec or a key
      dtype); default: config jax_default_prng_impl.
    dtype: optional key dtype (the dtype of a typed key) or name, instead of `impl`.

  Returns:
    A `PRNGKeyArray` of shape ().

  Example:
    >>> k = revax.random.key(0)
    >>> k.shape, k.dtype
    ((), key<fry>)
    >>> revax.random.key_data(k)  # the raw threefry key
    Array([0, 0], dtype=uint32)
  """
  if dtype is not None:
    if impl is not None:
      raise ValueError("Cannot specify both `impl` and `dtype` arguments to revax.random.key")
    impl = dtype
  impl = resolve_prng_impl(impl)
  if isinstance(seed, PRNGKeyArray):
    raise TypeError("key accepts a scalar seed, but was given a PRNG key.")
  if np.ndim(seed):
    raise TypeError(f"key accepts a scalar seed, but was given an array of shape "
                    f"{np.shape(seed)} != (). Use revax.vmap for batching")
  return PRNGKeyArray(_key_data_from_seed("key", seed, impl), impl)


def key_data(keys):
  """The uint32 data underlying PRNG keys (raw keys are returned as they are).

  Args:
    keys: typed or raw keys, of any batch shape.

  Returns:
    A uint32 array of shape keys.shape + key shape (typed) or keys.shape (raw).
  """
  data, _, _ = _key_parts("key_data", keys, True)
  return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
  """Typed keys backed by uint32 key data `key_bits_array` (trailing dims: the key shape).

  Args:
    key_bits_array: uint32 array of shape (..., *key_shape).
    impl: optional implementation (default: config jax_default_prng_impl).
    dtype: optional key dtype, instead of `impl`.

  Returns:
    A `PRNGKeyArray` of shape key_bits_array.shape[:-len(key_shape)].

  Example:
    >>> k = revax.random.wrap_key_data(jnp.array([1, 2, 3, 4], jnp.uint32), impl="rbg")
    >>> k.dtype
    key<rbg>
  """
  if dtype is not None:
    if impl is not None:
      raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                       "revax.random.wrap_key_data")
    impl = dtype
  impl = resolve_prng_impl(impl)
  if isinstance(key_bits_array, PRNGKeyArray):
    raise TypeError("wrap_key_data expects uint32 key data, but was given typed keys")
  _check_key_data(key_bits_array, impl)
  if tracing():
    return PRNGKeyArray(prng_keys.random_wrap(key_bits_array, impl=impl), impl)
  return PRNGKeyArray(key_bits_array, impl)


def key_impl(keys) -> str:
  """The name of the PRNG implementation of `keys` (raw keys: the default implementation's).

  Args:
    keys: typed or raw keys.

  Returns:
    The implementation's name, e.g. "threefry2x32" or "rbg" (as JAX, whose registered
    implementations are named by string).

  Example:
    >>> revax.random.key_impl(revax.random.key(0, impl="unsafe_rbg"))
    'unsafe_rbg'
  """
  _, impl, _ = _key_parts("key_impl", keys, True, data=False)
  return impl.name


def key_dtype(impl_spec=None) -> KeyTy:
  """The dtype of typed keys of an implementation (default: config jax_default_prng_impl).

  Example:
    >>> revax.random.key_dtype("unsafe_rbg")
    key<urbg>
  """
  return KeyTy(resolve_prng_impl(impl_spec))


# --- split and fold_in ---------------------------------------------------------------------------
def canonicalize_shape(shape, name: str) -> tuple[int, ...]:
  """`shape` (an int or a sequence of ints) as a tuple of non-negative ints."""
  if not isinstance(shape, Sequence):
    shape = (shape,)
  try:
    shape = tuple(canonical_dim(d) for d in shape)  # ints, or symbolic sizes
  except TypeError:
    raise TypeError(f"{name}: shapes must be sequences of concrete integers, got "
                    f"{shape!r}") from None
  if any(d < 0 for d in shape):
    raise ValueError(f"{name}: shape {shape} has a negative dimension")
  return shape


def split(key, num=2):
  """Split a PRNG key into `num` new keys (a new leading axis, or axes for a tuple).

  Args:
    key: a single PRNG key (raw or typed).
    num: a non-negative int, or a tuple of them: the shape of the keys to make. Default 2.

  Returns:
    Keys of shape `num` (raw: uint32[*num, 2]; typed: a PRNGKeyArray of shape num).

  Example:
    >>> k1, k2 = revax.random.split(revax.random.PRNGKey(0))
    >>> k1, k2
    (Array([1797259609, 2579123966], dtype=uint32), Array([ 928981903, 3453687069], dtype=uint32))
  """
  shape = canonicalize_shape(num, "split")
  if tracing():
    keys, typed = typed_keys("split", key)
    return return_typed(typed, prng_keys.random_split(keys, shape))
  data, typed = check_prng_key("split", key)
  return return_keys(typed, _split(data, shape))


@functools.partial(jit, static_argnums=1)
def _split(data, shape):
  return prng.split_keys(data, shape)


def fold_in(key, data):
  """A new key that deterministically combines `key` with 32-bit integer `data`.

  Args:
    key: a single PRNG key (raw or typed).
    data: an integer scalar (Python ints must lie in [0, 2**32)).

  Returns:
    A key in the representation of `key`.

  Example:
    >>> k = revax.random.fold_in(revax.random.PRNGKey(0), 7)
    >>> k
    Array([2716826189,  292468403], dtype=uint32)
  """
  traced = tracing()
  if traced:  # (the key is checked first, as check_prng_key does eagerly)
    keys, typed = typed_keys("fold_in", key)
  else:
    key_bits, typed = check_prng_key("fold_in", key)
  if np.ndim(data):
    raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                    f"{np.shape(data)} != (). Use revax.vmap for batching.")
  if isinstance(data, int) and not isinstance(data, bool) and not 0 <= data < 2 ** 32:
    raise OverflowError(f"Python integer {data} out of bounds for uint32")
  if isinstance(data, (bool, int, float)):
    data = np.asarray(data).astype(_U32)
  else:
    data = conversion.convert_element_type(data, _U32)
  if traced:
    return return_typed(typed, prng_keys.random_fold_in(keys, data))
  return return_keys(typed, _fold_in(key_bits, data))


@jit
def _fold_in(data, message):
  return prng.fold_in_keys(data, message)
