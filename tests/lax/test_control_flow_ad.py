"""Derivatives of control flow: check_grads (order 2, forward and reverse where defined) of the
acceptance programs eager and jitted, the jaxprs of jvp/linearize/vjp type-check, partial
evaluation stages only tangent work and stores only the residuals the backward pass needs, the
transposes (a scan transposes to a reverse scan), and while_loop's reverse-mode error."""
import numpy as np
import pytest

import revax
import revax.lax as lax
import revax.numpy as rnp
from revax._src.core.typecheck import check_jaxpr
from tests.gradcheck import check_grads
from tests.platform_tolerances import allclose_tol

rng = np.random.default_rng(1)
H, T = 3, 4
W = (rng.standard_normal((H, H)) * 0.5).astype(np.float32)
U = (rng.standard_normal((H, H)) * 0.5).astype(np.float32)
b = (rng.standard_normal(H) * 0.1).astype(np.float32)
XS = rng.standard_normal((T, H)).astype(np.float32)
H0 = rng.standard_normal(H).astype(np.float32)
SHIFT = rnp.asarray(rng.standard_normal(3).astype(np.float32))  # a closed-over array


def cond_closures(p, x, w):
  """Branches closing over an argument (w) and a global array (SHIFT)."""
  return lax.cond(p > 0, lambda y: rnp.sin(y) * w + SHIFT, lambda y: rnp.cos(y * w) - SHIFT, x)


def switch3(i):
  return lambda x, w: lax.switch(i, [lambda y: rnp.sin(y) * w, lambda y: rnp.exp(y) - w * y,
                                     lambda y: rnp.tanh(y * w)], x)


def rnn_loss(reverse):
  def loss(W, U, b, xs, h0):
    def step(h, x):
      h = rnp.tanh(W @ h + U @ x + b)
      return h, rnp.sum(h * h)
    h, per_step = lax.scan(step, h0, xs, reverse=reverse)
    return rnp.sum(per_step) + rnp.sum(h * SHIFT)
  return loss


def horner(x, coeffs):
  """A polynomial by Horner's rule with fori_loop over a static trip count (a scan)."""
  return lax.fori_loop(0, coeffs.shape[0], lambda i, acc: acc * x + coeffs[i],
                       rnp.zeros_like(x))


def cumprod(xs):
  return lax.scan(lambda c, x: (c * x, c * x), np.float32(1), xs)[1]


