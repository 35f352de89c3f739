"""Op records for the unary elementwise primitives (revax/_src/lax/unary.py).

Each function gets records over its dtypes (f32, f16, bf16, complex64 where allowed, integers
for the integer-capable ones), a 0-d and a zero-size case, and edge values (infinities, NaN,
poles, the ends of the domain). Inputs respect each function's domain unless the record is
about the edges. References are NumPy's own functions; where NumPy has none (erf, erf_inv,
lgamma, digamma) they come from Python's `math` in float64 or from jax.lax, the test oracle.
"""
import functools
import math

import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

_bf16 = ml_dtypes.bfloat16
_F32, _F16, _BF16, _C64 = np.float32, np.float16, _bf16, np.complex64
_FLOATS = (_F32, _F16, _BF16)
_SHORT = {np.dtype(_F32): "f32", np.dtype(_F16): "f16", np.dtype(_BF16): "bf16",
          np.dtype(_C64): "c64", np.dtype(np.int32): "i32", np.dtype(np.int8): "i8",
          np.dtype(np.uint8): "u8", np.dtype(np.uint32): "u32", np.dtype(np.bool_): "bool"}


def _in_f64(fn):
  """A reference computing `fn` on float64 values, rounded to the input's dtype."""
  def ref(x):
    with np.errstate(all="ignore"):
      return np.asarray(fn(np.asarray(x, np.float64)), x.dtype)
  return ref


def _vectorized(fn, at_error=math.nan):
  def scalar(v):
    try:
      return fn(v)
    except (ValueError, OverflowError):
      return at_error
  return lambda x: np.vectorize(scalar, otypes=[np.float64])(x) if x.size else x


def _quiet(fn):
  @functools.wraps(fn)
  def ref(*args):
    with np.errstate(all="ignore"):
      return fn(*args)
  return ref


def _jax_ref(name):
  """jax.lax.<name> as the reference (imported on first use: jax is a test-only oracle)."""
  def ref(x):
    import jax
    return np.asarray(getattr(jax.lax, name)(x))
  return ref


def _const(values):
  """A fixed input: edge values that random draws would not hit."""
  values = np.asarray(values)
  return lambda rng: (values.copy(),)


def _away_from_poles(shape, dtype, low, high):
  """Uniform values in [low, high) at least 0.15 away from the poles 0, -1, -2, ..."""
  def make(rng):
    x = rng.uniform(low, high, shape)
    near = (x < 0.15) & (np.abs(x - np.round(x)) < 0.15)
    return np.where(near, x + 0.35, x).astype(dtype)
  return make


# check_grads (revax/_src/test_util.py) pairs tangents and cotangents with np.vdot and compares
# complex numbers, which fits no convention for complex cotangents (JAX's check_vjp conjugates the
# cotangent and compares real parts); complex derivatives are checked in test_elementwise_ad.py
# (forward mode by finite differences, reverse mode against jax.vjp) until it does.
_COMPLEX_AD_OFF = dict(grad_order=0)


def _records_for(name, fun, ref, domain, dtypes=_FLOATS, complex_domain=None, *, prim=None,
                 edges=None, shapes=True, **kw):
  """Records of a unary function: `domain(shape, dtype)` makes inputs; one (3, 4) record per
  dtype, plus 0-d and zero-size f32 records, a complex64 one and an edge-value one if given.

  The transformation suites (gradients, vmap) run on the f32, 0-d and complex records only:
  finite differences are too coarse in 16 bits, infinities and NaN have no useful
  derivatives, and batching does not depend on the dtype."""
  prim = prim or name
  off = dict(kw, grad_order=0, vmap=False)
  recs = []
  for dt in dtypes:
    main = np.dtype(dt) == np.float32
    shape = (3, 4) if main else (5,)
    recs.append(OpRecord(f"{name}_{_SHORT[np.dtype(dt)]}", prim, fun, args_of(domain(shape, dt)),
                         ref, **(kw if main else off)))
  first = dtypes[0]
  if shapes:
    recs.append(OpRecord(f"{name}_{_SHORT[np.dtype(first)]}_0d", prim, fun,
                         args_of(domain((), first)), ref, **kw))
    recs.append(OpRecord(f"{name}_{_SHORT[np.dtype(first)]}_zero_size", prim, fun,
                         args_of(domain((0, 3), first)), ref, **off))
  if complex_domain is not None:
    recs.append(OpRecord(f"{name}_c64", prim, fun, args_of(complex_domain((2, 3), _C64)), ref,
                         **dict(kw, **_COMPLEX_AD_OFF)))
  if edges is not None:
    recs.append(OpRecord(f"{name}_f32_edges", prim, fun, _const(np.asarray(edges, np.float32)),
                         ref, **off))
  return recs


