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
}


def test_unreduced_axes_match_jax():
  compare(run_both("sharding/unreduced_child.py", devices=8), KNOWN)
