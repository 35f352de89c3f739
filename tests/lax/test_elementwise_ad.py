"""Derivatives and batching of the elementwise primitives (unary.py, binary.py), against JAX.

The generic suites (test_op_db_transforms.py) check derivatives by finite differences; here the
same functions go through jax and revax side by side: first and second derivatives in forward
and reverse mode, broadcasting operands, ties of max/min, the conventions for complex
cotangents (which check_grads cannot check: see _COMPLEX_AD_OFF in opdb/unary.py), and the
structure of the batched jaxprs (no transposes or broadcasts that the batching rule can avoid).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.lax as lax
from tests.gradcheck import check_grads
from tests.lax.opdb import binary as binary_records
from tests.lax.opdb import unary as unary_records
from tests.lax.op_db import assert_close, rank_broadcasting

RNG = np.random.default_rng(0)


def _uniform(shape, low, high, dtype=np.float32):
  return RNG.uniform(low, high, shape).astype(dtype)


def _complex(shape, low, high):
  return (RNG.uniform(low, high, shape) + 1j * RNG.uniform(low, high, shape)).astype(np.complex64)


def _like(x, seed):
  """A random direction (tangent or cotangent) shaped like `x` (an array or a ShapeDtypeStruct)."""
  rng = np.random.default_rng(seed)
  v = rng.standard_normal(np.shape(x))
  if np.issubdtype(x.dtype, np.complexfloating):
    v = v + 1j * rng.standard_normal(np.shape(x))
  return v.astype(x.dtype)


def _close(actual, expected, tol):
  for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected),
                  strict=True):
    np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=tol, atol=tol)


def _derivatives(api, f, args, tangents, ct, order):
  """f(*args), its jvp, its vjp and (order 2) the vjp of its jvp, through `api` (jax or revax)."""
  out = [f(*args), api.jvp(f, args, tangents), api.vjp(f, *args)[1](ct)]
  if order > 1:
    f_t = lambda *xs: api.jvp(f, xs, tangents)[1]
    out.append(api.vjp(f_t, *args)[1](ct))
  return out


def _compare(rf, jf, args, tol=1e-4, order=2):
  """Values, jvp and vjp of revax's `rf` and jax's `jf` at `args`; with order 2 also the vjp of
  the jvp (a second derivative in both modes at once). jax runs under one jit: its eager ops
  would each compile."""
  tangents = tuple(_like(a, 10 + i) for i, a in enumerate(args))
  ct = _like(jax.eval_shape(jf, *args), 99)
  want = jax.jit(lambda *xs: _derivatives(jax, jf, xs, tangents, ct, order))(*args)
  _close(_derivatives(revax, rf, args, tangents, ct, order), want, tol)


def _numpy_style(jf):
  """jax.lax's binary `jf` with NumPy broadcasting (jax.lax itself broadcasts only scalars).
  Its revax counterpart is the internal function, `rank_broadcasting(rf)`: revax's primitives
  broadcast ranks (its libraries and batching rules rely on it), its public lax refuses them."""
  return lambda x, y: jf(*jnp.broadcast_arrays(x, y))


# --- unary, real -----------------------------------------------------------------------------------
_POS = (0.2, 3.0)
_ANY = (-3.0, 3.0)
_UNIT = (-0.9, 0.9)
UNARY = [
    ("neg", lax.neg, jax.lax.neg, _ANY), ("exp", lax.exp, jax.lax.exp, _ANY),
    ("exp2", lax.exp2, jax.lax.exp2, _ANY), ("log", lax.log, jax.lax.log, _POS),
    ("log1p", lax.log1p, jax.lax.log1p, (-0.8, 3.0)), ("expm1", lax.expm1, jax.lax.expm1, _ANY),
    ("tanh", lax.tanh, jax.lax.tanh, _ANY), ("logistic", lax.logistic, jax.lax.logistic, _ANY),
    ("sin", lax.sin, jax.lax.sin, _ANY), ("cos", lax.cos, jax.lax.cos, _ANY),
    ("tan", lax.tan, jax.lax.tan, (-1.2, 1.2)), ("asin", lax.asin, jax.lax.asin, _UNIT),
    ("acos", lax.acos, jax.lax.acos, _UNIT), ("atan", lax.atan, jax.lax.atan, _ANY),
    ("sinh", lax.sinh, jax.lax.sinh, _ANY), ("cosh", lax.cosh, jax.lax.cosh, _ANY),
    ("asinh", lax.asinh, jax.lax.asinh, _ANY), ("acosh", lax.acosh, jax.lax.acosh, (1.1, 4.0)),
    ("atanh", lax.atanh, jax.lax.atanh, _UNIT), ("sqrt", lax.sqrt, jax.lax.sqrt, _POS),
    ("rsqrt", lax.rsqrt, jax.lax.rsqrt, _POS), ("cbrt", lax.cbrt, jax.lax.cbrt, _POS),
    ("abs", lax.abs, jax.lax.abs, _ANY), ("square", lax.square, jax.lax.square, _ANY),
    ("erf", lax.erf, jax.lax.erf, _ANY), ("erfc", lax.erfc, jax.lax.erfc, _ANY),
    ("erf_inv", lax.erf_inv, jax.lax.erf_inv, _UNIT), ("lgamma", lax.lgamma, jax.lax.lgamma, _POS),
    ("digamma", lax.digamma, jax.lax.digamma, (0.3, 8.0)),
    ("digamma_negative", lax.digamma, jax.lax.digamma, (-2.8, -2.2)),
    ("lgamma_negative", lax.lgamma, jax.lax.lgamma, (-0.8, -0.2)),
    ("integer_pow_3", lambda x: lax.integer_pow(x, 3), lambda x: jax.lax.integer_pow(x, 3), _ANY),
    ("integer_pow_neg2", lambda x: lax.integer_pow(x, -2), lambda x: jax.lax.integer_pow(x, -2),
     _POS),
    ("integer_pow_1", lambda x: lax.integer_pow(x, 1), lambda x: jax.lax.integer_pow(x, 1), _ANY),
    ("integer_pow_0", lambda x: lax.integer_pow(x, 0), lambda x: jax.lax.integer_pow(x, 0), _ANY),
]


@pytest.mark.parametrize("name,rf,jf,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_derivatives_match_jax(name, rf, jf, domain):
  x = _uniform((2, 3), *domain)
  tol = 2e-3 if "gamma" in name else 1e-4
  _compare(rf, jf, (x,), tol=tol)


def test_trigamma_series_over_a_wide_range():
  """digamma's JVP is a trigamma series in revax ops: it matches jax's polygamma(1, x) from
  near the poles to large arguments."""
  x = np.array([-3.7, -2.5, -1.3, -0.6, 0.05, 0.4, 0.5, 0.6, 1.0, 2.0, 5.5, 20.0, 1e3],
               np.float32)
  got = revax.jvp(lax.digamma, (x,), (np.ones_like(x),))[1]
  np.testing.assert_allclose(np.asarray(got), np.asarray(jax.scipy.special.polygamma(1, x)),
                             rtol=2e-4)


def test_abs_at_zero_and_sign_floor_round_have_zero_tangents():
  x = np.array([0.0, -1.5, 2.5], np.float32)
  assert_close(revax.grad(lambda v: lax.reduce_sum(lax.abs(v), (0,)))(x),
               np.asarray(jax.grad(lambda v: jnp.abs(v).sum())(x)))
  for f in (lax.sign, lax.floor, lax.ceil, lax.round):
    t = revax.jvp(f, (x,), (np.ones_like(x),))[1]
    assert_close(t, np.zeros_like(x))
  t = revax.jvp(lambda v: lax.nextafter(v, 10.0), (x,), (np.ones_like(x),))[1]
  assert_close(t, np.zeros_like(x))


def test_integer_pow_zero_exponent_has_a_symbolic_zero_tangent():
  x = _uniform((3,), *_ANY)
  jaxpr = revax.make_jaxpr(lambda v: revax.jvp(lambda u: lax.integer_pow(u, 0), (v,), (v,)))(x)
  assert "mul" not in [e.primitive.name for e in jaxpr.jaxpr.eqns]


# --- unary and binary, complex ---------------------------------------------------------------------
COMPLEX_RECORDS = [r for r in unary_records.RECORDS + binary_records.RECORDS
                   if (r.name.endswith("_c64") or r.name.startswith("complex_f32")
                       or r.name.startswith("integer_pow_c64") or r.name.startswith("conj_c64")
                       or r.name.startswith("real_c64"))
                   and r.primitive not in ("sign", "max", "min", "round")
                   and "lexicographic" not in r.name]


@pytest.mark.parametrize("record", COMPLEX_RECORDS, ids=str)
def test_complex_forward_derivatives(record):
  """Forward mode (to order 2) by finite differences: well defined for complex values, unlike
  check_grads' reverse-mode pairing."""
  args = record.args(np.random.default_rng(0))
  check_grads(record.fun, args, order=2, modes=("fwd",))