def _range(low, high):
  return lambda shape, dtype: rand(shape, dtype, low, high)


_ANY = _range(-3, 3)
_POS = _range(0.1, 3)
_UNIT = _range(-0.95, 0.95)
_SMALL_C = _range(-1, 1)  # complex inputs away from the branch cuts on the axes
_INF_NAN = [np.inf, -np.inf, np.nan, 0.0, -0.0]


def _round_inputs(shape, dtype):
  """Half-integers (the ties), their neighbours and random values."""
  def make(rng):
    ties = rng.integers(-6, 6, shape) + 0.5
    x = np.where(rng.random(shape) < 0.5, ties, rng.uniform(-4, 4, shape))
    return x.astype(dtype)
  return make


def _round_half_away(v):
  if not math.isfinite(v):
    return v
  return math.copysign(math.floor(math.fabs(v) + 0.5), v)  # exact in float64 for f32 inputs


def _round_afz_ref(x):
  return _in_f64(_vectorized(_round_half_away))(x)


@_quiet
def _logistic_ref(x):
  if x.dtype == np.complex64:
    return 1 / (1 + np.exp(-x))
  return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _integer_records():
  """Records of the functions that also take integers."""
  i = lambda shape, dt, lo=-50, hi=50: rand(shape, dt, lo, hi)
  r0 = functools.partial(OpRecord, grad_order=0)
  r_edge = functools.partial(OpRecord, grad_order=0, vmap=False)
  return [
      r0("neg_i32", "neg", lax.neg, args_of(i((3, 4), np.int32)), np.negative),
      r_edge("neg_i8_min", "neg", lax.neg, _const(np.array([-128, 127, 0, -1], np.int8)),
         _quiet(np.negative)),
      r0("sign_i32", "sign", lax.sign, args_of(i((3, 4), np.int32)), np.sign),
      r_edge("sign_u8", "sign", lax.sign, _const(np.array([0, 1, 7, 255], np.uint8)), np.sign),
      r0("abs_i32", "abs", lax.abs, args_of(i((3, 4), np.int32)), np.abs),
      r_edge("abs_i8_min", "abs", lax.abs, _const(np.array([-128, -127, 0, 5], np.int8)),
         _quiet(np.abs)),
      r0("not_i32", "not", lax.bitwise_not, args_of(i((3, 4), np.int32, -2**31, 2**31 - 1)),
         np.invert),
      r_edge("not_u8", "not", lax.bitwise_not, args_of(i((6,), np.uint8, 0, 255)), np.invert),
      r0("not_bool", "not", lax.bitwise_not, args_of(rand((2, 3), np.bool_)), np.logical_not),
      r_edge("not_bool_0d", "not", lax.bitwise_not, args_of(rand((), np.bool_)), np.logical_not),
      r_edge("not_i32_zero_size", "not", lax.bitwise_not, args_of(i((0, 3), np.int32)), np.invert),
      r0("square_i32", "square", lax.square, args_of(i((3, 4), np.int32)), np.square),
      r_edge("square_u8_wraps", "square", lax.square, args_of(i((6,), np.uint8, 0, 255)),
         _quiet(np.square)),
      r0("integer_pow_i32_3", "integer_pow", lambda x: lax.integer_pow(x, 3),
         args_of(i((3, 4), np.int32, -20, 20)), lambda x: x ** 3),
      r_edge("integer_pow_i32_0", "integer_pow", lambda x: lax.integer_pow(x, 0),
         args_of(i((4,), np.int32)), lambda x: np.ones_like(x)),
      r_edge("integer_pow_u8_7_wraps", "integer_pow", lambda x: lax.integer_pow(x, 7),
         args_of(i((6,), np.uint8, 0, 255)), lambda x: np.power(x, 7, dtype=np.uint8)),
  ]


