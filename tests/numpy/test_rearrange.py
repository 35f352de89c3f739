"""select and piecewise (revax/_src/numpy/rearrange.py) against jax 0.10.2, eagerly and under jit.

jnp.select is an argmax over the stacked conditions indexing one lax.select_n. A chain of
selects computes the same values op by op, but XLA folds it differently: with a condition that
is constant once nested calls are inlined, XLA rewrote exp(select(p, NaN, 0)) to 1 (issue 33:
scipy.stats.truncnorm.sf under jit). The grid below puts constant, traced and non-boolean
conditions against NaN, inf, constant and traced choices, under exp, in one program per side.
Under jit the grid leaves out exp of a select whose every choice is a constant, one of them NaN:
XLA:CPU miscompiles that (exp(where(x > 0, nan, where(x > 1, 0., nan))) reads garbage such as
-1.35e7, in jax's programs too), so neither side's value means anything there.
"""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.edges.harness import difference, outcome

nan, inf = np.nan, np.inf
X = np.array([nan, inf, -inf, 0., -0., 1., -1., 0.5, 2.5, -2.5], np.float32)

CONDS = {
    "true": lambda m, x: m.full(x.shape, True),
    "false": lambda m, x: m.zeros(x.shape, bool),
    "x>0": lambda m, x: x > 0,
    "isnan": lambda m, x: m.isnan(x),
    "int": lambda m, x: (x > 1).astype(np.int32),
    "float": lambda m, x: m.where(x < 0, x, 0.),
    "scalar": lambda m, x: True,
}
CHOICES = {
    "nan": lambda m, x: m.float32(nan),
    "0": lambda m, x: 0.,
    "x": lambda m, x: x,
    "-inf": lambda m, x: -inf,
}
POST = {"id": lambda m, y: y, "exp": lambda m, y: m.exp(y)}


def _grid():
  """One condition: every kind against every choice; two: the constant, traced and integer
  conditions against NaN and traced choices. Defaults 0 and NaN under exp, x plain."""
  cases = []
  for n, conds, choices in ((1, CONDS, CHOICES), (2, ("true", "false", "x>0", "int"),
                                                  ("nan", "x"))):
    for cond in itertools.product(conds, repeat=n):
      for choice in itertools.product(choices, repeat=n):
        for default, post in (("0", "exp"), ("nan", "exp"), ("x", "id")):
          cases.append((cond, choice, default, post))
  return cases


CASES = _grid()


def _call(m, x, case):
  conds, choices, default, post = case
  out = m.select([CONDS[c](m, x) for c in conds], [CHOICES[c](m, x) for c in choices],
                 CHOICES[default](m, x))
  return POST[post](m, out)


def _key(case):
  conds, choices, default, post = case
  return f"{post}(select({list(conds)}, {list(choices)}, {default}))"


def _xla_miscompiles(case):
  _, choices, default, post = case
  values = (*choices, default)
  return post == "exp" and "x" not in values and "nan" in values


JIT_CASES = [c for c in CASES if not _xla_miscompiles(c)]


def _compare(jax_outs, revax_outs, cases=CASES):
  found = []
  for case, e, a in zip(cases, jax_outs, revax_outs, strict=True):
    d = difference(e, a)
    if d:
      found.append(f"{_key(case)}: {d}")
  return found


def test_select_grid_matches_jax_eager():
  found = _compare([outcome(_call, jnp, X, c) for c in CASES],
                   [outcome(_call, rnp, X, c) for c in CASES])
  assert not found, "\n".join(found)


def test_select_grid_matches_jax_under_jit():
  """Every case in one program per side: XLA sees the conditions that are constants as such."""
  want = jax.jit(lambda x: [_call(jnp, x, c) for c in JIT_CASES])(X)
  got = revax.jit(lambda x: [_call(rnp, x, c) for c in JIT_CASES])(X)
  found = _compare([outcome(lambda w=w: w) for w in want], [outcome(lambda g=g: g) for g in got],
                   JIT_CASES)
  assert not found, "\n".join(found)


