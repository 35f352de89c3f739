"""Differential tests of control flow against jax 0.10.2: twelve programs through both libraries,
values and derivatives (grad, or jvp for while loops) compared, eagerly and under jit; and the
memory of jit(grad(scan RNN)) growing linearly with the number of steps (temp bytes of XLA's
compiled program, no timing)."""
import numpy as np
import pytest

import revax
import revax.lax as rlax
import revax.numpy as rnp
from tests.platform_tolerances import NO_TEMP_BYTES, allclose_tol, skip_on_tpu

jax = pytest.importorskip("jax")
jnp, jlax = jax.numpy, jax.lax
jax.config.update("jax_platforms", "cpu")

rng = np.random.default_rng(7)
H, T = 4, 6
W = (rng.standard_normal((H, H)) * 0.5).astype(np.float32)
U = (rng.standard_normal((H, 2)) * 0.5).astype(np.float32)
XS = rng.standard_normal((T, 2)).astype(np.float32)
V = rng.standard_normal(H).astype(np.float32)


def programs(np_, lax):
  """name -> (function, args, how to differentiate: 'grad' | 'jvp' | None)."""
  def cond_closure(x, w):
    return np_.sum(lax.cond(x[0] > 0, lambda y: np_.sin(y) * w + V[:3],
                            lambda y: np_.cos(y * w), x))

  def switch3(x):
    return sum(lax.switch(i, [np_.sin, lambda y: y * y, np_.tanh], x).sum() * (i + 1)
               for i in (-1, 1, 2, 5))

  def rnn(W, h0, reverse=False):
    def step(h, x):
      h = np_.tanh(W @ h + U @ x)
      return h, np_.sum(h ** 2)
    h, per = lax.scan(step, h0, XS, reverse=reverse)
    return np_.sum(per) + np_.sum(h * V)

  def horner(x, coeffs):
    coeffs = np_.asarray(coeffs)
    return np_.sum(lax.fori_loop(0, 4, lambda i, acc: acc * x + coeffs[i], np_.zeros_like(x)))

  def cumprod(xs):
    return np_.sum(lax.scan(lambda c, x: (c * x, c * x), np.float32(1), xs)[1] * V[0])

  def while_growth(x):
    return lax.while_loop(lambda c: c[0] < 4,
                          lambda c: (c[0] + 1, np_.sin(c[1]) * 1.5 + c[1] * 0.5), (0, x))[1]

  def nested(x, w):
    ys = np.array([0.6, -0.4, 0.9], np.float32)

    def outer(c, y):
      inner = lambda c2: lax.scan(lambda a, z: (np_.sin(a * z) + w * a, a), c2, ys)[0]
      c = lax.cond(y > 0, inner, lambda c2: c2 * w + y, c)
      return c, c * y
    c, out = lax.scan(outer, x, ys)
    return c + np_.sum(out)

  def pytree_scan_unrolled(a, b):
    def step(c, x):
      s, p = c["s"], c["p"]
      return {"s": s + x * p, "p": p * 0.9 + x}, (s, np_.exp(-x * s))
    c, (ss, es) = lax.scan(step, {"s": a, "p": b}, XS[:, 0], unroll=2)
    return c["s"] * c["p"] + np_.sum(ss) + np_.sum(es)

  def map_of_cond(xs):
    return np_.sum(lax.map(lambda x: lax.cond(x > 0, np_.sin, np_.exp, x), xs))

  def fori_weak_init(x):
    return lax.fori_loop(0, 3, lambda i, c: c * x + 0.5, 0) + x

  def fori_dynamic_bound(x, n):
    return lax.fori_loop(0, n, lambda i, c: c * x + i, np.float32(1))

  def scan_reverse_with_consts(x):
    c, ys = lax.scan(lambda c, y: (c * np_.cos(y) + x, c + y * x), x, XS[:, 1], reverse=True)
    return c + np_.sum(ys * ys)

  f32 = lambda *s: rng_fixed.standard_normal(s).astype(np.float32)
  rng_fixed = np.random.default_rng(11)
  return {
      "cond_closure": (cond_closure, (f32(3), np.float32(0.7)), "grad"),
      "switch_three_branches": (switch3, (f32(3),), "grad"),
      "rnn_scan": (rnn, (W, f32(H)), "grad"),
      "rnn_scan_reverse": (lambda W, h0: rnn(W, h0, True), (W, f32(H)), "grad"),
      "fori_horner": (horner, (f32(2), f32(4)), "grad"),
      "scan_cumprod": (cumprod, (rng_fixed.uniform(0.5, 1.5, 5).astype(np.float32),), "grad"),
      "while_growth": (while_growth, (f32(2),), "jvp"),
      "nested_scan_cond_scan": (nested, (np.float32(0.3), np.float32(0.8)), "grad"),
      "pytree_scan_unrolled": (pytree_scan_unrolled, (np.float32(0.2), np.float32(0.5)), "grad"),
      "map_of_cond": (map_of_cond, (f32(5),), "grad"),
      "fori_weak_init": (fori_weak_init, (np.float32(0.7),), "grad"),
      "fori_dynamic_bound": (fori_dynamic_bound, (np.float32(0.7), np.int32(3)), "jvp"),
      "scan_reverse_with_consts": (scan_reverse_with_consts, (np.float32(0.4),), "grad"),
  }


