"""Moving values between host and device, waiting for them, and reading jaxprs the way a user
does (their avals, their primitives' names, their equations' count), not the exact text."""
import jax
import jax.numpy as jnp
import numpy as np

params = {"w": jnp.ones((2, 3)), "b": jnp.zeros(3), "step": jnp.array(5)}
host = jax.device_get(params)
print("device_get types:", {k: type(v).__name__ for k, v in host.items()})
print("device_get values:", host)
put = jax.device_put(np.arange(4.0, dtype=np.float32))
print("device_put:", repr(put), put.dtype)
print("block_until_ready:", jax.block_until_ready(params)["w"].shape)
print("array block_until_ready:", jnp.ones(2).block_until_ready())
print("devices:", len(jax.devices()), jax.devices()[0].platform, jax.device_count(), jax.local_device_count())
print("default backend:", jax.default_backend())
print("array devices:", len(put.devices()), put.is_fully_addressable)
print("numpy round trip:", np.asarray(jnp.arange(3)) + 1, np.array(jnp.eye(2)).dtype)
print("__array__ in np ops:", np.sum(jnp.ones(4)), np.dot(np.ones(2), jnp.ones(2)))
print("copy_to_host_async:", put.copy_to_host_async() is None)
print("nbytes/itemsize:", put.nbytes, put.itemsize, put.size, put.ndim)


def f(x, y):
  z = jnp.sin(x) * y
  return jnp.sum(z), z.T


jaxpr = jax.make_jaxpr(f)(jnp.ones((2, 3)), 2.0)
print("in avals:", jaxpr.in_avals)
print("out avals:", jaxpr.out_avals)
print("primitives:", [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns])
print("invars:", len(jaxpr.jaxpr.invars), "consts:", jaxpr.consts)
print("eqn params of transpose:", jaxpr.jaxpr.eqns[-1].params)
print("grad jaxpr has cos:", "cos" in str(jax.make_jaxpr(jax.grad(lambda x: jnp.sin(x)))(1.0)))
print("static arg jaxpr:", jax.make_jaxpr(lambda x, n: x * n, static_argnums=1)(1.0, 3).out_avals)
shapes = jax.eval_shape(f, jax.ShapeDtypeStruct((4, 5), jnp.float32), 1.0)
print("eval_shape:", shapes)
lowered = jax.jit(f).lower(jnp.ones((2, 3)), 2.0)
print("lowered text mentions sine:", "sine" in lowered.as_text())
compiled = lowered.compile()
print("compiled call:", compiled(jnp.ones((2, 3)), 2.0)[0])
print("cost/memory available:", compiled.memory_analysis() is not None)
jf = jax.jit(f)
print("jit twice:", jf(jnp.ones((2, 3)), 2.0)[0], jf(jnp.ones((2, 3)), 3.0)[0])
print("jit repr kind:", callable(jf), jf.__name__ if hasattr(jf, "__name__") else None)
print("ShapeDtypeStruct:", jax.ShapeDtypeStruct((2,), jnp.int32))
print("is jax.Array:", isinstance(put, jax.Array), isinstance(np.ones(1), jax.Array))
print("tree of ShapeDtypeStructs:", jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params))