COMPLEX = [
    ("exp", lax.exp, jax.lax.exp), ("log", lax.log, jax.lax.log), ("sin", lax.sin, jax.lax.sin),
    ("tanh", lax.tanh, jax.lax.tanh), ("sqrt", lax.sqrt, jax.lax.sqrt),
    ("logistic", lax.logistic, jax.lax.logistic), ("acosh", lax.acosh, jax.lax.acosh),
    ("square", lax.square, jax.lax.square),
    ("integer_pow_neg3", lambda x: lax.integer_pow(x, -3), lambda x: jax.lax.integer_pow(x, -3)),
    ("abs", lax.abs, jax.lax.abs), ("real", lax.real, jax.lax.real),
    ("imag", lax.imag, jax.lax.imag), ("conj", lax.conj, jax.lax.conj),
    ("mul_conj", lambda x: lax.mul(x, lax.conj(x)), lambda x: x * jax.lax.conj(x)),
]


@pytest.mark.parametrize("name,rf,jf", COMPLEX, ids=[c[0] for c in COMPLEX])
def test_complex_cotangents_follow_jax(name, rf, jf):
  """Reverse mode on complex values uses JAX's convention (the cotangent of x * y is ct * y,
  not ct * conj(y)); non-holomorphic functions (abs, real, imag, conj) included."""
  _compare(rf, jf, (_complex((2, 3), 0.5, 2.0),))


