"""jax's array-refs guide runs on revax with jax's outputs: refs_guide_child.py (the guide's
steps in this suite's words) gives the same transcript with each library but for the steps
below."""
from tests.guide_transcripts import compare, run_both

KNOWN = {
    "sin of ref": ("same TypeError; jax's message names its internal tracer class, revax's "
                   "says the argument is a Ref"),
    "types": "the classes' module paths (jax._src.core.Ref vs revax._src.lax.state.Ref)",
    "freeze elsewhere": ("freezing a ref passed into jit: jax 0.10.2 fails with an internal "
                         "IndexError ('list index out of range'); revax freezes it"),
    "ref of ref": ("new_ref of a Ref: jax fails an internal assertion (AssertionError), revax "
                   "raises TypeError naming the problem"),
    "pick vjp": ("the float0 cotangent of an integer argument: jax returns its TypedNdArray "
                 "wrapper, revax a NumPy float0 array (same dtype and value)"),
}


def test_refs_guide_matches_jax():
  compare(run_both("lax/refs_guide_child.py"), KNOWN)
