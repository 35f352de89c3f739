"""mesh_utils and multihost_utils over 4 CPU devices: one program (multidevice_child.py) runs on
jax and on revax; its transcripts (device ids, specs, values, exception types) must agree."""
from tests.sharding.children import run_child


def test_revax_prints_what_jax_prints():
  out = {}
  for lib in ("jax", "revax"):
    text = run_child("../experimental/multidevice_child.py", "MULTIDEVICE_DONE", args=(lib,))
    out[lib] = [line for line in text.stdout.splitlines() if ": " in line]
  assert len(out["jax"]) == len(out["revax"]) > 10
  for j, r in zip(out["jax"], out["revax"], strict=True):
    assert j == r