def _integer_pow_records():
  recs = []
  for y in (1, 2, 3, 5, -1, -2, -3, 12):
    recs.append(OpRecord(f"integer_pow_f32_{y}".replace("-", "neg"), "integer_pow",
                         lambda x, y=y: lax.integer_pow(x, y),
                         args_of(rand((3, 4), np.float32, 0.3, 1.7)),
                         lambda x, y=y: np.power(x.astype(np.float64), y).astype(x.dtype),
                         rtol=2e-5 if abs(y) > 5 else None, vmap=y in (3, -2)))
  pos = lambda shape, dtype: rand(shape, dtype, 0.5, 1.5)
  recs += [
      OpRecord("integer_pow_f16_3", "integer_pow", lambda x: lax.integer_pow(x, 3),
               args_of(pos((5,), _F16)), lambda x: np.power(x, 3), grad_order=0, vmap=False),
      OpRecord("integer_pow_bf16_neg2", "integer_pow", lambda x: lax.integer_pow(x, -2),
               args_of(pos((5,), _BF16)),
               lambda x: np.power(x.astype(np.float32), -2).astype(x.dtype), grad_order=0,
               vmap=False),
      OpRecord("integer_pow_c64_3", "integer_pow", lambda x: lax.integer_pow(x, 3),
               args_of(rand((2, 3), _C64, -1, 1)), lambda x: x ** 3, **_COMPLEX_AD_OFF),
      OpRecord("integer_pow_c64_neg2", "integer_pow", lambda x: lax.integer_pow(x, -2),
               args_of(rand((2, 3), _C64, 0.5, 1.5)), lambda x: 1 / (x * x), vmap=False,
               **_COMPLEX_AD_OFF),
      OpRecord("integer_pow_f32_0d", "integer_pow", lambda x: lax.integer_pow(x, 2),
               args_of(rand(())), np.square),
      OpRecord("integer_pow_f32_zero_size", "integer_pow", lambda x: lax.integer_pow(x, -3),
               args_of(rand((0, 3))), lambda x: x ** -3, grad_order=0, vmap=False),
      OpRecord("integer_pow_f32_neg1_at_zero", "integer_pow", lambda x: lax.integer_pow(x, -1),
               _const(np.array([0.0, -0.0, np.inf, 2.0], np.float32)), _quiet(np.reciprocal),
               grad_order=0, vmap=False),
  ]
  return recs


def _complex_part_records():
  """real, imag and conj are linear. The transposition suite casts complex values to float64
  (dropping imaginary parts), which only imag's transpose cannot survive: its transposition
  is checked in test_elementwise_ad.py with the real pairing Re(sum(a * b)) instead."""
  c = args_of(rand((2, 3), _C64))
  off = _COMPLEX_AD_OFF
  return [
      OpRecord("real_c64", "real", lax.real, c, np.real, linear=True, **off),
      OpRecord("real_c64_0d", "real", lax.real, args_of(rand((), _C64)), np.real, linear=True,
               **off),
      OpRecord("imag_c64", "imag", lax.imag, c, np.imag, **off),
      OpRecord("imag_c64_zero_size", "imag", lax.imag, args_of(rand((0, 3), _C64)), np.imag,
               grad_order=0, vmap=False),
      OpRecord("conj_c64", "conj", lax.conj, c, np.conj, linear=True, **off),
      OpRecord("conj_f32", "conj", lax.conj, args_of(rand((3,))),
               lambda x: x.astype(np.complex64), linear=True, grad_order=0, vmap=False),
      OpRecord("conj_c64_0d", "conj", lax.conj, args_of(rand((), _C64)), np.conj, linear=True,
               **off),
  ]


