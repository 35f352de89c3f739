"""Computations on arrays committed to a device other than the first (runtime/placement.py):
eager ops and jit calls run on that device and commit their results there, uncommitted inputs
move to it, and committed inputs on different devices raise JAX's ValueError, compared with jax
in a child process with 4 CPU devices (committed_devices_child.py)."""
from tests.sharding.children import run_child


def test_committed_devices_match_jax():
  run_child("committed_devices_child.py", "COMMITTED DEVICES DONE", timeout=300)
