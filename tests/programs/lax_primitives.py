"""The jax.lax operators a user reaches for when jnp is not enough: dot_general with dimension
numbers, reduce with a custom computation, pad with interior/negative padding, bit operations,
sorting several operands, cumulative reductions, precision control and shape helpers."""
import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

x = jnp.arange(24.0).reshape(2, 3, 4)
y = jnp.arange(24.0).reshape(2, 4, 3)
print("dot_general batch:", lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))).shape)
print("dot_general contract two:", lax.dot_general(x, x, (((1, 2), (1, 2)), ((), ()))))
print("dot_general preferred:", lax.dot_general(jnp.ones((2, 2), jnp.int8), jnp.ones((2, 2), jnp.int8),
                                                (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32).dtype)
print("dot precision:", lax.dot(jnp.ones((2, 3)), jnp.ones(3), precision=lax.Precision.HIGHEST))
print("batch_matmul:", lax.batch_matmul(x, y)[1, 0])
print("reduce max:", lax.reduce(x, -jnp.inf, lax.max, (0, 2)))
print("reduce pytree:", lax.reduce((x, jnp.ones_like(x)), (0.0, 0.0), lambda a, b: (a[0] + b[0], a[1] + b[1]), (2,)))
print("reduce_precision:", lax.reduce_precision(jnp.float32(1.0 / 3.0), exponent_bits=5, mantissa_bits=10))
print("pad interior:", lax.pad(jnp.arange(1, 4), 0, [(1, 2, 1)]))
print("pad negative:", lax.pad(jnp.arange(6.0).reshape(2, 3), -1.0, [(0, 0, 0), (-1, 1, 0)]))
print("rev/clamp:", lax.rev(jnp.arange(4), (0,)), lax.clamp(0.0, jnp.array([-1.0, 0.5, 2.0]), 1.0))
u = jnp.array([1, 2, 255, 1024], jnp.uint32)
print("bits:", lax.population_count(u), lax.clz(u), lax.shift_left(u, jnp.uint32(3)), lax.shift_right_logical(u, jnp.uint32(1)))
print("shift_right_arithmetic:", lax.shift_right_arithmetic(jnp.array([-8, 8]), jnp.array([1, 2])))
print("bitwise:", lax.bitwise_and(jnp.array(12), 10), lax.bitwise_or(12, jnp.array(3)), lax.bitwise_xor(jnp.array(5), 1), lax.bitwise_not(jnp.array(0, jnp.uint8)))
print("bitcast:", lax.bitcast_convert_type(jnp.float32(1.0), jnp.int32), lax.bitcast_convert_type(jnp.array([1.0], jnp.float32), jnp.uint16).shape)
print("convert:", lax.convert_element_type(jnp.array([1.7, -1.7]), jnp.int32), lax.convert_element_type(3, jnp.float32))
keys = jnp.array([3, 1, 2, 1])
vals = jnp.array([10.0, 20.0, 30.0, 40.0])
print("sort multiple:", lax.sort((keys, vals), num_keys=1))
print("sort_key_val:", lax.sort_key_val(keys, vals))
print("sort dimension:", lax.sort(jnp.array([[3, 1], [0, 2]]), dimension=0))
print("top_k:", lax.top_k(vals, 2))
print("cumulative:", lax.cumsum(vals), lax.cumprod(vals, reverse=True), lax.cummin(vals), lax.cumlogsumexp(jnp.zeros(3)))
print("associative_scan pytree:", lax.associative_scan(lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])), (vals, keys)))
print("integer_pow / pow:", lax.integer_pow(jnp.arange(4.0), 3), lax.pow(2.0, jnp.arange(3.0)))
print("special:", lax.erf_inv(0.5), lax.lgamma(4.5), lax.digamma(2.0), lax.igamma(2.0, 1.0), lax.bessel_i1e(1.0))
print("nextafter:", lax.nextafter(jnp.float32(1.0), jnp.float32(2.0)) - 1.0)
print("rem/div ints:", lax.rem(jnp.array(-7), jnp.array(3)), lax.div(jnp.array(-7), jnp.array(2)))
print("atan2/complex:", lax.atan2(1.0, -1.0), lax.complex(1.0, 2.0), lax.conj(lax.complex(1.0, 2.0)))
print("iota:", lax.iota(jnp.int32, 4), lax.broadcasted_iota(jnp.float32, (2, 3), 1))
print("shapes:", lax.expand_dims(jnp.ones(3), (0, 2)).shape, lax.squeeze(jnp.ones((1, 3, 1)), (0, 2)).shape,
      lax.collapse(x, 0, 2).shape, lax.broadcast(jnp.ones(2), (3,)).shape, lax.broadcast_in_dim(jnp.ones(2), (3, 2), (1,)).shape)
print("reshape dimensions:", lax.reshape(jnp.arange(6).reshape(2, 3), (3, 2), dimensions=(1, 0)))
print("transpose:", lax.transpose(x, (2, 0, 1)).shape)
print("concatenate:", lax.concatenate([jnp.ones(2), jnp.zeros(1)], 0))
print("slice strided:", lax.slice(jnp.arange(10), (1,), (9,), (3,)), lax.slice_in_dim(x, 1, 3, axis=2).shape)
print("dynamic_slice_in_dim:", lax.dynamic_slice_in_dim(jnp.arange(10), 7, 4), lax.dynamic_index_in_dim(x, 1, 1, keepdims=False).shape)
print("dynamic_update_index:", lax.dynamic_update_index_in_dim(jnp.zeros((3, 2)), jnp.ones(2), 1, 0))
print("select_n / clamp grad:", jax.grad(lambda t: lax.clamp(0.0, t, 1.0))(0.5), jax.grad(lambda t: lax.clamp(0.0, t, 1.0))(2.0))
print("stop_gradient in lax:", jax.grad(lambda t: t * lax.stop_gradient(t))(2.0))
print("reduce_and/or:", lax.reduce_and(jnp.array([True, False]), (0,)), lax.reduce_or(jnp.array([True, False]), (0,)), lax.reduce_xor(jnp.array([1, 3]), (0,)))
print("argmin/argmax:", lax.argmax(jnp.array([1.0, 3.0, 3.0]), 0, jnp.int32), lax.argmin(jnp.array([[2, 1], [0, 5]]), 1, jnp.int32))
print("population in jit:", jax.jit(lambda a: lax.population_count(a).sum())(jnp.arange(8, dtype=jnp.uint8)))
print("reduce_window sum:", lax.reduce_window(jnp.arange(6.0), 0.0, lax.add, (3,), (1,), "VALID"))
print("approx_max_k:", lax.approx_max_k(vals, 2)[0])
print("full/full_like:", lax.full((2,), 7, jnp.int16), lax.full_like(vals, 1, shape=(1, 2)))
print("is_finite/exp2/logistic:", lax.is_finite(jnp.array([1.0, jnp.inf])), lax.exp2(3.0), lax.logistic(0.0))
print("cbrt/rsqrt/tan:", lax.cbrt(-8.0), lax.rsqrt(4.0), lax.tan(0.5))
print("numpy inputs:", lax.add(np.float32(1), np.float32(2)), lax.neg(np.arange(3)))
try:
  lax.add(jnp.float32(1), jnp.int32(1))
except TypeError as e:
  print("lax does not promote:", type(e).__name__)
try:
  lax.dot_general(x, y, (((2,), (2,)), ((0,), (0,))))
except TypeError as e:
  print("contracting size mismatch:", type(e).__name__)
