"""jax.extend.random on revax's PRNG: a library defines its own PRNG implementation
(`define_prng_impl`, whose result `revax.random.key(seed, impl=...)` takes) and seeds keys of
any implementation (`seed_with_impl`); `threefry_2x32` is JAX's hash of a counts array under a
key pair, on revax's threefry2x32 primitive.
"""
from __future__ import annotations

import numpy as np

from revax._src.core.avals import get_aval
from revax._src.lax import prng_keys, shapes, slicing
from revax._src.lax.prng import threefry2x32
from revax._src.random.keys import PRNGKeyArray, python_int_seed
from revax._src.random.prng_impls import PRNGImpl, PRNGSpec

_U32 = np.dtype(np.uint32)


def define_prng_impl(*, key_shape, seed, split, random_bits, fold_in, name: str = "<unnamed>",
                     tag: str = "?") -> PRNGSpec:
  """A PRNG implementation from its key shape and key functions, as a spec that
  `revax.random.key(..., impl=spec)` and `seed_with_impl` take (it is not registered by name).

  Args:
    key_shape: the shape of one key's uint32 data.
    seed: integer scalar -> one key's data.
    split: (key data, shape) -> key data of that shape of new keys.
    random_bits: (key data, bit width, shape) -> unsigned bits of that shape.
    fold_in: (key data, uint32 scalar) -> key data.
    name, tag: how the implementation and its key dtype (`key<tag>`) print.

  Example:
    >>> from revax.extend.random import define_prng_impl, threefry_prng_impl as t
    >>> spec = define_prng_impl(key_shape=(2,), seed=t.seed, split=t.split,
    ...                         random_bits=t.random_bits, fold_in=t.fold_in, tag="mine")
    >>> revax.random.key(0, impl=spec).dtype
    key<mine>
  """
  return PRNGSpec(PRNGImpl(key_shape, seed, split, random_bits, fold_in, name=name, tag=tag))


def random_seed(seeds, impl: PRNGImpl) -> PRNGKeyArray:
  """Keys of `impl`, one per element of the integer array `seeds` (a Python int is taken as
  int64, keeping its low 32 bits when x64 is off, as JAX)."""
  keys = prng_keys.random_seed(python_int_seed(seeds), impl=impl)
  return keys if isinstance(keys, PRNGKeyArray) else PRNGKeyArray(keys, impl)


def seed_with_impl(impl: PRNGImpl, seed) -> PRNGKeyArray:
  """A key of implementation `impl` seeded by `seed` (JAX's prng.seed_with_impl).

  Example:
    >>> from revax.extend.random import seed_with_impl, rbg_prng_impl
    >>> revax.random.key_data(seed_with_impl(rbg_prng_impl, 7))
    Array([0, 7, 0, 7], dtype=uint32)
  """
  return random_seed(seed, impl=impl)


def threefry_2x32(keypair, count):
  """The Threefry-2x32 hash of `count` under the key `(key1, key2)` (JAX's threefry_2x32):
  the flattened counts, padded to even length, hashed as two halves.

  Args:
    keypair: a pair of uint32 scalars.
    count: a uint32 array.

  Returns:
    A uint32 array of `count`'s shape.

  Example:
    >>> from revax.extend.random import threefry_2x32
    >>> threefry_2x32((np.uint32(0), np.uint32(42)), np.arange(4, dtype=np.uint32)).shape
    (4,)
  """
  key1, key2 = keypair
  got = [get_aval(x).dtype for x in (key1, key2, count)]
  if any(d != _U32 for d in got):
    raise TypeError(f"threefry_2x32 requires uint32 arguments, got {got}")
  shape = get_aval(count).shape
  size = int(np.prod(shape, dtype=np.int64))
  flat = shapes.reshape(count, (size,))
  if size % 2:
    flat = shapes.concatenate([flat, np.zeros((1,), _U32)], 0)
  half = (size + 1) // 2
  x1 = slicing.slice(flat, (0,), (half,))
  x2 = slicing.slice(flat, (half,), (2 * half,))
  y1, y2 = threefry2x32(key1, key2, x1, x2)
  out = shapes.concatenate([y1, y2], 0)
  if size % 2:
    out = slicing.slice(out, (0,), (size,))
  return shapes.reshape(out, shape)

