"""XLA's own random-number ops: rng_bit_generator (stateless, keyed) and rng_uniform (stateful).

`rng_bit_generator(key, shape, dtype, algorithm)` takes a u32[4] key (XLA's u64[2] state seen
as four 32-bit words) and returns `(new_key, bits)` from `stablehlo.rng_bit_generator` with the
chosen algorithm (`RandomAlgorithm`: the platform default, Threefry or Philox). u8/u16 bits are
drawn as u32 and truncated, as JAX does. Under vmap with a batched key, JAX's rule is kept: the
first key draws the bits of the whole batch and only it advances (so the bits equal JAX's).

`rng_uniform(a, b, shape)` draws uniformly from [a, b) with `stablehlo.rng` (XLA's stateful
generator: each run gives new numbers). Neither is differentiable (rng_bit_generator's outputs
are integers; rng_uniform raises NotImplementedError on non-zero tangents, as JAX does). A
batched `a`/`b` (JAX has no rule) draws each example's numbers in a loop.
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, convenience, shapes, slicing

__all__ = ["RandomAlgorithm", "rng_bit_generator", "rng_bit_generator_p", "rng_uniform",
           "rng_uniform_p"]


def _shape(shape, name):
  try:
    shape = tuple(operator.index(d) for d in shape)
  except TypeError:
    raise TypeError(f"{name}: shape must be a sequence of integers, got {shape!r}") from None
  if any(d < 0 for d in shape):
    raise ValueError(f"{name}: shape must have non-negative dimensions, got {shape}")
  return shape


# --- rng_bit_generator ---------------------------------------------------------------------------
class RandomAlgorithm(enum.IntEnum):
  """The algorithm of rng_bit_generator."""

  RNG_DEFAULT = 0
  "The platform's default algorithm."

  RNG_THREE_FRY = 1
  "Threefry-2x32."

  RNG_PHILOX = 2
  "Philox-4x32."

  def __str__(self):
    return self.name


_ALGORITHM_ATTR = {RandomAlgorithm.RNG_DEFAULT: "DEFAULT",
                   RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
                   RandomAlgorithm.RNG_PHILOX: "PHILOX"}
_BIT_DTYPES = tuple(np.dtype(d) for d in (np.uint8, np.uint16, np.uint32, np.uint64))


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
  """Random bits from XLA's RngBitGenerator; as jax.lax.rng_bit_generator.

  Args:
    key: a uint32[4] key (the generator's state).
    shape: the shape of the bits.
    dtype: uint8, uint16, uint32 or uint64 (uint32 without x64).
    algorithm: a `RandomAlgorithm`.
    out_sharding: where to place the bits (a sharding; None: as XLA chooses).

  Returns:
    `(new_key, bits)`.

  Example:
    >>> key = jnp.array([1, 2, 3, 4], jnp.uint32)
    >>> key, bits = lax.rng_bit_generator(key, (2, 3), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
    >>> bits
    Array([[1576285164,  740599976, 2436392515],
           [2249660814, 2425682526, 1497962777]], dtype=uint32)
    >>> key  # the next state
    Array([1, 2, 6, 4], dtype=uint32)
  """
  shape = _shape(shape, "rng_bit_generator")
  requested = np.dtype(dtype)
  if requested not in _BIT_DTYPES:
    raise TypeError(f"rng_bit_generator: unsupported dtype {requested.name}")
  dtype = dtypes.canonicalize_dtype(requested)
  algorithm = RandomAlgorithm(algorithm)
  new_key, bits = rng_bit_generator_p.bind(key, shape=shape, dtype=dtype, algorithm=algorithm,
                                           out_sharding=None)
  from revax._src.lax.sharding_constraint import placed  # beside lax, imported on use
  return new_key, placed(bits, out_sharding)


def _rbg_abstract_eval(key, *, shape, dtype, algorithm, out_sharding):
  if key.shape != (4,) or key.dtype != np.uint32:
    raise TypeError(f"rng_bit_generator takes a uint32[4] key, got {key.str_short()}")
  return [key, ShapedArray(shape, dtype)]


def _rbg_batch(axis_size, vals, dims, *, shape, **params):
  """JAX's rule: the batch's first key draws every example's bits; only it advances."""
  (keys,), (d,) = vals, dims
  keys = batch_util.moveaxis(keys, d, 0)
  first = convenience.index_in_dim(keys, 0, 0, keepdims=False)
  new_key, bits = rng_bit_generator_p.bind(first, shape=(axis_size,) + shape, **params)
  new_keys = slicing.dynamic_update_slice(keys, shapes.reshape(new_key, (1, 4)), (0, 0))
  return [new_keys, bits], [0, 0]


def _rbg_lower(ctx, key, *, shape, dtype, algorithm, out_sharding):
  u64_key = ShapedArray((2,), np.uint64)
  drawn = np.dtype(dtype) if np.dtype(dtype) in (np.uint32, np.uint64) else np.dtype(np.uint32)
  pairs = ctx.op1("stablehlo.reshape", [key], ShapedArray((2, 2), np.uint32))
  state = ctx.op1("stablehlo.bitcast_convert", [pairs], u64_key)
  new_state, bits = ctx.op(
      "stablehlo.rng_bit_generator", [state], [u64_key, ShapedArray(shape, drawn)],
      props={"rng_algorithm": f"#stablehlo<rng_algorithm {_ALGORITHM_ATTR[algorithm]}>"})
  words = ctx.op1("stablehlo.bitcast_convert", [new_state], ShapedArray((2, 2), np.uint32))
  new_key = ctx.op1("stablehlo.reshape", [words], ShapedArray((4,), np.uint32))
  if drawn != dtype:
    bits = ctx.op1("stablehlo.convert", [bits], ShapedArray(shape, dtype))
  return [new_key, bits]


rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True)
rng_bit_generator_p.def_abstract_eval(_rbg_abstract_eval)
ad.zero_output_jvp(rng_bit_generator_p, "integer outputs (a key and random bits)")
batching.axis_size_batchers[rng_bit_generator_p] = _rbg_batch
mlir.register_lowering(rng_bit_generator_p, _rbg_lower)
inv.not_invertible(rng_bit_generator_p, "its key is not recoverable from the bits")


# --- rng_uniform ---------------------------------------------------------------------------------
def rng_uniform(a, b, shape):
  """Uniform random numbers in [a, b) from XLA's stateful generator; as jax.lax.rng_uniform.

  Each run draws new numbers (there is no key); prefer revax.random.

  Args:
    a, b: scalars of one dtype (floating or integer), the range [a, b).
    shape: the shape of the result.

  Returns:
    An array of `shape` and the dtype of `a`.

  Example:
    >>> u = lax.rng_uniform(0., 1., (3,))  # XLA's stateful generator: new values each call
    >>> u.shape, bool(((u >= 0) & (u < 1)).all())
    ((3,), True)
  """
  return rng_uniform_p.bind(a, b, shape=_shape(shape, "rng_uniform"))


def _rng_uniform_abstract_eval(a, b, *, shape):
  if a.dtype != b.dtype:
    raise ValueError(f"Arguments to rng_uniform must have identical dtypes, got {a.dtype} and "
                     f"{b.dtype}.")
  if a.shape != () or b.shape != ():
    raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and "
                     f"{b.shape}.")
  if not (dtypes.is_float(a.dtype) or dtypes.is_integer(a.dtype)) or a.dtype == np.float16 or \
      a.dtype == dtypes.bfloat16:
    raise TypeError(f"rng_uniform takes float32/float64 or integer bounds, got {a.dtype.name}")
  return ShapedArray(shape, a.dtype, a.weak_type and b.weak_type)


