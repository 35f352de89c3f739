"""Op records for the PRNG primitives: threefry2x32 (broadcast operands), random_gamma (one key,
a batch of keys, log space) and random_gamma_grad. References: jax's own primitives (the oracle,
imported on first use) for the first two, and for random_gamma_grad the implicit derivative
computed in float64 from scipy's incomplete gamma functions.

None of them runs check_grads (grad_order 0): threefry2x32 hashes integers; random_gamma's JVP is
the implicit-reparameterization derivative (the sample's derivative at a fixed quantile), which
is not the derivative of the rejection sampler's output at a fixed key that finite differences
would measure (tests/random checks it against JAX and against d mean / d a = 1 instead); and
random_gamma_grad differentiates in forward mode only (its loops are while loops, whose reverse
mode raises, as in JAX)."""
import numpy as np

from revax._src.lax import prng
from tests.lax.op_db import OpRecord, args_of, positive, rand

_U32_MAX = 2 ** 32 - 1


def _words(shape):
  return rand(shape, np.uint32, 0, _U32_MAX)


def _jax_threefry(*words):
  import jax.extend.random
  words = np.broadcast_arrays(*words)  # jax's takes equal ranks; revax's broadcasts NumPy-style
  return [np.asarray(y) for y in jax.extend.random.threefry2x32_p.bind(*words)]


def _jax_gamma(log_space):
  def ref(key, a):
    import jax
    return np.asarray(jax.random.random_gamma_p.bind(jax.random.wrap_key_data(key), a,
                                                     log_space=log_space))
  return ref


def _implicit_gamma_grad(a, x):
  """-(dF/da) / (dF/dx) in float64: the CDF's a-derivative by central differences of scipy's
  regularized incomplete gamma functions (the upper one in the upper tail), over the density."""
  import scipy.special as sp
  a64, x64 = np.float64(a), np.float64(x)
  h = 1e-6 * a64
  lower = (sp.gammainc(a64 + h, x64) - sp.gammainc(a64 - h, x64)) / (2 * h)
  upper = -(sp.gammaincc(a64 + h, x64) - sp.gammaincc(a64 - h, x64)) / (2 * h)
  dcdf_da = np.where(x64 > a64, upper, lower)
  density = np.exp((a64 - 1) * np.log(x64) - x64 - sp.gammaln(a64))
  return (-dcdf_da / density).astype(np.asarray(a).dtype)


def _threefry_rec(tag, *shapes):
  return OpRecord(f"threefry2x32_{tag}", "threefry2x32", prng.threefry2x32,
                  args_of(*(_words(s) for s in shapes)), _jax_threefry, grad_order=0)


def _gamma_rec(tag, key_shape, a_shape, log_space=False, low=0.2):
  return OpRecord(f"random_gamma_{tag}", "random_gamma",
                  lambda key, a: prng.random_gamma(key, a, log_space=log_space),
                  args_of(_words(key_shape), positive(a_shape, np.float32, low, 5.0)),
                  _jax_gamma(log_space), rtol=1e-4, atol=1e-6, grad_order=0)


RECORDS = [
    _threefry_rec("same_shapes", (3, 4), (3, 4), (3, 4), (3, 4)),
    _threefry_rec("scalar_key", (), (), (5,), (5,)),
    _threefry_rec("broadcast", (2, 1), (1,), (1, 3), ()),
    _gamma_rec("one_key", (2,), (6,)),
    _gamma_rec("batched_keys_log_space", (3, 2), (3, 2), log_space=True, low=0.05),
    OpRecord("random_gamma_grad_f32", "random_gamma_grad", prng.random_gamma_grad,
             args_of(positive((7,), np.float32, 0.2, 6.0), positive((7,), np.float32, 0.05, 9.0)),
             _implicit_gamma_grad, rtol=1e-4, atol=1e-6, grad_order=0),
]
