"""More of jax.nn's functions: log1mexp, logmeanexp, sparse_plus, sparse_sigmoid, tanh, and
dot_product_attention (the XLA formulation: scaled dot-product scores, masks, softmax in
float32, weighted sum of values; grouped-query attention when there are fewer key/value heads
than query heads)."""
from __future__ import annotations

import functools

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.jit import jit
from revax._src.lax.stop_gradient import stop_gradient
from revax._src.nn.functions import logsumexp, softmax
from revax._src.numpy import contractions, creation, reductions, shape_ops, ufuncs
from revax._src.numpy.util import check_arraylike, promote_args_inexact


def log1mexp(x):
  """log(1 - exp(-x)), accurate for small and large x (for x > 0).

  Args:
    x: input array.

  Returns:
    An array of x's shape (NaN for x < 0, -inf at 0).
  """
  check_arraylike("log1mexp", x)
  (x,) = promote_args_inexact("log1mexp", x)
  return _log1mexp(x)


@jit
def _log1mexp(x):
  small = ufuncs.less(x, np.log(2.0))
  return ufuncs.where(small, ufuncs.log(ufuncs.negative(ufuncs.expm1(ufuncs.negative(x)))),
                      ufuncs.log1p(ufuncs.negative(ufuncs.exp(ufuncs.negative(x)))))


def logmeanexp(x, axis=None, where=None, keepdims=False):
  """log(mean(exp(x))) over `axis`, computed stably.

  Args:
    x: input array.
    axis: the axis or axes to reduce (None: all).
    where: optional mask of the elements to include.
    keepdims: keep the reduced axes as size-1 dimensions.

  Returns:
    The reduced array.
  """
  lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
  dtype = get_aval(lse).dtype
  ones = creation.ones_like(x, dtype=dtype)
  count = reductions.sum(ones, axis=axis, keepdims=keepdims, where=where)
  return ufuncs.subtract(lse, ufuncs.log(count))


def sparse_plus(x):
  """The sparse-plus activation: 0 for x <= -1, x for x >= 1, (x + 1)^2 / 4 between.

  Args:
    x: input array.

  Returns:
    An array of x's shape.
  """
  check_arraylike("sparse_plus", x)
  return _sparse_plus(x)


@jit
def _sparse_plus(x):
  middle = ufuncs.divide(ufuncs.square(ufuncs.add(x, 1.0)), 4)
  return ufuncs.where(ufuncs.less_equal(x, -1.0), 0.0,
                      ufuncs.where(ufuncs.greater_equal(x, 1.0), x, middle))


def sparse_sigmoid(x):
  """The sparse sigmoid: (clip(x, -1, 1) + 1) / 2, the derivative of sparse_plus.

  Args:
    x: input array.

  Returns:
    An array of x's shape.
  """
  check_arraylike("sparse_sigmoid", x)
  return ufuncs.multiply(0.5, ufuncs.clip(ufuncs.add(x, 1.0), 0.0, 2.0))


def tanh(x):
  """The hyperbolic tangent activation (jax.nn.tanh is jax.numpy.tanh)."""
  return ufuncs.tanh(x)


# --- attention -----------------------------------------------------------------------------------
def _as_4d(x):
  x = creation.asarray(x)
  missing = 4 - x.ndim
  return shape_ops.expand_dims(x, tuple(range(missing))) if missing > 0 else x