PROGRAMS = {
    "cond_closures_true": (cond_closures, (np.float32(1.0), rng.standard_normal(3)
                                           .astype(np.float32), np.float32(0.7))),
    "cond_closures_false": (cond_closures, (np.float32(-1.0), rng.standard_normal(3)
                                            .astype(np.float32), np.float32(0.7))),
    "switch3_0": (switch3(0), (rng.standard_normal(3).astype(np.float32), np.float32(0.5))),
    "switch3_1": (switch3(1), (rng.standard_normal(3).astype(np.float32), np.float32(0.5))),
    "switch3_2": (switch3(2), (rng.standard_normal(3).astype(np.float32), np.float32(0.5))),
    "rnn_scan": (rnn_loss(False), (W, U, b, XS, H0)),
    "rnn_scan_reverse": (rnn_loss(True), (W, U, b, XS, H0)),
    "fori_horner": (lambda x, c: horner(x, rnp.asarray(c)),
                    (rng.standard_normal(2).astype(np.float32),
                     rng.standard_normal(4).astype(np.float32))),
    "scan_cumprod": (cumprod, (rng.uniform(0.5, 1.5, 5).astype(np.float32),)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_check_grads_order2(name):
  f, args = PROGRAMS[name]
  check_grads(f, args, order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["cond_closures_true", "switch3_1", "rnn_scan_reverse",
                                  "fori_horner", "scan_cumprod"])
def test_check_grads_jitted(name):
  f, args = PROGRAMS[name]
  check_grads(revax.jit(f), args, order=1, modes=("fwd", "rev"))
  g = revax.jit(revax.grad(lambda *a: rnp.sum(f(*a)), argnums=tuple(range(len(args)))))
  eager = revax.grad(lambda *a: rnp.sum(f(*a)), argnums=tuple(range(len(args))))(*args)
  for x, y in zip(g(*args), eager):  # (on a TPU: the chip against the host's NumPy)
    np.testing.assert_allclose(x, y, **allclose_tol(rtol=2e-5, atol=2e-6))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_ad_jaxprs_typecheck(name):
  f, args = PROGRAMS[name]
  ones = tuple(np.ones_like(a) for a in args)
  check_jaxpr(revax.make_jaxpr(lambda *xs: revax.jvp(f, xs, ones))(*args))
  check_jaxpr(revax.make_jaxpr(lambda *xs: revax.linearize(f, *xs)[1](*ones))(*args))

  def vjp(*xs):
    out, f_vjp = revax.vjp(f, *xs)
    return f_vjp(rnp.ones_like(out))
  check_jaxpr(revax.make_jaxpr(vjp)(*args))
  check_jaxpr(revax.make_jaxpr(revax.jit(vjp))(*args))  # through jit's own AD rules


def _scans(closed):
  return [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]


def test_grad_of_scan_stores_only_needed_per_step_residuals():
  loss = rnn_loss(False)
  closed = revax.make_jaxpr(revax.grad(loss, argnums=(0, 1, 2)))(W, U, b, XS, H0)
  check_jaxpr(closed)
  fwd, bwd = _scans(closed)
  assert not fwd.params["reverse"] and bwd.params["reverse"]
  # forward: the carry, the final carry's scalar sums and the stacked residuals; none of them is
  # a stack of the weights (loop-invariant: passed to the backward scan as constants) or a copy
  # of xs (its slices are read from xs itself)
  out_shapes = [v.aval.shape for v in fwd.outvars]
  assert (T, H, H) not in out_shapes
  stacked = [s for s in out_shapes if s == (T, H)]
  assert len(stacked) == 3, out_shapes  # h_t, 1 - tanh^2 and the 2 h factor of sum(h * h)
  assert bwd.invars.count(closed.jaxpr.invars[3]) == 1  # xs read directly by the backward scan
  # backward: W enters as a constant (U is not needed: xs has no tangent); the cotangents of
  # W, U and b accumulate in the carry
  assert bwd.params["num_consts"] == 1 and bwd.invars[0] is closed.jaxpr.invars[0]
  assert [v.aval.shape for v in bwd.outvars] == [(H, H), (H, H), (H,), (H,)]


def test_loop_invariant_residuals_are_hoisted_out_of_the_loop():
  def loss(W, xs):
    def step(h, x):
      return rnp.tanh(rnp.exp(W) @ h + x), None
    return rnp.sum(lax.scan(step, rnp.ones(H), xs)[0])
  closed = revax.make_jaxpr(revax.grad(loss))(W, XS)
  check_jaxpr(closed)
  fwd = _scans(closed)[0]
  assert "exp" in [e.primitive.name for e in closed.jaxpr.eqns]  # computed once, outside
  assert (T, H, H) not in [v.aval.shape for v in fwd.outvars]
  np.testing.assert_allclose(revax.grad(loss)(W, XS), revax.jit(revax.grad(loss))(W, XS),
                             **allclose_tol(rtol=1e-5, atol=1e-6))  # (tanh, exp)


def test_linearize_of_cond_stages_only_tangent_work():
  f = lambda x: lax.cond(x[0] > 0, lambda y: rnp.sin(y) * 2, lambda y: rnp.exp(y), x)
  x = np.array([0.5, -1.0], np.float32)
  y, f_jvp = revax.linearize(f, x)
  np.testing.assert_allclose(f_jvp(np.ones(2, np.float32)), 2 * np.cos(x), rtol=1e-6)
  lin = revax.make_jaxpr(lambda x, t: revax.linearize(f, x)[1](t))(x, x)
  check_jaxpr(lin)
  conds = [e for e in lin.jaxpr.eqns if e.primitive.name == "cond"]
  assert len(conds) == 2  # the known cond (values, residuals) and the tangent cond
  tangent_branches = conds[1].params["branches"]
  names = {e.primitive.name for br in tangent_branches for e in br.jaxpr.eqns}
  assert not names & {"sin", "cos", "exp"}, names  # only products with residuals


def test_transpose_of_linear_scan_and_cond():
  A = rng.standard_normal((H, H)).astype(np.float32)

  def lin(xs):
    c, ys = lax.scan(lambda c, x: (A @ c + x, 2 * c - x), rnp.zeros(H), xs, reverse=True)
    return c, lax.cond(True, lambda y: y * 3, lambda y: -y, ys)

  ct = (rng.standard_normal(H).astype(np.float32), rng.standard_normal((T, H)).astype(np.float32))
  (xs_bar,) = revax.linear_transpose(lin, XS)(ct)
  c, ys = lin(XS)
  lhs = np.vdot(c, ct[0]) + np.vdot(ys, ct[1])
  np.testing.assert_allclose(lhs, np.vdot(XS, xs_bar), rtol=1e-4)
  t = revax.make_jaxpr(lambda ct0, ct1: revax.linear_transpose(lin, XS)((ct0, ct1)))(*ct)
  check_jaxpr(t)
  (scan,) = _scans(t)
  assert scan.params["reverse"] is False  # the transpose of a reverse scan runs forward


def test_while_loop_forward_mode_and_linearize():
  f = lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, rnp.sin(c[1]) * 1.5),
                               (0, x))[1]
  x = np.array([0.3, -0.8], np.float32)
  check_grads(f, (x,), order=2, modes=("fwd",))
  check_grads(revax.jit(f), (x,), order=1, modes=("fwd",))
  y, f_jvp = revax.linearize(f, x)
  expected = revax.jvp(f, (x,), (np.ones(2, np.float32),))[1]
  np.testing.assert_allclose(f_jvp(np.ones(2, np.float32)), expected, rtol=1e-6)
  lin = revax.make_jaxpr(lambda x, t: revax.linearize(f, x)[1](t))(x, x)
  check_jaxpr(lin)
  # the known carries run in a known loop, the tangent in the staged (whole) loop
  assert [e.primitive.name for e in lin.jaxpr.eqns].count("while") == 2


