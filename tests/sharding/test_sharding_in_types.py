"""Shardings in types (JAX's explicit sharding): over Explicit mesh axes (revax.make_mesh's
default) a value's type says how it is split (`typeof(x)` reads f32[8@d,4]), primitives compute
their results' splits from their operands' (core/sharding_types.py, lax/sharding_rules.py),
gradients take their primal's, and programs lay each such value out as its type says.

One program (typed_child.py) runs on jax and on revax with 4 CPU devices; its transcripts must
be identical but for the checks listed here, where jax raises ShardingTypeError asking for an
explicit out_sharding and revax computes the value (unsplit where the split cannot follow)."""
import pytest

from tests.sharding.children import run_child

REVAX_COMPUTES = {"reshape merged", "slice split", "sort split"}


@pytest.fixture(scope="module")
def transcripts():
  out = {}
  for lib in ("jax", "revax"):
    text = run_child("typed_child.py", "TYPED_DONE", args=(lib,)).stdout
    out[lib] = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
  return out


def test_types_match_jax(transcripts):
  jax_t, revax_t = transcripts["jax"], transcripts["revax"]
  assert jax_t.keys() == revax_t.keys()
  diffs = [f"{k}: jax {jax_t[k]} revax {revax_t[k]}" for k in jax_t
           if k not in REVAX_COMPUTES and jax_t[k] != revax_t[k]]
  assert not diffs, "\n".join(diffs)


def test_where_jax_asks_for_out_sharding_revax_computes(transcripts):
  for k in REVAX_COMPUTES:
    assert transcripts["jax"][k] == "ShardingTypeError", k
    assert not transcripts["revax"][k].endswith("Error"), k


def test_the_splits_are_not_all_trivial(transcripts):
  split = [k for k, v in transcripts["revax"].items() if "'d'" in v or "'m'" in v]
  assert len(split) >= 15, split
  assert transcripts["revax"]["conflict"] == "ShardingTypeError"
