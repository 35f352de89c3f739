"""docs/guides/ecosystem.md: examples/ecosystem_training.py (flax.nnx + optax, equinox + optax)
trains with the same losses on jax and on revax's jax-compatibility mode. Skipped where optax,
flax or equinox are not installed (they are not in revax's test dependencies)."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tests.child_env import child_env

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "ecosystem_training.py"
MISSING = [m for m in ("optax", "flax", "equinox") if importlib.util.find_spec(m) is None]


@pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)} (the guide's "
                    "libraries are not revax test dependencies)")
def test_guide_trains_with_the_same_losses_on_jax_and_revax():
  env = child_env()
  runs = []
  for cmd in ([sys.executable, "-W", "ignore", str(SCRIPT)],
              [sys.executable, "-W", "ignore", "-m", "revax.run_as_jax", str(SCRIPT)]):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    runs.append([[float(v) for v in line.split() if v[0].isdigit()]
                 for line in out.stdout.splitlines()])
  jax_losses, revax_losses = runs
  assert len(jax_losses) == len(revax_losses) == 2
  for j, r in zip(jax_losses, revax_losses):
    np.testing.assert_allclose(r, j, rtol=1e-4)
  assert "final 0.921889" in (ROOT / "docs" / "guides" / "ecosystem.md").read_text()
