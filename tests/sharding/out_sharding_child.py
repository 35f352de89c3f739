"""Run with 4 CPU devices (see test_out_sharding.py): functions that take JAX's `out_sharding=`
place their result so, eagerly and under jit, with the values they have without it (and, for
the random samplers, JAX's values for the same key). A sample from each family: lax (empty,
reduce, ragged_dot, rng_bit_generator, dot_general, dot, reshape, broadcast_in_dim, ...),
jax.numpy creation, shape and contraction functions, random samplers, nn.initializers.
(nn.initializers.orthogonal/delta_orthogonal take the keyword but refuse any sharding with
NotImplementedError, as JAX's do.)"""
import jax
import numpy as np

import revax
import revax.numpy as rnp
from revax import lax
from revax.sharding import NamedSharding, PartitionSpec as P
from tests.sharding.children import spec_of

mesh = revax.make_mesh((4,), ("x",))
rows = NamedSharding(mesh, P("x"))
x = rnp.arange(32.0).reshape(8, 4)
groups = rnp.array([3, 5], rnp.int32)
w = rnp.stack([rnp.eye(4), 2 * rnp.eye(4)])
rng_key = rnp.array([1, 2, 3, 4], rnp.uint32)
key, jax_key = revax.random.key(0), jax.random.key(0)
img, kernel = rnp.ones((8, 3, 5, 5)), rnp.ones((4, 3, 3, 3))
cases = {
    # lax
    "empty": lambda s: lax.empty((8, 4), np.float32, out_sharding=s),
    "reduce": lambda s: lax.reduce(x.reshape(8, 2, 2), 0.0, lax.add, (2,), out_sharding=s),
    "reduce_variadic": lambda s: lax.reduce((x, x), (0.0, 0.0),
                                            lambda a, b: (a[0] + b[0], a[1] * b[1]), (1,),
                                            out_sharding=s)[0],
    "ragged_dot": lambda s: lax.ragged_dot(x, w, groups, out_sharding=s),
    "rng_bit_generator": lambda s: lax.rng_bit_generator(rng_key, (8, 4), out_sharding=s)[1],
    "dot_general": lambda s: lax.dot_general(x, x.T, (((1,), (0,)), ((), ())), out_sharding=s),
    "lax.dot": lambda s: lax.dot(x, x.T, out_sharding=s),
    "lax.reshape": lambda s: lax.reshape(x, (16, 2), out_sharding=s),
    "lax.reshape_same_shape": lambda s: lax.reshape(x, (8, 4), out_sharding=s),
    "broadcast_in_dim": lambda s: lax.broadcast_in_dim(x[0], (8, 4), (1,), out_sharding=s),
    "broadcast": lambda s: lax.broadcast(x[0], (8,), out_sharding=s),
    "broadcasted_iota": lambda s: lax.broadcasted_iota(np.int32, (8, 4), 1, out_sharding=s),
    "reduce_sum": lambda s: lax.reduce_sum(x.reshape(8, 2, 2), (1,), out_sharding=s),
    "conv_general_dilated": lambda s: lax.conv_general_dilated(img, kernel, (1, 1), "SAME",
                                                               out_sharding=s),
    # jax.numpy
    "zeros": lambda s: rnp.zeros((8, 4), out_sharding=s),
    "ones": lambda s: rnp.ones((8, 4), rnp.int32, out_sharding=s),
    "full": lambda s: rnp.full((8, 4), 2.5, out_sharding=s),
    "zeros_like": lambda s: rnp.zeros_like(x, out_sharding=s),
    "arange": lambda s: rnp.arange(8, out_sharding=s),
    "arange_float": lambda s: rnp.arange(0.0, 4.0, 0.5, out_sharding=s),
    "array": lambda s: rnp.array(np.arange(32).reshape(8, 4), out_sharding=s),
    "asarray_array": lambda s: rnp.asarray(x, out_sharding=s),
    "einsum": lambda s: rnp.einsum("ij,kj->ik", x, x, out_sharding=s),
    "matmul": lambda s: rnp.matmul(x, x.T, out_sharding=s),
    "jnp.dot": lambda s: rnp.dot(x, x.T, out_sharding=s),
    "jnp.reshape": lambda s: rnp.reshape(x, (16, -1), out_sharding=s),
    "ravel": lambda s: rnp.ravel(x, out_sharding=s),
    "repeat": lambda s: rnp.repeat(x, 2, axis=0, out_sharding=s),
    "broadcast_to": lambda s: rnp.broadcast_to(x[0], (8, 4), out_sharding=s),
    # random (the jax twin is called with the same arguments and no out_sharding)
    "random.normal": lambda s: revax.random.normal(key, (8, 4), out_sharding=s),
    "random.uniform": lambda s: revax.random.uniform(key, (8, 4), minval=-1.0, out_sharding=s),
    "random.randint": lambda s: revax.random.randint(key, (8, 4), 0, 10, out_sharding=s),
    "random.bernoulli": lambda s: revax.random.bernoulli(key, 0.3, (8, 4), out_sharding=s),
    "random.permutation": lambda s: revax.random.permutation(key, 8, out_sharding=s),
    "random.laplace": lambda s: revax.random.laplace(key, (8,), out_sharding=s),
    # nn.initializers
    "initializers.zeros": lambda s: revax.nn.initializers.zeros(key, (8, 4), out_sharding=s),
    "initializers.normal": lambda s: revax.nn.initializers.normal()(key, (8, 4),
                                                                    out_sharding=s),
}
jax_twins = {  # all drawn in one jitted jax program (one compilation, not one per sampler)
    "random.normal": lambda: jax.random.normal(jax_key, (8, 4)),
    "random.uniform": lambda: jax.random.uniform(jax_key, (8, 4), minval=-1.0),
    "random.randint": lambda: jax.random.randint(jax_key, (8, 4), 0, 10),
    "random.bernoulli": lambda: jax.random.bernoulli(jax_key, 0.3, (8, 4)),
    "random.permutation": lambda: jax.random.permutation(jax_key, 8),
    "random.laplace": lambda: jax.random.laplace(jax_key, (8,)),
    "initializers.normal": lambda: jax.nn.initializers.normal()(jax_key, (8, 4)),
}

