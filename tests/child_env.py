"""The environment of a child process a test starts (a fresh interpreter running revax).

The child sees this checkout first on its path and keeps the parent's path after it (a machine
may hold jax or optree in a folder named by PYTHONPATH, as the TPU machine's setup does). On a
TPU machine the test process holds the chip (one program per chip), so children run revax and
the jax oracle on the CPU unless the caller asks otherwise (platform_tolerances.HOLDS_THE_CHIP).
"""
import os

from tests.platform_tolerances import ON_TPU

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_env(**overrides: str) -> dict:
  """os.environ with PYTHONPATH = this checkout + the inherited path, the CPU platforms on a TPU
  machine, then `overrides` (which win)."""
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH", "")) if p)
  if ON_TPU:
    env.update(REVAX_PLATFORMS="cpu", JAX_PLATFORMS="cpu")
  env.update(overrides)
  return env
