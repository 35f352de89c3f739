"""`format(x, spec)` and f-strings of Arrays as jax's: a 0-d array formats as its NumPy scalar
(so `f"{x}"` of a float32 prints the Python float it converts to, `0.30000001192092896`), any
other array as its NumPy array. Generated over dtypes, weak types, ranks and format specs."""
import itertools

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import revax.numpy as rjnp

VALUES = [0.1, -2.5, 3, True, 1e10, float("nan"), -0.0, 7.25]
DTYPES = ["float32", "float16", "bfloat16", "int32", "uint8", "bool", "complex64", "int8"]
SPECS = ["", ".3f", ">12", "e", "s", "d", "g", "+", "^20"]


def _outcome(fn):
  try:
    return fn()
  except Exception as e:  # noqa: BLE001 (the exception type is the outcome)
    return type(e).__name__


def _cases():
  for v, d in itertools.product(VALUES, DTYPES):
    yield f"{v}-{d}", (lambda lib, v=v, d=d: lib.asarray(np.asarray(v).astype(d)
                                                          if d != "bfloat16" else v, dtype=d))
  for v in VALUES[:5]:  # weakly typed scalars (Python scalars through arithmetic)
    yield f"weak-{v}", (lambda lib, v=v: lib.asarray(v) * 1)
  yield "vector", lambda lib: lib.arange(3.0) / 3
  yield "matrix-int", lambda lib: lib.arange(6).reshape(2, 3)


@pytest.mark.parametrize("name,make", list(_cases()), ids=[n for n, _ in _cases()])
def test_format_matches_jax(name, make):
  jx, rx = _outcome(lambda: make(jjnp)), _outcome(lambda: make(rjnp))
  for spec in SPECS:
    want = _outcome(lambda: format(jx, spec))
    got = _outcome(lambda: format(rx, spec))
    assert got == want, (name, spec, want, got)
  assert f"{rx}" == f"{jx}" and str(rx) == str(jx)
  assert jax.__version__  # (the oracle is the installed jax 0.10.2)
