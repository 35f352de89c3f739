"""Fuzzing autodiff as people write it, against jax 0.10.2 (issue 14's classes): Python-scalar
points and weak types through every transformation, has_aux through every transformation, and
Python control flow on concrete primals under every eager transformation. Lean: the "ci"
profile draws a few dozen cases per family, deterministically (see tests/fuzz/harness.py)."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz import autodiff_semantics as ads
from tests.fuzz.harness import fuzz_settings


@fuzz_settings(1.5)
@given(case=ads.cases(ads.SMOOTH, ads.WEAK_TYPE_TRANSFORMS))
def test_python_scalars_and_weak_types(case):
  program, x, transform = case
  r, j = ads.run_both(ads.weak_type_cases, program, x, transform)
  ads.compare(r, j, f"{program} at {x} under {transform}")


@fuzz_settings()
@given(case=ads.cases(ads.SMOOTH, ads.HAS_AUX_TRANSFORMS))
def test_has_aux(case):
  program, x, transform = case
  r, j = ads.run_both(ads.has_aux_cases, program, x, transform)
  ads.compare(r, j, f"{program} at {x} under {transform} (has_aux)")


@fuzz_settings(1.5)
@given(case=ads.cases(ads.CONTROL_FLOW, ads.CONTROL_FLOW_TRANSFORMS), as_array=st.booleans())
def test_python_control_flow_on_concrete_primals(case, as_array):
  program, x, transform = case
  point = np.float32(x) if as_array else x
  r, j = ads.run_both(ads.control_flow_cases, program, point, transform)
  ads.compare(r, j, f"{program} at {point!r} under {transform}")
