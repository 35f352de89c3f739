"""The primitives of revax.random: the threefry2x32 hash, the gamma sampler and the implicit
derivative of gamma samples, plus the key-data helpers the samplers share.

A key is its raw data, a `uint32[..., 2]` array (JAX's threefry2x32 key data; leading dims are a
batch of keys). Every random value comes from `threefry2x32_p`, a counter-based hash: it maps a
key (k1, k2) and a counter pair (x1, x2) to two uint32 words by 20 rounds of add-rotate-xor. As
JAX does by default (`jax_threefry_partitionable`), the counters of an array of draws are the
row-major index of each element as a 64-bit number split into (high, low) words: splitting a key
into `shape` keys hashes those counters and pairs the two output words into keys, and random bits
are the two words XORed (32 bits) or concatenated (64 bits). `split_keys`, `fold_in_keys`,
`random_bits`, `uniform_floats` and `normal_floats` build draws from key data this way; the
samplers of revax.random and the gamma sampler below use them, so both make the same draws.

`random_gamma_p(key, a, log_space)` draws one standard-gamma sample per element of `a` with the
Marsaglia-Tsang rejection sampler (for a < 1 it samples Gamma(a + 1) and multiplies by
U^(1/a), in log space when `log_space`). `key` holds a batch of keys matching the leading dims of
`a`; each key is split into one key per element of the remaining dims. Each element runs its own
rejection loop, so the samples do not depend on how the elements are batched: eagerly the loop
runs in NumPy over the elements still rejecting (always, even for inputs in device buffers:
compiling the loop for one eager call would take seconds), under jit it is a `while` loop over
the whole array that selects per element whether its state advances (what JAX's vmapped sampler
does). Its JVP reuses the sample (`defjvp_from_output`): by implicit reparameterization,
d sample / d a = -(dF/da) / (dF/dx) for the gamma CDF F, which `random_gamma_grad_p` computes
with the series and continued fraction JAX uses (the tangent of the sample given its quantile,
not the derivative of the rejection sampler's output for a fixed key, which is why finite
differences cannot check it).

Two float32 helpers reproduce how jaxlib's XLA evaluates the functions the samplers use, so that
jitted samples equal JAX's bit for bit: `sampler_log1p` (the rational approximation below
sqrt(2) - 1, log(1 + x) above: the XLA in revax's PJRT plugin evaluates the large-argument
branch differently) and `sampler_erf_inv` (XLA's float32 erf_inv polynomial on that log1p).
"""
from __future__ import annotations

import math

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.shape_poly import is_symbolic_dim
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import (batch_util, binary, comparison, prng_keys, reductions, shapes,
                            slicing, unary)
from revax._src.lax.control_flow.loops import while_loop
from revax._src.lax.conversion import bitcast_convert_type, convert_element_type
from revax._src.lax.standard import (broadcast_shapes, defbroadcasting, hlo_lowering,
                                     naryop_abstract_eval)

__all__ = ["random_gamma_grad"]

_U32 = np.dtype(np.uint32)
_UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32,
                64: np.dtype(np.uint64)}


# --- threefry2x32 --------------------------------------------------------------------------------
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = np.uint32(0x1BD11BDA)


def threefry2x32(k1, k2, x1, x2):
  """The Threefry-2x32 hash (20 rounds) of counters (x1, x2) under key (k1, k2).

  Args:
    k1, k2, x1, x2: uint32 arrays whose shapes broadcast together.

  Returns:
    [y1, y2]: two uint32 arrays of the broadcast shape.

  Example:
    >>> from revax._src.lax.prng import threefry2x32
    >>> y1, y2 = threefry2x32(*[np.uint32(0)] * 4)  # Random123's known answer
    >>> hex(int(y1)), hex(int(y2))
    ('0x6b200159', '0x99ba4efe')
  """
  return threefry2x32_p.bind(k1, k2, x1, x2)


def _threefry_rounds(add, xor, rotate_left, k1, k2, x1, x2):
  """Threefry-2x32 over any array namespace: `add` wraps modulo 2**32."""
  ks = (k1, k2, xor(xor(k1, k2), _KEY_PARITY))
  x = [add(x1, ks[0]), add(x2, ks[1])]
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      x[0] = add(x[0], x[1])
      x[1] = xor(x[0], rotate_left(x[1], r))
    x[0] = add(x[0], ks[(i + 1) % 3])
    x[1] = add(x[1], add(ks[(i + 2) % 3], np.uint32(i + 1)))
  return x


def _threefry2x32_abstract_eval(k1, k2, x1, x2):
  avals = (k1, k2, x1, x2)
  if any(a.dtype != _U32 for a in avals):
    raise TypeError(f"threefry2x32 requires uint32 arguments, got "
                    f"{', '.join(a.str_short() for a in avals)}")
  shape = broadcast_shapes(*(a.shape for a in avals), op_name="threefry2x32")
  return [ShapedArray(shape, _U32)] * 2


def _np_rotate_left(x, r):
  return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _threefry2x32_numpy(k1, k2, x1, x2):
  shape = np.broadcast_shapes(k1.shape, k2.shape, x1.shape, x2.shape)
  args = [np.broadcast_to(v, shape).astype(_U32).reshape(-1) for v in (k1, k2, x1, x2)]
  with np.errstate(over="ignore"):
    y1, y2 = _threefry_rounds(np.add, np.bitwise_xor, _np_rotate_left, *args)
  return [y1.reshape(shape), y2.reshape(shape)]


def _lax_rotate_left(x, r):
  return binary.bitwise_or(binary.shift_left(x, np.uint32(r)),
                           binary.shift_right_logical(x, np.uint32(32 - r)))


def _threefry2x32_lax(k1, k2, x1, x2):
  return _threefry_rounds(binary.add, binary.bitwise_xor, _lax_rotate_left, k1, k2, x1, x2)


def _threefry2x32_batch(vals, dims):
  """Elementwise with broadcasting: mapped operands get their batch dim in front, padded with
  size-1 dims to the highest per-example rank; unmapped ones broadcast as they are."""
  ranks = [get_aval(v).ndim - (d is not None) for v, d in zip(vals, dims, strict=True)]
  rank = max(ranks)
  args = []
  for v, d, r in zip(vals, dims, ranks, strict=True):
    if d is not None:
      v = batch_util.moveaxis(v, d, 0)
      shape = get_aval(v).shape
      if r < rank:
        v = shapes.reshape(v, shape[:1] + (1,) * (rank - r) + shape[1:])
    args.append(v)
  return threefry2x32_p.bind(*args), [0, 0]


