"""The explicit-sharding part of jax's parallelism guide runs on revax with jax's outputs:
explicit_guide_child.py (the guide's steps in this suite's words) on 8 CPU devices, with each
library, gives the same transcript but for the steps below."""
from tests.guide_transcripts import compare, run_both

KNOWN = {
    "changed": ("use_abstract_mesh to a mesh of other axes inside jit (8 devices as ('k',) "
                "under a ('r', 'c') mesh): revax compiles a program over one mesh, and its "
                "Shardy module has one mesh; jax's results live on the other mesh's devices"),
}


def test_explicit_sharding_guide_matches_jax():
  compare(run_both("sharding/explicit_guide_child.py", devices=8), KNOWN)
