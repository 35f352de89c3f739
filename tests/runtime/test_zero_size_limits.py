"""Zero-size arrays whose other dimensions are huge: XLA aborts the process on them (its extent
products overflow before meeting the zero), so revax must refuse them with a ValueError before
lowering, as a whole, under jit, as inputs and as intermediates (issue 14 item 12). The cases run
in a subprocess so that a regression shows as a failure, not as a dead test runner."""
import subprocess
import sys
import textwrap

from tests.child_env import child_env

_SCRIPT = textwrap.dedent("""
    import numpy as np
    import revax, revax.numpy as jnp

    def outcome(fn):
      try:
        out = fn()
        return "ok " + str(tuple(out.shape))
      except ValueError as e:
        return "ValueError " + ("too large for XLA" if "too large for XLA" in str(e) else str(e))

    cases = {
      "zeros_2p31_2p31_0": lambda: revax.jit(lambda: jnp.zeros((2**31, 2**31, 0)))(),
      "zeros_2p31_2p30_0": lambda: revax.jit(lambda: jnp.zeros((2**31, 2**30, 0)))(),
      "zeros_2p61_0": lambda: revax.jit(lambda: jnp.zeros((2**61, 0)))(),
      "zeros_0_2p62": lambda: revax.jit(lambda: jnp.zeros((0, 2**62)))(),
      "broadcast": lambda: revax.jit(lambda x: jnp.broadcast_to(x, (2**40, 2**40, 0)) + 1)(
          np.zeros((0,), np.float32)),
      "reshape": lambda: revax.jit(lambda x: x.reshape(2**40, 2**40, 0).sum())(
          np.zeros((0,), np.float32)),
      "fits_int8": lambda: revax.jit(lambda: jnp.zeros((0, 2**30, 2**32), jnp.int8))(),
      # (XLA:CPU runs loops over the leading extents of a zero-size array: keep them small)
      "fits_f32": lambda: revax.jit(lambda x: x + 1)(np.zeros((0, 2**20, 2**20), np.float32)),
    }
    for name, fn in cases.items():
      print(name, outcome(fn), flush=True)
""")


def test_zero_size_arrays_with_huge_dimensions_never_abort():
  proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                        env=child_env(), timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  got = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
  too_large = "ValueError too large for XLA"
  assert got == {
      "zeros_2p31_2p31_0": too_large, "zeros_2p31_2p30_0": too_large,
      "zeros_2p61_0": too_large, "zeros_0_2p62": too_large, "broadcast": too_large,
      "reshape": too_large, "fits_int8": "ok (0, 1073741824, 4294967296)",
      "fits_f32": "ok (0, 1048576, 1048576)"}, proc.stdout