threefry2x32_p = Primitive("threefry2x32", multiple_results=True)
threefry2x32_p.def_abstract_eval(_threefry2x32_abstract_eval)
dispatch.def_numpy_impl(threefry2x32_p, _threefry2x32_numpy)
ad.not_differentiable(threefry2x32_p, "it hashes uint32 words (integer inputs and outputs)")
inv.not_invertible(threefry2x32_p, "a keyed hash of integer words: nothing differentiable flows "
                   "through it to rebuild")
batching.primitive_batchers[threefry2x32_p] = _threefry2x32_batch
mlir.register_lowering(threefry2x32_p, mlir.lower_fun(_threefry2x32_lax, multiple_results=True))


# --- key data: split, fold_in, random bits, uniform and normal floats ---------------------------
class KeyBits:
  """Key data of a PRNG implementation other than threefry2x32 (whose data travels bare):
  `data`, uint32[*batch, *impl.key_shape], and `impl`, the implementation (an object with
  `key_shape` and `split`, `fold_in` and `random_bits` methods over batches of key data, as
  revax.random's implementations have). A pytree whose one leaf is `data` and whose aux data
  is `impl`, so jit keys its caches on the implementation and vmap maps the data."""
  __slots__ = ("data", "impl")

  def __init__(self, data, impl):
    self.data, self.impl = data, impl

  def __repr__(self):
    return f"KeyBits({self.impl.name}, {self.data!r})"


tree_util.register_pytree_node(KeyBits, lambda k: ((k.data,), k.impl),
                               lambda impl, children: KeyBits(children[0], impl))


def key_batch_shape(keys) -> tuple[int, ...]:
  """The batch shape of key data (raw threefry2x32 data or `KeyBits`)."""
  if isinstance(keys, KeyBits):
    return tuple(get_aval(keys.data).shape[:get_aval(keys.data).ndim - len(keys.impl.key_shape)])
  return tuple(get_aval(keys).shape[:-1])


def unstack_keys(keys):
  """The keys along the leading batch axis of key data, one by one (each with that axis gone)."""
  data = keys.data if isinstance(keys, KeyBits) else keys
  shape = get_aval(data).shape
  rest = shape[1:]
  out = [shapes.reshape(slicing.slice(data, (i,) + (0,) * len(rest), (i + 1,) + rest), rest)
         for i in range(shape[0])]
  return [KeyBits(d, keys.impl) for d in out] if isinstance(keys, KeyBits) else out


def _key_words(keys, extra_rank: int):
  """The words (k1, k2) of key data `keys` (*batch, 2), each of shape batch + (1,) * extra_rank
  so that they broadcast against per-key counters of rank `extra_rank`."""
  shape = get_aval(keys).shape
  batch = shape[:-1]
  words = []
  for w in (0, 1):
    word = slicing.slice(keys, (0,) * len(batch) + (w,), batch + (w + 1,))
    words.append(shapes.reshape(word, batch + (1,) * extra_rank))
  return words


def _counters(shape):
  """The (high, low) words of each element's row-major index in an array of `shape`."""
  size = math.prod(shape)
  if not is_symbolic_dim(size) and size > 2 ** 32:
    raise NotImplementedError(f"random draws of more than 2**32 elements per key (shape "
                              f"{shape}) are not supported")
  high = np.zeros((), _U32)
  low = shapes.reshape(shapes.iota(_U32, size), shape) if shape else np.zeros((), _U32)
  return high, low


def _hash(keys, shape):
  k1, k2 = _key_words(keys, len(shape))
  high, low = _counters(shape)
  return threefry2x32(k1, k2, high, low)


def split_keys(keys, shape):
  """Split each key of `keys` (uint32[*batch, 2]) into keys of `shape`:
  uint32[*batch, *shape, 2] (`KeyBits`: by their implementation)."""
  if isinstance(keys, KeyBits):
    return KeyBits(keys.impl.split(keys.data, tuple(shape)), keys.impl)
  y1, y2 = _hash(keys, tuple(shape))
  out_shape = get_aval(y1).shape + (1,)
  return shapes.concatenate([shapes.reshape(y1, out_shape), shapes.reshape(y2, out_shape)],
                            len(out_shape) - 1)


def fold_in_keys(keys, data):
  """The keys (uint32[*batch, 2]) with the uint32 scalar `data` folded in."""
  if isinstance(keys, KeyBits):
    return KeyBits(keys.impl.fold_in(keys.data, data), keys.impl)
  k1, k2 = _key_words(keys, 0)
  y1, y2 = threefry2x32(k1, k2, np.zeros((), _U32), data)
  out_shape = get_aval(y1).shape + (1,)
  return shapes.concatenate([shapes.reshape(y1, out_shape), shapes.reshape(y2, out_shape)],
                            len(out_shape) - 1)


def random_bits(keys, bit_width: int, shape):
  """Uniform random bits: uint{bit_width}[*batch, *shape] from key data uint32[*batch, 2]
  (`KeyBits`: by their implementation, which draws a batch of keys as vmap would; key-typed
  values, key<impl>[*batch], as a sampler traced by make_jaxpr gets them: JAX's random_bits
  primitive, whose lowering draws the same bits by the implementation)."""
  if isinstance(keys, KeyBits):
    return keys.impl.random_bits(keys.data, bit_width, tuple(shape))
  if prng_keys.is_key_aval(get_aval(keys)):
    return prng_keys.random_bits(keys, bit_width, tuple(shape))
  y1, y2 = _hash(keys, tuple(shape))
  dtype = _UINT_DTYPES[bit_width]
  if bit_width == 64:
    hi, lo = convert_element_type(y1, dtype), convert_element_type(y2, dtype)
    return binary.bitwise_or(binary.shift_left(hi, np.asarray(32, dtype)), lo)
  bits = binary.bitwise_xor(y1, y2)
  return bits if bit_width == 32 else convert_element_type(bits, dtype)