@pytest.mark.parametrize("name,rf,jf", [
    ("mul", lax.mul, jax.lax.mul), ("div", lax.div, jax.lax.div),
    ("pow", lax.pow, jax.lax.pow), ("add", lax.add, jax.lax.add), ("sub", lax.sub, jax.lax.sub),
], ids=["mul", "div", "pow", "add", "sub"])
def test_complex_binary_cotangents_follow_jax(name, rf, jf):
  _compare(rank_broadcasting(rf), _numpy_style(jf),
           (_complex((2, 3), 0.5, 2.0), _complex((3,), -1.0, 1.0)))


def test_complex_of_real_parts_follows_jax():
  _compare(rank_broadcasting(lax.complex), _numpy_style(jax.lax.complex),
           (_uniform((2, 3), *_ANY), _uniform((3,), *_ANY)))


def _real_pairing(a, b):
  return np.real(np.sum(np.asarray(a, np.complex128) * np.asarray(b, np.complex128)))


@pytest.mark.parametrize("fun", [lax.real, lax.imag, lax.conj], ids=["real", "imag", "conj"])
def test_complex_part_transposes(fun):
  """<f(x), c> == <x, f^T(c)> in the real pairing Re(sum(a * b)) that JAX's complex cotangents
  are transposes in."""
  x = _complex((2, 3), -2, 2)
  out = fun(x)
  ct = _like(out, 5)
  (x_bar,) = revax.linear_transpose(fun, x)(ct)
  np.testing.assert_allclose(_real_pairing(out, ct), _real_pairing(x, x_bar), rtol=1e-5)


def test_complex_transpose_with_broadcast_parts():
  x, y = _uniform((2, 3), *_ANY), _uniform((3,), *_ANY)
  ct = _like(np.zeros((2, 3), np.complex64), 6)
  got = revax.linear_transpose(rank_broadcasting(lax.complex), x, y)(ct)
  want = jax.linear_transpose(_numpy_style(jax.lax.complex), x, y)(ct)
  _close(got, want, 1e-5)
  assert np.shape(got[1]) == (3,)


