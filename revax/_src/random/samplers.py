"""Random samplers: bits, uniform, normal, bernoulli, categorical, randint, permutation, choice,
truncated_normal, exponential, gamma, loggamma, beta and dirichlet, with JAX's signatures,
dtypes, broadcasting rules, errors and algorithms (so that the same key gives the same values).

The samplers built from integer and floating-point elementwise operations run as jitted programs
(as JAX's do): XLA evaluates the transcendental functions, which is what makes their values equal
to JAX's bit for bit (revax's NumPy implementations round some of them differently). The gamma
family (gamma, loggamma, beta, dirichlet) runs op by op around the `random_gamma` primitive: its
eager NumPy sampler draws without compiling a rejection loop, and its jaxpr shows the primitive.

Traced (make_jaxpr, or a jit's trace), uniform, normal and bernoulli hand their jits the key as a
key-typed value (`key<fry>[]`, a raw key wrapped by random_wrap) and draw with the random_bits
primitive, so that their jaxprs are JAX's (normal: jit[_normal] -> jit[_normal_real] ->
jit[_uniform] and the erf_inv primitive); eagerly, and under vmap or grad, they take the key's
data, as before. Both draw the same bits.

Every public sampler here (and in distributions.py, matrix_samplers.py) takes JAX's
`out_sharding=` keyword: the sample, drawn as without it, is then placed as that sharding says
(a sharding constraint under jit).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.trace import ConcretizationTypeError, Tracer
from revax._src.jit import jit
from revax._src.lax import (binary, comparison, conversion, prng, prng_keys, reductions, shapes,
                            slicing, sorting, unary)
from revax._src.lax.sharding_constraint import placed
from revax._src.numpy import creation as jnp_creation
from revax._src.numpy import indexing as jnp_indexing
from revax._src.numpy import reductions as jnp_reductions
from revax._src.numpy import shape_ops as jnp_shape_ops
from revax._src.numpy import util as jnp_util
from revax._src.core.extended_dtypes import key_staging
from revax._src.core.trace import _context as _trace_context
from revax._src.interpreters.staging import DynamicJaxprTrace
from revax._src.random.keys import canonicalize_shape, check_prng_key, tracing, typed_keys

_UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
                64: np.dtype(np.uint64)}


# --- argument checks -----------------------------------------------------------------------------
def _shape_of(x):
  return tuple(get_aval(x).shape)


def _check_shape(name: str, shape, *param_shapes) -> None:
  """ValueError unless the parameters' shapes broadcast into `shape` exactly."""
  if param_shapes:
    broadcast = jnp_util.broadcast_shapes(shape, *param_shapes)
    if shape != broadcast:
      raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                       f"argument, and the result of broadcasting the shapes must equal the "
                       f"shape argument, but got result {broadcast} for shape argument {shape}.")


def _check_broadcast_shapes(name: str, shape, *args):
  arg_shapes = [_shape_of(a) for a in args]
  if shape is None:
    return jnp_util.broadcast_shapes(*arg_shapes) if arg_shapes else ()
  shape = canonicalize_shape(shape, name)
  _check_shape(name, shape, *arg_shapes)
  return shape


def _dtype(dtype, default):
  """The canonical dtype of a user's `dtype` argument (`default` when None)."""
  return jnp_util.canonical_dtype_arg(default if dtype is None else dtype)


def _float_dtype(name: str, dtype, kind: str = "float"):
  dtype = _dtype(dtype, float)
  ok = dtypes.is_inexact(dtype) if kind == "float or complex" else dtypes.is_float(dtype)
  if not ok:
    raise ValueError(f"dtype argument to `{name}` must be a {kind} dtype, got {dtype}")
  return dtype


def _key_dtype_shape(name: str, key, shape, dtype, kind: str = "float"):
  """The checks a sampler of a given `shape` starts with, in JAX's order: the key (TypeError, or
  ValueError for a batch of keys), the dtype (ValueError unless of `kind`), then the shape.

  Returns:
    (key data uint32[2], canonical shape, canonical dtype).
  """
  data, _ = check_prng_key(name, key)
  dtype = _float_dtype(name, dtype, kind)
  return data, canonicalize_shape(shape, name), dtype


