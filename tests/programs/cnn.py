"""A small convolutional network with lax.conv_general_dilated and reduce_window pooling."""
import jax
import jax.numpy as jnp
from jax import lax

key = jax.random.PRNGKey(1)
k1, k2, k3, k4 = jax.random.split(key, 4)
images = jax.random.uniform(k1, (4, 8, 8, 1))  # NHWC
targets = jnp.array([0, 1, 0, 1])

params = {
    "conv1": 0.3 * jax.random.normal(k2, (3, 3, 1, 4)),   # HWIO
    "conv2": 0.3 * jax.random.normal(k3, (3, 3, 4, 6)),
    "dense": 0.1 * jax.random.normal(k4, (6 * 2 * 2, 2)),
}
dn = lax.conv_dimension_numbers(images.shape, params["conv1"].shape, ("NHWC", "HWIO", "NHWC"))
print("dimension numbers:", dn)


def max_pool(x):
  return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def avg_pool(x):
  summed = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), ((0, 0), (0, 1), (0, 1), (0, 0)))
  return summed / 4.0


def model(params, x):
  x = lax.conv_general_dilated(x, params["conv1"], (1, 1), "SAME", dimension_numbers=dn)
  x = jax.nn.relu(x)
  x = max_pool(x)
  print("after pool 1 (trace time):", x.shape, x.dtype)
  x = lax.conv_general_dilated(x, params["conv2"], window_strides=(1, 1), padding=((1, 1), (1, 1)),
                               rhs_dilation=(1, 1), dimension_numbers=("NHWC", "HWIO", "NHWC"))
  x = jnp.tanh(x)
  x = avg_pool(x)
  x = max_pool(x)
  x = x.reshape(x.shape[0], -1)
  return x @ params["dense"]


def loss(params, x, y):
  logits = model(params, x)
  return jnp.mean(-jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


grad_fn = jax.jit(jax.value_and_grad(loss))
for step in range(3):
  l, g = grad_fn(params, images, targets)
  params = jax.tree.map(lambda p, g: p - 0.5 * g, params, g)
  print(step, l)
print("grad norms:", {k: jnp.linalg.norm(v) for k, v in g.items()})

# NCHW / OIHW layout through lax.conv and a strided, dilated convolution
x = jnp.transpose(images, (0, 3, 1, 2))
w = jnp.transpose(params["conv1"], (3, 2, 0, 1))
y = lax.conv(x, w, (1, 1), "VALID")
print("lax.conv:", y.shape, y.dtype, y.sum())
y = lax.conv_general_dilated(x, w, (2, 2), "SAME", lhs_dilation=(1, 1), rhs_dilation=(2, 2))
print("dilated:", y.shape, y[0, 0])
print("jvp of conv:", jax.jvp(lambda w: lax.conv(x, w, (1, 1), "SAME").mean(), (w,), (jnp.ones_like(w),)))
print("resized input:", jax.image.resize(images[0, :, :, 0], (4, 4), "linear"))
print("upsampled:", jax.image.resize(images[:1, :2, :2, :], (1, 3, 3, 1), "cubic")[0, :, :, 0])
