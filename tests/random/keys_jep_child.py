"""The typed-keys JEP (9263: `jax.random.key` and typed key arrays next to raw uint32 keys:
dtypes, key_data/wrap_key_data, splitting, indexing and shaping, transformations, the errors of
arithmetic on keys, implementations) exercised in this suite's own words: run with `jax` or
`revax` as its argument, it prints one `name: result` line per step (test_keys_jep.py
compares)."""
import sys
import numpy as np
if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
R = lib.random

def show(name, fn):
  try:
    r = fn()
  except Exception as e:
    r = f"{type(e).__name__}: {e}"
  print(f"{name}: {r}".replace("\n", " | "))

def _raised(fn):
  try:
    fn()
  except Exception as e:  # noqa: BLE001 (the exception is the result)
    return e
  return None


raw = R.PRNGKey(7)
typed = R.key(7)
show("raw", lambda: (raw, raw.shape, raw.dtype))
show("typed repr", lambda: repr(typed))
show("typed str", lambda: str(typed))
show("typed shape dtype",
     lambda: (typed.shape, typed.dtype, typed.ndim, typed.size,
              typed.itemsize if hasattr(typed, "itemsize") else None))
show("dtype kind",
     lambda: (lib.dtypes.issubdtype(typed.dtype, lib.dtypes.prng_key),
              lib.dtypes.issubdtype(raw.dtype, lib.dtypes.prng_key),
              lnp.issubdtype(typed.dtype, lib.dtypes.extended)))
show("key_data", lambda: R.key_data(typed))
show("wrap", lambda: repr(R.wrap_key_data(raw)))
show("wrap roundtrip", lambda: bool((R.key_data(R.wrap_key_data(raw)) == raw).all()))
show("same draws", lambda: (R.uniform(raw, (3,)), R.uniform(typed, (3,))))
show("split typed", lambda: repr(R.split(typed)))
show("split raw", lambda: R.split(raw, 3))
show("split shape", lambda: (R.split(typed, 4).shape, R.split(typed, (2, 3)).shape))
show("fold_in", lambda: R.key_data(R.fold_in(typed, 3)))
keys = R.split(typed, 4)
show("index", lambda: repr(keys[1]))
show("slice", lambda: keys[1:3].shape)
show("reshape", lambda: keys.reshape(2, 2).shape)
show("T", lambda: R.split(typed, (2, 3)).T.shape)
show("stack", lambda: lnp.stack([typed, typed]).shape)
show("concat", lambda: lnp.concatenate([keys, keys]).shape)
show("where", lambda: repr(lnp.where(True, keys[0], keys[1])))
show("vmap draws", lambda: lib.vmap(lambda k: R.normal(k, (2,)))(keys))
show("vmap raw draws", lambda: lib.vmap(lambda k: R.normal(k, (2,)))(R.split(raw, 4)))
show("jit key", lambda: repr(lib.jit(lambda k: R.split(k)[0])(typed)))
show("jit key out shape", lambda: lib.jit(lambda k: R.split(k, 5))(typed).shape)
show("scan keys", lambda: lib.lax.scan(lambda c, k: (c + R.uniform(k), None), 0.0, keys)[0])
show("add keys", lambda: typed + typed)
show("mul key", lambda: typed * 2)
show("sum keys", lambda: keys.sum())
show("astype", lambda: typed.astype(lnp.uint32))
show("asarray", lambda: np.asarray(typed))
show("eq", lambda: (typed == typed, keys == keys[0]))
show("lt", lambda: typed < typed)
show("impl", lambda: R.key_impl(typed))
show("impl raw", lambda: R.key_impl(raw))
show("rbg", lambda: (repr(R.key(7, impl="rbg")), R.key_data(R.key(7, impl="rbg")).shape))
show("rbg draws", lambda: R.uniform(R.key(7, impl="rbg"), (3,)))
show("unsafe_rbg", lambda: R.uniform(R.key(7, impl="unsafe_rbg"), (3,)))
# (the message names one of the two key dtypes; which one varies between jax runs: a set's
# order, so only the exception's type is compared)
show("mixed impls", lambda: type(_raised(lambda: lnp.stack([R.key(1), R.key(1, impl="rbg")]))))
show("typeof", lambda: lib.typeof(keys))
show("make_jaxpr", lambda: str(lib.make_jaxpr(lambda k: R.split(k))(typed)).replace("\n", " | "))
show("make_jaxpr raw", lambda: str(lib.make_jaxpr(lambda k: R.split(k))(raw)).replace("\n", " | "))
show("grad through key", lambda: lib.grad(lambda x, k: (x * R.normal(k)).sum())(1.0, typed))
show("tree leaves", lambda: len(lib.tree_util.tree_leaves({"k": keys, "x": 1})))
show("device_put", lambda: repr(lib.device_put(typed)))
show("key of array seed", lambda: repr(R.key(lnp.uint32(5))))
show("key bad seed", lambda: R.key(1.5))
show("key vector seed", lambda: R.key(lnp.arange(2)))
show("legacy uint32 to typed", lambda: repr(R.wrap_key_data(lnp.zeros((2,), lnp.uint32))))
show("wrap bad shape", lambda: R.wrap_key_data(lnp.zeros((3,), lnp.uint32)))
show("clone", lambda: repr(R.clone(typed)))
show("bits", lambda: R.bits(typed, (2,)))
show("randint", lambda: R.randint(typed, (3,), 0, 10))
show("permutation", lambda: R.permutation(typed, 5))
show("default impl", lambda: lib.config.jax_default_prng_impl)
show("enable_custom_prng", lambda: lib.config.jax_enable_custom_prng)
show("zeros_like key", lambda: lnp.zeros_like(typed))
show("empty keys", lambda: repr(R.split(typed, 0)))
print("DONE")
