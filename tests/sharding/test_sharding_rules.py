"""The sharding rules of JAX's explicit sharding, against jax 0.10.2 on 4 CPU devices: one
program (sharding_rules_child.py) prints, per check, the result's type (eager and jitted) or the
exception; the two transcripts must agree on every type and exception type, and on each
message that names no sharding object (a NamedSharding prints its concrete mesh in revax and its
AbstractMesh in jax)."""
import pytest

from tests.sharding.children import run_child


@pytest.fixture(scope="module")
def transcripts():
  out = {}
  for lib in ("jax", "revax"):
    text = run_child("sharding_rules_child.py", "RULES_DONE", args=(lib,)).stdout
    out[lib] = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
  return out


def _comparable(result: str) -> str:
  kind, _, message = result.partition(": ")
  if not kind.endswith("Error"):
    return result
  if "NamedSharding(" in message:
    return kind
  return f"{kind}: {message.replace('jax.lax', 'revax.lax')}"


def test_rules_match_jax(transcripts):
  jax_t, revax_t = transcripts["jax"], transcripts["revax"]
  assert jax_t.keys() == revax_t.keys()
  diffs = [f"{k}:\n  jax   {jax_t[k]}\n  revax {revax_t[k]}" for k in jax_t
           if _comparable(jax_t[k]) != _comparable(revax_t[k])]
  assert not diffs, "\n".join(diffs)


def test_both_split_and_refuse(transcripts):
  # the comparison means little unless the rules both split results and raise
  results = list(transcripts["revax"].values())
  assert sum("@" in r for r in results) >= 80, results
  assert sum(r.startswith("ShardingTypeError") for r in results) >= 20, results
