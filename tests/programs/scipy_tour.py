"""jax.scipy beyond stats and linalg, as a scientific script uses it: odeint from
jax.experimental.ode, interpolation and ndimage, signal processing, quadrature, spatial
rotations, sparse-free cluster assignment, and scipy-style special functions."""
import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax.experimental.ode import odeint
from jax.scipy.interpolate import RegularGridInterpolator
from jax.scipy.ndimage import map_coordinates
from jax.scipy.spatial.transform import Rotation, Slerp

TOLERANCE = dict(rtol=1e-3, atol=1e-4)


def lotka_volterra(y, t, a, b):
  prey, pred = y
  return jnp.stack([a * prey - b * prey * pred, -pred + 0.5 * prey * pred])


ts = jnp.linspace(0.0, 2.0, 5)
ys = odeint(lotka_volterra, jnp.array([2.0, 1.0]), ts, 1.0, 0.4)
print("odeint:", ys.shape, ys[-1])
g = jax.grad(lambda a: odeint(lotka_volterra, jnp.array([2.0, 1.0]), ts, a, 0.4)[-1, 0])(1.0)
print("odeint grad:", g)
decay = odeint(lambda y, t: -2.0 * y, jnp.ones(2), jnp.array([0.0, 1.0]), rtol=1e-8, atol=1e-8)
print("exponential decay:", decay[1], "exact", jnp.exp(-2.0))

x = jnp.linspace(0, 1, 4)
yv = jnp.linspace(0, 2, 3)
values = x[:, None] ** 2 + yv[None, :]
interp = RegularGridInterpolator((x, yv), values)
print("RegularGridInterpolator:", interp(jnp.array([[0.5, 1.0], [0.9, 0.1]])))
print("nearest:", RegularGridInterpolator((x, yv), values, method="nearest")(jnp.array([[0.4, 1.2]])))
print("out of bounds nan:", RegularGridInterpolator((x, yv), values)(jnp.array([[2.0, 0.0]])))
img = jnp.arange(16.0).reshape(4, 4)
print("map_coordinates:", map_coordinates(img, [jnp.array([0.5, 2.0]), jnp.array([1.5, 3.0])], order=1))
print("map_coordinates modes:", map_coordinates(img, [jnp.array([-1.0, 4.5]), jnp.array([0.0, 0.0])], order=1, mode="constant", cval=-1.0),
      map_coordinates(img, [jnp.array([-1.0, 4.5]), jnp.array([0.0, 2.0])], order=0, mode="nearest"))

sig = jnp.sin(2 * jnp.pi * 5 * jnp.arange(64) / 64.0)
f, t, Z = jsp.signal.stft(sig, nperseg=16)
print("stft:", f.shape, t.shape, Z.shape, Z.dtype)
f, P = jsp.signal.welch(sig, nperseg=16)
print("welch peak bin:", jnp.argmax(P), f[jnp.argmax(P)])
print("detrend:", jsp.signal.detrend(jnp.array([1.0, 2.0, 4.0, 4.0])))
print("fftconvolve:", jsp.signal.fftconvolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5])))
print("correlate valid:", jsp.signal.correlate(jnp.arange(5.0), jnp.array([1.0, -1.0]), mode="valid"))

print("trapezoid:", jsp.integrate.trapezoid(jnp.sin(jnp.linspace(0, jnp.pi, 101)), jnp.linspace(0, jnp.pi, 101)))
r = Rotation.from_euler("xyz", jnp.array([90.0, 0.0, 45.0]), degrees=True)
print("rotation matrix:", r.as_matrix())
print("as_quat/as_rotvec:", r.as_quat(), r.as_rotvec())
print("apply/inv:", r.apply(jnp.array([1.0, 0.0, 0.0])), r.inv().apply(r.apply(jnp.array([0.0, 1.0, 0.0]))))
r2 = Rotation.from_rotvec(jnp.array([0.0, 0.0, jnp.pi / 2]))
print("compose:", (r2 * r2).as_matrix()[0], r2.magnitude())
slerp = Slerp.init(jnp.array([0.0, 1.0]), Rotation.from_quat(jnp.array([[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]])))
print("slerp:", slerp(jnp.array([0.5])).as_rotvec())

points = jnp.array([[0.0, 0.0], [1.0, 1.0], [0.9, 0.0], [5.0, 5.0]])
codebook = jnp.array([[0.0, 0.0], [5.0, 5.0]])
print("vq:", jsp.cluster.vq.vq(points, codebook))
print("special:", jsp.special.sph_harm_y(jnp.array([2]), jnp.array([1]), jnp.array([0.3]), jnp.array([0.5])) if hasattr(jsp.special, "sph_harm_y") else None)
print("lpmn-free legendre / bernoulli:", jsp.special.bernoulli(4), jsp.special.hyp1f1(1.0, 2.0, 0.5), jsp.special.expn(2, 1.0))
print("spence/fresnel-free exp1:", jsp.special.spence(2.0), jsp.special.exp1(1.0), jsp.special.expi(1.0))
print("gammasgn/loggamma:", jsp.special.gammasgn(-1.5), jsp.special.loggamma(3.0))
print("logsumexp weights:", jsp.special.logsumexp(jnp.array([1.0, 2.0]), b=jnp.array([2.0, 0.5])))
print("fft dct/idct:", jsp.fft.dct(jnp.arange(4.0)), jsp.fft.idct(jsp.fft.dct(jnp.arange(4.0), norm="ortho"), norm="ortho"))
print("linalg extras:", jsp.linalg.toeplitz(jnp.arange(1.0, 4.0)), jsp.linalg.block_diag(jnp.ones((1, 1)), 2 * jnp.ones((1, 2))))
print("hilbert/polar:", jsp.linalg.hilbert(3)[2], jsp.linalg.polar(jnp.array([[2.0, 0.0], [0.0, -3.0]]))[1])
print("expm_frechet:", jsp.linalg.expm_frechet(jnp.zeros((2, 2)), jnp.eye(2))[1])