_UNARY = [
    # name, fun, reference, real domain, complex domain, extra OpRecord fields and edge values
    ("neg", lax.neg, np.negative, _ANY, _ANY, dict(linear=True, invertible=True,
                                                   edges=_INF_NAN)),
    ("sign", lax.sign, np.sign, _ANY, _ANY, dict(grad_order=0, edges=_INF_NAN)),
    ("floor", lax.floor, np.floor, _ANY, None, dict(grad_order=0, edges=_INF_NAN + [-0.5])),
    ("ceil", lax.ceil, np.ceil, _ANY, None, dict(grad_order=0, edges=_INF_NAN + [-0.5])),
    ("round", lax.round, _round_afz_ref, _round_inputs, None,
     dict(grad_order=0, edges=_INF_NAN + [0.49999997, -0.49999997, 2.5, -2.5, 8388609.0])),
    ("round_even", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), np.rint,
     _round_inputs, None,
     dict(prim="round", grad_order=0, edges=_INF_NAN + [0.5, 1.5, 2.5, -2.5, 0.49999997])),
    ("is_finite", lax.is_finite, np.isfinite, _ANY, None, dict(grad_order=0, edges=_INF_NAN)),
    ("exp", lax.exp, _quiet(np.exp), _ANY, _ANY,
     dict(invertible=True, edges=_INF_NAN + [89.0, -104.0])),
    ("exp2", lax.exp2, _quiet(np.exp2), _ANY, _SMALL_C, dict(edges=_INF_NAN + [-3.5, 10.0])),
    ("log", lax.log, _quiet(np.log), _POS, _ANY,
     dict(invertible=True, edges=_INF_NAN + [-1.0, 1e-30])),
    ("log1p", lax.log1p, _quiet(np.log1p), _range(-0.9, 3), _SMALL_C,
     dict(invertible=True, edges=_INF_NAN + [-1.0, -2.0, 1e-9])),
    ("expm1", lax.expm1, _quiet(np.expm1), _ANY, _SMALL_C,
     dict(invertible=True, edges=_INF_NAN + [1e-9, -1e-9])),
    ("tanh", lax.tanh, np.tanh, _ANY, _SMALL_C,
     dict(invertible=True, edges=_INF_NAN + [20.0, -20.0, 1e-5])),
    ("logistic", lax.logistic, _logistic_ref, _ANY, _SMALL_C,
     dict(invertible=True, edges=[np.inf, -np.inf, np.nan, 0.0, 30.0, -30.0, -100.0])),
    ("sin", lax.sin, _quiet(np.sin), _ANY, _SMALL_C, dict(edges=_INF_NAN + [100.0])),
    ("cos", lax.cos, _quiet(np.cos), _ANY, _SMALL_C, dict(edges=_INF_NAN + [100.0])),
    ("tan", lax.tan, _quiet(np.tan), _range(-1.4, 1.4), _SMALL_C, dict(edges=_INF_NAN)),
    ("asin", lax.asin, _quiet(np.arcsin), _UNIT, _SMALL_C, dict(edges=_INF_NAN + [1.0, -1.0, 2.0])),
    ("acos", lax.acos, _quiet(np.arccos), _UNIT, _SMALL_C, dict(edges=_INF_NAN + [1.0, -1.0, 2.0])),
    ("atan", lax.atan, np.arctan, _ANY, _SMALL_C, dict(edges=_INF_NAN + [1e10])),
    ("sinh", lax.sinh, _quiet(np.sinh), _ANY, _SMALL_C, dict(edges=_INF_NAN + [1e-5])),
    ("cosh", lax.cosh, _quiet(np.cosh), _ANY, _SMALL_C, dict(edges=_INF_NAN)),
    ("asinh", lax.asinh, np.arcsinh, _ANY, _SMALL_C, dict(edges=_INF_NAN + [1e10, -1e10])),
    ("acosh", lax.acosh, _quiet(np.arccosh), _range(1.05, 4), _range(0.5, 2),
     dict(edges=[np.inf, np.nan, 1.0, 0.5, 1e10])),
    ("atanh", lax.atanh, _quiet(np.arctanh), _UNIT, _SMALL_C,
     dict(invertible=True, edges=_INF_NAN + [1.0, -1.0, 2.0])),
    ("sqrt", lax.sqrt, _quiet(np.sqrt), _POS, _ANY, dict(edges=_INF_NAN + [-1.0])),
    ("rsqrt", lax.rsqrt, _quiet(lambda x: 1 / np.sqrt(x)), _POS, _range(0.5, 2),
     dict(edges=[np.inf, np.nan, 0.0, -1.0, 4.0])),
    ("cbrt", lax.cbrt, np.cbrt, _ANY, None, dict(edges=_INF_NAN + [-8.0])),
    ("abs", lax.abs, np.abs, _ANY, _ANY, dict(edges=_INF_NAN)),
    ("square", lax.square, _quiet(np.square), _ANY, _ANY, dict(edges=_INF_NAN + [1e20])),
    ("erf", lax.erf, _in_f64(_vectorized(math.erf)), _ANY, None,
     dict(edges=_INF_NAN + [5.0, -5.0, 1e-8])),
    ("erfc", lax.erfc, _in_f64(_vectorized(math.erfc)), _ANY, None,
     dict(edges=_INF_NAN + [5.0, -5.0, 9.0])),
    ("erf_inv", lax.erf_inv, _jax_ref("erf_inv"), _UNIT, None,
     dict(edges=_INF_NAN + [1.0, -1.0, 1.5, -1.5, 0.999])),
    ("lgamma", lax.lgamma, _in_f64(_vectorized(math.lgamma, math.inf)),
     lambda shape, dt: _away_from_poles(shape, dt, -3, 5), None,
     dict(edges=[np.inf, -np.inf, np.nan, 0.0, -1.0, -2.0, 1.0, 2.0, 1e-20, 100.0])),
    ("digamma", lax.digamma, _jax_ref("digamma"),
     lambda shape, dt: _away_from_poles(shape, dt, -3, 5), None,
     dict(edges=[np.inf, np.nan, 0.0, -1.0, -2.0, 1.0, 1e-6, 100.0])),
]


def _unary_records():
  recs = []
  for name, fun, ref, domain, cdomain, kw in _UNARY:
    kw = dict(kw)
    recs += _records_for(name, fun, ref, domain, complex_domain=cdomain, **kw)
  return recs


RECORDS = _unary_records() + _integer_records() + _integer_pow_records() + _complex_part_records()
