"""PartitionSpec's tuple-like methods against jax's: `partitions`, `index` and `count` (entries
compared as jax canonicalises them: a 1-tuple or 1-list is its axis, an empty one None), `+`
with specs and tuples (and jax's NotImplementedError for anything else), `update`, and the
empty unreduced/reduced sets. flax's logical partitioning calls `spec.index(...)`."""
import pytest

import revax.sharding as rs

jax = pytest.importorskip("jax")
js = jax.sharding

SPECS = [("a", ("b", "c"), None, ["d"]), (), (None,), (("a",), [], "b"), ("a", None, None)]
VALUES = ["a", ("b", "c"), ["b", "c"], None, ["d"], ("d",), "z", (), [], ("a",), "b", 1]


def _outcome(fn):
  try:
    return "value", repr(fn())
  except Exception as e:  # noqa: BLE001 (the exception's type is the outcome)
    return "raises", type(e).__name__


def _both(fn):
  return _outcome(lambda: fn(rs.PartitionSpec)), _outcome(lambda: fn(js.PartitionSpec))


@pytest.mark.parametrize("parts", SPECS, ids=repr)
def test_index_count_partitions_as_jax(parts):
  for value in VALUES:
    got, want = _both(lambda P: P(*parts).index(value))
    assert got == want, ("index", value)
    got, want = _both(lambda P: P(*parts).count(value))
    assert got == want, ("count", value)
  got, want = _both(lambda P: P(*parts).partitions)
  assert got == want
  got, want = _both(lambda P: (P(*parts).unreduced, P(*parts).reduced))
  assert got == want


@pytest.mark.parametrize("parts", SPECS, ids=repr)
@pytest.mark.parametrize("other", [("e",), ("e", None), (), ["e"], 1, "e", None, "spec"],
                         ids=repr)
def test_add_as_jax(parts, other):
  rhs = lambda P: P("x", None) if other == "spec" else other
  got, want = _both(lambda P: P(*parts) + rhs(P))
  assert got == want
  got, want = _both(lambda P: rhs(P) + P(*parts))
  assert got == want


@pytest.mark.parametrize("parts", SPECS, ids=repr)
def test_update_as_jax(parts):
  for new in (None, ("x",), [("y",), ()], (), ("x", None)):
    got, want = _both(lambda P: P(*parts).update(partitions=new))
    assert got == want, new
