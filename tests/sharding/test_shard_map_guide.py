"""jax's shard_map guide runs on revax with jax's outputs: shard_map_guide_child.py (the guide's
steps in this suite's words: blocked matmul, specs, collectives, data parallel, FSDP, tensor
parallel, FSDP+TP, a pipeline) on 8 CPU devices gives the same transcript with each library,
but for the steps below."""
from tests.guide_transcripts import compare, run_both

_VMA = ("jax types the values inside shard_map with their varying manual axes (`{V:i}`, "
        "pvary/pcast, check_vma's static replication check); revax's shard_map does not type "
        "them so (it checks replication on the values, ManualAxisType stays excluded in the "
        "surface coverage)")
KNOWN = {name: _VMA for name in (
    "block shapes", "vary type", "bad out spec", "pcast", "implicit pvary jaxpr",
    "scan vma error", "vma2", "vma2 after")}


def test_shard_map_guide_matches_jax():
  compare(run_both("sharding/shard_map_guide_child.py", devices=8), KNOWN)