@pytest.mark.parametrize("call", [
    lambda m: m.select([m.asarray([1, 0, 2])], [m.asarray([5., 6., 7.])]),
    lambda m: m.select([m.asarray([0.5, 0., nan])], [3], default=m.int8(1)),
    lambda m: m.select([m.asarray([1j, 0j])], [m.asarray([1, 2], np.uint8)]),
    lambda m: m.select([True, m.asarray([False, True])], [1, 2.]),
    lambda m: m.select((m.asarray([True, False]),), (m.asarray([1, 2]),), m.asarray([[3], [4]])),
    lambda m: m.select([m.asarray([True, False])], [m.asarray([1, 2, 3])]),
    lambda m: m.select([[True, False]], [m.asarray([1, 2])]),
    lambda m: m.select([], []),
    lambda m: m.select([m.asarray(True)], []),
    lambda m: m.select(m.asarray([[True, False], [False, True]]), m.asarray([[1, 2], [3, 4]])),
], ids=["int cond", "float cond int8 default", "complex cond uint8", "scalar conds weak",
        "broadcast default", "shape mismatch", "list cond", "empty", "length mismatch",
        "array condlist"])
def test_select_kinds_and_errors_match_jax(call):
  assert difference(outcome(call, jnp), outcome(call, rnp)) is None, (
      outcome(call, jnp), outcome(call, rnp))


XC = np.array([1 + 2j, -1 - 1j, 0.5j, 3 + 0j, -2 + 0j, complex(nan, 1)], np.complex64)
XR = np.array([-2., -0.5, 0., 0.5, 2., nan], np.float32)
XI = np.array([-3, -1, 0, 1, 2, 5], np.int32)
PIECEWISE = {
    "complex": lambda m: m.piecewise(XC, [XC.real < 0, XC.real > 1],
                                     [lambda x: x * 2, lambda x: x - 1j, 7]),
    "complex constants": lambda m: m.piecewise(XC, [XC.real < 0], [1j, 2]),
    "complex to real parts": lambda m: m.piecewise(XC, [XC.real < 0],
                                                   [lambda x: x.real, lambda x: x.imag]),
    "complex condition": lambda m: m.piecewise(XC, [XC], [1j]),
    "float": lambda m: m.piecewise(XR, [XR < 0, XR > 1], [lambda x: -x, lambda x: x * x, 3.]),
    "overlapping: last wins": lambda m: m.piecewise(XI, [XI < 1, XI > -2],
                                                    [lambda x: x * 10, lambda x: -x]),
    "int with float results": lambda m: m.piecewise(XI, [XI < 1], [lambda x: x * 0.5, 2.7]),
    "scalar conditions": lambda m: m.piecewise(XR, [True, False], [1., 2.]),
    "array condlist": lambda m: m.piecewise(XR, np.array([XR < 0, XR > 0]), [1., 2.]),
    "0-d x": lambda m: m.piecewise(np.float32(2.), [True], [lambda x: x + 1]),
    "Python scalar x": lambda m: m.piecewise(2., [True], [lambda x: x + 1]),
    "extra args": lambda m: m.piecewise(XR, [XR < 0], [lambda x, a: x + a, lambda x, a: x - a],
                                        5.),
    "bool x": lambda m: m.piecewise(XR > 0, [XR < 0], [True, False]),
    "integer condition": lambda m: m.piecewise(XR, [np.array([1, 0, 2, 0, 1, 0])], [5.]),
    "too many functions": lambda m: m.piecewise(XR, [XR < 0], [1., 2., 3.]),
    "list x": lambda m: m.piecewise([1., 2.], [[True, False]], [3.]),
}


def test_piecewise_matches_jax_eager_and_jit():
  found = []
  for name, call in PIECEWISE.items():
    for mode, jit in (("eager", None), ("jit", (jax.jit, revax.jit))):
      def run(m, call=call, jit=jit):
        return call(m) if jit is None else jit[m is rnp](lambda: call(m))()
      d = difference(outcome(run, jnp), outcome(run, rnp))
      if d:
        found.append(f"{name} {mode}: {d}")
  assert not found, "\n".join(found)
