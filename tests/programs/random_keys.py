"""jax.random: typed and raw keys, splitting, folding, and the common samplers."""
import jax
import jax.numpy as jnp
import numpy as np

key = jax.random.key(2024)
print("typed key:", key)
print("key dtype:", key.dtype, key.shape, jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key))
print("key data:", jax.random.key_data(key))
raw = jax.random.PRNGKey(2024)
print("raw key:", raw, raw.dtype)
print("wrap:", jax.random.key_data(jax.random.wrap_key_data(raw)))
keys = jax.random.split(key, 3)
print("split shape:", keys.shape, keys.dtype)
print("split data:", jax.random.key_data(keys))
print("fold_in:", jax.random.key_data(jax.random.fold_in(key, 7)))
print("raw split:", jax.random.split(raw))
print("clone:", jax.random.key_data(jax.random.clone(key)))
print("key impl:", jax.random.key_impl(key))

k = keys[0]
print("uniform:", jax.random.uniform(k, (3,)))
print("uniform range:", jax.random.uniform(k, (2,), minval=-1.0, maxval=5.0))
print("normal:", jax.random.normal(k, (2, 2)))
print("randint:", jax.random.randint(k, (6,), 0, 10))
print("bernoulli:", jax.random.bernoulli(k, 0.3, (6,)))
logits = jnp.log(jnp.array([0.1, 0.2, 0.7]))
print("categorical:", jax.random.categorical(k, logits, shape=(8,)))
print("categorical batch:", jax.random.categorical(k, jnp.zeros((3, 4)), axis=-1))
print("permutation:", jax.random.permutation(k, 8))
print("permutation array:", jax.random.permutation(k, jnp.arange(6).reshape(3, 2), axis=0))
print("permutation independent:", jax.random.permutation(k, jnp.arange(6).reshape(2, 3), axis=1, independent=True))
print("choice:", jax.random.choice(k, 10, (4,), replace=False))
print("choice p:", jax.random.choice(k, jnp.array([10, 20, 30]), (5,), p=jnp.array([0.1, 0.1, 0.8])))
print("shuffle via permutation:", jnp.arange(5)[jax.random.permutation(k, 5)])
print("truncated_normal:", jax.random.truncated_normal(k, -1.0, 1.0, (3,)))
print("gumbel:", jax.random.gumbel(k, (2,)))
print("exponential:", jax.random.exponential(k, (2,)))
print("gamma:", jax.random.gamma(k, 2.0, (3,)))
print("beta:", jax.random.beta(k, 2.0, 3.0, (2,)))
print("dirichlet:", jax.random.dirichlet(k, jnp.ones(3)))
print("poisson:", jax.random.poisson(k, 3.0, (4,)))
print("laplace/logistic:", jax.random.laplace(k, (2,)), jax.random.logistic(k, (2,)))
print("t/cauchy:", jax.random.t(k, 3.0, (2,)), jax.random.cauchy(k, (2,)))
print("rademacher:", jax.random.rademacher(k, (5,)))
print("orthogonal:", jax.random.orthogonal(k, 3))
print("bits:", jax.random.bits(k, (3,)), jax.random.bits(k, (2,), jnp.uint8))
print("ball:", jax.random.ball(k, 2, shape=(2,)))
print("float16 normal:", jax.random.normal(k, (3,), dtype=jnp.float16))

# keys inside jit and vmap, and a pattern that threads a key through a loop
@jax.jit
def noisy(key, x):
  k1, k2 = jax.random.split(key)
  return x + jax.random.normal(k1, x.shape), k2


x, key = noisy(key, jnp.zeros(2))
x, key = noisy(key, x)
print("threaded:", x)
print("vmap over keys:", jax.vmap(lambda k: jax.random.uniform(k))(jax.random.split(jax.random.key(0), 4)))
print("numpy of key data:", np.asarray(jax.random.key_data(jax.random.key(1))).tolist())
print("keys equal:", bool(jax.random.key(3) == jax.random.key(3)))
try:
  jax.random.key(0) + 1
except TypeError:
  print("TypeError for key arithmetic")