REVERSE_WHILE_ERROR = ("Reverse-mode differentiation does not work for lax.while_loop or "
                       "lax.fori_loop with dynamic start/stop values")


def test_while_loop_reverse_mode_raises_jax_error():
  f = lambda x: lax.while_loop(lambda c: c < 3.0, lambda c: c * 2, x)
  with pytest.raises(ValueError, match=REVERSE_WHILE_ERROR):
    revax.grad(f)(1.0)
  g = lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, x)
  with pytest.raises(ValueError, match=REVERSE_WHILE_ERROR):
    revax.jit(revax.grad(g))(1.5, 3)
  # static bounds (a concrete n, even under grad) are a scan: reverse mode works
  np.testing.assert_allclose(revax.grad(g)(1.5, 3), 4 * 1.5 ** 3, rtol=1e-6)
  np.testing.assert_allclose(revax.jit(revax.grad(lambda x: g(x, 3)))(1.5), 4 * 1.5 ** 3,
                             rtol=1e-6)


def test_gradient_of_integer_carries_and_unused_branches():
  def f(x):
    (n, y), _ = lax.scan(lambda c, _: ((c[0] + 1, c[1] * x + c[0]), None), (0, x), None,
                         length=3)
    return y + lax.cond(n > 2, lambda: x * 0 + 1.0, lambda: x)
  check_grads(f, (np.float32(0.7),), order=2)
  np.testing.assert_allclose(revax.grad(f)(np.float32(0.7)), 4 * 0.7 ** 3 + 1,
                             rtol=1e-5)
