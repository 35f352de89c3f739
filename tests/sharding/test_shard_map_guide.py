"""jax's shard_map guide runs on revax with jax's outputs: shard_map_guide_child.py (the guide's
steps in this suite's words: blocked matmul, specs, collectives, data parallel, FSDP, tensor
parallel, FSDP+TP, a pipeline) on 8 CPU devices gives the same transcript with each library
(every step: the types of values inside shard_map with their varying manual axes included)."""
from tests.guide_transcripts import compare, run_both

KNOWN: dict = {}


def test_shard_map_guide_matches_jax():
  compare(run_both("sharding/shard_map_guide_child.py", devices=8), KNOWN)