def uniform_floats(keys, shape, dtype, minval=0.0, maxval=1.0):
  """Uniform floats in [minval, maxval) of `dtype`: the mantissa bits of 1.0 randomized, minus 1,
  scaled; shape batch + shape for key data uint32[*batch, 2] (JAX's algorithm, its operations
  in JAX's order, so that a traced sampler's jaxpr is JAX's)."""
  dtype = np.dtype(dtype)
  info = dtypes.finfo(dtype)
  nbits, nmant = info.bits, info.nmant
  minval, maxval = convert_element_type(minval, dtype), convert_element_type(maxval, dtype)
  minval, maxval = (shapes.broadcast_to_rank(v, len(shape)) for v in (minval, maxval))
  rng_bits = 8 if nmant < 8 else nbits
  uint_dtype = _UINT_DTYPES[nbits]
  bits = random_bits(keys, rng_bits, shape)
  if rng_bits != nbits:
    bits = convert_element_type(bits, uint_dtype)
  float_bits = binary.bitwise_or(
      binary.shift_right_logical(bits, np.asarray(rng_bits - nmant, uint_dtype)),
      np.asarray(1.0, dtype).view(uint_dtype))
  floats = binary.sub(bitcast_convert_type(float_bits, dtype), np.asarray(1.0, dtype))
  out_shape = get_aval(floats).shape  # (batch + shape: the bounds broadcast from the right)
  scaled = binary.add(binary.mul(floats, binary.sub(maxval, minval)), minval)
  if get_aval(scaled).shape != out_shape:
    scaled = shapes.reshape(scaled, out_shape)
  return binary.max(minval, scaled)


def normal_floats(keys, shape, dtype):
  """Standard normal floats: sqrt(2) erf_inv(u) for u uniform in (-1, 1) (JAX's algorithm)."""
  dtype = np.dtype(dtype)
  lo = np.nextafter(np.asarray(-1.0, dtype), np.asarray(0.0, dtype))
  u = uniform_floats(keys, shape, dtype, lo, np.asarray(1.0, dtype))
  return binary.mul(np.asarray(np.sqrt(2), dtype), sampler_erf_inv(u))


def exponential_floats(keys, shape, dtype):
  """Standard exponential floats: -log1p(-u) for u uniform in [0, 1)."""
  u = uniform_floats(keys, shape, dtype)
  return unary.neg(sampler_log1p(unary.neg(u)))


_SQRT2_MINUS_1 = 0.41421356237309504880
# XLA's float32 erf_inv polynomial in w = -log1p(-x * x): coefficients for w < 5 and w >= 5.
_ERF_INV_W_LT_5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERF_INV_W_GE_5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                   0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def sampler_log1p(x):
  """log1p as jaxlib's XLA evaluates it in float32: its rational approximation where
  |x| < sqrt(2) - 1, log(1 + x) elsewhere (other dtypes: lax.log1p)."""
  dtype = get_aval(x).dtype
  if dtype != np.float32:
    return unary.log1p(x)
  small = comparison.lt(unary.abs(x), np.float32(_SQRT2_MINUS_1))
  return comparison.select_n(small, unary.log(binary.add(x, np.float32(1))), unary.log1p(x))


def sampler_erf_inv(x):
  """erf_inv as jaxlib's XLA evaluates it in float32 (Giles' polynomial on `sampler_log1p`;
  +-inf at +-1); other dtypes: lax.erf_inv."""
  aval = get_aval(x)
  if aval.dtype != np.float32:
    return unary.erf_inv(x)
  f32 = np.float32
  w = unary.neg(sampler_log1p(binary.mul(x, unary.neg(x))))
  small = comparison.lt(w, f32(5))
  w = comparison.select_n(small, binary.sub(unary.sqrt(w), f32(3)), binary.sub(w, f32(2.5)))

  def coefficient(i):
    big, little = (shapes.broadcast_in_dim(f32(c[i]), aval.shape, ())
                   for c in (_ERF_INV_W_GE_5, _ERF_INV_W_LT_5))
    return comparison.select_n(small, big, little)

  p = coefficient(0)
  for i in range(1, len(_ERF_INV_W_LT_5)):
    p = binary.add(coefficient(i), binary.mul(p, w))
  at_one = comparison.eq(unary.abs(x), f32(1))
  # +-inf at +-1 from sign(x), not x * inf: the unselected branch's cotangent would be 0 * inf
  # (NaN) under reverse mode, e.g. in the gradient of truncated_normal w.r.t. its bounds
  return comparison.select_n(at_one, binary.mul(p, x), binary.mul(unary.sign(x), f32(np.inf)))


_chlo_erf_inv_lowering = hlo_lowering("chlo.erf_inv")


def _erf_inv_lowering(ctx, x):
  """erf_inv compiled: in float32 on the CPU `sampler_erf_inv` (jaxlib's XLA's values, bit for
  bit: the normal samplers apply the erf_inv primitive, as JAX's, and must draw JAX's values;
  the CPU plugin's older chlo.erf_inv rounds ~0.5% of float32 inputs differently), else
  chlo.erf_inv (on a TPU jax's own lowering, so that the chip draws jax's values there)."""
  if ctx.platform == "cpu" and ctx.avals_in[0].dtype == np.float32:
    return mlir.lower_fun(sampler_erf_inv, multiple_results=False)(ctx, x)
  return _chlo_erf_inv_lowering(ctx, x)


mlir.register_lowering(unary.erf_inv_p, _erf_inv_lowering)


# NumPy counterparts of the key-data helpers, for the eager gamma sampler (keys: uint32[n, 2]).
def _np_split(keys, num: int):
  y1, y2 = _threefry2x32_numpy(keys[:, :1], keys[:, 1:], np.zeros((), _U32),
                               np.arange(num, dtype=_U32))
  return np.stack([y1, y2], axis=-1)


def _np_bits(keys, bit_width: int):
  zero = np.zeros((), _U32)
  y1, y2 = _threefry2x32_numpy(keys[:, 0], keys[:, 1], zero, zero)
  dtype = _UINT_DTYPES[bit_width]
  if bit_width == 64:
    return (y1.astype(dtype) << np.uint64(32)) | y2.astype(dtype)
  return (y1 ^ y2).astype(dtype)


def _np_uniform(keys, dtype, minval=0.0, maxval=1.0):
  info = dtypes.finfo(dtype)
  nbits, nmant = info.bits, info.nmant
  rng_bits = 8 if nmant < 8 else nbits
  uint_dtype = _UINT_DTYPES[nbits]
  bits = _np_bits(keys, rng_bits).astype(uint_dtype)
  one = np.asarray(1.0, dtype)
  float_bits = (bits >> uint_dtype.type(rng_bits - nmant)) | one.view(uint_dtype)
  minval, maxval = np.asarray(minval, dtype), np.asarray(maxval, dtype)
  floats = (float_bits.view(dtype) - one) * (maxval - minval) + minval
  return np.maximum(minval, floats).astype(dtype)


