"""The shape-polymorphism section of jax's export guide runs on revax with jax's outputs:
shape_poly_guide_child.py (its steps in this suite's words) gives the same transcript with each
library (serialization is left out: jax's needs `flatbuffers`, which the test environment does
not have; test_shape_poly.py round-trips revax's)."""
from tests.guide_transcripts import compare, run_both


def test_shape_polymorphism_guide_matches_jax():
  compare(run_both("export/shape_poly_guide_child.py"), {})
