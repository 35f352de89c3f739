"""Unreduced and reduced mesh axes against jax 0.10.2 (revax/_src/sharding.py's PartitionSpec,
core/sharding_types.py's `ur_rules`, lax/sharding_rules.py's rules, the lowering of
interpreters/sharding_lowering.py): unreduced_child.py's steps (the spec, types, placement, a
contraction left unreduced and added up by reshard eagerly, under jit and under grad, what ops
accept) give the same transcript with each library but for the steps below."""
from tests.guide_transcripts import compare, run_both

_TRACKER = ("same NotImplementedError; jax's message ends by asking to file an issue on jax's "
            "tracker")
KNOWN = {
    "put read": ("reading an unreduced array: same NotImplementedError, jax's message asks to "
                 "file a bug on its tracker, revax's says to reshard first"),
    "dot read": "as 'put read'",
    "sub": _TRACKER, "neg": _TRACKER, "sin": _TRACKER, "exp": _TRACKER,
    "max": ("jax 0.10.2 fails inside its reduce_max rule (a ValueError from iterating the "
            "spec); revax refuses the unreduced operand (NotImplementedError)"),
    "round trip jit": ("resharding a value to unreduced axes it is not unreduced over inside a "
                       "program: Shardy would keep the value on every device, so revax refuses "
                       "(NotImplementedError); jax's program keeps one copy"),
}


def test_unreduced_axes_match_jax():
  compare(run_both("sharding/unreduced_child.py", devices=8), KNOWN)


_CROSS = """
import revax, revax.numpy as jnp
P = revax.sharding.PartitionSpec
revax.set_mesh(revax.make_mesh((4, 2), ("r", "c")))
d = revax.device_put(jnp.ones((4, 2)), P(None, None, unreduced={"c"}))
for f in (lambda: revax.sharding.reshard(d, P(None, None, unreduced={"r"})),
          lambda: revax.jit(lambda v: revax.sharding.reshard(
              v, P(None, None, unreduced={"r"})))(d)):
  try:
    f()
  except NotImplementedError as e:
    print("refused:", "unreduced" in str(e))
"""


def test_reshard_between_different_unreduced_axes_is_refused_not_a_crash():
  """Shardy aborts the process on a reshard from some unreduced axes to others (jax 0.10.2
  dies with it): revax refuses it, eagerly and in a program."""
  import subprocess
  import sys
  from tests.child_env import child_env
  env = child_env(REVAX_CPU_DEVICE_COUNT="8")
  out = subprocess.run([sys.executable, "-c", _CROSS], env=env, capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  assert out.stdout.split("\n")[:2] == ["refused: True", "refused: True"], out.stdout
