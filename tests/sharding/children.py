"""What the multi-device tests share: running a child script with N CPU devices for both
libraries, and comparing the two libraries' PartitionSpecs."""
import os
import subprocess
import sys

from tests.child_env import child_env
from tests.recorded_children import run_jax

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_child(script: str, marker: str, devices: int = 4, timeout: int = 600, args=()):
  """Run tests/sharding/`script` (with command-line `args`) where revax and jax both see
  `devices` CPU devices; it must exit cleanly and print `marker`."""
  env = child_env(XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
                  REVAX_CPU_DEVICE_COUNT=str(devices), JAX_PLATFORMS="cpu")
  path = os.path.join(ROOT, "tests", "sharding", script)
  if "jax" in args:  # jax's transcript: its committed record where current (recorded_children)
    out = run_jax(path, args, env, timeout)
  else:
    out = subprocess.run([sys.executable, path, *args], env=env, capture_output=True, text=True,
                         timeout=timeout)
  assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
  assert marker in out.stdout
  return out


def spec_of(s):
  """A sharding's PartitionSpec as plain tuples, trailing Nones dropped (to compare the
  libraries')."""
  parts = [p if p is None or isinstance(p, str) else tuple(p) for p in s.spec]
  parts = [p[0] if isinstance(p, tuple) and len(p) == 1 else p for p in parts]
  while parts and parts[-1] is None:
    parts.pop()
  return tuple(parts)


def auto_mesh(shape, names):
  """revax.make_mesh with Auto axes: the counterpart of a jax `Mesh(devices, names)` (whose axes
  are Auto), for suites that compare the two libraries' partitioner-chosen layouts."""
  import revax
  from revax.sharding import AxisType
  return revax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(names))


def show(name, fn):
  """Print `name: result` for a transcript both libraries write: the value of `fn()`, or the
  type of the exception it raised."""
  try:
    result = fn()
  except Exception as e:  # noqa: BLE001 (the exception's type is the result)
    result = type(e).__name__
  print(f"{name}: {result}")
