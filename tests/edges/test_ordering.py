"""Class 10 of issue 33: ordering contracts. Where elements are ordered -- partition and
argpartition, lax.top_k and sort with ties, sort/argsort (stable or not, descending) with NaN and
signed zeros, unique and its index/inverse/count outputs, lexsort, searchsorted on either side
with NaN, digitize, argmax/argmin and their nan- variants with ties and NaN, sort_complex, the
set operations' indices -- revax gives jax 0.10.2's elements in jax's order exactly, eagerly and
under revax.jit (all of a shard's cases compiled as one program). jax documents partition's order
among the smaller and the larger elements as an implementation detail: programs still come to
depend on it, so it is matched too.

Inputs have ties, NaN (both signs), +-0.0 and +-inf, as vectors, as matrices along each axis,
and as integers (unsigned ones too, where partition's trick for 0 shows). Values are compared
exactly: the same dtype, weak type and shape, equal elements, NaN at the same places and the same
sign bit on every zero.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import revax
import revax.lax as rlax
import revax.numpy as rnp
from tests.edges.harness import LIVE, Raised, difference, outcome, recorded
from tests.platform_tolerances import ON_TPU

jax = pytest.importorskip("jax")
jnp = jax.numpy
import jax.lax as jlax  # noqa: E402

nan, inf = np.nan, np.inf
f32 = np.float32
SIDES = {"jax": (jnp, jlax), "revax": (rnp, rlax)}

# Data with ties, NaN of both signs, signed zeros and infinities.
DATA = {
    "ties": np.array([3, 1, 2, 1, 3, 0, 1, 2], f32),
    "nan zeros": np.array([nan, 1, -0., 0., nan, -1, 0., -0., 1], f32),
    "runs": np.array([2, 2, 2, 2, 1, 1, 3, 3, 0], f32),
    "signed nan": np.array([0., -0., 0., -0., nan, -nan, inf, -inf], f32),
    "all equal": np.full(6, 2., f32),
}
MATRICES = {
    "ties 3x4": np.array([[1, 0, 1, 0], [1, 1, 0, 0], [2, 1, 2, 1]], f32),
    "nan 3x4": np.array([[nan, 0., -0., 1], [-0., nan, 0., 0.], [1, 1, nan, -0.]], f32),
}
INTS = {
    "int ties": np.array([3, 1, 2, 1, 3, 0, 1, 2], np.int32),
    "uint8 zeros": np.array([0, 3, 0, 255, 1, 0, 255], np.uint8),
}
BOOLS = {"bool": np.array([False, True, True, False, True])}
VECTORS = DATA | INTS
EVERYTHING = VECTORS | MATRICES


def _recipes():
  """(name, label, call(np_module, lax_module, x), inputs): call gets the side's modules."""
  out = []

  def add(name, label, call, inputs):
    out.append((name, label, call, inputs))

  for kth in (0, 2, 4, -1):
    add("partition", f"kth {kth}", lambda N, L, x, k=kth: N.partition(x, k),
        VECTORS | MATRICES | BOOLS)
    add("argpartition", f"kth {kth}", lambda N, L, x, k=kth: N.argpartition(x, k),
        VECTORS | MATRICES)
  add("partition", "kth 1 axis 0", lambda N, L, x: N.partition(x, 1, axis=0), MATRICES)
  add("argpartition", "kth 1 axis 0", lambda N, L, x: N.argpartition(x, 1, axis=0), MATRICES)
  for stable in (False, True):
    for desc in (False, True):
      lab = f"stable {stable} descending {desc}"
      add("sort", lab, lambda N, L, x, s=stable, d=desc: N.sort(x, stable=s, descending=d),
          EVERYTHING | BOOLS)
      add("argsort", lab, lambda N, L, x, s=stable, d=desc: N.argsort(x, stable=s, descending=d),
          EVERYTHING | BOOLS)
  add("sort", "axis 0", lambda N, L, x: N.sort(x, axis=0), MATRICES)
  add("argsort", "axis 0", lambda N, L, x: N.argsort(x, axis=0), MATRICES)
  add("sort", "axis None", lambda N, L, x: N.sort(x, axis=None), MATRICES)
  add("lexsort", "two keys", lambda N, L, x: N.lexsort((x, x[::-1])), VECTORS)
  add("lexsort", "rows", lambda N, L, x: N.lexsort(x), MATRICES)
  add("lexsort", "rows axis 0", lambda N, L, x: N.lexsort(x, axis=0), MATRICES)
  add("sort_complex", "", lambda N, L, x: N.sort_complex(x + 1j * x[::-1]), DATA)
  add("sort", "complex", lambda N, L, x: N.sort(x[::-1] + 1j * x), DATA)
  add("argsort", "complex", lambda N, L, x: N.argsort(x + 1j * x[::-1]), DATA)
  for k in (1, 3, 5):
    add("lax.top_k", f"k {k}", lambda N, L, x, k=k: L.top_k(x, k), EVERYTHING | BOOLS)
  add("lax.sort", "", lambda N, L, x: L.sort(x), EVERYTHING)
  add("lax.sort", "two operands num_keys 1",
      lambda N, L, x: L.sort((x, N.arange(x.shape[-1])[::-1] * N.ones_like(x)), num_keys=1),
      EVERYTHING)
  add("lax.sort", "unstable", lambda N, L, x: L.sort((x, N.arange(x.shape[-1]) + 0 * x),
                                                     is_stable=False), DATA)
  add("lax.sort_key_val", "", lambda N, L, x: L.sort_key_val(x, N.arange(x.shape[-1])), VECTORS)
  for fn in ("argmax", "argmin"):
    add(f"lax.{fn}", "", lambda N, L, x, fn=fn: getattr(L, fn)(x, 0, np.int32), EVERYTHING)
  for fn in ("argmax", "argmin", "nanargmax", "nanargmin"):
    add(fn, "", lambda N, L, x, fn=fn: getattr(N, fn)(x), EVERYTHING | BOOLS)
    add(fn, "axis 0", lambda N, L, x, fn=fn: getattr(N, fn)(x, axis=0), MATRICES)
    add(fn, "axis 1 keepdims", lambda N, L, x, fn=fn: getattr(N, fn)(x, axis=1, keepdims=True),
        MATRICES)
  for flags in ("", "index", "inverse", "counts", "index inverse counts"):
    kw = {f"return_{f}": True for f in flags.split()}
    add("unique", flags, lambda N, L, x, kw=kw: N.unique(x, **kw), EVERYTHING)
    add("unique", flags + " equal_nan False",
        lambda N, L, x, kw=kw: N.unique(x, equal_nan=False, **kw), DATA)
  add("unique", "axis 0", lambda N, L, x: N.unique(N.concatenate([x, x[:1]]), axis=0,
                                                   return_index=True, return_inverse=True),
      MATRICES)
  for fn in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
    add(fn, "", lambda N, L, x, fn=fn: getattr(N, fn)(x), EVERYTHING)
  for side in ("left", "right"):
    for method in ("scan", "sort", "compare_all"):
      add("searchsorted", f"{side} {method}",
          lambda N, L, x, s=side, m=method: N.searchsorted(N.sort(x), x, side=s, method=m),
          VECTORS)
    add("searchsorted", f"{side} nan queries",
        lambda N, L, x, s=side: N.searchsorted(N.sort(x), N.array([nan, -nan, 0., -0., inf]),
                                               side=s), DATA)
  for right in (False, True):
    add("digitize", f"right {right}",
        lambda N, L, x, r=right: N.digitize(x, N.array([-1., -0., 0., 1., 2.]), right=r), DATA)
    add("digitize", f"right {right} decreasing",
        lambda N, L, x, r=right: N.digitize(x, N.array([2., 1., 0., -0.]), right=r), DATA)
  add("intersect1d", "indices",
      lambda N, L, x: N.intersect1d(x, x[::-1], return_indices=True), VECTORS)
  add("union1d", "", lambda N, L, x: N.union1d(x, x[::2]), VECTORS)
  add("setdiff1d", "", lambda N, L, x: N.setdiff1d(x, x[:2]), VECTORS)
  add("setxor1d", "", lambda N, L, x: N.setxor1d(x, x[:3]), INTS)
  add("median", "", lambda N, L, x: N.median(x), DATA)
  add("quantile", "", lambda N, L, x: N.quantile(x, 0.3, method="lower"), DATA)
  add("sort", "argsort take", lambda N, L, x: N.take_along_axis(x, N.argsort(x), -1), DATA)
  return out


