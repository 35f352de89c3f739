"""What the guide-transcript tests share (issue 35: jax's guides run unchanged on revax).

Each such test runs one child program twice, with `jax` and with `revax` on its command line
(the program imports the library named there and nothing else changes), on N CPU devices. The
program exercises the features of one of jax's guides in this suite's own words and prints one
`name: result` line per step (a result being a value, a type, or the exception's type and
message). The two transcripts must be identical line for line, but for the steps listed as
known differences (each with its reason); a known difference that no longer differs fails too,
so that the list only shrinks.
"""
import os
import re
import subprocess
import sys

from tests.child_env import child_env
from tests.recorded_children import run_jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_both(script: str, devices: int = 1, timeout: int = 900) -> dict:
  """{library: transcript lines} of tests/`script` run with jax and with revax."""
  env = child_env(XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
                  REVAX_CPU_DEVICE_COUNT=str(devices), JAX_PLATFORMS="cpu")
  out = {}
  for lib in ("jax", "revax"):
    path = os.path.join(ROOT, "tests", script)
    if lib == "jax":  # its committed record where current (tests/recorded_children.py)
      proc = run_jax(path, (lib,), env, timeout)
    else:
      proc = subprocess.run([sys.executable, path, lib], env=env, capture_output=True,
                            text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout.rstrip().endswith("DONE"), proc.stdout[-2000:]
    out[lib] = proc.stdout.splitlines()
  return out


def _normal(line: str) -> str:
  """`line` without what legitimately differs between the libraries: the library's name in
  messages, object ids and addresses."""
  line = re.sub(r"\brevax\b", "jax", line)
  line = re.sub(r"scope \d+", "scope N", line)
  return re.sub(r" at 0x[0-9a-f]+", "", line)


def compare(transcripts: dict, known: dict) -> None:
  """Assert the two transcripts agree but for the steps named in `known` (step name -> why it
  still differs), and that every known step still differs."""
  jax_t, revax_t = transcripts["jax"], transcripts["revax"]
  assert len(jax_t) == len(revax_t), (len(jax_t), len(revax_t), jax_t[-3:], revax_t[-3:])
  diffs, still = [], set()
  for j, r in zip(jax_t, revax_t, strict=True):
    name = j.partition(": ")[0]
    assert name == r.partition(": ")[0], (j, r)
    if _normal(j) == _normal(r):
      continue
    if name in known:
      still.add(name)
    else:
      diffs.append(f"jax   {j}\nrevax {r}")
  assert not diffs, "\n".join(diffs)
  gone = sorted(set(known) - still)
  assert not gone, f"steps listed as known differences now agree (drop them): {gone}"