jax_twins = jax.jit(lambda: {name: draw() for name, draw in jax_twins.items()})()


def same(got, want, name):
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, want.dtype)
  # (eager and compiled transcendentals and factorizations may differ in the last bit)
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)


for name, fn in cases.items():
  plain = fn(None)
  assert not hasattr(plain.sharding, "mesh") or plain.sharding.mesh.size == 1, name
  if name in jax_twins:
    same(plain, jax_twins[name], name + " vs jax")
  for label, out in (("eager", fn(rows)), ("jit", revax.jit(lambda: fn(rows))())):
    assert spec_of(out.sharding) == ("x",), (name, label, out.sharding)
    shards = out.addressable_shards
    assert len(shards) == 4, (name, label)
    block = out.shape[0] // 4
    for shard in shards:
      i = list(mesh.devices.flat).index(shard.device)
      assert shard.index[0] == slice(i * block, (i + 1) * block), (name, label, shard)
      assert all(ix == slice(None) for ix in shard.index[1:]), (name, label, shard)
      if name != "empty":  # empty's contents are unspecified
        same(shard.data, np.asarray(plain)[shard.index], f"{name} {label} shard {i}")
    if name != "empty":
      same(out, plain, f"{name} {label}")

# JAX's `device=` on jax.numpy's creation functions: a Device or a Sharding commits the result
# there; under jit it places nothing (jax measured: the jitted results stay on device 0).
second = revax.devices()[1]
made = {
    "zeros": lambda d: rnp.zeros((8, 4), device=d), "ones": lambda d: rnp.ones((8, 4), device=d),
    "empty": lambda d: rnp.empty((8, 4), device=d), "full": lambda d: rnp.full((8, 4), 2.0,
                                                                             device=d),
    "zeros_like": lambda d: rnp.zeros_like(x, device=d),
    "ones_like": lambda d: rnp.ones_like(x, device=d),
    "empty_like": lambda d: rnp.empty_like(x, device=d),
    "full_like": lambda d: rnp.full_like(x, 3, device=d),
    "arange": lambda d: rnp.arange(8, device=d),
    "arange_float": lambda d: rnp.arange(0.0, 4.0, 0.5, device=d),
    "array": lambda d: rnp.array(np.arange(8.0), device=d),
    "asarray": lambda d: rnp.asarray(np.arange(8.0), device=d),
    "linspace": lambda d: rnp.linspace(0.0, 1.0, 8, device=d),
    "eye": lambda d: rnp.eye(8, device=d),
}
for name, fn in made.items():
  plain = fn(None)
  on_second = fn(second)
  assert on_second.devices() == {second}, (name, on_second.devices())
  assert on_second.sharding.device_set == {second}, (name, on_second.sharding)
  split = fn(rows)
  assert spec_of(split.sharding) == ("x",), (name, split.sharding)
  jitted = revax.jit(lambda: fn(second))()
  assert jitted.devices() == {revax.devices()[0]}, (name, jitted.devices())
  if not name.startswith("empty"):
    for out in (on_second, split, jitted):
      same(out, plain, f"{name} device=")
try:
  rnp.zeros(8, device=rows, out_sharding=rows)
  raise AssertionError("device and out_sharding together")
except ValueError as e:
  assert "Only one of `device` or `out_sharding`" in str(e)
print("OUT_SHARDING_OK")
