"""Every revax.numpy function that takes one array, called with a pytree that has a
`__jax_array__` method (what flax's nnx Variables are: `jnp.mean(model.kernel)`), against
jax.numpy: where jax computes, revax computes the same values; where jax raises, revax raises.
(Non-pytree objects with `__jax_array__` are refused by both where avals are taken.)
jax's side (which functions take a plain array, and each outcome) is read from its record
(tests/recorded_oracle.py): every pytest worker collects this module, and jax's eager calls
compiled some 260 programs there each time."""
import warnings

import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.numpy.helpers import jax, jnp
from tests.recorded_oracle import Oracle

ORACLE = Oracle(__file__)

# where jax raises TypeError from its own argument checks: revax computes (gradient) or raises
# ValueError taking the aval (lexsort)
JAX_TYPE_ERROR = {"gradient", "lexsort"}
NOT_ARRAY_FUNCTIONS = {"printoptions", "vectorize"}


def _wrapper(lib):
  class Var:
    def __init__(self, v):
      self.v = v

    def __jax_array__(self):
      return self.v
  lib.tree_util.register_pytree_node(Var, lambda s: ((s.v,), None), lambda _, c: Var(*c))
  return Var


RVAR, JVAR = _wrapper(revax), _wrapper(jax)
X = np.array([[0.5, 0.25, 0.75], [0.1, 0.2, 0.3]], np.float32)


def _takes_an_array(fn) -> bool:
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      fn(X)
  except Exception:  # noqa: BLE001 (not a one-array function)
    return False
  return True


def _one_array_functions():
  out = []
  for name in sorted(n for n in dir(rnp) if not n.startswith("_")):
    f, g = getattr(rnp, name), getattr(jnp, name, None)
    if not callable(f) or isinstance(f, type) or g is None or name in NOT_ARRAY_FUNCTIONS:
      continue
    if (_takes_an_array(lambda x: f(rnp.asarray(x)))
        and ORACLE(("takes an array", name), lambda: _takes_an_array(lambda x: g(jnp.asarray(x))))):
      out.append(name)
  return out


NAMES = _one_array_functions()


def _outcome(fn):
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      out = fn()
  except Exception as e:  # noqa: BLE001 (the exception's type is the outcome)
    return type(e).__name__
  return [np.asarray(v).tolist() for v in jax.tree_util.tree_leaves(
      [np.asarray(x) for x in revax.tree_util.tree_leaves(out)])]


def test_the_sweep_is_wide():
  assert len(NAMES) >= 150, len(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_pytree_with_jax_array_as_jax(name):
  got = _outcome(lambda: getattr(rnp, name)(RVAR(rnp.asarray(X))))
  want = ORACLE(("outcome", name),
                lambda: _outcome(lambda: getattr(jnp, name)(JVAR(jnp.asarray(X)))))
  if name in JAX_TYPE_ERROR:
    assert want == "TypeError" and got != "TypeError", (got, want)
    return
  if isinstance(want, str) or isinstance(got, str):
    assert got == want
  else:
    assert len(got) == len(want)
    for a, b in zip(got, want):
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_under_grad_and_jit():
  f = lambda lib, V: lambda v: lib.numpy.mean(V(v)) + lib.numpy.var(V(v)) + lib.numpy.max(V(v))
  got = revax.jit(revax.grad(f(revax, RVAR)))(rnp.asarray(X))
  want = jax.jit(jax.grad(f(jax, JVAR)))(jnp.asarray(X))
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
