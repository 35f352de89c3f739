"""revax.distributed: jax's argument checks, a one-process cluster, and the error once the
backend exists (the success path runs in a fresh interpreter, where no backend exists yet)."""
import subprocess
import sys

import pytest

import revax
import revax.distributed as dist
from tests.child_env import child_env



def test_initialize_after_the_backend_exists_is_jax_runtime_error():
  revax.devices()
  with pytest.raises(RuntimeError, match="must be called before any JAX calls"):
    dist.initialize("localhost:1234", num_processes=1, process_id=0)
  assert not dist.is_initialized()
  dist.shutdown()  # nothing to shut down: no error, as jax


def test_one_process_cluster_and_argument_checks_in_a_fresh_process():
  script = """
import pytest
import revax.distributed as dist
with pytest.raises(ValueError, match="coordinator_address should be defined"):
  dist.initialize()
with pytest.raises(ValueError, match="Number of processes must be defined"):
  dist.initialize("localhost:1234")
with pytest.raises(TypeError, match="process_id must be a nonnegative int"):
  dist.initialize("localhost:1234", num_processes=1, process_id="0")
with pytest.raises(ValueError, match="process_id < num_processes"):
  dist.initialize("localhost:1234", num_processes=2, process_id=5)
with pytest.raises(NotImplementedError, match="single process"):
  dist.initialize("localhost:1234", num_processes=2, process_id=0)
dist.initialize("localhost:1234", num_processes=1, process_id=0)
assert dist.is_initialized()
import revax
assert revax.process_count() == 1 and revax.process_index() == 0
dist.shutdown()
assert not dist.is_initialized()
print("ok")
"""
  env = child_env()
  env.pop("JAX_COORDINATOR_ADDRESS", None)
  out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
  assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
