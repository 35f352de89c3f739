"""Differential fuzzing of revax against jax 0.10.2: random small programs per op family, each
under a random transformation (value, grad, jvp, vjp, linearize, vmap with random in_axes and
out_axes, and compositions), run by revax eagerly, by revax.jit and by jax.jit, and compared.

The "ci" hypothesis profile (default) is deterministic and small; REVAX_FUZZ_PROFILE=soak runs
the long one (see tests/README.md).
"""
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz import array_ops, contractions, elementwise
from tests.fuzz.harness import fuzz_settings, run_case


@fuzz_settings(2.0)
@given(program=elementwise.elementwise_programs(), data=st.data())
def test_elementwise(program, data):
  run_case(program, data)


@fuzz_settings()
@given(program=array_ops.reduction_programs(), data=st.data())
def test_reductions(program, data):
  run_case(program, data)


@fuzz_settings(1.5)
@given(program=array_ops.shape_programs(), data=st.data())
def test_shapes_indexing_slicing(program, data):
  run_case(program, data)


@fuzz_settings()
@given(program=array_ops.scan_sort_programs(), data=st.data())
def test_cumulative_and_sort(program, data):
  run_case(program, data)


@fuzz_settings(0.5)
@given(program=array_ops.select_programs(), data=st.data())
def test_where_select_clamp(program, data):
  run_case(program, data)


@fuzz_settings(1.5)
@given(program=contractions.dot_programs(), data=st.data())
def test_dot_general_matmul_einsum(program, data):
  run_case(program, data)


@fuzz_settings(1.5)
@given(program=contractions.window_programs(), data=st.data())
def test_reduce_window_and_pooling(program, data):
  run_case(program, data)


@fuzz_settings()
@given(program=contractions.conv_programs(), data=st.data())
def test_convolution(program, data):
  run_case(program, data)