def _sampler_key(name: str, key):
  """What a jitted sampler takes for `key` (checked: TypeError for a non-key, ValueError for a
  batch): while make_jaxpr traces, the key as a key-typed value (a raw key wrapped by
  random_wrap), so that the sampler's jaxpr takes `key<fry>[]` and draws with random_bits, as
  JAX's; otherwise its data (`check_prng_key`: bare threefry data or `prng.KeyBits`), which
  eager calls and compiled programs carry."""
  if (key_staging.typed and tracing()) or type(_trace_context.trace) is DynamicJaxprTrace:
    return typed_keys(name, key)[0]
  return check_prng_key(name, key)[0]


def _check_arraylike(name: str, *args):
  jnp_util.check_arraylike(name, *args)


def _per_key(draws):
  """The two slices along the leading axis of draws made with two keys."""
  shape = _shape_of(draws)
  rest = shape[1:]
  return [shapes.reshape(slicing.slice(draws, (i,) + (0,) * len(rest), (i + 1,) + rest), rest)
          for i in (0, 1)]


def _split2(data):
  """Two keys split from one key's data (key-typed keys: JAX's random_split, then each key
  sliced out, as its `_split` and unpacking do)."""
  if not isinstance(data, prng.KeyBits) and prng_keys.is_key_aval(get_aval(data)):
    both = prng_keys.random_split(data, (2,))
    return [shapes.squeeze(slicing.slice(both, (i,), (i + 1,), (1,)), (0,)) for i in (0, 1)]
  return prng.unstack_keys(prng.split_keys(data, (2,)))


# --- bits ----------------------------------------------------------------------------------------
def bits(key, shape=(), dtype=None, *, out_sharding=None):
  """Uniform random bits as unsigned integers.

  Args:
    key: a PRNG key.
    shape: the result shape (default ()).
    dtype: an unsigned integer dtype (default uint32, or uint64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.

  Example:
    >>> key = revax.random.key(0)
    >>> revax.random.bits(key, (3,))
    Array([4070199207, 4202968722, 1427181096], dtype=uint32)
  """
  keys, _ = typed_keys("bits", key) if tracing() else check_prng_key("bits", key)
  dtype = dtypes.default_uint_dtype() if dtype is None else _dtype(dtype, None)
  if not dtypes.is_unsigned_integer(dtype):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  shape = canonicalize_shape(shape, "bits")
  if tracing():  # (JAX's random_bits on the keys)
    return placed(prng_keys.random_bits(keys, dtype.itemsize * 8, shape), out_sharding)
  return placed(_bits(keys, dtype.itemsize * 8, shape), out_sharding)


@functools.partial(jit, static_argnums=(1, 2))
def _bits(key, bit_width, shape):
  return prng.random_bits(key, bit_width, shape)