def _np_erf_inv(x):
  """`sampler_erf_inv` in NumPy: XLA's float32 polynomial (float16 and bfloat16 computed in
  float32, as XLA does); float64 through lax.erf_inv's NumPy implementation."""
  if x.dtype == np.float64:
    return dispatch.numpy_impls[unary.erf_inv_p](x)
  f32 = np.float32
  y = x.astype(f32)
  with np.errstate(all="ignore"):
    t = -(y * y)
    w = -np.where(np.abs(t) < f32(_SQRT2_MINUS_1), np.log1p(t), np.log(t + f32(1)))
    small = w < f32(5)
    w = np.where(small, w - f32(2.5), np.sqrt(w) - f32(3))
    p = np.where(small, f32(_ERF_INV_W_LT_5[0]), f32(_ERF_INV_W_GE_5[0]))
    for lt5, ge5 in zip(_ERF_INV_W_LT_5[1:], _ERF_INV_W_GE_5[1:], strict=True):
      p = np.where(small, f32(lt5), f32(ge5)) + p * w
    return np.where(np.abs(y) == f32(1), y * f32(np.inf), p * y).astype(x.dtype)


def _np_normal(keys, dtype):
  lo = np.nextafter(np.asarray(-1.0, dtype), np.asarray(0.0, dtype))
  u = _np_uniform(keys, dtype, lo, 1.0)
  with np.errstate(all="ignore"):
    return (np.asarray(np.sqrt(2), dtype) * _np_erf_inv(u)).astype(dtype)


# --- random_gamma --------------------------------------------------------------------------------
def random_gamma(key, a, *, log_space: bool = False):
  """Standard gamma samples (log-samples if `log_space`), one per element of `a`.

  Args:
    key: uint32[*batch, 2] key data; `batch` must be a prefix of `a.shape`. Each key is split
      into one key per element of the rest of `a`'s dims.
    a: floating-point shape parameters (a > 0).
    log_space: return log-samples (accurate for small `a`, whose samples underflow).

  Returns:
    An array of `a`'s shape and dtype.
  """
  if isinstance(key, KeyBits):  # other implementations: their name is a parameter
    return random_gamma_p.bind(key.data, a, log_space=bool(log_space), impl=key.impl)
  return random_gamma_p.bind(key, a, log_space=bool(log_space))


def _check_gamma_operands(name, key: ShapedArray, a: ShapedArray, impl=None):
  key_shape = (2,) if impl is None else tuple(impl.key_shape)
  if key.dtype != _U32 or key.shape[key.ndim - len(key_shape):] != key_shape:
    raise TypeError(f"{name} requires key data of type uint32[..., {', '.join(map(str, key_shape))}]"
                    f", got {key.str_short()}")
  if not dtypes.is_float(a.dtype):
    raise TypeError(f"{name} requires a floating-point shape parameter a, got {a.str_short()}")
  batch = key.shape[:key.ndim - len(key_shape)]
  if a.shape[:len(batch)] != batch:
    raise TypeError(f"{name}: the batch shape {batch} of the keys must be a prefix of the shape "
                    f"{a.shape} of a")


def _random_gamma_abstract_eval(key, a, *, log_space, impl=None):
  _check_gamma_operands("random_gamma", key, a, impl)
  return ShapedArray(a.shape, a.dtype, a.weak_type)


def _per_element_keys_numpy(key, shape):
  count = math.prod(shape[key.ndim - 1:])
  return _np_split(key.reshape(-1, 2), count).reshape(-1, 2)


def _np_gamma_rejects(X, V, U, d, dtype):
  one, squeeze, half = (dtype.type(v) for v in (1, 0.0331, 0.5))
  with np.errstate(all="ignore"):
    return (U >= one - squeeze * (X * X)) & (np.log(U) >= X * half + d * ((one - V) + np.log(V)))


def _np_positive_normal(keys, c, dtype):
  """Per element: draw x ~ N(0, 1) until v = 1 + c x > 0 (NaN stops too); returns (x, v)."""
  keys = keys.copy()
  x = np.zeros(len(keys), dtype)
  v = np.full(len(keys), -1, dtype)
  running = np.ones(len(keys), bool)
  while running.any():
    i = np.flatnonzero(running)
    halves = _np_split(keys[i], 2)
    keys[i] = halves[:, 0]
    x[i] = _np_normal(halves[:, 1], dtype)
    with np.errstate(all="ignore"):
      v[i] = dtype.type(1) + x[i] * c[i]
    running[i] = v[i] <= 0
  return x, v


def _np_gamma(keys, alpha, log_space):
  dtype = alpha.dtype
  one, third = dtype.type(1), dtype.type(1 / 3)
  boost_mask = alpha >= one
  boosted = np.where(boost_mask, alpha, alpha + one)
  d = boosted - third
  c = third / np.sqrt(d)
  halves = _np_split(keys, 2)
  keys, subkeys = halves[:, 0].copy(), halves[:, 1]
  n = len(keys)
  X, V, U = np.zeros(n, dtype), np.ones(n, dtype), np.full(n, 2, dtype)
  running = _np_gamma_rejects(X, V, U, d, dtype)
  while running.any():
    i = np.flatnonzero(running)
    thirds = _np_split(keys[i], 3)
    keys[i] = thirds[:, 0]
    x, v = _np_positive_normal(thirds[:, 1], c[i], dtype)
    X[i], V[i], U[i] = x * x, (v * v) * v, _np_uniform(thirds[:, 2], dtype)
    running[i] = _np_gamma_rejects(X[i], V[i], U[i], d[i], dtype)
  if log_space:
    log_samples = np.log1p(-_np_uniform(subkeys, dtype))
    log_boost = np.where(boost_mask | (log_samples == 0), dtype.type(0),
                         log_samples * (one / alpha))
    return (np.log(d) + np.log(V)) + log_boost
  samples = one - _np_uniform(subkeys, dtype)
  boost = np.where(boost_mask, one, samples ** (one / alpha))
  return (d * V) * boost


def _random_gamma_numpy(key, a, *, log_space):
  keys = _per_element_keys_numpy(key, a.shape)
  with np.errstate(all="ignore"):
    samples = _np_gamma(keys, a.reshape(-1), log_space)
  return np.asarray(samples, a.dtype).reshape(a.shape)


def _any(pred):
  """Whether any element of the bool array `pred` is true (a scalar)."""
  return reductions.reduce_or(pred, tuple(range(get_aval(pred).ndim)))


