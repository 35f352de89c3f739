"""The "Generalized convolutions in JAX" tutorial: jnp.convolve and jax.scipy.signal, then
lax.conv_general_dilated with dimension numbers, feature groups, strides and dilations, and
lax.conv_transpose."""
import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax import lax

key = jax.random.key(1701)
x = jnp.linspace(0, 10, 30)
y = jnp.sin(x) + 0.2 * jax.random.normal(key, shape=(30,))
window = jnp.ones(5) / 5
print("smooth:", jnp.convolve(y, window, mode="same")[:6])
print("modes:", jnp.convolve(jnp.arange(4.0), jnp.array([1.0, -1.0])), jnp.convolve(jnp.arange(4.0), jnp.array([1.0, -1.0]), mode="valid"))
print("correlate:", jnp.correlate(jnp.arange(4.0), jnp.array([1.0, 2.0]), mode="full"))

image = jnp.outer(jnp.sin(jnp.linspace(0, 3, 8)), jnp.cos(jnp.linspace(0, 3, 8)))
kx = jnp.linspace(-3, 3, 5)
kernel_2d = jsp.stats.norm.pdf(kx) * jsp.stats.norm.pdf(kx[:, None])
kernel_2d = kernel_2d / jnp.sum(kernel_2d)
smooth = jsp.signal.convolve(image, kernel_2d, mode="same")
print("scipy convolve 2d:", smooth.shape, smooth[3, :4])
print("convolve2d valid:", jsp.signal.convolve2d(image, jnp.ones((3, 3)), mode="valid").shape)
print("correlate2d:", jsp.signal.correlate2d(jnp.arange(9.0).reshape(3, 3), jnp.array([[1.0, 0.0], [0.0, -1.0]]))[1])

# lax.conv with NCHW / OIHW
kernel = jnp.zeros((3, 3, 3, 3), dtype=jnp.float32)
kernel += jnp.array([[1, 1, 0], [1, 0, -1], [0, -1, -1]])[:, :, jnp.newaxis, jnp.newaxis]
img = jnp.zeros((1, 20, 20, 3), dtype=jnp.float32)
for k in range(3):
  x0 = 4 + 3 * k
  img = img.at[0, x0:x0 + 6, x0:x0 + 6, k].set(1.0)
out = lax.conv(jnp.transpose(img, [0, 3, 1, 2]), jnp.transpose(kernel, [3, 2, 0, 1]), (1, 1), "SAME")
print("lax.conv:", out.shape, out.dtype, out[0, 0, 5, 2:8])
out = lax.conv_with_general_padding(jnp.transpose(img, [0, 3, 1, 2]), jnp.transpose(kernel, [3, 2, 0, 1]),
                                    (1, 1), ((2, 2), (2, 2)), (1, 1), (1, 1))
print("general padding:", out.shape, out[0, 1, 8, 4:9])

dn = lax.conv_dimension_numbers(img.shape, kernel.shape, ("NHWC", "HWIO", "NHWC"))
print("dimension numbers:", dn)
out = lax.conv_general_dilated(img, kernel, (1, 1), "SAME", (1, 1), (1, 1), dn)
print("NHWC out:", out.shape, out[0, 6, 4:9, 0])
out = lax.conv_general_dilated(img, kernel, (1, 1), "VALID", (1, 1), (1, 1), dn)
print("VALID:", out.shape)
out = lax.conv_general_dilated(img, kernel, (2, 2), "SAME", (1, 1), (1, 1), dn)
print("strided:", out.shape, out[0, 3, :5, 1])
out = lax.conv_general_dilated(img, kernel, (1, 1), "VALID", (1, 1), (2, 2), dn)
print("rhs dilated (atrous):", out.shape, out[0, 5, 2:8, 1])
out = lax.conv_general_dilated(img, kernel, (1, 1), ((1, 1), (1, 1)), (2, 2), (1, 1), dn)
print("lhs dilated (transposed):", out.shape, out[0, 15, 14:20, 1])
out = lax.conv_general_dilated(img, kernel, (1, 1), ((-1, -1), (0, 2)), dimension_numbers=dn)
print("negative padding:", out.shape)