REVAX = programs(rnp, rlax)
JAX = programs(jnp, jlax)


def _close(a, b, what):
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs jax {b.dtype}"
  np.testing.assert_allclose(a, b, **allclose_tol(rtol=2e-5, atol=2e-6), err_msg=what)


def _derivative(lib, f, args, how, inexact):
  """grad with respect to the float arguments, or the jvp along ones (float0 for integers)."""
  if how == "grad":
    return lib.grad(f, argnums=tuple(i for i, fl in enumerate(inexact) if fl))(*args)
  tangents = tuple(np.ones(np.shape(a), np.float32) if fl else
                   np.zeros(np.shape(a), jax.dtypes.float0) for a, fl in zip(args, inexact))
  return lib.jvp(f, tuple(args), tangents)[1]


@pytest.mark.parametrize("name", sorted(REVAX))
def test_values_and_derivatives_match_jax(name):
  f, args, how = REVAX[name]
  jf = JAX[name][0]
  expected = jax.jit(jf)(*args)  # JAX under jit only: its eager control flow compiles per call
  _close(f(*args), expected, f"{name} value")
  _close(revax.jit(f)(*args), expected, f"{name} jitted value")
  inexact = [np.asarray(a).dtype.kind == "f" for a in args]
  jd = jax.jit(lambda *a: _derivative(jax, jf, a, how, inexact))(*args)
  d = _derivative(revax, f, args, how, inexact)
  for a, b in zip(jax.tree_util.tree_leaves(d), jax.tree_util.tree_leaves(jd)):
    _close(a, b, f"{name} {how}")
  d = _derivative(revax, revax.jit(f), args, how, inexact)
  for a, b in zip(jax.tree_util.tree_leaves(d), jax.tree_util.tree_leaves(jd)):
    _close(a, b, f"{name} {how} of jit")


def test_vmap_of_grad_of_batched_predicates_matches_jax():
  def f(np_, lax):
    return lambda x: lax.cond(x > 0, lambda y: np_.sin(y) * y, lambda y: np_.exp(y) - 1, x)
  xs = rng.standard_normal(6).astype(np.float32)
  _close(revax.vmap(revax.grad(f(rnp, rlax)))(xs), jax.vmap(jax.grad(f(jnp, jlax)))(xs),
         "vmap(grad(cond))")
  _close(revax.grad(lambda xs: rnp.sum(revax.vmap(f(rnp, rlax))(xs)))(xs),
         jax.grad(lambda xs: jnp.sum(jax.vmap(f(jnp, jlax))(xs)))(xs), "grad(vmap(cond))")


# --- memory of jit(grad(scan)) -------------------------------------------------------------------
def _rnn_grad_temp_bytes(steps: int, hidden: int = 32) -> int:
  r = np.random.default_rng(0)
  Wm = (r.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
  xs = r.standard_normal((steps, hidden)).astype(np.float32)

  def loss(Wm, xs):
    def step(h, x):
      h = rnp.tanh(Wm @ h + x)
      return h, rnp.sum(h * h)
    h, per = rlax.scan(step, rnp.zeros(hidden, np.float32), xs)
    return rnp.sum(per) + rnp.sum(h)

  compiled = revax.jit(revax.grad(loss)).lower(Wm, xs).compile()
  return compiled.memory_analysis().temp_size_in_bytes


@skip_on_tpu(NO_TEMP_BYTES)
def test_grad_of_scan_memory_grows_linearly_with_steps():
  small, large = _rnn_grad_temp_bytes(1000), _rnn_grad_temp_bytes(2000)
  assert 1.9 <= large / small <= 2.1, (small, large)
  # per step: the stacked residuals only (a few vectors of the hidden size, no weights)
  per_step = (large - small) / 1000
  assert per_step <= 4 * 32 * 4, per_step
