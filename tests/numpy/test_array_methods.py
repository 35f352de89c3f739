"""Operators, methods and properties of revax.Array and of tracers, and revax.numpy under the
transformations (grad, vmap, jacfwd) checked against jax."""
import operator

import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.numpy.helpers import assert_close, jax, jnp, revax_result

A = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
F = np.linspace(-2, 3, 6, dtype=np.float32).reshape(2, 3)

BINARY_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
              operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
              operator.lshift, operator.rshift, operator.eq, operator.ne, operator.lt,
              operator.le, operator.gt, operator.ge]


@pytest.mark.parametrize("op", BINARY_OPS, ids=lambda o: o.__name__)
def test_binary_operators_match_jax(op):
  x, jx = rnp.asarray(A), jnp.asarray(A)
  y = np.array([2, 1, 3], np.int32)
  for lhs, rhs, jl, jr in [(x, y, jx, y), (y, x, y, jx), (x, 2, jx, 2), (3, x, 3, jx),
                           (x, x, jx, jx), (x, np.int32(2), jx, np.int32(2))]:
    out, expected = op(lhs, rhs), op(jl, jr)
    assert isinstance(out, revax.Array), (op, type(lhs), type(rhs))
    assert revax_result(out)[0][0] == revax_result(expected)[0][0]
    np.testing.assert_array_equal(out, expected)
  if op not in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift):
    f = rnp.asarray(F)
    assert_close(op(f, 1.5), np.asarray(op(jnp.asarray(F), 1.5)))
    assert_close(op(2.5, f), np.asarray(op(2.5, jnp.asarray(F))))


def test_unary_operators_and_builtins():
  x = rnp.asarray(F)
  np.testing.assert_array_equal(-x, -F)
  np.testing.assert_array_equal(+x, F)
  np.testing.assert_array_equal(abs(x), np.abs(F))
  np.testing.assert_array_equal(~rnp.asarray(A), ~A)
  q, r = divmod(rnp.asarray(A), 4)
  np.testing.assert_array_equal(q, A // 4)
  np.testing.assert_array_equal(r, A % 4)
  np.testing.assert_array_equal(x @ x.T, F @ F.T)
  np.testing.assert_array_equal(F @ x.T, F @ F.T)
  assert [float(v) for v in rnp.asarray(F[0])] == F[0].tolist()
  assert len(x) == 2 and float(x[1, 2]) == 3.0 and int(rnp.asarray(A)[0, 0]) == 1


def test_unknown_operands_defer():
  x = rnp.asarray(A)
  with pytest.raises(TypeError, match="unsupported operand"):
    x + [1, 2, 3]
  with pytest.raises(TypeError, match="unsupported operand"):
    x - "a"
  assert (x == None) is False  # noqa: E711 (Python's fallback for unknown operands)
  assert x != "abc"


def test_methods_match_numpy():
  x = rnp.asarray(F)
  for name in ("sum", "mean", "max", "min", "prod", "any", "all", "argmax", "argmin", "var",
               "std", "ptp", "cumsum", "cumprod"):
    assert_close(getattr(x, name)(), getattr(np, name)(F), msg=name)
    assert_close(getattr(x, name)(axis=1), getattr(np, name)(F, axis=1), msg=name)
  assert_close(x.sum(axis=0, keepdims=True), F.sum(axis=0, keepdims=True))
  assert_close(x.clip(0, 1), F.clip(0, 1))
  assert_close(x.round(), F.round())
  assert_close(x.sort(axis=0), np.sort(F, axis=0))
  np.testing.assert_array_equal(x.argsort(), np.argsort(F))
  np.testing.assert_array_equal(x.take(np.array([0, 5])), F.take([0, 5]))
  np.testing.assert_array_equal(x.repeat(2, axis=0), F.repeat(2, axis=0))
  np.testing.assert_array_equal(x.dot(x.T), F.dot(F.T))
  np.testing.assert_array_equal(rnp.asarray(A).nonzero()[1], A.nonzero()[1])
  c = rnp.asarray(F + 2j * F)
  np.testing.assert_array_equal(c.real, F)
  np.testing.assert_array_equal(c.imag, 2 * F)
  np.testing.assert_array_equal(c.conj(), np.conj(F + 2j * F))
  np.testing.assert_array_equal(x.imag, np.zeros_like(F))
  assert x.astype(np.int8).dtype == np.int8


def test_tracers_have_the_same_methods():
  def f(x):
    return (x.T, x.reshape(3, 2), x.sum(0), x.at[0, 1].add(10.0), x[::-1, 1], -x, x @ x.T,
            x.astype(np.int32), abs(x), x.max(), x.real, x.flatten(), x.at[1].get())
  for e, j in zip(f(rnp.asarray(F)), revax.jit(f)(F), strict=True):
    assert e.dtype == j.dtype
    assert_close(j, e)


# --- under the transformations, against jax --------------------------------------------------------
def _fun(m):
  def f(x):
    y = m.sin(x) ** 2 + m.where(x > 0, x, 0.5 * x)
    z = y.at[0, 1].add(x[1, 2]) / (1.0 + m.abs(x))
    return m.sum(z * m.mean(x, axis=0)) + m.var(x) + m.max(x[:, ::-1] * 2.0) + m.take(x, 3) \
        + m.sum(m.cumsum(x, 1) @ x.T) + m.prod(m.clip(x, -1.0, 1.5))
  return f


def test_grad_matches_jax():
  np.testing.assert_allclose(revax.grad(_fun(rnp))(F), jax.grad(_fun(jnp))(F), rtol=2e-5,
                             atol=1e-5)
  np.testing.assert_allclose(revax.jit(revax.grad(_fun(rnp)))(F), jax.grad(_fun(jnp))(F),
                             rtol=2e-5, atol=1e-5)


def test_vmap_matches_jax():
  def g(m):
    def f(x, i):
      return m.concatenate([x[i][None], m.stack([x.max(), x.mean()]), m.flip(x),
                            m.outer(x, x).sum(0)])
    return f
  xs = np.stack([F[0], F[1], F[0] * 2])
  idx = np.array([2, 0, -1], np.int32)
  np.testing.assert_allclose(revax.vmap(g(rnp))(xs, idx), jax.vmap(g(jnp))(xs, idx), rtol=1e-6)
  np.testing.assert_allclose(revax.jacfwd(lambda x: rnp.cumsum(x ** 2))(F[0]),
                             jax.jacfwd(lambda x: jnp.cumsum(x ** 2))(F[0]), rtol=1e-6)
