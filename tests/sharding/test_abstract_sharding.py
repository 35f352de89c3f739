"""A NamedSharding over an AbstractMesh, as jax 0.10.2 defines it: made without devices (flax
builds parameter shardings from `get_abstract_mesh()` under `set_mesh`), it answers the
device-free questions (shard_shape, num_devices, is_fully_replicated, update, with_memory_kind,
is_equivalent_to) and raises jax's ValueError, naming the method, for those that need devices
(device_set, _device_assignment, devices_indices_map, addressable_devices, ...). jit takes it as
an out_sharding under a mesh with its axes, and refuses it as an in_sharding (ValueError), as jax.

One program (abstract_sharding_child.py) runs on jax and on revax with 2 CPU devices; its
transcripts must be identical but for the lines listed here."""
import pytest

from tests.sharding.children import run_child

# name -> why revax differs from jax there
DIFFERS = {
    # jax's PartitionSpec tells P('a') from P('a', None) (so NamedShardings over them differ and
    # hash apart); revax's drops trailing Nones when comparing specs
    "from mesh equal": "trailing None", "bare equal": "trailing None",
}


@pytest.fixture(scope="module")
def transcripts():
  out = {}
  for lib in ("jax", "revax"):
    text = run_child("abstract_sharding_child.py", "ABSTRACT_SHARDING_DONE", devices=2,
                     args=(lib,)).stdout
    out[lib] = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
  return out


def test_revax_answers_what_jax_answers(transcripts):
  jax_t, revax_t = transcripts["jax"], transcripts["revax"]
  assert jax_t.keys() == revax_t.keys()
  diffs = [f"{k}: jax {jax_t[k]} | revax {revax_t[k]}" for k in jax_t
           if k not in DIFFERS and jax_t[k] != revax_t[k]]
  assert not diffs, "\n".join(diffs)


def test_device_questions_raise_and_device_free_ones_answer(transcripts):
  t = transcripts["revax"]
  for attr in ("device_set", "_device_assignment", "is_fully_addressable",
               "addressable_devices"):
    assert t[f"bare {attr}"] == f"ValueError {attr}", attr
  assert t["bare devices_indices_map"] == "ValueError _device_assignment"
  assert t["bare shard_shape (4, 3)"] == "(2, 3)"
  assert t["jit out_shardings in mesh"] == "(('a',), [0.0, 2.0, 4.0, 6.0])"