# --- uniform -------------------------------------------------------------------------------------
def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0, *, out_sharding=None):
  """Uniform random floats in [minval, maxval).

  Args:
    key: a PRNG key.
    shape: the result shape (default ()).
    dtype: a float dtype (default float32, or float64 with x64 enabled).
    minval: inclusive lower bound(s), broadcast-compatible with `shape` (default 0).
    maxval: exclusive upper bound(s), broadcast-compatible with `shape` (default 1).

  Returns:
    An array of `shape` and `dtype`.

  Example:
    >>> key = revax.random.key(0)
    >>> revax.random.uniform(key, (2, 3), minval=-1.0, maxval=1.0)
    Array([[ 0.895334  ,  0.95715976, -0.33541703],
           [-0.06266308,  0.13977742, -0.66899395]], dtype=float32)
  """
  keys = _sampler_key("uniform", key)
  dtype = _float_dtype("uniform", dtype)
  shape = canonicalize_shape(shape, "uniform")
  return placed(_uniform(keys, minval, maxval, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(3, 4))
def _uniform(key, minval, maxval, shape, dtype):
  return prng.uniform_floats(key, shape, dtype, minval, maxval)



# --- normal --------------------------------------------------------------------------------------
def normal(key, shape=(), dtype=None, *, out_sharding=None):
  """Standard normal random values (complex dtypes: real and imaginary parts each N(0, 1/2)).

  Args:
    key: a PRNG key.
    shape: the result shape (default ()).
    dtype: a float or complex dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.

  Example:
    >>> key = revax.random.key(0)
    >>> revax.random.normal(key, (3,))
    Array([ 1.6226422 ,  2.0252647 , -0.43359444], dtype=float32)
  """
  keys = _sampler_key("normal", key)
  shape = canonicalize_shape(shape, "normal")
  dtype = _float_dtype("normal", dtype, "float or complex")
  return placed(_normal(keys, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(1, 2))
def _normal(key, shape, dtype):
  if not dtypes.is_complex(dtype):
    return _normal_real(key, shape, dtype)
  real_dtype = np.zeros((), dtype).real.dtype
  # real and imaginary parts from two split keys, one draw each (as JAX: a draw from a batch of
  # keys is not the same as one draw per key for every implementation)
  re, im = (conversion.convert_element_type(_normal_real(k, shape, real_dtype), dtype)
            for k in _split2(key))
  sqrt2 = np.asarray(np.sqrt(2), dtype)
  return binary.div(binary.add(re, binary.mul(np.asarray(1j, dtype), im)), sqrt2)


@functools.partial(jit, static_argnums=(1, 2))
def _normal_real(key, shape, dtype):
  """sqrt(2) erf_inv(u) for u uniform in (-1, 1), JAX's jits and primitives: `_uniform`, then
  the erf_inv primitive (compiled in float32 as jaxlib's XLA evaluates it)."""
  lo = np.nextafter(np.asarray(-1.0, dtype), np.asarray(0.0, dtype))
  u = _uniform(key, lo, np.asarray(1.0, dtype), shape, dtype)
  return binary.mul(np.asarray(np.sqrt(2), dtype), unary.erf_inv(u))



# --- truncated_normal ----------------------------------------------------------------------------
def truncated_normal(key, lower, upper, shape=None, dtype=None, *, out_sharding=None):
  """Standard normal values truncated to the open interval (lower, upper).

  Args:
    key: a PRNG key.
    lower, upper: float bounds (arrays broadcast together).
    shape: the result shape; must be broadcast-compatible with the bounds (default: their
      broadcast shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype` with values in (lower, upper).

  Example:
    >>> key = revax.random.key(0)
    >>> revax.random.truncated_normal(key, -2.0, 2.0, (3,))
    Array([ 1.4559592 ,  1.7147487 , -0.41267535], dtype=float32)
  """
  if shape is not None:
    shape = canonicalize_shape(shape, "truncated_normal")
  data, _ = check_prng_key("truncated_normal", key)
  dtype = _float_dtype("truncated_normal", dtype)
  _check_arraylike("truncated_normal", lower, upper)
  if shape is None:
    shape = jnp_util.broadcast_shapes(_shape_of(lower), _shape_of(upper))
  else:
    _check_shape("truncated_normal", shape, _shape_of(lower), _shape_of(upper))
  return placed(_truncated_normal(data, lower, upper, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(3, 4))
def _truncated_normal(key, lower, upper, shape, dtype):
  sqrt2 = np.asarray(np.sqrt(2), dtype)
  lower = conversion.convert_element_type(lower, dtype)
  upper = conversion.convert_element_type(upper, dtype)
  a = unary.erf(binary.div(lower, sqrt2))
  b = unary.erf(binary.div(upper, sqrt2))
  u = prng.uniform_floats(key, shape, dtype, a, b)
  out = binary.mul(sqrt2, prng.sampler_erf_inv(u))
  # Clamp into the open interval: rounding (or u == a) must not reach the bounds.
  out = binary.max(binary.nextafter(lower, np.asarray(np.inf, dtype)), out)
  return binary.min(binary.nextafter(upper, np.asarray(-np.inf, dtype)), out)



# --- bernoulli -----------------------------------------------------------------------------------
def bernoulli(key, p=0.5, shape=None, mode="low", *, out_sharding=None):
  """Bernoulli random booleans with mean `p`.

  Args:
    key: a PRNG key.
    p: float probability (array broadcast-compatible with `shape`; default 0.5).
    shape: the result shape (default: p's shape).
    mode: "low" (one uniform draw, resolution 2**-mantissa bits) or "high" (two draws, for
      tiny p).

  Returns:
    A bool array of `shape`.

  Example:
    >>> key = revax.random.key(0)
    >>> revax.random.bernoulli(key, 0.3, (5,))
    Array([False, False, False, False, False], dtype=bool)
  """
  if shape is not None:
    shape = canonicalize_shape(shape, "bernoulli")
  if mode not in ("high", "low"):
    raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
  keys = _sampler_key("bernoulli", key)
  _check_arraylike("bernoulli", p)
  dtype = get_aval(p).dtype
  if not dtypes.is_float(dtype):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  p = conversion.convert_element_type(p, dtype)
  if shape is None:
    shape = _shape_of(p)
  else:
    _check_shape("bernoulli", shape, _shape_of(p))
  return placed(_bernoulli(keys, p, shape, mode), out_sharding)


@functools.partial(jit, static_argnums=(2, 3))
def _bernoulli(key, p, shape, mode):
  dtype = get_aval(p).dtype
  if mode == "high":
    both = prng.uniform_floats(key, (2, *shape), dtype)
    u1, u2 = (shapes.reshape(slicing.slice(both, (i,) + (0,) * len(shape), (i + 1, *shape)),
                             shape) for i in (0, 1))
    u2 = binary.mul(u2, np.asarray(2.0 ** -dtypes.finfo(dtype).nmant, dtype))
    return comparison.lt(u2, binary.sub(p, u1))
  return comparison.lt(_uniform(key, 0.0, 1.0, shape, dtype), p)



# --- exponential ---------------------------------------------------------------------------------
def exponential(key, shape=(), dtype=None, *, out_sharding=None):
  """Standard exponential random values (density e^-x on x >= 0).

  Args:
    key: a PRNG key.
    shape: the result shape (default ()).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = _key_dtype_shape("exponential", key, shape, dtype)
  return placed(_exponential(data, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(1, 2))
def _exponential(key, shape, dtype):
  return prng.exponential_floats(key, shape, dtype)


# --- categorical ---------------------------------------------------------------------------------
def _gumbel(key, shape, dtype, mode):
  """Standard Gumbel values, -log(-log(u)) (JAX's "low" and "high" modes)."""
  info = dtypes.finfo(dtype)
  if mode == "high":
    both = prng.uniform_floats(key, (2, *shape), dtype)
    high, low = (shapes.reshape(slicing.slice(both, (i,) + (0,) * len(shape), (i + 1, *shape)),
                                shape) for i in (0, 1))
    shifted = binary.add(binary.add(high, binary.mul(np.asarray(2.0 ** -info.nmant, dtype), low)),
                         np.asarray(info.tiny, dtype))
    x = comparison.select_n(comparison.ge(high, np.asarray(0.5, dtype)), shifted, high)
    return unary.neg(unary.log(unary.neg(prng.sampler_log1p(unary.neg(x)))))
  u = prng.uniform_floats(key, shape, dtype, np.asarray(info.tiny, dtype), np.asarray(1.0, dtype))
  return unary.neg(unary.log(unary.neg(unary.log(u))))


def _check_gumbel_mode(mode):
  if mode is None:
    return "low"
  if mode == "highest":
    raise NotImplementedError("mode='highest' (64-bit uniform draws for float32) is not "
                              "implemented in revax.random; use 'high'")
  if mode not in ("high", "low"):
    raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
  return mode


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None, *, out_sharding=None):
  """Samples from categorical distributions given unnormalized log-probabilities.

  With replacement it takes the argmax of logits plus Gumbel noise; without replacement the
  top k (the Gumbel top-k trick).

  Args:
    key: a PRNG key.
    logits: unnormalized log probabilities; `axis` indexes the categories.
    axis: the categories' axis (default -1).
    shape: the result shape, broadcast-compatible with logits' shape without `axis` (default:
      that shape).
    replace: sample with replacement (default True).
    mode: None or "low" (default), or "high": the Gumbel sampler's resolution.

  Returns:
    int32 indices (int64 with x64 enabled) of `shape`.

  Example:
    >>> key = revax.random.key(0)
    >>> revax.random.categorical(key, jnp.log(jnp.array([0.2, 0.8])), shape=(8,))
    Array([1, 1, 1, 1, 0, 0, 1, 1], dtype=int32)
  """
  data, _ = check_prng_key("categorical", key)
  _check_arraylike("categorical", logits)
  logits = jnp_util.as_array(logits)
  logits_shape = _shape_of(logits)
  if not logits_shape:
    raise ValueError("categorical requires logits with at least one dimension (the "
                     "categories)")
  axis = jnp_util.canonicalize_axis(axis, len(logits_shape)) - len(logits_shape)
  batch_shape = tuple(np.delete(np.asarray(logits_shape, np.int64), axis).tolist())
  if shape is None:
    shape = batch_shape
  else:
    shape = canonicalize_shape(shape, "categorical")
    _check_shape("categorical", shape, batch_shape)
  mode = _check_gumbel_mode(mode)
  if not replace:
    k = math.prod(shape[:len(shape) - len(batch_shape)])
    if k > logits_shape[axis]:
      raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                       f"categories ({logits_shape[axis]}).")
  out = _categorical(data, logits, shape, batch_shape, axis, bool(replace), mode)
  return placed(out, out_sharding)


@functools.partial(jit, static_argnums=(2, 3, 4, 5, 6))
def _categorical(key, logits, shape, batch_shape, axis, replace, mode):
  logits_shape = _shape_of(logits)
  dtype = get_aval(logits).dtype
  shape_prefix = shape[:len(shape) - len(batch_shape)]
  if replace:
    sample_shape = list(shape[len(shape) - len(batch_shape):])
    sample_shape.insert(axis % len(logits_shape), logits_shape[axis])
    noise = _gumbel(key, (*shape_prefix, *sample_shape), dtype, mode)
    expanded = shapes.expand_dims(logits, tuple(range(len(shape_prefix))))
    return jnp_reductions.argmax(binary.add(noise, expanded), axis=axis)
  logits = binary.add(logits, _gumbel(key, logits_shape, dtype, mode))
  k = math.prod(shape_prefix)
  _, indices = sorting.top_k(jnp_shape_ops.moveaxis(logits, axis, -1), k)
  ndim = get_aval(indices).ndim
  return shapes.reshape(indices, shape, (ndim - 1, *range(ndim - 1)))



# --- randint -------------------------------------------------------------------------------------
def randint(key, shape, minval, maxval, dtype=None, *, out_sharding=None):
  """Uniform random integers in [minval, maxval) (JAX's algorithm: 2 x nbits random bits per
  value reduced modulo the span; maxval <= minval gives minval).

  Args:
    key: a PRNG key.
    shape: the result shape.
    minval: inclusive lower bound(s), broadcast-compatible with `shape`.
    maxval: exclusive upper bound(s), broadcast-compatible with `shape`.
    dtype: an integer dtype (default int32, or int64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.

  Example:
    >>> key = revax.random.key(0)
    >>> revax.random.randint(key, (3,), 0, 10)
    Array([9, 0, 2], dtype=int32)
  """
  data, _ = check_prng_key("randint", key)
  dtype = _dtype(dtype, int)
  shape = canonicalize_shape(shape, "randint")
  if not dtypes.is_integer(dtype):
    raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  _check_arraylike("randint", minval, maxval)
  _check_shape("randint", shape, _shape_of(minval), _shape_of(maxval))
  info = dtypes.iinfo(dtype)
  if info.bits < 32:  # sampled in 32 bits (less biased), bounds clipped to the dtype's range
    i32 = np.dtype(np.int32)
    minval = _clip(conversion.convert_element_type(minval, i32), int(info.min), int(info.max))
    maxval = _clip(conversion.convert_element_type(maxval, i32), int(info.min),
                   int(info.max) + 1)
    out = _randint(data, minval, maxval, shape, i32)
    return placed(conversion.convert_element_type(out, dtype), out_sharding)
  return placed(_randint(data, minval, maxval, shape, dtype), out_sharding)


def _clip(x, lo, hi):
  dtype = get_aval(x).dtype
  return binary.min(binary.max(x, np.asarray(lo, dtype)), np.asarray(hi, dtype))


def _convert_and_clip_integer(val, dtype):
  """Integer `val` in integer `dtype`, clipped to its range (not wrapped)."""
  val_info, info = dtypes.iinfo(get_aval(val).dtype), dtypes.iinfo(dtype)
  return conversion.convert_element_type(
      _clip(val, max(int(info.min), int(val_info.min)), min(int(info.max), int(val_info.max))),
      dtype)


@functools.partial(jit, static_argnums=(3, 4))
def _randint(key, minval, maxval, shape, dtype):
  int_dtype = dtypes.default_int_dtype()
  if not dtypes.is_integer(get_aval(minval).dtype):
    minval = conversion.convert_element_type(minval, int_dtype)
  if not dtypes.is_integer(get_aval(maxval).dtype):
    maxval = conversion.convert_element_type(maxval, int_dtype)
  maxval_out_of_range = comparison.gt(
      maxval, _convert_and_clip_integer(np.asarray(dtypes.iinfo(dtype).max, dtype),
                                        get_aval(maxval).dtype))
  minval = shapes.broadcast_to_rank(_convert_and_clip_integer(minval, dtype), len(shape))
  maxval = shapes.broadcast_to_rank(_convert_and_clip_integer(maxval, dtype), len(shape))
  nbits = dtypes.iinfo(dtype).bits
  # bits from each of two split keys, one draw each
  higher_bits, lower_bits = (prng.random_bits(k, nbits, shape) for k in _split2(key))
  unsigned = _UINT_DTYPES[nbits]
  span = conversion.convert_element_type(binary.sub(maxval, minval), unsigned)
  one = np.asarray(1, unsigned)
  span = comparison.select_n(comparison.le(maxval, minval), span,
                             shapes.broadcast_in_dim(one, _shape_of(span), ()))
  # A maxval beyond the dtype's range makes the span one larger (wrapping to 0 at the full range,
  # where the remainders below leave the bits unchanged).
  wider = binary.bitwise_and(shapes.broadcast_to_rank(maxval_out_of_range, len(shape)),
                             comparison.gt(maxval, minval))
  span = comparison.select_n(wider, span, binary.add(span, one))
  multiplier = binary.rem(np.asarray(2 ** (nbits // 2), unsigned), span)
  multiplier = binary.rem(binary.mul(multiplier, multiplier), span)
  offset = binary.add(binary.mul(binary.rem(higher_bits, span), multiplier),
                      binary.rem(lower_bits, span))
  offset = binary.rem(offset, span)
  return binary.add(minval, conversion.convert_element_type(offset, dtype))



# --- permutation and choice ----------------------------------------------------------------------
def _concrete(x, fun_name: str, arg_name: str):
  """`x`'s concrete value (a traced value with a known one gives it); ConcretizationTypeError
  for a traced integer argument that has none."""
  if isinstance(x, Tracer) and x.to_concrete_value() is not None:
    x = x.to_concrete_value()
  if isinstance(x, Tracer):
    raise ConcretizationTypeError(
        f"{fun_name} requires a concrete integer for argument {arg_name!r}, got a "
        f"traced value {x.aval.str_short()}")
  return x


def _concrete_int(x, fun_name: str, arg_name: str) -> int:
  return int(np.asarray(_concrete(x, fun_name, arg_name)))


def permutation(key, x, axis=0, independent=False, *, out_sharding=None):
  """A random permutation of `arange(x)` (int x) or of an array along `axis`.

  Args:
    key: a PRNG key.
    x: an integer, or an array of at least one dimension.
    axis: the axis to shuffle (default 0).
    independent: shuffle each slice along `axis` independently (default False: one permutation
      applied to all).

  Returns:
    The shuffled array.

  Example:
    >>> key = revax.random.key(0)
    >>> revax.random.permutation(key, 5)
    Array([0, 1, 4, 3, 2], dtype=int32)
  """
  data, _ = check_prng_key("permutation", key)
  _check_arraylike("permutation", x)
  ndim = np.ndim(x)
  axis = jnp_util.canonicalize_axis(axis, ndim or 1)
  if not ndim:
    if not dtypes.is_integer(get_aval(x).dtype):
      raise TypeError("x must be an integer or at least 1-dimensional")
    r = _concrete_int(x, "permutation", "x")
    return placed(_shuffle(data, jnp_creation.arange(r), axis), out_sharding)
  x = jnp_util.as_array(x)
  if independent or ndim == 1:
    return placed(_shuffle(data, x, axis), out_sharding)
  ind = _shuffle(data, jnp_creation.arange(_shape_of(x)[axis]), 0)
  return placed(jnp_indexing.take(x, ind, axis, unique_indices=True), out_sharding)


@functools.partial(jit, static_argnums=(2,))
def _shuffle(key, x, axis):
  """Sort by fresh random 32-bit keys, repeated often enough that ties are negligible (the
  rounds JAX uses: ceil(3 ln(size) / ln(2**32 - 1)))."""
  size = get_aval(x).size
  rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
  for _ in range(rounds):
    key, subkey = _split2(key)
    sort_keys = prng.random_bits(subkey, 32, _shape_of(x))
    _, x = sorting.sort_key_val(sort_keys, x, axis)
  return x



def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
  """A random sample from `a` (an array, or arange(a) for an int).

  Args:
    key: a PRNG key.
    a: an array (sampled along `axis`) or an int n (sampled from arange(n)).
    shape: a sequence: the shape of the draws (default ()).
    replace: sample with replacement (default True).
    p: optional probabilities of the entries (1-D, length a.shape[axis]).
    axis: the axis of `a` to sample along (default 0).
    mode: the Gumbel sampler's mode for sampling with `p` without replacement.

  Returns:
    The samples: shape `shape` for an int `a`, else a.shape with `axis` replaced by `shape`.
  """
  data, _ = check_prng_key("choice", key)
  if not isinstance(shape, Sequence):
    raise TypeError(f"shape argument of revax.random.choice must be a sequence, got {shape}")
  shape = canonicalize_shape(shape, "choice")
  _check_arraylike("choice", a)
  arr = jnp_util.as_array(a)
  arr_shape = _shape_of(arr)
  if not arr_shape:
    n_inputs = _concrete_int(a, "choice", "a")
  else:
    axis = jnp_util.canonicalize_axis(axis, len(arr_shape))
    n_inputs = arr_shape[axis]
  n_draws = math.prod(shape)
  if n_draws == 0:
    return jnp_creation.zeros(shape, dtype=get_aval(arr).dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                     f"{n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(key, shape, 0, n_inputs)
      result = ind if not arr_shape else jnp_indexing.take(arr, ind, axis)
    else:
      perm = permutation(key, n_inputs if not arr_shape else arr, axis)
      result = _take_first(perm, n_draws, axis if arr_shape else 0)
  else:
    _check_arraylike("choice", p)
    p_arr = jnp_util.as_array(p)
    p_dtype = get_aval(p_arr).dtype
    if not dtypes.is_inexact(p_dtype):
      p_arr = conversion.convert_element_type(p_arr, dtypes.default_float_dtype())
    if _shape_of(p_arr) != (n_inputs,):
      raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]. p "
                       f"has shape {_shape_of(p_arr)} and a.shape[axis] is {n_inputs}.")
    if replace:
      ind = _choice_cumulative(data, p_arr, shape)
    else:
      ind = _choice_top_k(data, p_arr, n_draws, _check_gumbel_mode(mode))
    result = ind if not arr_shape else jnp_indexing.take(arr, ind, axis)
  out_shape = shape if not arr_shape else arr_shape[:axis] + shape + arr_shape[axis + 1:]
  return shapes.reshape(result, out_shape)


def _take_first(x, n, axis):
  shape = _shape_of(x)
  return slicing.slice(x, (0,) * len(shape), shape[:axis] + (n,) + shape[axis + 1:])


@functools.partial(jit, static_argnums=(2,))
def _choice_cumulative(key, p, shape):
  """Inverse-CDF sampling: the first index whose cumulative probability exceeds a uniform draw
  scaled by the total (JAX's searchsorted on the cumulative sum)."""
  dtype = get_aval(p).dtype
  p_cuml = sorting.cumsum(p, 0)
  n = _shape_of(p)[0]
  total = shapes.reshape(slicing.slice(p_cuml, (n - 1,), (n,)), ())
  r = binary.mul(total, binary.sub(np.asarray(1, dtype), prng.uniform_floats(key, shape, dtype)))
  below = comparison.lt(shapes.broadcast_in_dim(p_cuml, shape + (n,), (len(shape),)),
                        shapes.expand_dims(r, (len(shape),)))
  count = reductions.reduce_sum(conversion.convert_element_type(below, dtypes.default_int_dtype()),
                                (len(shape),))
  return count



@functools.partial(jit, static_argnums=(2, 3))
def _choice_top_k(key, p, n_draws, mode):
  dtype = get_aval(p).dtype
  g = binary.add(_gumbel(key, _shape_of(p), dtype, mode), unary.log(p))
  _, ind = sorting.top_k(g, n_draws)
  return conversion.convert_element_type(ind, dtypes.default_int_dtype())



# --- the gamma family ----------------------------------------------------------------------------
def _gamma(key, a, shape, dtype, log_space):
  a_shape = _shape_of(a)
  if shape is None:
    shape = a_shape
  else:
    _check_shape("loggamma" if log_space else "gamma", shape, a_shape)
  a = conversion.convert_element_type(a, dtype)
  if a_shape != shape:
    a = jnp_util.broadcast_to(a, shape)
  return prng.random_gamma(key, a, log_space=log_space)


def gamma(key, a, shape=None, dtype=None, *, out_sharding=None):
  """Standard gamma random values (density proportional to x^(a-1) e^-x), differentiable in
  `a` by implicit reparameterization.

  Args:
    key: a PRNG key.
    a: float shape parameter(s) (a > 0), broadcast-compatible with `shape`.
    shape: the result shape (default: a's shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.

  Example:
    >>> key = revax.random.key(0)
    >>> revax.random.gamma(key, 2.0, (3,))
    Array([1.5897877, 1.7599413, 1.1290071], dtype=float32)
  """
  data, _ = check_prng_key("gamma", key)
  dtype = _float_dtype("gamma", dtype)
  _check_arraylike("gamma", a)
  if shape is not None:
    shape = canonicalize_shape(shape, "gamma")
  return placed(_gamma(data, a, shape, dtype, log_space=False), out_sharding)


def loggamma(key, a, shape=None, dtype=None, *, out_sharding=None):
  """The logarithm of standard gamma random values, sampled in log space (accurate for small
  `a`, whose samples underflow); `exp(loggamma(...))` matches `gamma(...)`.

  Args:
    key: a PRNG key.
    a: float shape parameter(s), broadcast-compatible with `shape`.
    shape: the result shape (default: a's shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, _ = check_prng_key("loggamma", key)
  dtype = _float_dtype("gamma", dtype)
  _check_arraylike("loggamma", a)
  if shape is not None:
    shape = canonicalize_shape(shape, "loggamma")
  return placed(_gamma(data, a, shape, dtype, log_space=True), out_sharding)


def beta(key, a, b, shape=None, dtype=None, *, out_sharding=None):
  """Beta random values: G_a / (G_a + G_b) for gamma draws, computed from log-gamma draws.

  Args:
    key: a PRNG key.
    a, b: float parameters, broadcast together and with `shape`.
    shape: the result shape (default: the broadcast shape of a and b).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype` in [0, 1].
  """
  data, _ = check_prng_key("beta", key)
  dtype = _float_dtype("beta", dtype)
  _check_arraylike("beta", a, b)
  for x in (a, b):
    if dtypes.is_complex(get_aval(x).dtype):
      raise TypeError(f"In arguments to beta, cannot safely cast argument of type "
                      f"{get_aval(x).dtype} to {dtype}")
  shape = _check_broadcast_shapes("beta", shape, a, b)
  a = jnp_util.broadcast_to(conversion.convert_element_type(a, dtype), shape)
  b = jnp_util.broadcast_to(conversion.convert_element_type(b, dtype), shape)
  key_a, key_b = _split2(data)
  log_gamma_a = _gamma(key_a, a, shape, dtype, log_space=True)
  log_gamma_b = _gamma(key_b, b, shape, dtype, log_space=True)
  log_max = binary.max(log_gamma_a, log_gamma_b)
  gamma_a = unary.exp(binary.sub(log_gamma_a, log_max))
  gamma_b = unary.exp(binary.sub(log_gamma_b, log_max))
  return placed(binary.div(gamma_a, binary.add(gamma_a, gamma_b)), out_sharding)


def dirichlet(key, alpha, shape=None, dtype=None, *, out_sharding=None):
  """Dirichlet random values: normalized gamma draws (a softmax of log-gamma draws).

  Args:
    key: a PRNG key.
    alpha: concentrations, shape (..., n).
    shape: the batch shape of the result, broadcast-compatible with alpha.shape[:-1] (default:
      alpha.shape[:-1]).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of shape `shape + (n,)` whose last axis sums to 1.
  """
  data, _ = check_prng_key("dirichlet", key)
  dtype = _float_dtype("dirichlet", dtype)
  _check_arraylike("dirichlet", alpha)
  alpha_shape = _shape_of(alpha)
  if not alpha_shape:
    raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(alpha_shape)}")
  if shape is None:
    shape = alpha_shape[:-1]
  else:
    shape = canonicalize_shape(shape, "dirichlet")
    _check_shape("dirichlet", shape, alpha_shape[:-1])
  alpha = conversion.convert_element_type(alpha, dtype)
  log_samples = _gamma(data, alpha, shape + alpha_shape[-1:], dtype, log_space=True)
  last = len(shape)
  shifted = binary.sub(log_samples, shapes.expand_dims(reductions.reduce_max(log_samples, (last,)),
                                                       (last,)))
  unnormalized = unary.exp(shifted)
  total = shapes.expand_dims(reductions.reduce_sum(unnormalized, (last,)), (last,))
  return placed(binary.div(unnormalized, total), out_sharding)