RECIPES = _recipes()
CASES = [(f"{name} [{label}] {inp}", call, x) for name, label, call, inputs in RECIPES
         for inp, x in inputs.items()]
# unique and friends have value-dependent shapes: eager only, as in jax
EAGER_ONLY = ("unique", "intersect1d", "union1d", "setdiff1d", "setxor1d")


def _call(side, call, x):
  N, L = SIDES[side]
  return call(N, L, N.asarray(x))


def oracle_cases():
  return [(key, lambda call=call, x=x: outcome(_call, "jax", call, x)) for key, call, x in CASES]


def _bits_differ(e, a):
  """Exactly: the same elements (NaN where NaN), and the same sign bit on every zero."""
  e, a = np.asarray(e), np.asarray(a)
  if e.dtype.kind not in "fc":
    return not np.array_equal(e, a)
  parts = (lambda v: v.real, lambda v: v.imag) if e.dtype.kind == "c" else (lambda v: v,)
  for part in parts:
    pe, pa = part(e).astype(np.float64), part(a).astype(np.float64)
    if not np.array_equal(pe, pa, equal_nan=True):
      return True
    if not np.array_equal(np.signbit(pe[pe == 0]), np.signbit(pa[pa == 0])):
      return True
  return False


def exact_difference(expected, actual):
  d = difference(expected, actual)
  if d or isinstance(expected, Raised):
    return d
  for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
    if _bits_differ(e.value, a.value):
      return f"output {i}: {a.value.ravel()[:12].tolist()}, jax {e.value.ravel()[:12].tolist()}"
  return None


