"""Op records for the special-function primitives (igamma, igammac, igamma_grad_a,
regularized_incomplete_beta, zeta, polygamma, bessel_i0e, bessel_i1e), with SciPy's functions
computed in float64 as references (igamma_grad_a: jax.lax's, the oracle, imported on first use).

Derivative orders follow what JAX defines: igamma/igammac differentiate once in `a` (their
a-derivative, igamma_grad_a, has no derivative), betainc only in x, zeta only in q, polygamma
only in x; records that would differentiate a non-differentiable operand fix it by closure."""
import ml_dtypes
import numpy as np

from revax._src.lax import special
from tests.lax.op_db import OpRecord, args_of, positive, rand


def _scipy(name, cast=None):
  def ref(*args):
    import scipy.special as sp
    with np.errstate(all="ignore"):
      vals = [np.asarray(a, np.float64) for a in args]
      if cast is not None:
        vals = cast(vals)
      return np.asarray(getattr(sp, name)(*vals), np.asarray(args[-1]).dtype)
  return ref


def _jax(name):
  def ref(*args):
    import jax
    return np.asarray(getattr(jax.lax, name)(*args))
  return ref


def _fixed(values, dtype=np.float32):
  return lambda rng: np.asarray(values, dtype)


_EDGE_A = np.asarray([0.5, 1.0, 3.0, 20.0, 0.01, 7.0], np.float32)
_EDGE_X = np.asarray([0.0, 1.0, 2.5, 25.0, 0.3, np.inf], np.float32)
_BETA_X = np.asarray([0.0, 1.0, 0.2, 0.95, 0.5, 0.01], np.float32)

RECORDS = [
  OpRecord("igamma_f32", "igamma", special.igamma,
           args_of(positive((4,), low=0.2, high=6.0), positive((4,), low=0.1, high=8.0)),
           _scipy("gammainc"), rtol=2e-4, atol=1e-6, grad_order=1),
  OpRecord("igamma_f32_edges", "igamma", special.igamma, args_of(_fixed(_EDGE_A), _fixed(_EDGE_X)),
           _scipy("gammainc"), rtol=2e-4, atol=1e-6, grad_order=0, vmap=False),
  OpRecord("igamma_f32_bcast", "igamma", special.igamma,
           args_of(positive((3, 1), np.float32, 0.5, 4.0), positive((4,), np.float32, 0.1, 9.0)),
           _scipy("gammainc"), rtol=2e-4, atol=1e-6, grad_order=1),
  OpRecord("igamma_f16", "igamma", special.igamma,
           args_of(positive((4,), np.float16, 0.5, 4.0), positive((4,), np.float16, 0.1, 6.0)),
           _scipy("gammainc"), rtol=5e-3, atol=1e-3, grad_order=0),
  OpRecord("igammac_f32", "igammac", special.igammac,
           args_of(positive((4,), low=0.2, high=6.0), positive((4,), low=0.1, high=8.0)),
           _scipy("gammaincc"), rtol=2e-4, atol=1e-6, grad_order=1),
  OpRecord("igammac_f32_edges", "igammac", special.igammac,
           args_of(_fixed(_EDGE_A), _fixed(_EDGE_X)), _scipy("gammaincc"), rtol=2e-4, atol=1e-6,
           grad_order=0, vmap=False),
  OpRecord("igamma_grad_a_f32", "igamma_grad_a", special.igamma_grad_a,
           args_of(positive((5,), low=0.3, high=5.0), positive((5,), low=0.2, high=8.0)),
           _jax("igamma_grad_a"), rtol=2e-3, atol=1e-5, grad_order=0, vmap=False),
  OpRecord("betainc_f32", "regularized_incomplete_beta",
           lambda a, b, x: special.betainc(a, b, x),
           args_of(positive((3,), low=0.3, high=5.0), positive((3,), low=0.3, high=5.0),
                   rand((3,), np.float32, 0.05, 0.95)),
           _scipy("betainc"), rtol=5e-4, atol=1e-6, grad_order=0),
  OpRecord("betainc_f32_edges", "regularized_incomplete_beta", special.betainc,
           args_of(_fixed(_EDGE_A[:6] + 0.5), _fixed([2.0, 0.7, 3.0, 1.5, 0.4, 9.0]),
                   _fixed(_BETA_X)), _scipy("betainc"), rtol=5e-4, atol=1e-6, grad_order=0, vmap=False),
  OpRecord("betainc_f32_grad_x", "regularized_incomplete_beta",
           lambda x: special.betainc(np.float32(2.5), np.float32(1.5), x),
           args_of(rand((4,), np.float32, 0.1, 0.9)),
           lambda x: _scipy("betainc")(np.float32(2.5), np.float32(1.5), x), rtol=5e-4, atol=1e-6,
           grad_order=1),
  OpRecord("zeta_f32", "zeta", special.zeta,
           args_of(rand((3, 2), np.float32, 1.2, 8.0), positive((3, 2), low=0.2, high=5.0)),
           _scipy("zeta"), rtol=1e-4, atol=1e-6, grad_order=0),
  OpRecord("zeta_f32_grad_q", "zeta", lambda q: special.zeta(np.float32(3.0), q),
           args_of(positive((4,), np.float32, 0.5, 4.0)),
           lambda q: _scipy("zeta")(np.float32(3.0), q), rtol=1e-4, atol=1e-6, grad_order=2),
  OpRecord("polygamma_f32", "polygamma", special.polygamma,
           args_of(_fixed([0.0, 1.0, 2.0, 3.0, 4.0]), positive((5,), low=0.3, high=6.0)),
           _scipy("polygamma", lambda v: [v[0].astype(int), v[1]]), rtol=1e-4, atol=1e-5,
           grad_order=0),
  OpRecord("polygamma_f32_grad_x", "polygamma", lambda x: special.polygamma(np.float32(2.0), x),
           args_of(positive((4,), np.float32, 0.5, 5.0)),
           lambda x: _scipy("polygamma", lambda v: [2, v[0]])(x), rtol=1e-4, atol=1e-5,
           grad_order=2),
  OpRecord("bessel_i0e_f32", "bessel_i0e", special.bessel_i0e, args_of(rand((3, 4), low=-30, high=30)),
           _scipy("i0e"), rtol=2e-6, atol=1e-7),
  OpRecord("bessel_i0e_bf16", "bessel_i0e", special.bessel_i0e,
           args_of(rand((6,), ml_dtypes.bfloat16, -40, 40)), _scipy("i0e"), rtol=2e-2, atol=1e-2),
  OpRecord("bessel_i1e_f32", "bessel_i1e", special.bessel_i1e, args_of(rand((3, 4), low=-30, high=30)),
           _scipy("i1e"), rtol=2e-6, atol=1e-7),
  OpRecord("bessel_i1e_f16", "bessel_i1e", special.bessel_i1e,
           args_of(rand((6,), np.float16, -40, 40)), _scipy("i1e"), rtol=2e-3, atol=1e-3),
]
