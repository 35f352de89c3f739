"""digitize (revax/_src/numpy/histograms.py) and the searchsorted it stands on, against jax
0.10.2: a generated grid of complex, float and integer data against increasing, decreasing,
complex (NaN parts included: jax's sort order puts a NaN part after every number, real part
first) and empty bins, both sides, every method, eagerly and under jit (one program per side).
"""
import itertools

import jax
import jax.numpy as jnp
import numpy as np

import revax
import revax.numpy as rnp
from tests.edges.harness import difference, outcome
from tests.recorded_oracle import Oracle

ORACLE = Oracle(__file__)

nan, inf = np.nan, np.inf
XS = {
    "complex": np.array([1 + 2j, -1 - 1j, 0.5j, 3, -2, complex(nan, 1), complex(1, nan),
                         complex(inf, 0), complex(-inf, 1), -0j, 1 + 0j, 1 - 1j], np.complex64),
    "float": np.array([-2., -1., -0., 0., 0.5, 1., 2., nan, inf, -inf], np.float32),
    "int": np.array([-3, -1, 0, 1, 2, 5], np.int32),
}
BINS = {
    "up": np.array([-1., 0., 1.], np.float32),
    "down": np.array([1., 0., -1.], np.float32),
    "up nan": np.array([-1., 1., nan], np.float32),
    "complex": np.array([-1 + 1j, 0j, 1j, 1 + 0j, complex(1, nan), complex(nan, 0)], np.complex64),
    "complex down": np.array([2 + 0j, 1j, -1j], np.complex64),
    "int": np.array([0, 2], np.int32),
    "empty": np.zeros(0, np.float32),
}
# both sides with the default method; one side with method='sort' (jax's rank-based search,
# whose answer on bins it sees unsorted -- NaN last read as decreasing -- is its own) and, for
# complex data, 'compare_all'
CASES = ([(x, b, right, None) for x, b in itertools.product(XS, BINS) for right in (False, True)]
         + [(x, b, False, "sort") for x, b in itertools.product(XS, BINS)]
         + [("complex", b, True, "compare_all") for b in BINS])


COMPLEX_CASES = [c for c in CASES if "complex" in (c[0], c[1])]


def _call(m, case):
  x, b, right, method = case
  kw = {} if method is None else {"method": method}
  return m.digitize(XS[x], BINS[b], right=right, **kw)


def _searchsorted(m, case):
  x, b, right, method = case
  kw = {} if method is None else {"method": method}
  return m.searchsorted(np.sort(BINS[b]), XS[x], side="right" if right else "left", **kw)


def test_digitize_and_searchsorted_match_jax_eager():
  found = []
  for fun in (_call, _searchsorted):
    for case in CASES if fun is _call else COMPLEX_CASES:
      want = ORACLE((fun.__name__, case), lambda: outcome(fun, jnp, case))
      d = difference(want, outcome(fun, rnp, case))
      if d:
        found.append(f"{fun.__name__}{case}: {d}")
  n = len(CASES) + len(COMPLEX_CASES)
  assert not found, f"{len(found)} of {n} differ:\n" + "\n".join(found)


def test_digitize_matches_jax_under_jit():
  """The cases with complex data or bins (a program of every case compiles for tens of
  seconds)."""
  want = ORACLE("jit", lambda: [outcome(lambda w=w: w) for w in jax.jit(
      lambda: [_call(jnp, c) for c in COMPLEX_CASES])()])
  got = revax.jit(lambda: [_call(rnp, c) for c in COMPLEX_CASES])()
  found = [f"{c}: {d}" for c, w, g in zip(COMPLEX_CASES, want, got, strict=True)
           if (d := difference(w, outcome(lambda g=g: g)))]
  assert not found, f"{len(found)} of {len(COMPLEX_CASES)} differ:\n" + "\n".join(found)