def _eager_in_numpy(prim):
  """An eager implementation that always runs `prim`'s NumPy implementation, fetching inputs
  held in device buffers: compiling its while loops for a single eager call would take seconds."""
  def impl(*args, **params):
    avals = [get_aval(x) for x in args]
    out_aval = prim.abstract_eval(*avals, **params)
    out = dispatch.numpy_impls[prim](*map(dispatch.host_value, args), **params)
    return dispatch.wrap_host(out, out_aval)
  return impl


def _select_lanes(running, new, old):
  """Per element (axis 0): `new` where `running`, else `old`."""
  shape = get_aval(new).shape
  if get_aval(running).shape != shape:
    running = shapes.broadcast_in_dim(running, shape, (0,))
  return comparison.select_n(running, old, new)


def _key_at(keys, i: int):
  """keys[:, i, :] of key data uint32[n, k, 2]."""
  n = get_aval(keys).shape[0]
  return shapes.reshape(slicing.slice(keys, (0, i, 0), (n, i + 1, 2)), (n, 2))


def _gamma_rejects(X, V, U, d):
  dtype = get_aval(X).dtype
  one, squeeze, half = (np.asarray(v, dtype) for v in (1, 0.0331, 0.5))
  first = comparison.ge(U, binary.sub(one, binary.mul(squeeze, binary.mul(X, X))))
  second = comparison.ge(unary.log(U), binary.add(
      binary.mul(X, half), binary.mul(d, binary.add(binary.sub(one, V), unary.log(V)))))
  return binary.bitwise_and(first, second)


def _positive_normal(keys, c, dtype):
  n = get_aval(c).shape[0]

  def running(v):
    return comparison.le(v, np.asarray(0, dtype))

  def body(carry):
    keys, x, v = carry
    halves = split_keys(keys, (2,))
    new_x = normal_floats(_key_at(halves, 1), (), dtype)
    new_v = binary.add(np.asarray(1, dtype), binary.mul(new_x, c))
    go = running(v)
    return (_select_lanes(go, _key_at(halves, 0), keys), _select_lanes(go, new_x, x),
            _select_lanes(go, new_v, v))

  init = (keys, shapes.broadcast_in_dim(np.asarray(0, dtype), (n,), ()),
          shapes.broadcast_in_dim(np.asarray(-1, dtype), (n,), ()))
  _, x, v = while_loop(lambda carry: _any(running(carry[2])), body, init)
  return x, v


def _gamma_lax(key, a, *, log_space):
  """The vectorized sampler of the lowering: one rejection loop over all elements, each
  advancing only while it rejects (JAX's vmapped _gamma_one)."""
  aval = get_aval(a)
  key_shape = get_aval(key).shape
  count = math.prod(aval.shape[len(key_shape) - 1:])
  flat_keys = shapes.reshape(key, (math.prod(key_shape[:-1]), 2))
  keys = shapes.reshape(split_keys(flat_keys, (count,)), (aval.size, 2))
  samples = _gamma_from_keys(keys, shapes.reshape(a, (aval.size,)), log_space)
  return shapes.reshape(samples, aval.shape)


def _gamma_from_keys(keys, alpha, log_space):
  """Samples for shape parameters alpha (n,) from keys uint32[n, 2], one key per element."""
  dtype, n = get_aval(alpha).dtype, get_aval(alpha).shape[0]
  const = lambda v: np.asarray(v, dtype)
  boost_mask = comparison.ge(alpha, const(1))
  boosted = comparison.select_n(boost_mask, binary.add(alpha, const(1)), alpha)
  d = binary.sub(boosted, const(1 / 3))
  c = binary.div(const(1 / 3), unary.sqrt(d))
  halves = split_keys(keys, (2,))
  keys, subkeys = _key_at(halves, 0), _key_at(halves, 1)

  def body(carry):
    keys, X, V, U = carry
    thirds = split_keys(keys, (3,))
    x, v = _positive_normal(_key_at(thirds, 1), c, dtype)
    new = (_key_at(thirds, 0), binary.mul(x, x), binary.mul(binary.mul(v, v), v),
           uniform_floats(_key_at(thirds, 2), (), dtype))
    go = _gamma_rejects(X, V, U, d)
    return tuple(_select_lanes(go, nw, old) for nw, old in zip(new, carry, strict=True))

  fill = lambda v: shapes.broadcast_in_dim(const(v), (n,), ())
  _, _, V, _ = while_loop(
      lambda carry: _any(_gamma_rejects(*carry[1:], d)), body,
      (keys, fill(0), fill(1), fill(2)))
  if log_space:
    log_samples = unary.neg(exponential_floats(subkeys, (), dtype))
    skip = binary.bitwise_or(boost_mask, comparison.eq(log_samples, const(0)))
    log_boost = comparison.select_n(
        skip, binary.mul(log_samples, binary.div(const(1), alpha)), fill(0))
    out = binary.add(binary.add(unary.log(d), unary.log(V)), log_boost)
  else:
    samples = binary.sub(const(1), uniform_floats(subkeys, (), dtype))
    boost = comparison.select_n(boost_mask, binary.pow(samples, binary.div(const(1), alpha)),
                                fill(1))
    out = binary.mul(binary.mul(d, V), boost)
  return out


def _gamma_sample_grad(sample, a, log_space):
  """d sample / d a by implicit reparameterization (of the sample itself in log space)."""
  if not log_space:
    return random_gamma_grad(a, sample)
  dtype = get_aval(sample).dtype
  samples = unary.exp(sample)
  tiny = np.asarray(dtypes.finfo(dtype).tiny, dtype)
  samples = comparison.select_n(comparison.eq(samples, np.asarray(0, dtype)), samples,
                                shapes.broadcast_in_dim(tiny, get_aval(samples).shape, ()))
  return binary.div(random_gamma_grad(a, samples), samples)


def _random_gamma_jvp_a(t, sample, key, a, *, log_space, impl=None):
  return binary.mul(t, _gamma_sample_grad(sample, a, log_space))


def _random_gamma_batch(axis_size, vals, dims, **params):
  """Keys and shape parameters both get the batch dim in front (an unmapped one is broadcast:
  keys must cover the leading dims of `a`)."""
  key, a = (batch_util.bdim_to_front(v, d, axis_size) for v, d in zip(vals, dims, strict=True))
  return random_gamma_p.bind(key, a, **params), 0


def _random_gamma_eager(key, a, **params):
  """threefry2x32 keys: the NumPy sampler; other implementations: the compiled program."""
  if params.get("impl") is None:
    return _eager_in_numpy(random_gamma_p)(key, a, **params)
  avals = (get_aval(key), get_aval(a))
  program = dispatch.primitive_program(random_gamma_p, avals, params)
  return program.call_arrays([key, a])[0]


