"""The typed-keys JEP (9263) runs on revax with jax's outputs: keys_jep_child.py (its steps in
this suite's words) gives the same transcript with each library but for the steps below."""
from tests.guide_transcripts import compare, run_both

KNOWN = {
    "wrap bad shape": ("same TypeError and text up to the implementation, which jax prints as "
                       "its PRNGImpl record (function objects) and revax by name"),
}


def test_typed_keys_jep_matches_jax():
  compare(run_both("random/keys_jep_child.py"), KNOWN)
