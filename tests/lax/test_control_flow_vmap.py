"""vmap of control flow: check_vmap of the acceptance programs (batched predicates, indices, loop
bounds, carries, scanned inputs and closed-over values), the batched jaxprs type-check, and
nested control flow (scan inside cond inside scan) under jit, grad and vmap in combination."""
import numpy as np
import pytest

import revax
import revax.lax as lax
import revax.numpy as rnp
from revax._src.core.typecheck import check_jaxpr
from revax.test_util import check_vmap
from tests.gradcheck import check_grads
from tests.lax.test_control_flow_ad import cond_closures, cumprod, horner, rnn_loss, switch3

rng = np.random.default_rng(2)
B, H, T = 3, 3, 4


def f32(*shape, scale=1.0):
  return (rng.standard_normal(shape) * scale).astype(np.float32)


def _signs(n):
  return (rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 1.5, n)).astype(np.float32)


def _check(f, args, in_axes):
  check_vmap(f, args, in_axes=in_axes, atol=1e-5, rtol=1e-5)
  closed = revax.make_jaxpr(revax.vmap(f, in_axes=in_axes))(*args)
  check_jaxpr(closed)
  return closed


def _prims(closed):
  names = set()

  def walk(jaxpr):
    for e in jaxpr.eqns:
      names.add(e.primitive.name)
      for p in e.params.values():
        for sub in (p if isinstance(p, tuple) else (p,)):
          if hasattr(sub, "jaxpr"):
            walk(sub.jaxpr)
  walk(closed.jaxpr)
  return names


def test_cond_batched_predicate_becomes_select():
  closed = _check(cond_closures, (_signs(B), f32(B, 3), np.float32(0.7)), (0, 0, None))
  assert "cond" not in _prims(closed) and "select_n" in _prims(closed)
  _check(cond_closures, (_signs(B), f32(3), f32(B)), (0, None, 0))


def test_cond_unbatched_predicate_stays_a_cond():
  closed = _check(cond_closures, (np.float32(1.0), f32(3, B), f32(B)), (None, 1, 0))
  assert [e.primitive.name for e in closed.jaxpr.eqns].count("cond") == 1
  _check(cond_closures, (np.float32(-1.0), f32(B, 3), np.float32(0.3)), (None, 0, None))


def test_switch_batched_index():
  f = lambda i, x: lax.switch(i, [rnp.sin, lambda y: y * 2, rnp.tanh], x)
  closed = _check(f, (np.array([2, -1, 5], np.int32), f32(B, 2)), (0, 0))
  assert "select_n" in _prims(closed)
  _check(f, (np.array([0, 1, 2], np.int32), f32(2)), (0, None))
  for i in range(3):
    _check(switch3(i), (f32(B, 3), f32(B)), (0, 0))


@pytest.mark.parametrize("reverse", [False, True])
def test_rnn_scan(reverse):
  loss = rnn_loss(reverse)
  Wb, Ub, bb, xsb, h0b = f32(B, H, H, scale=0.5), f32(H, H, scale=0.5), f32(B, H), f32(T, B, H), \
      f32(H)
  args = (Wb, Ub, bb, xsb, h0b)
  _check(loss, args, (0, None, 0, 1, None))
  _check(loss, (Wb[0], Ub, bb[0], xsb, f32(H, B)), (None, None, None, 1, 1))
  _check(loss, (Wb[0], Ub, bb[0], xsb[:, 0], f32(B, H)), (None, None, None, None, 0))
  # vmap of grad and grad of vmap
  g = revax.grad(loss, argnums=(0, 2))
  _check(g, args, (0, None, 0, 1, None))
  summed = lambda *a: rnp.sum(revax.vmap(loss, in_axes=(0, None, 0, 1, None))(*a))
  check_grads(summed, args, order=1, modes=("rev",))


def test_fori_horner_and_cumprod():
  _check(lambda x, c: horner(x, rnp.asarray(c)), (f32(B, 2), f32(4)), (0, None))
  _check(lambda x, c: horner(x, rnp.asarray(c)), (f32(2), f32(B, 4)), (None, 0))
  _check(cumprod, (rng.uniform(0.5, 1.5, (B, 5)).astype(np.float32),), (0,))
  _check(cumprod, (rng.uniform(0.5, 1.5, (5, B)).astype(np.float32),), (1,))


def test_fori_batched_loop_bounds_run_until_every_example_is_done():
  f = lambda lo, hi, x: lax.fori_loop(lo, hi, lambda i, acc: acc * x + i, rnp.ones_like(x))
  closed = _check(f, (np.array([0, 2, 1], np.int32), np.array([3, 2, 5], np.int32), f32(B)),
                  (0, 0, 0))
  assert "while" in _prims(closed) and "reduce_or" in _prims(closed)
  _check(f, (0, np.array([4, 0, 2], np.int32), f32(2)), (None, 0, None))
  _check(f, (np.array([1, 0, 3], np.int32), 3, f32(B, 2)), (0, None, 0))


def test_while_batched_predicate_pytree_carry_and_batched_consts():
  limit = np.array([1.0, 5.0, 30.0], np.float32)
  f = lambda x, lim: lax.while_loop(lambda c: c[1] < lim,
                                    lambda c: (c[0] + 1, c[1] * 2 + rnp.sin(c[0] * 1.0)),
                                    (0, x))
  _check(f, (np.abs(f32(B)) + 0.1, np.float32(7)), (0, None))
  _check(f, (np.float32(0.5), limit), (None, 0))
  # an unbatched predicate with a batched carry: the loop stays a plain while
  g = lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 1.5), (0, x))
  closed = _check(g, (f32(B, 2),), (0,))
  assert "reduce_or" not in _prims(closed)
  # forward mode of a batched while
  check_vmap(lambda x: revax.jvp(lambda y: f(y, np.float32(7))[1], (x,), (rnp.ones_like(x),)),
             (np.abs(f32(B)) + 0.1,))