def _random_gamma_lower(key, a, *, log_space, impl=None):
  if impl is None:
    return _gamma_lax(key, a, log_space=log_space)
  return _gamma_mapped(key, a, log_space, impl)


def _gamma_mapped(key, a, log_space, impl):
  """JAX's sampler for keys of other implementations: each key split into one key per element
  (as vmap splits a batch of keys), then one element at a time (a scan, as lax.map)."""
  from revax._src.lax.control_flow import loops  # (beside this module; imported on use)
  aval, key_aval = get_aval(a), get_aval(key)
  key_shape = tuple(impl.key_shape)
  batch = key_aval.shape[:key_aval.ndim - len(key_shape)]
  count = math.prod(aval.shape[len(batch):])
  flat = shapes.reshape(key, (math.prod(batch),) + key_shape)
  keys = shapes.reshape(impl.split(flat, (count,)), (aval.size,) + key_shape)
  samples = loops.map(lambda ka: _gamma_one(KeyBits(ka[0], impl), ka[1], log_space),
                      (keys, shapes.reshape(a, (aval.size,))))
  return shapes.reshape(samples, aval.shape)


def _gamma_one(key, alpha, log_space):
  """One standard-gamma sample from one key (JAX's _gamma_one)."""
  dtype = get_aval(alpha).dtype
  const = lambda v: np.asarray(v, dtype)
  one, zero = const(1), const(0)
  boost_mask = comparison.ge(alpha, one)
  boosted = comparison.select_n(boost_mask, binary.add(alpha, one), alpha)
  d = binary.sub(boosted, const(1 / 3))
  c = binary.div(const(1 / 3), unary.sqrt(d))

  def next_normal(carry):
    key, _, _ = carry
    key, subkey = unstack_keys(split_keys(key, (2,)))
    x = normal_floats(subkey, (), dtype)
    return key, x, binary.add(one, binary.mul(x, c))

  def body(carry):
    key, x_key, u_key = unstack_keys(split_keys(carry[0], (3,)))
    _, x, v = while_loop(lambda kxv: comparison.le(kxv[2], zero), next_normal,
                         (x_key, zero, const(-1)))
    return (key, binary.mul(x, x), binary.mul(binary.mul(v, v), v),
            uniform_floats(u_key, (), dtype))

  key, subkey = unstack_keys(split_keys(key, (2,)))
  _, _, V, _ = while_loop(lambda kxvu: _gamma_rejects(*kxvu[1:], d), body,
                          (key, zero, one, const(2)))
  if log_space:
    log_samples = unary.neg(exponential_floats(subkey, (), dtype))
    skip = binary.bitwise_or(boost_mask, comparison.eq(log_samples, zero))
    log_boost = comparison.select_n(skip, binary.mul(log_samples, binary.div(one, alpha)), zero)
    return binary.add(binary.add(unary.log(d), unary.log(V)), log_boost)
  samples = binary.sub(one, uniform_floats(subkey, (), dtype))
  boost = comparison.select_n(boost_mask, binary.pow(samples, binary.div(one, alpha)), one)
  return binary.mul(binary.mul(d, V), boost)


random_gamma_p = Primitive("random_gamma")
random_gamma_p.def_abstract_eval(_random_gamma_abstract_eval)
dispatch.def_numpy_impl(random_gamma_p, _random_gamma_numpy)
dispatch.custom_impls[random_gamma_p] = _random_gamma_eager
ad.defjvp_from_output(random_gamma_p, None, _random_gamma_jvp_a)
inv.not_invertible(random_gamma_p, "a random draw: one sample does not determine its shape "
                   "parameter")
batching.axis_size_batchers[random_gamma_p] = _random_gamma_batch
mlir.register_lowering(random_gamma_p, mlir.lower_fun(_random_gamma_lower,
                                                      multiple_results=False))


# --- random_gamma_grad ---------------------------------------------------------------------------
def random_gamma_grad(a, x):
  """The derivative of a standard gamma sample `x` with respect to its shape `a`, holding the
  sample's quantile fixed: -(dF/da) / (dF/dx) for the gamma CDF F(x; a) (as jax.lax.).

  Args:
    a: shape parameters (floating point).
    x: samples, of a's dtype; the shapes broadcast.

  Returns:
    The derivatives, of the broadcast shape.

  Example:
    >>> lax.random_gamma_grad(np.float32(1.0), np.float32(0.5))  # Gamma(1) = Exp(1): dx/da
    Array(0.8069791, dtype=float32)
  """
  return random_gamma_grad_p.bind(a, x)


_LOW_PRECISION = (dtypes.float16, dtypes.bfloat16)


def _np_series_derivative(x, a, enabled, eps, numpy_digamma):
  """JAX's _igamma_series in SAMPLE_DERIVATIVE mode, per element."""
  one = a.dtype.type(1)
  r, c, ans = a.copy(), np.ones_like(a), np.ones_like(a)
  dc_da, dans_da = np.zeros_like(a), np.zeros_like(a)
  enabled = enabled.copy()
  while enabled.any():
    i = enabled
    r_new = r + one
    dc_new = dc_da * (x / r_new) - (c * x) / (r_new * r_new)
    dans_new = dans_da + dc_new
    c_new = c * (x / r_new)
    ans_new = ans + c_new
    r, dc_da, dans_da, c, ans = (np.where(i, nw, old) for nw, old in
                                 ((r_new, r), (dc_new, dc_da), (dans_new, dans_da), (c_new, c),
                                  (ans_new, ans)))
    enabled = i & (np.abs(dc_new / dans_new) > eps)
  dlogax_da = np.log(x) - numpy_digamma(a + one)
  return -(dans_da + ans * dlogax_da) * x / a


