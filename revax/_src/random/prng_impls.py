"""PRNG implementations: threefry2x32 (the default), rbg and unsafe_rbg, as JAX 0.10.2 defines
them, and the key dtypes (`key<fry>`, `key<rbg>`, `key<urbg>`) and `PRNGSpec`s that name them.

An implementation is a key shape (the uint32 words of one key) and four functions over key
data: `seed` (an integer scalar to one key), `split` (keys to keys of a new trailing shape),
`fold_in` (keys and a uint32 scalar to keys) and `random_bits` (keys to unsigned bits). Each
takes a batch of keys (leading dims) and treats it as `vmap` of the one-key function would,
which is how JAX applies them; for rbg's random bits that matters: XLA's RngBitGenerator under
vmap draws the whole batch's bits from the first key.

- threefry2x32: two words; the threefry hash of counters (revax.lax's prng module). Its key
  data travels bare through the samplers (uint32[..., 2]).
- rbg: four words, two threefry keys side by side. Seeding writes the threefry key twice,
  splitting and folding in act on each half as threefry does; random bits come from
  `lax.rng_bit_generator` with XLA's default algorithm (Philox on CPU).
- unsafe_rbg: rbg's seed and random bits; splitting takes every tenth row of a draw of
  (10 * n, 4) words, folding in XORs the key with the last row of a draw of (10, 4) words from
  the rbg key seeded by the data.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from revax._src.core import extended_dtypes
from revax._src.core.avals import get_aval
from revax._src.jit import jit
from revax._src.lax import binary, conversion, prng, rng, shapes, slicing
from revax._src.vmap import vmap

_U32 = np.dtype(np.uint32)
_UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32,
                64: np.dtype(np.uint64)}


class PRNGImpl:
  """A PRNG implementation: its key shape, name, dtype tag and key functions (see the module
  docstring). Compared and hashed by name."""
  __slots__ = ("key_shape", "seed", "split", "fold_in", "random_bits", "name", "tag")

  def __init__(self, key_shape, seed, split, random_bits, fold_in, name, tag):
    self.key_shape, self.name, self.tag = tuple(key_shape), name, tag
    self.seed, self.split, self.random_bits, self.fold_in = seed, split, random_bits, fold_in

  def __eq__(self, other):
    return isinstance(other, PRNGImpl) and other.name == self.name

  def __hash__(self):
    return hash(("PRNGImpl", self.name))

  def __repr__(self):
    return f"PRNGImpl({self.name!r})"

  def __str__(self):
    return self.tag


KeyTy = extended_dtypes.KeyTy  # (the dtype lives in core: lax's key primitives type with it)


class PRNGSpec:
  """Names a PRNG implementation; `revax.random.key`'s `impl` takes one (as JAX's).

  Example:
    >>> from revax._src.random.prng_impls import PRNGSpec, rbg_prng_impl
    >>> revax.random.key(0, impl=PRNGSpec(rbg_prng_impl)).dtype
    key<rbg>
  """
  __slots__ = ("_impl",)

  def __init__(self, impl: PRNGImpl):
    self._impl = impl

  def __repr__(self):
    return f"PRNGSpec({self._impl.name!r})"

  def __str__(self):
    return str(self._impl)

  def __hash__(self):
    return hash(self._impl)

  def __eq__(self, other):
    return isinstance(other, PRNGSpec) and self._impl == other._impl


prngs: dict[str, PRNGImpl] = {}


def register_prng(impl: PRNGImpl) -> None:
  """Add `impl` to the implementations keys can name (ValueError if its name is taken)."""
  if impl.name in prngs:
    raise ValueError(f"PRNG with name {impl.name} already registered: {impl}")
  prngs[impl.name] = impl
  extended_dtypes.prng_impls_by_name[impl.name] = impl


def _vmapped(fn, batch_ndim: int):
  """`fn` mapped over `batch_ndim` leading axes of its first argument (one vmap per axis)."""
  for _ in range(batch_ndim):
    fn = vmap(fn)
  return fn


def _batch_ndim(data, impl_key_ndim: int) -> int:
  return get_aval(data).ndim - impl_key_ndim


# --- threefry2x32 --------------------------------------------------------------------------------
@jit
def threefry_seed(seed):
  """threefry2x32 key data of an integer scalar seed: (high word, low word) of a 64-bit seed,
  (0, seed) of a narrower one (sign-extended, as JAX)."""
  dtype = get_aval(seed).dtype
  low = conversion.convert_element_type(seed, _U32)
  if dtype.itemsize == 8:
    high = conversion.convert_element_type(
        binary.shift_right_logical(seed, np.asarray(32, dtype)), _U32)
  else:
    high = np.zeros((), _U32)
  return shapes.concatenate([shapes.reshape(high, (1,)), shapes.reshape(low, (1,))], 0)


threefry_prng_impl = PRNGImpl(
    key_shape=(2,), seed=threefry_seed, split=prng.split_keys, random_bits=prng.random_bits,
    fold_in=prng.fold_in_keys, name="threefry2x32", tag="fry")


# --- rbg -----------------------------------------------------------------------------------------
def _rbg_seed(seed):
  half = threefry_seed(seed)
  return shapes.concatenate([half, half], 0)


def _halves(data):
  """uint32[*batch, 4] as two threefry keys: uint32[*batch, 2, 2]."""
  shape = get_aval(data).shape
  return shapes.reshape(data, shape[:-1] + (2, 2))


def _rbg_split(data, shape):
  """Each half split as a threefry key; new key i is (half 0's key i, half 1's key i)."""
  batch = get_aval(data).shape[:-1]
  split = prng.split_keys(_halves(data), shape)  # (*batch, 2, *shape, 2)
  nb, ns = len(batch), len(shape)
  perm = tuple(range(nb)) + tuple(range(nb + 1, nb + 1 + ns)) + (nb, nb + 1 + ns)
  return shapes.reshape(shapes.transpose(split, perm), batch + tuple(shape) + (4,))


def _rbg_fold_in(data, message):
  batch = get_aval(data).shape[:-1]
  return shapes.reshape(prng.fold_in_keys(_halves(data), message), batch + (4,))


def _one_key_bits(key, bit_width, shape):
  _, bits = rng.rng_bit_generator(key, shape, dtype=_UINT_DTYPES[bit_width])
  return bits


def _rbg_random_bits(data, bit_width: int, shape):
  if bit_width not in (8, 16, 32, 64):
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  fn = functools.partial(_one_key_bits, bit_width=bit_width, shape=tuple(shape))
  return _vmapped(fn, _batch_ndim(data, 1))(data)


rbg_prng_impl = PRNGImpl(key_shape=(4,), seed=_rbg_seed, split=_rbg_split,
                         random_bits=_rbg_random_bits, fold_in=_rbg_fold_in, name="rbg",
                         tag="rbg")


# --- unsafe_rbg ----------------------------------------------------------------------------------
def _unsafe_split_one(key, shape):
  num = math.prod(shape)
  _, keys = rng.rng_bit_generator(key, (10 * num, 4), dtype=_U32)
  every_tenth = slicing.slice(keys, (0, 0), (10 * num, 4), (10, 1))
  return shapes.reshape(every_tenth, tuple(shape) + (4,))


def _unsafe_rbg_split(data, shape):
  fn = functools.partial(_unsafe_split_one, shape=tuple(shape))
  return _vmapped(fn, _batch_ndim(data, 1))(data)


def _unsafe_rbg_fold_in(data, message):
  _, bits = rng.rng_bit_generator(_rbg_seed(message), (10, 4), dtype=_U32)
  last = shapes.reshape(slicing.slice(bits, (9, 0), (10, 4)), (4,))
  return binary.bitwise_xor(data, last)  # (broadcast over a batch of keys)


unsafe_rbg_prng_impl = PRNGImpl(key_shape=(4,), seed=_rbg_seed, split=_unsafe_rbg_split,
                                random_bits=_rbg_random_bits, fold_in=_unsafe_rbg_fold_in,
                                name="unsafe_rbg", tag="urbg")

for _impl in (threefry_prng_impl, rbg_prng_impl, unsafe_rbg_prng_impl):
  register_prng(_impl)
