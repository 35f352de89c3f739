"""Varying manual axes (JAX's vma typing inside shard_map) against jax: vma_child.py prints, for
every collective and a set of elementwise, reduction, shape, indexing, contraction and
control-flow operations inside shard_map on a 2x2 mesh of 4 CPU devices, the type each gives
(`typeof`, with its `{V:...}`), or its error's type and message, plus values, out_specs errors
and jaxprs' text; the transcripts of jax and revax must be identical, line for line."""
from tests.guide_transcripts import compare, run_both


def test_vma_types_errors_and_jaxprs_match_jax():
  transcripts = run_both("sharding/vma_child.py", devices=4)
  assert len(transcripts["jax"]) > 450, len(transcripts["jax"])
  compare(transcripts, {})
