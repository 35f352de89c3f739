"""The "JAX sharp bits" tutorial as a user works through it: pure functions and jit caching,
immutable arrays, out-of-bounds indexing, non-array inputs, random keys, dtypes and NaN
debugging."""
import contextlib
import io

import jax
import jax.numpy as jnp
import numpy as np

g = 0.0


def impure_uses_globals(x):
  return x + g


print("first call:", jax.jit(impure_uses_globals)(4.0))
g = 10.0
print("cached, stale global:", jax.jit(impure_uses_globals)(4.0))
print("new shape retraces:", jax.jit(impure_uses_globals)(jnp.array([4.0])))


def pure_uses_internal_state(x):
  state = dict(even=0, odd=0)
  for i in range(10):
    state["even" if i % 2 == 0 else "odd"] += x
  return state["even"] + state["odd"]


print("internal state ok:", jax.jit(pure_uses_internal_state)(5.0))

# arrays are immutable: in-place assignment is a TypeError, .at[] returns a copy
jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
try:
  jax_array[1, :] = 1.0
except TypeError as e:
  print("in-place update:", type(e).__name__)
updated = jax_array.at[1, :].set(1.0)
print("original unchanged:", jax_array.sum(), "updated:", updated.sum())
print("at add / mul / power:", jnp.ones((2, 2)).at[::1, 1:].add(7.0).at[0].multiply(2.0).at[1, 1].power(2))

# out-of-bounds: gathers clamp, scatters drop
print("oob gather clamps:", jnp.arange(10)[11], jnp.arange(10.0).at[11].get())
print("oob scatter dropped:", jnp.arange(10.0).at[11].set(23.0))
print("oob fill:", jnp.arange(10.0).at[11].get(mode="fill", fill_value=jnp.nan))
print("negative indices wrap:", jnp.arange(5)[-1], jnp.arange(5).at[-1].set(9))
print("dynamic oob in jit:", jax.jit(lambda a, i: a[i])(jnp.arange(4), 7))
print("oob slices clip:", jnp.arange(5)[3:100], jnp.arange(5)[-100:2])

# non-array inputs
print("np sum of list:", np.sum([1, 2, 3]))
try:
  jnp.sum([1, 2, 3])
except TypeError as e:
  print("jnp.sum(list):", type(e).__name__)
print("jnp.sum of jnp.array(list):", jnp.sum(jnp.array([1, 2, 3])))
print("jnp.array of nested list:", repr(jnp.array([[1, 2.5], [3, 4]])))
print("jnp.array of arrays:", repr(jnp.array([jnp.float32(1), jnp.arange(2.0)[1]])))
print("asarray tuple:", repr(jnp.asarray((1, 2, 3), dtype=jnp.int8)))
try:
  jnp.add([1.0], 1.0)
except TypeError as e:
  print("jnp.add(list):", type(e).__name__)

# random numbers: explicit keys, never reuse
key = jax.random.PRNGKey(0)
print("same key same numbers:", jax.random.normal(key, (1,)), jax.random.normal(key, (1,)))
key, subkey = jax.random.split(key)
print("after split:", jax.random.normal(subkey, (1,)))
key, *subkeys = jax.random.split(key, 4)
print("unpacked subkeys:", len(subkeys), subkeys[0].shape, subkeys[0].dtype)
print("split in two ways:", jax.random.split(key, 3)[0], jax.random.split(key)[0])
np.random.seed(0)
print("numpy rng:", np.random.random() < 1.0)

# control flow: python control flow on static values traces fine, on traced values fails
def f(x, n):
  y = 0.0
  for i in range(n):
    y = y + x[i]
  return y


print("static_argnums loop:", jax.jit(f, static_argnums=1)(jnp.arange(5.0), 3))
try:
  jax.jit(f)(jnp.arange(5.0), 3)
except jax.errors.TracerIntegerConversionError as e:
  print("traced range bound:", type(e).__name__, isinstance(e, TypeError))
try:
  jax.jit(lambda x: jnp.arange(x))(3)
except jax.errors.ConcretizationTypeError as e:
  print("arange of tracer:", type(e).__name__, isinstance(e, TypeError))
try:
  jax.jit(lambda x: x[x > 0])(jnp.arange(-2, 3))
except jax.errors.NonConcreteBooleanIndexError as e:
  print("boolean mask under jit:", type(e).__name__, isinstance(e, IndexError))
print("where instead:", jax.jit(lambda x: jnp.where(x > 0, x, 0).sum())(jnp.arange(-2, 3)))

# dtypes: 64-bit is off by default
x = jax.random.uniform(jax.random.PRNGKey(0), (1000,), dtype=jnp.float64)
print("asked float64, got:", x.dtype)
print("default dtypes:", jnp.zeros(1).dtype, jnp.arange(3).dtype, jnp.array(1.5).dtype, jnp.array(2**31 - 1).dtype)
print("numpy float64 input:", jnp.asarray(np.ones(2)).dtype, jnp.asarray(np.arange(2, dtype=np.int64)).dtype)
try:
  jnp.array(2 ** 40)
except OverflowError as e:
  print("python int too large:", type(e).__name__)
print("division by zero:", jnp.divide(1.0, 0.0), jnp.array(0.0) / 0.0)

# NaN debugging (jax also prints a note on stdout when it re-runs a jitted function op by op;
# keep it out of this output)
def error_name(fn, *args):
  with contextlib.redirect_stdout(io.StringIO()):
    try:
      fn(*args)
    except FloatingPointError as e:
      return type(e).__name__
  return "no error"


print("debug_nans default:", jax.config.jax_debug_nans)
jax.config.update("jax_debug_nans", True)
print("no nan, no error:", jnp.log(jnp.array(2.0)))
print("debug_nans in jit:", error_name(jax.jit(lambda t: jnp.log(t) * 0.0 + jnp.sqrt(t)), -1.0))
print("debug_nans eager:", error_name(jnp.divide, 0.0, 0.0))
print("debug_nans under grad:", error_name(jax.grad(lambda t: jnp.sqrt(t)), 0.0))
print("clean under jit:", error_name(jax.jit(jnp.exp), 1.0))
jax.config.update("jax_debug_nans", False)
print("restored:", jax.config.jax_debug_nans, jnp.divide(0.0, 0.0))
with jax.debug_nans(True):
  print("context manager:", error_name(jnp.sqrt, jnp.array(-4.0)))
print("after context:", jnp.sqrt(jnp.array(-4.0)), jax.config.jax_debug_nans)
jax.config.update("jax_debug_infs", True)
print("debug_infs:", error_name(lambda: jnp.log(0.0)), error_name(lambda: jnp.log(-1.0)))
jax.config.update("jax_debug_infs", False)