def _check(t, shape, dtype, name):
  if t is None:
    return
  if t.ndim != len(shape):
    raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
  if dtype is not None and t.dtype != dtype:
    raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
  if any(want != -1 and got != want for got, want in zip(t.shape, shape, strict=True)):
    raise ValueError(f"{name} shape should be {list(shape)}: but got {t.shape}")


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size=None, implementation=None, return_residual=False):
  """Scaled dot-product attention: softmax(q k^T * scale + bias, masked) v.

  Args:
    query: (B, T, N, H) queries (or without the batch axis: (T, N, H)).
    key: (B, S, K, H) keys; N must be a multiple of K (grouped-query attention).
    value: (B, S, K, H) values.
    bias: optional bias added to the scores, broadcastable to (B, N, T, S).
    mask: optional boolean mask of the allowed scores, broadcastable to (B, N, T, S).
    scale: the scores' scale (default 1 / sqrt(H)).
    is_causal: apply a causal mask (query t sees keys s <= t).
    query_seq_lengths: optional int32 (B,) valid query lengths (rows beyond are zeroed).
    key_value_seq_lengths: optional int32 (B,) valid key lengths.
    local_window_size: optional int or (left, right): each query sees keys within the window.
    implementation: None or "xla" (revax has no cuDNN kernel: "cudnn" is a ValueError).
    return_residual: also return the log-sum-exp of the scores, shape (B, T, N).

  Returns:
    The attended values, shaped like `query` (and the residual if asked for).
  """
  if implementation not in (None, "xla"):
    if implementation == "cudnn":
      raise ValueError("implementation='cudnn' needs a CUDA GPU and cuDNN; revax runs the 'xla' "
                       "formulation")
    raise ValueError(f"Unsupported implementation option: {implementation}")
  out_shape = creation.asarray(query).shape
  q, k, v = _as_4d(query), _as_4d(key), _as_4d(value)
  bias = _as_4d(bias) if bias is not None else None
  mask = _as_4d(mask) if mask is not None else None
  q_len = creation.asarray(query_seq_lengths) if query_seq_lengths is not None else None
  kv_len = creation.asarray(key_value_seq_lengths) if key_value_seq_lengths is not None else None
  if isinstance(local_window_size, int):
    local_window_size = (local_window_size, local_window_size)
  B, S, K, H = k.shape
  _check(v, [B, S, K, H], k.dtype, "value")
  _check(q, [B, -1, -1, H], k.dtype, "query")
  _check(mask, [-1] * 4, np.dtype(bool), "mask")
  _check(bias, [-1] * 4, None, "bias")
  _check(q_len, [B], np.dtype(np.int32), "query_seq_lengths")
  _check(kv_len, [B], np.dtype(np.int32), "key_value_seq_lengths")
  if q.shape[-2] % K != 0:
    raise ValueError(f"The number of query heads must be a multiple of key/value heads, but got "
                     f"{q.shape[-2]} vs {K}")
  scale = float(1.0 / np.sqrt(H)) if scale is None else scale
  out, lse = _attention(q, k, v, bias, mask, q_len, kv_len, scale=scale, is_causal=is_causal,
                        window=local_window_size)
  out = shape_ops.reshape(out, out_shape)
  if return_residual:
    return out, shape_ops.reshape(lse, out_shape[:-1])
  return out


@functools.partial(jit, static_argnames=("scale", "is_causal", "window"))
def _attention(q, k, v, bias, mask, q_len, kv_len, *, scale, is_causal, window):
  B, T, N, H = q.shape
  S, K = k.shape[1], k.shape[2]
  G = N // K
  # key/value head j serves query heads j*G .. j*G+G-1: repeat them up to N heads
  if G > 1:
    k = shape_ops.reshape(shape_ops.broadcast_to(k[:, :, :, None, :], (B, S, K, G, H)),
                          (B, S, N, H))
    v = shape_ops.reshape(shape_ops.broadcast_to(v[:, :, :, None, :], (B, S, K, G, H)),
                          (B, S, N, H))
  logits_dtype = dtypes.promote_types(q.dtype, np.float32)
  logits = contractions.einsum("BTNH,BSNH->BNTS", q, k, preferred_element_type=logits_dtype)
  logits = ufuncs.multiply(logits, creation.asarray(scale, dtype=logits.dtype))
  if bias is not None:
    logits = ufuncs.add(logits, bias).astype(logits.dtype)
  allowed = None

  def both(a, b):
    return b if a is None else ufuncs.logical_and(a, b)

  if mask is not None:
    allowed = both(allowed, mask)
  t_pos = creation.arange(T)[:, None]
  s_pos = creation.arange(S)[None, :]
  if is_causal:
    allowed = both(allowed, ufuncs.greater_equal(t_pos, s_pos)[None, None])
  if window is not None:
    left, right = window
    inside = ufuncs.logical_and(ufuncs.less_equal(t_pos, ufuncs.add(s_pos, left)),
                                ufuncs.greater_equal(t_pos, ufuncs.subtract(s_pos, right)))
    allowed = both(allowed, inside[None, None])
  if q_len is not None or kv_len is not None:
    pad = True
    if q_len is not None:
      pad = ufuncs.less(creation.arange(T)[None, :, None], q_len[:, None, None])
    if kv_len is not None:
      pad = ufuncs.logical_and(pad, ufuncs.less(creation.arange(S)[None, None, :],
                                                kv_len[:, None, None]))
    allowed = both(allowed, pad[:, None])
  if allowed is not None:
    big_negative = -0.7 * min(float(dtypes.finfo(logits.dtype).max),
                              float(dtypes.finfo(np.float32).max))
    logits = ufuncs.where(allowed, logits, creation.asarray(big_negative, dtype=logits.dtype))
  logits = logits.astype(np.float32)
  probs = softmax(logits, axis=-1).astype(k.dtype)
  out = contractions.einsum("BNTS,BSNH->BTNH", probs, v)
  if q_len is not None:
    valid = ufuncs.less(creation.arange(T)[None, :], q_len[:, None])[:, :, None, None]
    out = ufuncs.multiply(out, valid.astype(out.dtype))
  lse = shape_ops.transpose(logsumexp(logits, axis=-1).astype(k.dtype), (0, 2, 1))
  return out, stop_gradient(lse)