def _jit_outcomes(cases, expected):
  """The shard's jit-able cases (those jax does not refuse) under revax.jit, as one program."""
  traced = [(key, call, x) for key, call, x in cases
            if not key.startswith(EAGER_ONLY) and not isinstance(expected[key], Raised)]

  def program(xs):
    return [_call("revax", call, x) for (_, call, _), x in zip(traced, xs, strict=True)]
  results = revax.jit(program)([x for _, _, x in traced])
  return {key: outcome(lambda r=r: r) for (key, _, _), r in zip(traced, results, strict=True)}


def _the_platforms(key: str) -> bool:
  """Whether on this platform `key`'s order of equal elements and signs of zero are the
  platform's: on a TPU, unstable sorts (platform_tolerances.UNSTABLE_SORT_TIES) and sorts of
  complex products (COMPLEX_SIGNED_ZEROS)."""
  return ON_TPU and ("stable False" in key or key.startswith(
      ("lax.sort [unstable]", "sort_complex", "sort [complex]")))


def difference_up_to_ties(key, expected, actual, x):
  """`difference`, with values equal up to the sign of zero (0.0 == -0.0) and indices equal
  where they point at equal elements of `x` (argsort's outputs, lax.sort's second)."""
  d = difference(expected, actual)
  if d is None or isinstance(expected, Raised) or isinstance(actual, Raised) or not d.startswith(
      "output") or "values" not in d:
    return d
  x = np.asarray(x)
  for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
    ev, av = e.value, a.value
    if key.startswith("argsort") or key.startswith("lax.sort") and i == 1:
      # (lax.sort's indices are an iota + 0 * x: NaN where x is, compared as they are)
      nan = np.isnan(ev) if ev.dtype.kind == "f" else np.zeros(ev.shape, bool)
      if ev.dtype.kind == "f" and not np.array_equal(nan, np.isnan(av)):
        return f"output {i}: {av.ravel()[:12].tolist()}, jax {ev.ravel()[:12].tolist()}"
      ev, av = (np.where(nan, np.nan, np.take_along_axis(x, np.where(nan, 0, v).astype(np.intp),
                                                         -1)) for v in (ev, av))
    if not np.array_equal(ev, av, equal_nan=True):
      return f"output {i}: {a.value.ravel()[:12].tolist()}, jax {e.value.ravel()[:12].tolist()}"
  return None


def _differences(keys):
  cases = [c for c in CASES if c[0] in keys]
  inputs = {key: x for key, _, x in cases}

  def compare(key, want, got):
    if _the_platforms(key):
      return difference_up_to_ties(key, want, got, inputs[key])
    return exact_difference(want, got)

  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    expected = dict((k, t()) for k, t in oracle_cases() if k in keys) if LIVE \
        else recorded(__file__)
    found = []
    for key, call, x in cases:
      d = compare(key, expected[key], outcome(_call, "revax", call, x))
      if d:
        found.append(f"{key} eager: {d}")
    for key, out in _jit_outcomes(cases, expected).items():
      d = compare(key, expected[key], out)
      if d:
        found.append(f"{key} jit: {d}")
  return found


KEYS = [c[0] for c in CASES]
SHARDS = 4


def test_cases_are_distinct():
  assert len(set(KEYS)) == len(KEYS)


def test_ties_are_compared_by_the_elements_they_point_at():
  """difference_up_to_ties (the TPU's comparison of unstable sorts) accepts another order of
  equal elements and another sign of zero, and nothing else."""
  x = np.array([1., 0., -0., 1.], f32)
  want = outcome(lambda: (np.sort(x), np.array([1, 2, 0, 3], np.int32)))
  assert difference_up_to_ties("argsort", want, outcome(
      lambda: (np.array([-0., 0., 1., 1.], f32), np.array([2, 1, 3, 0], np.int32))), x) is None
  assert difference_up_to_ties("argsort", want, outcome(
      lambda: (np.sort(x), np.array([1, 0, 2, 3], np.int32))), x) is not None
  iota = outcome(lambda: (x, np.array([0., np.nan, 2., 1.], f32)))  # lax.sort's, NaN where x is
  assert difference_up_to_ties("lax.sort", iota, outcome(
      lambda: (x, np.array([0., np.nan, 1., 2.], f32))), x) is None
  assert difference_up_to_ties("lax.sort", iota, outcome(
      lambda: (x, np.array([0., 3., 1., 2.], f32))), x) is not None
  assert difference_up_to_ties("sort", want, outcome(
      lambda: (np.array([0., 1., 1., 1.], f32), want[1].value)), x) is not None


@pytest.mark.parametrize("shard", range(SHARDS))
def test_order_matches_jax_eager_and_jit(shard):
  diffs = _differences(set(KEYS[shard::SHARDS]))
  assert not diffs, "\n".join(diffs)