def _np_continued_fraction_derivative(x, a, enabled, eps, numpy_digamma):
  """JAX's _igammac_continued_fraction in SAMPLE_DERIVATIVE mode, per element."""
  dtype = a.dtype.type
  one, two = dtype(1), dtype(2)
  y = one - a
  z = x + y + one
  c = np.zeros_like(x)
  pkm2, qkm2 = np.ones_like(x), x.copy()
  pkm1, qkm1 = x + one, (x + y + one) * x
  ans = pkm1 / qkm1
  dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = (np.zeros_like(x), np.zeros_like(x),
                                            np.zeros_like(x), -x)
  dans_da = (dpkm1_da - ans * dqkm1_da) / qkm1
  enabled = enabled.copy()
  rescale_at = one / dtype(eps)
  while True:
    running = (c < dtype(2000)) & enabled
    if not running.any():
      break
    c_new = c + one
    y_new = y + one
    z_new = z + two
    yc = y_new * c_new
    pk = pkm1 * z_new - pkm2 * yc
    qk = qkm1 * z_new - qkm2 * yc
    nonzero = qk != 0
    r = pk / qk
    ans_new = np.where(nonzero, r, ans)
    dpk_da = dpkm1_da * z_new - pkm1 - dpkm2_da * yc + pkm2 * c_new
    dqk_da = dqkm1_da * z_new - qkm1 - dqkm2_da * yc + qkm2 * c_new
    dans_new = np.where(nonzero, (dpk_da - ans_new * dqk_da) / qk, dans_da)
    grad_conditional = np.where(nonzero, np.abs(dans_new - dans_da), one)
    rescale = np.abs(pk) > rescale_at
    scale = lambda v: np.where(rescale, v * dtype(eps), v)
    new = dict(pkm2=scale(pkm1), pkm1=scale(pk), qkm2=scale(qkm1), qkm1=scale(qk),
               dpkm2_da=scale(dpkm1_da), dqkm2_da=scale(dqkm1_da), dpkm1_da=scale(dpk_da),
               dqkm1_da=scale(dqk_da))
    conditional = enabled & (grad_conditional > eps)
    # the carry advances where `enabled` (JAX's selects), and only while the element runs
    sel = lambda nw, old: np.where(running & enabled, nw, old)
    ans, y, z = sel(ans_new, ans), sel(y_new, y), sel(z_new, z)
    pkm1, qkm1 = sel(new["pkm1"], pkm1), sel(new["qkm1"], qkm1)
    pkm2, qkm2 = sel(new["pkm2"], pkm2), sel(new["qkm2"], qkm2)
    dpkm2_da, dqkm2_da = sel(new["dpkm2_da"], dpkm2_da), sel(new["dqkm2_da"], dqkm2_da)
    dpkm1_da, dqkm1_da = sel(new["dpkm1_da"], dpkm1_da), sel(new["dqkm1_da"], dqkm1_da)
    dans_da = sel(dans_new, dans_da)
    c = np.where(running, c_new, c)
    enabled = np.where(running, conditional, enabled)
  dlogax_da = np.log(x) - numpy_digamma(a)
  return -((dans_da + ans * dlogax_da) * x)


def _random_gamma_grad_numpy(a, x):
  dtype = a.dtype
  shape = np.broadcast_shapes(a.shape, x.shape)
  work = np.float32 if dtype in _LOW_PRECISION else dtype
  a = np.broadcast_to(a, shape).astype(work).reshape(-1)
  x = np.broadcast_to(x, shape).astype(work).reshape(-1)
  lgamma = dispatch.numpy_impls[unary.lgamma_p]
  digamma = dispatch.numpy_impls[unary.digamma_p]
  eps = dtypes.finfo(work).eps
  with np.errstate(all="ignore"):
    is_nan = np.isnan(a) | np.isnan(x)
    x_is_zero = x == 0
    domain_error = (x < 0) | (a <= 0)
    use_igammac = (x > 1) & (x > a)
    ax = a * np.log(x) - x - lgamma(a)
    underflow = ax < -np.log(dtypes.finfo(work).max)
    enabled = ~(x_is_zero | domain_error | underflow | is_nan)
    cf = -_np_continued_fraction_derivative(x, a, enabled & use_igammac, eps, digamma)
    series = _np_series_derivative(x, a, enabled & ~use_igammac, eps, digamma)
    out = np.where(use_igammac, cf, series)
    out = np.where(x_is_zero, 0, out)
    out = np.where(domain_error | is_nan, np.nan, out)
  return out.astype(dtype).reshape(shape)


def _series_derivative_lax(x, a, enabled, eps):
  dtype = get_aval(a).dtype
  one = np.asarray(1, dtype)

  def body(carry):
    enabled, r, c, ans, dc_da, dans_da = carry
    r_new = binary.add(r, one)
    dc_new = binary.sub(binary.mul(dc_da, binary.div(x, r_new)),
                        binary.div(binary.mul(c, x), binary.mul(r_new, r_new)))
    dans_new = binary.add(dans_da, dc_new)
    c_new = binary.mul(c, binary.div(x, r_new))
    ans_new = binary.add(ans, c_new)
    still = binary.bitwise_and(enabled, comparison.gt(
        unary.abs(binary.div(dc_new, dans_new)), np.asarray(eps, dtype)))
    sel = lambda nw, old: comparison.select_n(enabled, old, nw)
    return (still, sel(r_new, r), sel(c_new, c), sel(ans_new, ans), sel(dc_new, dc_da),
            sel(dans_new, dans_da))

  full = lambda v: shapes.broadcast_in_dim(np.asarray(v, dtype), get_aval(a).shape, ())
  init = (enabled, a, full(1), full(1), full(0), full(0))
  _, _, _, ans, _, dans_da = while_loop(lambda carry: _any(carry[0]), body, init)
  dlogax_da = binary.sub(unary.log(x), unary.digamma(binary.add(a, one)))
  return binary.div(binary.mul(unary.neg(binary.add(dans_da, binary.mul(ans, dlogax_da))), x), a)