# depthwise: feature_group_count, and batch_group_count
depth_kernel = jnp.ones((3, 3, 1, 3)) * jnp.array([1.0, 2.0, 3.0])
out = lax.conv_general_dilated(img, depth_kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                               feature_group_count=3)
print("depthwise:", out.shape, out[0, 8, 8], out.sum(axis=(0, 1, 2)))
grouped = lax.conv_general_dilated(jnp.ones((2, 4, 5)), jnp.ones((6, 2, 3)), (1,), "SAME", feature_group_count=2)
print("grouped 1d:", grouped.shape, grouped[0, :, 0])
bg = lax.conv_general_dilated(jnp.ones((4, 2, 5)), jnp.ones((2, 2, 3)), (1,), "VALID", batch_group_count=2)
print("batch_group_count:", bg.shape, bg[0, 0])

# 1d and 3d
sig = jnp.arange(10.0).reshape(1, 1, 10)
k1 = jnp.array([[[1.0, 0.0, -1.0]]])
print("1d NCH:", lax.conv_general_dilated(sig, k1, (1,), "VALID", dimension_numbers=("NCH", "OIH", "NCH")))
print("1d NWC:", lax.conv_general_dilated(sig.transpose(0, 2, 1), k1.transpose(2, 1, 0), (2,), "SAME",
                                          dimension_numbers=("NWC", "WIO", "NWC"))[0, :, 0])
vol = jnp.arange(2 * 4 * 4 * 4 * 1.0).reshape(2, 4, 4, 4, 1)
k3 = jnp.ones((2, 2, 2, 1, 2))
out3 = lax.conv_general_dilated(vol, k3, (1, 1, 1), "VALID", dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))
print("3d:", out3.shape, out3[1, 0, 0, :, 1])

# conv_transpose
xt = jnp.arange(16.0).reshape(1, 4, 4, 1)
kt = jnp.ones((3, 3, 1, 2)) * jnp.array([1.0, -1.0])
for padding in ["SAME", "VALID"]:
  ct = lax.conv_transpose(xt, kt, (2, 2), padding, dimension_numbers=("NHWC", "HWIO", "NHWC"))
  print("conv_transpose", padding, ct.shape, ct[0, 1, :4, 0])
ct = lax.conv_transpose(xt, kt, (1, 1), ((1, 1), (1, 1)), rhs_dilation=(2, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))
print("conv_transpose dilated:", ct.shape)
ctk = lax.conv_transpose(xt, kt, (2, 2), "SAME", dimension_numbers=("NHWC", "HWOI", "NHWC"), transpose_kernel=True)
print("transpose_kernel:", ctk.shape)

# gradients and vmap through convolutions
loss = lambda k: jnp.sum(lax.conv_general_dilated(img, k, (2, 2), "SAME", dimension_numbers=dn,
                                                  rhs_dilation=(2, 1)) ** 2)
gk = jax.grad(loss)(kernel)
print("grad kernel:", gk.shape, gk[1, 1, :, 0])
gi = jax.grad(lambda im: jnp.sum(lax.conv_general_dilated(im, depth_kernel, (1, 1), "SAME", dimension_numbers=dn,
                                                          feature_group_count=3) * im))(img)
print("grad input depthwise:", gi[0, 5, 5])
vm = jax.vmap(lambda s: lax.conv_general_dilated(s[None], k1, (1,), "SAME", dimension_numbers=("NCH", "OIH", "NCH"))[0])(
    jnp.arange(20.0).reshape(2, 1, 10))
print("vmap conv:", vm.shape, vm[1, 0, :4])
print("jit conv:", jax.jit(lambda a, b: lax.conv(a, b, (1, 1), "SAME"))(jnp.ones((1, 1, 3, 3)), jnp.ones((1, 1, 2, 2))))
print("int conv preferred f32:", lax.conv_general_dilated(jnp.ones((1, 1, 3), jnp.int8), jnp.ones((1, 1, 2), jnp.int8), (1,), "VALID",
                                                          preferred_element_type=jnp.float32))
