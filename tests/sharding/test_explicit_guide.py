"""The explicit-sharding part of jax's parallelism guide runs on revax with jax's outputs:
explicit_guide_child.py (the guide's steps in this suite's words) on 8 CPU devices, with each
library, gives the same transcript."""
from tests.guide_transcripts import compare, run_both

KNOWN: dict = {}


def test_explicit_sharding_guide_matches_jax():
  compare(run_both("sharding/explicit_guide_child.py", devices=8), KNOWN)