def _continued_fraction_derivative_lax(x, a, enabled, eps):
  aval = get_aval(x)
  dtype = aval.dtype
  one, two = np.asarray(1, dtype), np.asarray(2, dtype)
  eps_c = np.asarray(eps, dtype)
  full = lambda v: shapes.broadcast_in_dim(np.asarray(v, dtype), aval.shape, ())
  y = binary.sub(one, a)
  z = binary.add(binary.add(x, y), one)
  pkm1 = binary.add(x, one)
  qkm1 = binary.mul(z, x)
  ans = binary.div(pkm1, qkm1)
  dqkm1_da = unary.neg(x)
  dans_da = binary.div(binary.sub(full(0), binary.mul(ans, dqkm1_da)), qkm1)

  def running(enabled, c):
    return binary.bitwise_and(comparison.lt(c, np.asarray(2000, dtype)), enabled)

  def body(carry):
    (enabled, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da,
     dans_da) = carry
    go = running(enabled, c)
    c_new = binary.add(c, one)
    y_new = binary.add(y, one)
    z_new = binary.add(z, two)
    yc = binary.mul(y_new, c_new)
    pk = binary.sub(binary.mul(pkm1, z_new), binary.mul(pkm2, yc))
    qk = binary.sub(binary.mul(qkm1, z_new), binary.mul(qkm2, yc))
    nonzero = comparison.ne(qk, np.asarray(0, dtype))
    r = binary.div(pk, qk)
    t_new = comparison.select_n(nonzero, full(1), unary.abs(binary.div(binary.sub(ans, r), r)))
    ans_new = comparison.select_n(nonzero, ans, r)
    dpk_da = binary.add(binary.sub(binary.sub(binary.mul(dpkm1_da, z_new), pkm1),
                                   binary.mul(dpkm2_da, yc)), binary.mul(pkm2, c_new))
    dqk_da = binary.add(binary.sub(binary.sub(binary.mul(dqkm1_da, z_new), qkm1),
                                   binary.mul(dqkm2_da, yc)), binary.mul(qkm2, c_new))
    dans_new = comparison.select_n(
        nonzero, dans_da, binary.div(binary.sub(dpk_da, binary.mul(ans_new, dqk_da)), qk))
    grad_conditional = comparison.select_n(nonzero, full(1), unary.abs(binary.sub(dans_new,
                                                                                  dans_da)))
    rescale = comparison.gt(unary.abs(pk), binary.div(one, eps_c))
    scale = lambda v: comparison.select_n(rescale, v, binary.mul(v, eps_c))
    new_pkm2, new_pkm1, new_qkm2, new_qkm1 = scale(pkm1), scale(pk), scale(qkm1), scale(qk)
    new_dpkm2, new_dqkm2 = scale(dpkm1_da), scale(dqkm1_da)
    new_dpkm1, new_dqkm1 = scale(dpk_da), scale(dqk_da)
    conditional = binary.bitwise_and(enabled, comparison.gt(grad_conditional, eps_c))
    sel = lambda nw, old: comparison.select_n(binary.bitwise_and(go, enabled), old, nw)
    run = lambda nw, old: comparison.select_n(go, old, nw)
    return (run(conditional, enabled), sel(ans_new, ans), sel(t_new, t), sel(y_new, y),
            sel(z_new, z), run(c_new, c), sel(new_pkm1, pkm1), sel(new_qkm1, qkm1),
            sel(new_pkm2, pkm2), sel(new_qkm2, qkm2), sel(new_dpkm2, dpkm2_da),
            sel(new_dqkm2, dqkm2_da), sel(new_dpkm1, dpkm1_da), sel(new_dqkm1, dqkm1_da),
            sel(dans_new, dans_da))

  init = (enabled, ans, full(1), y, z, full(0), pkm1, qkm1, full(1), x, full(0), full(0),
          full(0), dqkm1_da, dans_da)
  out = while_loop(lambda carry: _any(running(carry[0], carry[5])), body, init)
  ans, dans_da = out[1], out[14]
  dlogax_da = binary.sub(unary.log(x), unary.digamma(a))
  return unary.neg(binary.mul(binary.add(dans_da, binary.mul(ans, dlogax_da)), x))


def _random_gamma_grad_lax(a, x):
  """JAX's random_gamma_grad_impl: the series below x = max(1, a), the continued fraction
  above, on operands broadcast together (16-bit floats computed in float32)."""
  dtype = get_aval(a).dtype
  shape = broadcast_shapes(get_aval(a).shape, get_aval(x).shape)
  if get_aval(a).shape != shape:
    a = shapes.broadcast_in_dim(a, shape, tuple(range(len(shape) - get_aval(a).ndim, len(shape))))
  if get_aval(x).shape != shape:
    x = shapes.broadcast_in_dim(x, shape, tuple(range(len(shape) - get_aval(x).ndim, len(shape))))
  work = dtypes.float32 if dtype in _LOW_PRECISION else dtype
  if work != dtype:
    a, x = convert_element_type(a, work), convert_element_type(x, work)
  zero = np.asarray(0, work)
  eps = dtypes.finfo(work).eps
  is_nan = binary.bitwise_or(comparison.ne(a, a), comparison.ne(x, x))
  x_is_zero = comparison.eq(x, zero)
  domain_error = binary.bitwise_or(comparison.lt(x, zero), comparison.le(a, zero))
  use_igammac = binary.bitwise_and(comparison.gt(x, np.asarray(1, work)), comparison.gt(x, a))
  ax = binary.sub(binary.sub(binary.mul(a, unary.log(x)), x), unary.lgamma(a))
  underflow = comparison.lt(ax, unary.neg(unary.log(np.asarray(dtypes.finfo(work).max, work))))
  enabled = unary.bitwise_not(binary.bitwise_or(binary.bitwise_or(binary.bitwise_or(
      x_is_zero, domain_error), underflow), is_nan))
  cf = unary.neg(_continued_fraction_derivative_lax(
      x, a, binary.bitwise_and(enabled, use_igammac), eps))
  series = _series_derivative_lax(x, a, binary.bitwise_and(enabled, unary.bitwise_not(use_igammac)),
                                  eps)
  full = lambda v: shapes.broadcast_in_dim(np.asarray(v, work), shape, ())
  out = comparison.select_n(use_igammac, series, cf)
  out = comparison.select_n(x_is_zero, out, full(0))
  out = comparison.select_n(binary.bitwise_or(domain_error, is_nan), out, full(np.nan))
  return convert_element_type(out, dtype) if work != dtype else out


def _random_gamma_grad_jvp(primals, tangents):
  """Forward mode differentiates the loops themselves (as JAX's lax-level function is)."""
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  (out,), (t_out,) = ad.jvp_flat(lambda a, x: [_random_gamma_grad_lax(a, x)], list(primals),
                                 tangents)
  return out, ad.instantiate_zeros(t_out)


random_gamma_grad_p = Primitive("random_gamma_grad")
random_gamma_grad_p.def_abstract_eval(naryop_abstract_eval("random_gamma_grad",
                                                           ("float", "float")))
dispatch.def_numpy_impl(random_gamma_grad_p, _random_gamma_grad_numpy)
dispatch.custom_impls[random_gamma_grad_p] = _eager_in_numpy(random_gamma_grad_p)
ad.primitive_jvps[random_gamma_grad_p] = _random_gamma_grad_jvp
inv.not_invertible(random_gamma_grad_p, "many-to-one in (a, x)")
defbroadcasting(random_gamma_grad_p)
mlir.register_lowering(random_gamma_grad_p,
                       mlir.lower_fun(_random_gamma_grad_lax, multiple_results=False))
