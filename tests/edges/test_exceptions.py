"""Class 6 of issue 33: where jax refuses, revax refuses with the same exception type; where jax
accepts, revax gives jax's answer.

Generated from jax's signatures over every public function of jax.numpy, jax.scipy.special
and jax.lax that takes arrays (the functions with a generic recipe in test_zero_size.py, and all
of jax.lax's element-wise functions): a string where an array goes, a Python list where an array
goes, an out-of-range, fractional or repeated axis, and incompatible shapes for functions of two
or more arrays. Then a table of named refusals from the issue (reshape with two -1s, unknown pad
modes, a traced ravel_multi_index, ...). The exception type compared is the first built-in class
of jax's (harness.builtin_base).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import revax
import revax.lax as rlax
import revax.numpy as rnp
import revax.scipy.special as rsp
from tests.edges import test_zero_size as zero_size
from tests.edges.harness import LIVE, difference, outcome, recorded
from tests.edges.recipes import public_callables, required_args

jax = pytest.importorskip("jax")
jnp = jax.numpy
import jax.lax as jlax  # noqa: E402
import jax.scipy.special as jsp  # noqa: E402

f32 = np.float32
A3 = np.arange(3, dtype=f32) + 1
A4 = np.arange(4, dtype=f32) + 1
A23 = np.arange(6, dtype=f32).reshape(2, 3) + 1
I3 = np.arange(3, dtype=np.int32) + 1
I4 = np.arange(4, dtype=np.int32) + 1

FAMILIES = {"numpy": (jnp, rnp), "special": (jsp, rsp), "lax": (jlax, rlax), "top": (jax, revax)}
# lax functions of two same-shape arrays (their shapes must be equal, no broadcasting)
LAX_BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter",
              "eq", "ne", "lt", "le", "gt", "ge", "complex", "igamma", "igammac",
              "random_gamma_grad", "polygamma", "zeta", "igamma_grad_a"]
LAX_INT_BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
                  "shift_right_logical", "shift_right_arithmetic"]


def _generic(family, name, n, params, ints):
  a3, a4 = (I3, I4) if ints else (A3, A4)
  f = lambda m: getattr(m, name)  # noqa: E731
  out = [("string", lambda m: f(m)(*(["abc"] + [a3] * (n - 1))))]
  if family == "numpy":
    out.append(("list", lambda m: f(m)(*([[1, 2, 3]] + [a3] * (n - 1)))))
  if n >= 2:
    out.append(("shapes (3,) (4,)", lambda m: f(m)(*([a3, a4] + [a3] * (n - 2)))))
  if "axis" in params and n == 1:
    a23 = A23.astype(a3.dtype)
    out += [("axis 2 of 2-d", lambda m: f(m)(a23, axis=2)),
            ("axis -3 of 2-d", lambda m: f(m)(a23, axis=-3)),
            ("axis 1.0", lambda m: f(m)(a23, axis=1.0))]
  return out


def recipes(family, name):
  jmod = FAMILIES[family][0]
  if family == "numpy":
    if name in zero_size.OVERRIDES or name in zero_size.NOT_ARRAY_FUNCTIONS:
      return []
    n, params = required_args(getattr(jmod, name))
    return _generic(family, name, n, params, name in zero_size.INT_ONLY) if n in (1, 2) else []
  if family == "special":
    try:
      n, params = required_args(getattr(jmod, name))
    except (TypeError, ValueError):
      return []
    return _generic(family, name, n, params, False) if 1 <= n <= 4 else []
  ints = name in LAX_INT_BINARY
  return _generic(family, name, 2, set(), ints)


def _lax_names():
  return sorted(n for n in LAX_BINARY + LAX_INT_BINARY if hasattr(jlax, n))


def _special_names():
  return [n for n in public_callables(jsp) if n not in ("bernoulli", "sph_harm_y", "bessel_jn")]


NAMES = {"numpy": zero_size._public_callables(), "special": _special_names(), "lax": _lax_names(),
         "top": []}


def _traced_ravel_multi_index(m):
  jit = revax.jit if m is rnp else jax.jit
  return jit(lambda a: m.ravel_multi_index((a, a), (3, 4)))(np.array([1, 2], np.int32))


NAMED = [
    ("numpy", "reshape(-1, -1)", lambda m: m.reshape(A4, (-1, -1))),
    ("numpy", "reshape wrong size", lambda m: m.reshape(A4, (3,))),
    ("numpy", "pad unknown mode", lambda m: m.pad(A3, 1, mode="nope")),
    ("numpy", "pad keyword of another mode", lambda m: m.pad(A3, 1, mode="edge",
                                                              constant_values=1)),
    ("numpy", "pad negative width", lambda m: m.pad(A3, -1)),
    ("numpy", "traced ravel_multi_index", _traced_ravel_multi_index),
    ("numpy", "broadcast_to smaller", lambda m: m.broadcast_to(A3, (4,))),
    ("numpy", "stack of shapes", lambda m: m.stack([A3, A4])),
    ("numpy", "concatenate of shapes", lambda m: m.concatenate([A23, A23.T])),
    ("numpy", "where of shapes", lambda m: m.where(A3 > 1, A4, 1.)),
    ("numpy", "matmul of shapes", lambda m: m.matmul(A23, A23)),
    ("numpy", "dot of shapes", lambda m: m.dot(A3, A4)),
    ("numpy", "einsum of shapes", lambda m: m.einsum("i,i", A3, A4)),
    ("numpy", "broadcast_arrays", lambda m: m.broadcast_arrays(A3, A4)),
    ("numpy", "split unequal", lambda m: m.split(A4, 3)),
    ("numpy", "take_along_axis rank", lambda m: m.take_along_axis(A23, I3, axis=0)),
    ("numpy", "swapaxes out of range", lambda m: m.swapaxes(A23, 0, 2)),
    ("numpy", "moveaxis repeated", lambda m: m.moveaxis(A23, (0, 0), (1, 0))),
    ("numpy", "transpose wrong axes", lambda m: m.transpose(A23, (0, 0))),
    ("numpy", "full of bad shape", lambda m: m.full((2, -1), 1.)),
    ("numpy", "zeros of float shape", lambda m: m.zeros((2.5,))),
    ("numpy", "arange of array", lambda m: m.arange(A3)),
    ("numpy", "tile negative", lambda m: m.tile(A3, -1)),
    ("numpy", "repeat of shapes", lambda m: m.repeat(A3, I4)),
    ("numpy", "interp of shapes", lambda m: m.interp(A3, A3, A4)),
    ("numpy", "unravel_index float", lambda m: m.unravel_index(A3, (2, 3))),
    ("numpy", "squeeze non-1 axis", lambda m: m.squeeze(A23, 0)),
    ("numpy", "expand_dims repeated", lambda m: m.expand_dims(A3, (0, 0))),
    ("numpy", "array of ragged list", lambda m: m.array([[1, 2], [3]])),
    ("top", "Exported.call wrong dtype", lambda R: _exported(R).call(np.ones(3, np.int32))),
    ("top", "Exported.call wrong shape", lambda R: _exported(R).call(np.ones(4, f32))),
    ("top", "Exported.call wrong arity", lambda R: _exported(R).call(A3, A3)),
    ("top", "vmap of a compiled function", lambda R: R.vmap(R.jit(lambda x: x * 2).lower(
        A3).compile())(np.ones((2, 3), f32))),
    ("top", "grad of a compiled function", lambda R: R.grad(R.jit(lambda x: x * x).lower(
        f32(1.)).compile())(f32(1.))),
    ("top", "nested pmap", lambda R: R.pmap(R.pmap(lambda x: x * 2))(np.ones((1, 1, 3), f32))),
    ("top", "checkify int format argument", lambda R: _checkify(R, lambda ck, x: ck.check(
        x > 0, "bad {x}", 3))),
    ("top", "checkify str format argument", lambda R: _checkify(R, lambda ck, x: ck.check(
        x > 0, "bad {y}", y="s"))),
    ("top", "checkify non-scalar predicate", lambda R: _checkify(R, lambda ck, x: ck.check(
        R.numpy.ones(3) > 0, "bad"))),
]


def _exported(R):
  import jax.export  # noqa: F401 -- submodules, imported on use
  import revax.export  # noqa: F401
  return R.export.export(R.jit(lambda x: x * 2))(R.ShapeDtypeStruct((3,), f32))


def _checkify(R, body):
  import jax.experimental.checkify  # noqa: F401
  import revax.experimental.checkify  # noqa: F401
  ck = R.experimental.checkify
  err, _ = ck.checkify(lambda x: (body(ck, x), x)[1])(R.numpy.float32(1.))
  return err.get() is None


CASES = [(family, name, label, call) for family in FAMILIES for name in NAMES[family]
         for label, call in recipes(family, name)]
CASES += [(family, "named", label, call) for family, label, call in NAMED]


def _key(family, name, label):
  return f"{family}.{name} [{label}]"


def oracle_cases():
  return [(_key(f, n, lab), lambda f=f, call=call: outcome(call, FAMILIES[f][0]))
          for f, n, lab, call in CASES]


def _differences(keys):
  cases = [c for c in CASES if _key(*c[:3]) in keys]
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    expected = dict((k, t()) for k, t in oracle_cases() if k in keys) if LIVE \
        else recorded(__file__)
    found = []
    for family, name, label, call in cases:
      key = _key(family, name, label)
      d = difference(expected[key], outcome(call, FAMILIES[family][1]))
      if d:
        found.append(f"{key}: {d}")
  return found


# Where revax keeps its own exception type on purpose (none now: packbits' float axis is
# swapaxes' IndexError, moveaxis' repeated axis lax.transpose's TypeError and unravel_index takes
# float indices, as in jax).
KNOWN = {}

KEYS = sorted({_key(*c[:3]) for c in CASES})
SHARDS = 4


@pytest.mark.parametrize("shard", range(SHARDS))
def test_bad_inputs_raise_as_jax(shard):
  keys = set(KEYS[shard::SHARDS])
  diffs = _differences(keys)
  new = [d for d in diffs if d.split(": ")[0] not in KNOWN]
  assert not new, "\n".join(new)
  stale = {k for k in KNOWN if k in keys} - {d.split(": ")[0] for d in diffs}
  assert not stale, f"these now agree with jax: remove them from KNOWN: {sorted(stale)}"


def test_known_differences_are_cases():
  assert set(KNOWN) <= set(KEYS)
