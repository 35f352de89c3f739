"""donate_argnums and debug_nans/debug_infs on jit over a mesh of 4 CPU devices, against jax in a
subprocess (donation_child.py): which donated arrays are deleted (those XLA reused), JAX's
warning for unusable donations, the RuntimeError for using a deleted array, real aliasing in
memory_analysis, `f(donate(a), a)` refused before any device runs; FloatingPointError for a NaN
or inf in a sharded jit's output."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_donation_and_debug_nans_against_jax():
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
             REVAX_CPU_DEVICE_COUNT="4", JAX_PLATFORMS="cpu", PYTHONPATH=ROOT)
  out = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "sharding",
                                                     "donation_child.py")],
                       env=env, capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
  assert "DONATION_OK" in out.stdout
