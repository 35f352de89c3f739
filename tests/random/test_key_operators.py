"""Python operators and abstract Array methods on typed key arrays raise as jax's: every
operator with two keys, a key and an int, an int and a key, and every unary operator (TypeError
texts equal to jax's), and the Array methods jax's key arrays leave abstract
(NotImplementedError "Cannot call abstract method ..."), for keys of two implementations."""
import operator

import jax
import pytest

import revax

BINARY = {name: getattr(operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lt", "le", "gt", "ge", "and_",
    "or_", "xor", "lshift", "rshift")}
UNARY = {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs,
         "invert": operator.invert}
METHODS = ("all", "any", "argmax", "argmin", "argsort", "clip", "conj", "cumsum", "max",
           "mean", "min", "nonzero", "prod", "round", "sort", "std", "sum", "var", "view",
           "item", "dot", "trace")
PROPERTIES = ("flat", "imag", "real", "mT")


def _outcome(fn):
  try:
    out = fn()
  except Exception as e:  # noqa: BLE001 (the exception is the outcome)
    return f"{type(e).__name__}: {e}"
  return f"{type(out).__name__} {getattr(out, 'dtype', '')}"


def _pairs(lib, impl):
  k = lib.random.key(0, impl=impl)
  return {"keys": (k, k), "key-int": (k, 1), "int-key": (1, k)}


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_operators(name, impl):
  op = BINARY[name]
  for kind in ("keys", "key-int", "int-key"):
    want = _outcome(lambda: op(*_pairs(jax, impl)[kind]))
    got = _outcome(lambda: op(*_pairs(revax, impl)[kind]))
    assert got.replace("revax", "jax") == want, (kind, want, got)


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
def test_unary_operators_and_abstract_methods(impl):
  jk, rk = jax.random.key(0, impl=impl), revax.random.key(0, impl=impl)
  for name, op in UNARY.items():
    want, got = _outcome(lambda: op(jk)), _outcome(lambda: op(rk))
    assert got == want, (name, want, got)
  for name in METHODS:
    assert _outcome(lambda: getattr(rk, name)()) == _outcome(lambda: getattr(jk, name)()), name
  for name in PROPERTIES:
    assert _outcome(lambda: getattr(rk, name)) == _outcome(lambda: getattr(jk, name)), name