# --- nested control flow: scan inside cond inside scan ----------------------------------------
def nested(x, ys, w):
  def outer(c, y):
    def inner(c2):
      return lax.scan(lambda a, z: (rnp.sin(a * z) + w * a, a * z), c2, ys)[0]
    c = lax.cond(y > 0, inner, lambda c2: c2 * w + y, c)
    return c, c * y
  return lax.scan(outer, x, ys)


def nested_reference(x, ys, w):
  def inner(c2):
    for z in ys:
      c2 = np.sin(c2 * z) + w * c2
    return c2
  c, out = np.float64(x), []
  for y in ys:
    c = inner(c) if y > 0 else c * w + y
    out.append(c * y)
  return c, np.array(out)


YS = np.array([0.6, -0.4, 0.9], np.float32)


def test_nested_values_eager_and_jit():
  ref = nested_reference(0.3, YS.astype(np.float64), 0.8)
  for out in (nested(np.float32(0.3), YS, np.float32(0.8)),
              revax.jit(nested)(np.float32(0.3), YS, np.float32(0.8))):
    np.testing.assert_allclose(out[0], ref[0], rtol=1e-5)
    np.testing.assert_allclose(out[1], ref[1], rtol=1e-5, atol=1e-6)


def test_nested_under_grad_and_jit():
  f = lambda x, w: nested(x, YS, w)[0] + rnp.sum(nested(x, YS, w)[1])
  check_grads(f, (np.float32(0.3), np.float32(0.8)), order=2, modes=("fwd", "rev"))
  g = revax.grad(f, argnums=(0, 1))
  for a, e in zip(revax.jit(g)(np.float32(0.3), np.float32(0.8)),
                  g(np.float32(0.3), np.float32(0.8))):
    np.testing.assert_allclose(a, e, rtol=1e-5)
  check_jaxpr(revax.make_jaxpr(g)(np.float32(0.3), np.float32(0.8)))
  check_jaxpr(revax.make_jaxpr(revax.jit(g))(np.float32(0.3), np.float32(0.8)))


def test_nested_under_vmap_and_vmap_of_grad():
  xs, ws = f32(B, scale=0.5), np.abs(f32(B)) * 0.5 + 0.3
  ysb = np.stack([YS, -YS, YS[::-1]])  # a batched outer predicate (y > 0) and inner xs
  _check(nested, (xs, YS, np.float32(0.8)), (0, None, None))
  _check(nested, (np.float32(0.3), ysb, ws), (None, 0, 0))
  g = revax.grad(lambda x, ys, w: nested(x, ys, w)[0], argnums=(0, 2))
  _check(g, (xs, ysb, ws), (0, 0, 0))
  _check(revax.jit(g), (xs, YS, ws), (0, None, 0))


def test_batched_predicate_gives_no_nan_gradients_from_the_branch_not_taken():
  """Each branch sees the examples that do not take it through stop_gradient (as JAX does)."""
  import jax
  import jax.numpy as jnp
  xs = np.array([-1.0, 4.0, 0.25], np.float32)
  r = revax.grad(lambda xs: revax.vmap(
      lambda x: revax.lax.cond(x > 0, rnp.sqrt, lambda x: x * 3.0, x))(xs).sum())(xs)
  j = jax.grad(lambda xs: jax.vmap(
      lambda x: jax.lax.cond(x > 0, jnp.sqrt, lambda x: x * 3.0, x))(xs).sum())(xs)
  np.testing.assert_allclose(r, j, rtol=1e-6)
  assert np.isfinite(np.asarray(r)).all()


# outputs that every branch returns as the same operand are that operand (jax's forwarding):
# under vmap with a batched predicate they stay unbatched when the operand is (flax's nnx.cond
# threads its state through); values, out_axes=None and the jaxprs' shapes compared with jax
FORWARD_CASES = {
    "one forwarded": (lambda x, y: (x, y + 1), lambda x, y: (x, y * 2)),
    "all forwarded": (lambda x, y: (x, y), lambda x, y: (x, y)),
    "swapped in one branch": (lambda x, y: (x, y), lambda x, y: (y, x)),
    "forwarded in one branch only": (lambda x, y: (x, y), lambda x, y: (x * 2, y)),
    "constant output": (lambda x, y: (x, 1.0 + 0 * y), lambda x, y: (x, y)),
}


@pytest.mark.parametrize("name", list(FORWARD_CASES))
def test_cond_forwarded_outputs_as_jax(name):
  jax = pytest.importorskip("jax")
  t, f = FORWARD_CASES[name]

  def run(lib):
    cond = lambda p, x, y: lib.lax.cond(p, t, f, x, y)
    preds = lib.numpy.array([True, False])
    out = {}
    for axes in ((None, 0), (0, 0), (None, None)):
      try:
        got = lib.vmap(cond, in_axes=(0, None, 0), out_axes=axes)(preds, 1.0,
                                                                   lib.numpy.ones(2) * 3)
        out[axes] = [(np.asarray(v).tolist(), str(v.dtype), bool(getattr(v, "weak_type", 0)))
                     for v in got]
      except ValueError:
        out[axes] = "ValueError"
    jaxpr = lib.make_jaxpr(cond)(True, 1.0, 2.0)
    out["eager"] = [np.asarray(v).tolist() for v in cond(False, 1.0, 2.0)]
    out["cond outputs"] = [len(e.outvars) for e in jaxpr.jaxpr.eqns if e.primitive.name == "cond"]
    return out

  assert run(revax) == run(jax)
