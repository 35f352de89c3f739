"""Each program of this folder is a small JAX user's script (training loops, samplers, pytrees,
printing); it runs with jax and then, with only its imports changed, with revax, and the two
printed outputs must agree: numbers within the program's tolerance, everything else (dtypes,
weak types, shapes, key paths, tree structures) exactly. JAX's output is read from its record
in expected/ (checked to come from this exact source text and jax version), or run live with
REVAX_PROGRAMS_LIVE_JAX=1. See harness.py."""
import os

import pytest

from tests.platform_tolerances import as_the_oracles_output, tolerance as platform_tolerance
from tests.programs import harness


@pytest.mark.parametrize("name", harness.program_names())
def test_program(name):
  if os.environ.get("REVAX_PROGRAMS_LIVE_JAX"):
    jax_out, _ = harness.run(name, "jax")
  else:
    jax_out = harness.expected(name)
  revax_out, revax_ns = harness.run(name, "revax")
  revax_out = as_the_oracles_output(revax_out)  # (on a TPU: the oracle's output is the CPU's)
  assert jax_out.strip(), f"{name} printed nothing"
  tolerance = {**harness.DEFAULT_TOLERANCE, **revax_ns.get("TOLERANCE", {})}
  # (on a TPU at least the chip's tolerance: its transcendental functions and triangular solves)
  tolerance = dict(zip(("rtol", "atol"), platform_tolerance(tolerance["rtol"], tolerance["atol"])))
  message = harness.compare(revax_out, jax_out, **tolerance)
  assert message is None, message


def test_harness_swaps_only_imports():
  text = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\nfrom jax.scipy.stats import norm\n"
  assert harness._IMPORT.sub(r"\1import revax as jax\2", text).startswith("import revax as jax\n")
  swapped = harness._FROM.sub(r"\1from revax\2", harness._IMPORT_SUB.sub(r"\1import revax.", text))
  assert "import revax.numpy as jnp" in swapped and "from revax import lax" in swapped
  assert "from revax.scipy.stats import norm" in swapped


def test_harness_compares_numbers_and_text():
  assert harness.compare("Array([1.00001, 2.], dtype=float32)",
                         "Array([1., 2.], dtype=float32)", rtol=1e-4, atol=0) is None
  assert harness.compare("Array(1, dtype=int32)", "Array(2, dtype=int32)", 1, 1) is not None
  assert harness.compare("dtype=float32, weak_type=True", "dtype=float32", 1e-4, 0) is not None
  assert harness.compare("[1.\n 2.]", "[1. 2.]", 1e-4, 0) is None
  assert "float16" in harness.compare("x float16", "x float32", 1e-4, 0)
  assert harness.compare("[-0.19140679-0.104566j]", "[-0.19140668-0.10456596j]", 1e-4, 0) is None
  assert harness.compare("[1.+0.5j]", "[1.+0.6j]", 1e-4, 0) is not None
  assert harness.compare("[1.+2.j]", "[1.+2.]", 1e-4, 0) is not None


def test_a_stale_record_is_refused(tmp_path, monkeypatch):
  (tmp_path / "prog.py").write_text("print(1)\n")
  monkeypatch.setattr(harness, "HERE", tmp_path)
  monkeypatch.setattr(harness, "EXPECTED", tmp_path / "expected")
  harness.record("prog")
  assert harness.expected("prog") == "1\n"
  (tmp_path / "prog.py").write_text("print(2)\n")
  with pytest.raises(AssertionError, match="stale"):
    harness.expected("prog")
