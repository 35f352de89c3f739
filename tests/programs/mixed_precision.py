"""Mixed-precision training as users write it: bfloat16/float16 parameters and activations with
float32 master weights and loss scaling, dtype-preserving ops, casts of whole pytrees, and the
printed dtypes along the way."""
import jax
import jax.numpy as jnp

TOLERANCE = dict(rtol=1e-2, atol=1e-2)

key = jax.random.PRNGKey(0)
k1, k2, k3 = jax.random.split(key, 3)
master = {"w1": 0.3 * jax.random.normal(k1, (8, 16)), "w2": 0.3 * jax.random.normal(k2, (16, 1))}
x = jax.random.normal(k3, (32, 8))
y = jnp.sin(x.sum(axis=1, keepdims=True))


def cast(tree, dtype):
  return jax.tree.map(lambda a: a.astype(dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a, tree)


def forward(params, x):
  h = jax.nn.gelu(x @ params["w1"])
  print("activation dtype at trace:", h.dtype)
  return h @ params["w2"]


def loss_fn(params, x, y, scale):
  pred = forward(params, x.astype(params["w1"].dtype))
  err = (pred.astype(jnp.float32) - y) ** 2
  return jnp.mean(err) * scale


for low in [jnp.bfloat16, jnp.float16]:
  params = master
  scale = 2.0 ** 8

  @jax.jit
  def step(params, x, y):
    low_params = cast(params, low)
    l, g = jax.value_and_grad(loss_fn)(low_params, x, y, scale)
    g = cast(g, jnp.float32)
    g = jax.tree.map(lambda t: t / scale, g)
    finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(t)) for t in jax.tree.leaves(g)]))
    new = jax.tree.map(lambda p, t: jnp.where(finite, p - 0.1 * t, p), params, g)
    return new, l / scale, finite

  for i in range(5):
    params, l, finite = step(params, x, y)
  print(jnp.dtype(low).name, "loss:", l, l.dtype, "finite:", finite, "master dtype:", params["w1"].dtype)

h = jnp.ones((2, 3), jnp.bfloat16)
print("bf16 ops keep dtype:", (h * 2).dtype, (h + 1.5).dtype, jnp.exp(h).dtype, h.sum().dtype, h.mean().dtype)
print("bf16 with f32:", (h * jnp.float32(2)).dtype, (h @ jnp.ones((3, 1), jnp.float32)).dtype)
print("f16 with int:", (jnp.ones(2, jnp.float16) + jnp.arange(2)).dtype, (jnp.ones(2, jnp.float16) * 3).dtype)
print("reductions preferred:", jnp.sum(h, dtype=jnp.float32).dtype, jnp.mean(h, dtype=jnp.float32))
print("dot preferred_element_type:", jnp.dot(h, jnp.ones((3, 2), jnp.bfloat16), preferred_element_type=jnp.float32).dtype)
print("softmax bf16:", jax.nn.softmax(jnp.array([1.0, 2.0, 3.0], jnp.bfloat16)))
print("f16 overflow:", jnp.array(60000.0, jnp.float16) * 2, jnp.finfo(jnp.float16).max)
print("bf16 rounding:", jnp.array(1.0 + 2.0 ** -8, jnp.bfloat16), jnp.array(257.0, jnp.bfloat16))
print("grad dtype follows input:", jax.grad(lambda t: (t * t).sum())(jnp.ones(2, jnp.bfloat16)).dtype)
print("random in bf16:", jax.random.normal(key, (3,), jnp.bfloat16).dtype, jax.random.uniform(key, (2,), jnp.float16))
print("astype of tree:", jax.tree.map(lambda a: a.dtype, cast({"a": jnp.ones(2), "i": jnp.arange(2)}, jnp.bfloat16)))
print("int8 quantize:", jnp.round(jnp.array([0.1, -0.7, 1.2]) * 127 / 1.2).astype(jnp.int8))
