"""config.parse_flags_with_absl(): options from the command line, as JAX's (flax's tests call
it at import). Each library runs in a fresh interpreter with the same arguments."""
import subprocess
import sys

import pytest

from tests.child_env import child_env

SCRIPT = """
import sys
lib = __import__(sys.argv[1])
sys.argv = ["prog"] + sys.argv[2:]
lib.config.parse_flags_with_absl()
lib.config.parse_flags_with_absl()  # (only the first call reads the command line)
print(lib.config.jax_enable_x64, lib.config.jax_debug_nans,
      lib.config.jax_default_matmul_precision, lib.config.jax_numpy_rank_promotion)
"""


# (arguments, what jax 0.10.2 prints: x64, debug_nans, matmul precision, rank promotion)
CASES = [
    ([], "False False None allow"),
    (["--jax_enable_x64"], "True False None allow"),
    (["--jax_enable_x64=true", "--jax_default_matmul_precision=highest", "-q", "file.py"],
     "True False highest allow"),
    (["--nojax_enable_x64", "--jax_numpy_rank_promotion=warn", "--jax_no_such_option=1"],
     "False False None warn"),
    (["--jax_debug_nans", "--", "--jax_enable_x64"], "False True None allow"),
]


def _run(lib, args):
  env = child_env(JAX_PLATFORMS="cpu")
  proc = subprocess.run([sys.executable, "-c", SCRIPT, lib, *args], capture_output=True,
                        text=True, env=env, timeout=120)
  assert proc.returncode == 0, proc.stderr[-2000:]
  return proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_parse_flags_with_absl_sets_what_jax_sets(k):
  """The recorded values are jax's (jax needs absl for this method, which the test
  environment may lack); where absl is installed jax runs too."""
  args, expected = CASES[k]
  assert _run("revax", args) == expected
  try:
    import absl.flags  # noqa: F401
  except ImportError:
    return
  assert _run("jax", args) == expected
