"""Indexing and `.at[...]` updates of arrays split over Explicit mesh axes, against jax 0.10.2
on 4 CPU devices: indexing_child.py prints each read's and update's result type (eagerly on a
concrete split Array, and jitted on an argument) or exception, and a few values; the two
transcripts must be identical, messages included (JAX's gather and scatter sharding errors
name avals only)."""
import pytest

from tests.sharding.children import run_child


@pytest.fixture(scope="module")
def transcripts():
  return {lib: run_child("indexing_child.py", "INDEXING_DONE", args=(lib,)).stdout.splitlines()
          for lib in ("jax", "revax")}


def _comparable(line: str) -> str:
  """The line, or for an "fn" line (a function built on indexing) the exception type only."""
  if not line.startswith("fn "):
    return line
  name, _, result = line.partition(": ")
  kind, _, _ = result.partition(": ")
  return f"{name}: {kind}" if kind.endswith("Error") else line


def test_indexing_matches_jax(transcripts):
  jax_t, revax_t = transcripts["jax"], transcripts["revax"]
  assert len(jax_t) == len(revax_t)
  diffs = [f"jax   {j}\nrevax {r}" for j, r in zip(jax_t, revax_t, strict=True)
           if _comparable(j) != _comparable(r)]
  assert not diffs, "\n".join(diffs)


def test_both_split_and_refuse(transcripts):
  lines = transcripts["revax"]
  assert sum("ShardingTypeError: Use `.at[...].get" in t for t in lines) >= 40
  assert sum("ShardingTypeError: Use `.at[...].set" in t for t in lines) >= 30
  assert sum("@" in t.partition(": ")[2] and "Error" not in t for t in lines) >= 100