def _rng_uniform_jvp(primals, tangents, *, shape):
  if any(type(t) is not ad.Zero for t in tangents):
    raise NotImplementedError("Differentiation rule for 'rng_uniform' not implemented (a draw "
                              "of XLA's stateful generator)")
  out = rng_uniform_p.bind(*primals, shape=shape)
  return out, ad.Zero(ad.tangent_aval(get_aval(out)))


def _rng_uniform_batch(axis_size, vals, dims, *, shape):
  """Each example's bounds draw their own numbers, one example at a time (a scan)."""
  from revax._src.lax.control_flow import loops
  a, b = (batch_util.bdim_at(x, d, 0, axis_size) for x, d in zip(vals, dims, strict=True))
  return loops.map(lambda ab: rng_uniform_p.bind(ab[0], ab[1], shape=shape), (a, b)), 0


def _rng_uniform_lower(ctx, a, b, *, shape):
  extents = ctx.constant(np.asarray(shape, np.int64), ShapedArray((len(shape),), np.int64))
  return ctx.op1("stablehlo.rng", [a, b, extents],
                 props={"rng_distribution": "#stablehlo<rng_distribution UNIFORM>"})


rng_uniform_p = Primitive("rng_uniform")
rng_uniform_p.def_abstract_eval(_rng_uniform_abstract_eval)
ad.primitive_jvps[rng_uniform_p] = _rng_uniform_jvp
batching.axis_size_batchers[rng_uniform_p] = _rng_uniform_batch
mlir.register_lowering(rng_uniform_p, _rng_uniform_lower)
inv.not_invertible(rng_uniform_p, "a random draw")
