"""Multi-head causal self-attention by hand (einsum, masking, softmax) and with
jax.nn.dot_product_attention, plus a layer norm and a transformer-style residual block."""
import jax
import jax.numpy as jnp

batch, seq, heads, head_dim = 2, 5, 2, 4
model_dim = heads * head_dim
key = jax.random.PRNGKey(7)
kx, kq, kk, kv, ko = jax.random.split(key, 5)
x = jax.random.normal(kx, (batch, seq, model_dim))
scale = 1.0 / jnp.sqrt(model_dim)
params = {name: scale * jax.random.normal(k, (model_dim, model_dim))
          for name, k in zip(["q", "k", "v", "o"], [kq, kk, kv, ko])}


def layer_norm(x, eps=1e-5):
  mean = x.mean(-1, keepdims=True)
  var = x.var(-1, keepdims=True)
  return (x - mean) * jax.lax.rsqrt(var + eps)


def split_heads(t):
  return t.reshape(t.shape[:-1] + (heads, head_dim))


def attention(params, x, causal=True):
  q, k, v = (split_heads(x @ params[n]) for n in "qkv")
  logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(head_dim).astype(x.dtype)
  if causal:
    mask = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    logits = jnp.where(mask, logits, jnp.finfo(logits.dtype).min)
  weights = jax.nn.softmax(logits, axis=-1)
  out = jnp.einsum("bhqk,bkhd->bqhd", weights, v)
  return out.reshape(x.shape) @ params["o"], weights


def block(params, x):
  y, w = attention(params, layer_norm(x))
  return x + y, w


out, weights = jax.jit(block)(params, x)
print("out:", out.shape, out.dtype)
print("row sums:", weights.sum(-1)[0, 0])
print("upper triangle is zero:", bool(jnp.all(jnp.triu(weights[0, 0], 1) == 0)))
print("weights[0,0]:", weights[0, 0])
print("out[0,1]:", out[0, 1])

q, k, v = (split_heads(layer_norm(x) @ params[n]) for n in "qkv")
ref = jax.nn.dot_product_attention(q, k, v, is_causal=True)
print("dot_product_attention:", ref.shape, ref.dtype)
mine = jnp.einsum("bhqk,bkhd->bqhd", weights, v)
print("max diff:", float(jnp.max(jnp.abs(ref - mine))) < 1e-5)
bias = jnp.zeros((batch, heads, seq, seq)).at[:, :, :, 0].set(-1e9)
print("with bias:", jax.nn.dot_product_attention(q, k, v, bias=bias)[1, 2, 0])
lengths = jnp.array([3, 5])
print("with lengths:", jax.nn.dot_product_attention(q, k, v, key_value_seq_lengths=lengths)[0, 4, 1])
scaled = jax.nn.dot_product_attention(q, k, v, scale=0.1, mask=jnp.ones((batch, heads, seq, seq), bool))
print("scaled:", scaled[0, 0, 0])

# gradient through the whole block, and vmap over sequences one at a time
g = jax.grad(lambda p: jnp.sum(block(p, x)[0] ** 2))(params)
print("grad q norm:", jnp.linalg.norm(g["q"]))
one = jax.vmap(lambda xi: block(params, xi[None])[0][0])(x)
print("vmap agrees:", bool(jnp.allclose(one, out, atol=1e-5)))
print("softmax of -inf row:", jax.nn.softmax(jnp.array([-jnp.inf, 0.0, 1.0])))
print("logsumexp:", jax.nn.logsumexp(jnp.array([1.0, 2.0, 3.0])), jax.scipy.special.logsumexp(jnp.array([[1.0, 2.0]]), axis=1))
