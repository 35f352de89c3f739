"""`wrap_negative_indices=` of the `x.at[...]` methods against jax 0.10.2: every method, static
and traced integer indices, index arrays, slices and out-of-bound negatives, under each mode,
eagerly and jitted; and the methods' signatures."""
import inspect
import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.platform_tolerances import ON_TPU, TPU_ATOL, TPU_RTOL
from tests.recorded_oracle import Oracle

ORACLE = Oracle(__file__)

INDICES = [-1, (-1, 0), (1, -2), np.array([-1, 2]), np.array([[-5, 4], [-6, 0]]), slice(-2, None),
           (slice(None), -1), (-6,), np.array([-6, 1]), (Ellipsis, -1), (None, -3)]
KWARGS = [{}, {"wrap_negative_indices": False}, {"wrap_negative_indices": True},
          {"wrap_negative_indices": False, "mode": "fill"},
          {"wrap_negative_indices": False, "mode": "clip"},
          {"wrap_negative_indices": False, "mode": "fill", "fill_value": -3.0}]
METHODS = ["get", "set", "add", "subtract", "multiply", "min", "max", "divide", "power", "apply"]


def _run(lib, npl, method, idx, kwargs, jit):
  x = npl.arange(10.0).reshape(5, 2) + 1

  def f(a):
    ref = a.at[idx]
    kw = dict(kwargs)
    if method == "get":
      return ref.get(**kw)
    kw.pop("fill_value", None)
    if method == "apply":
      return ref.apply(lambda v: v * 10, **kw)
    return getattr(ref, method)(2.0, **kw)
  try:
    out = lib.jit(f)(x) if jit else f(x)
    return str(np.asarray(out).tolist()), str(out.dtype)  # (str: NaN equals NaN)
  except Exception as e:  # noqa: BLE001 - the exception type is the outcome
    return type(e).__name__


def _same(got, want, method) -> bool:
  """Equal outcomes; on a TPU a power's values within the chip's tolerance (TRANSCENDENTAL: the
  chip's pow is its own exp and log)."""
  if got == want or not (ON_TPU and method == "power") or isinstance(got, str) or \
      isinstance(want, str) or got[1] != want[1]:
    return got == want
  values = lambda text: np.array(json.loads(text.replace("nan", "NaN").replace("inf", "Infinity")))
  return np.allclose(values(got[0]), values(want[0]), rtol=TPU_RTOL, atol=TPU_ATOL, equal_nan=True)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("jit", [False, True])
def test_at_methods_with_wrap_negative_indices_match_jax(method, jit):
  diffs = []
  for idx, kwargs in itertools.product(INDICES, KWARGS):
    if method != "get" and "fill_value" in kwargs:
      continue
    want = ORACLE((method, idx, kwargs, jit), lambda: _run(jax, jnp, method, idx, kwargs, jit))
    got = _run(revax, rnp, method, idx, kwargs, jit)
    if not _same(got, want, method):
      diffs.append(f"{idx!r} {kwargs}: jax {want} revax {got}")
  assert not diffs, "\n".join(diffs)


def test_traced_negative_index():
  for wrap, mode in itertools.product([True, False], [None, "fill", "clip"]):
    def get(lib, npl):
      return lib.jit(lambda a, i: a.at[i].get(wrap_negative_indices=wrap, mode=mode))(
          npl.arange(6.0).reshape(3, 2), -1)

    def put(lib, npl):
      return lib.jit(lambda a, i: a.at[i, 1].add(5.0, wrap_negative_indices=wrap, mode=mode))(
          npl.arange(6.0).reshape(3, 2), np.int32(-1))
    for fn in (get, put):
      np.testing.assert_array_equal(fn(revax, rnp), fn(jax, jnp))


@pytest.mark.parametrize("method", METHODS)
def test_signatures_match_jax(method):
  from jax._src.numpy import array_methods
  want = inspect.signature(getattr(array_methods._IndexUpdateRef, method))
  got = inspect.signature(getattr(type(rnp.zeros(2).at[0]), method))
  assert list(got.parameters) == list(want.parameters)
  assert [p.default for p in got.parameters.values()] == [
      p.default for p in want.parameters.values()]