# --- binary, real ----------------------------------------------------------------------------------
BINARY = [
    ("add", lax.add, jax.lax.add, _ANY, _ANY), ("sub", lax.sub, jax.lax.sub, _ANY, _ANY),
    ("mul", lax.mul, jax.lax.mul, _ANY, _ANY), ("div", lax.div, jax.lax.div, _ANY, (0.5, 3.0)),
    ("rem", lax.rem, jax.lax.rem, (0.1, 0.9), (1.0, 3.0)),
    ("pow", lax.pow, jax.lax.pow, (0.3, 3.0), (-2.0, 2.0)),
    ("atan2", lax.atan2, jax.lax.atan2, _ANY, (0.5, 3.0)),
    ("max", lax.max, jax.lax.max, _ANY, _ANY), ("min", lax.min, jax.lax.min, _ANY, _ANY),
]
SHAPES = [((2, 3), (2, 3)), ((2, 3, 4), (3, 1)), ((3, 1), (2, 1, 4)), ((), (2, 3))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("name,rf,jf,xdom,ydom", BINARY, ids=[b[0] for b in BINARY])
def test_binary_derivatives_match_jax(name, rf, jf, xdom, ydom, shapes):
  """Tangents of broadcast operands are broadcast to the output and cotangents summed back."""
  x, y = _uniform(shapes[0], *xdom), _uniform(shapes[1], *ydom)
  _compare(rank_broadcasting(rf), _numpy_style(jf), (x, y))


def test_pow_integer_exponent_matches_jax():
  x = np.array([[0.5, -1.5, 0.0], [2.0, -0.7, 0.0]], np.float32)
  y = np.array([3, -2, 0], np.int32)
  t = _like(x, 1)
  jf = lambda v: _numpy_style(jax.lax.pow)(v, y)
  pow_ = rank_broadcasting(lax.pow)
  assert_close(revax.jvp(lambda v: pow_(v, y), (x,), (t,))[1],
               np.asarray(jax.jvp(jf, (x,), (t,))[1]))
  ct = _like(x, 2)
  assert_close(revax.vjp(lambda v: pow_(v, y), x)[1](ct)[0],
               np.asarray(jax.vjp(jf, x)[1](ct)[0]))


def test_pow_exponent_derivative_at_zero_base_is_zero_as_in_jax():
  x, y = np.array([0.0, 2.0], np.float32), np.array([2.0, 1.5], np.float32)
  got = revax.grad(lambda b: lax.reduce_sum(lax.pow(x, b), (0,)))(y)
  want = jax.grad(lambda b: jnp.sum(jax.lax.pow(x, b)))(y)
  assert_close(got, np.asarray(want))


@pytest.mark.parametrize("rf,jf", [(lax.max, jax.lax.max), (lax.min, jax.lax.min)],
                         ids=["max", "min"])
def test_max_min_split_ties_half_half(rf, jf):
  x = np.array([1.0, 2.0, 3.0], np.float32)
  y = np.array([1.0, 5.0, -3.0], np.float32)
  got = revax.grad(lambda a, b: lax.reduce_sum(rf(a, b), (0,)), argnums=(0, 1))(x, y)
  want = jax.grad(lambda a, b: jnp.sum(jf(a, b)), argnums=(0, 1))(x, y)
  _close(got, want, 0)
  assert np.asarray(got[0])[0] == 0.5


def test_div_is_not_transposable_in_its_divisor():
  x = _uniform((3,), *_ANY)
  with pytest.raises(ValueError, match="div is linear in its dividend only"):
    revax.linear_transpose(lambda y: lax.div(x, y), x)(x)


@pytest.mark.parametrize("rf,jf", [(lax.mul, jax.lax.mul), (lax.div, jax.lax.div),
                                   (lax.add, jax.lax.add), (lax.sub, jax.lax.sub)],
                         ids=["mul", "div", "add", "sub"])
def test_broadcasting_transposes_match_jax(rf, jf):
  x, y = _uniform((3, 1), *_ANY), _uniform((2, 3, 4), 0.5, 2)
  ct = _like(np.zeros((2, 3, 4), np.float32), 3)
  got = revax.linear_transpose(lambda a: rank_broadcasting(rf)(a, y), x)(ct)
  want = jax.linear_transpose(lambda a: jf(jnp.broadcast_to(a, y.shape), y), x)(ct)
  _close(got, want, 1e-5)
  assert np.shape(got[0]) == (3, 1)


# --- batching --------------------------------------------------------------------------------------
def _names(fun, *args):
  return [e.primitive.name for e in revax.make_jaxpr(fun)(*args).jaxpr.eqns]


@pytest.mark.parametrize("in_axes,out_axes,shapes,expected", [
    # mapped at 0 next to an unmapped operand: broadcasting does everything
    ((0, None), 0, ((5, 2, 3), (3,)), ["add"]),
    # batch dim last: a size-1 dim in the unmapped operand (a reshape), no transpose
    ((1, None), 1, ((3, 5), (3,)), ["reshape", "add"]),
    ((None, 2), 2, ((2, 3), (2, 3, 5)), ["reshape", "add"]),
    # both mapped at 0 with different ranks: the lower-rank one gets a size-1 dim
    ((0, 0), 0, ((5, 2, 3), (5, 3)), ["reshape", "add"]),
    # both mapped, batch dims in matching positions counted from the right
    ((1, 0), 1, ((2, 5, 3), (5, 3)), ["add"]),
    # one transpose where no reshape can line them up
    ((0, 1), 0, ((5, 3), (3, 5)), ["transpose", "add"]),
    # a per-example scalar next to an unmapped array
    ((0, None), 0, ((5,), (2, 3)), ["reshape", "add"]),
])
def test_broadcasting_batch_rule_moves_no_data_it_need_not(in_axes, out_axes, shapes, expected):
  x, y = (_uniform(s, *_ANY) for s in shapes)
  # the per-example ranks differ: the primitive's broadcasting, through the internal function
  f = revax.vmap(rank_broadcasting(lax.add), in_axes=in_axes, out_axes=out_axes)
  assert _names(f, x, y) == expected
  assert "broadcast_in_dim" not in _names(f, x, y)
  got = f(x, y)
  want = jax.vmap(jnp.add, in_axes=in_axes, out_axes=out_axes)(x, y)
  assert_close(got, np.asarray(want))


def test_unary_batching_keeps_the_batch_dim():
  x = _uniform((3, 5, 2), *_POS)
  f = revax.vmap(lambda v: lax.integer_pow(lax.log(v), 2), in_axes=1, out_axes=1)
  assert _names(f, x) == ["log", "integer_pow"]
  assert_close(f(x), np.log(x.astype(np.float64)).astype(np.float32) ** 2, rtol=1e-5)


@pytest.mark.parametrize("rf,jf,dom", [(lax.pow, jax.lax.pow, (0.3, 2.0)),
                                       (lax.complex, jax.lax.complex, _ANY)],
                         ids=["pow", "complex"])
def test_batching_of_primitives_outside_naryop(rf, jf, dom):
  x, y = _uniform((3, 4), *dom), _uniform((4, 3), *dom)
  got = revax.vmap(rf, in_axes=(1, 0))(x, y)
  want = jax.vmap(jf, in_axes=(1, 0))(x, y)
  _close(got, want, 1e-5)


def test_vmap_of_second_derivatives_matches_jax():
  x = _uniform((4, 3), 0.5, 3.0)
  y = _uniform((3,), 0.5, 2.0)

  r = revax.vmap(revax.grad(lambda a: lax.reduce_sum(
      revax.grad(lambda b: lax.reduce_sum(lax.mul(lax.digamma(b), lax.atan2(b, y)), (0,)))(a),
      (0,))))
  j = jax.jit(jax.vmap(jax.grad(lambda a: jnp.sum(
      jax.grad(lambda b: jnp.sum(jax.lax.digamma(b) * jax.lax.atan2(b, y)))(a)))))
  _close(r(x), j(x), 2e-3)
