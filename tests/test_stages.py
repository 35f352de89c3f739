"""revax.stages: jit's stages are instances of the stage types, as in jax."""
import numpy as np
import pytest

import revax
import revax.stages as stages


def test_jit_stages_are_instances_of_the_stage_types():
  f = revax.jit(lambda x: x * 2)
  lowered = f.lower(np.ones(3, np.float32))
  compiled = lowered.compile()
  assert isinstance(f, stages.Wrapped)
  assert isinstance(lowered, stages.Lowered) and isinstance(compiled, stages.Compiled)
  assert not isinstance(lowered, stages.Compiled)
  np.testing.assert_array_equal(compiled(np.ones(3, np.float32)), [2.0] * 3)


def test_arg_info_and_compiler_options():
  info = stages.ArgInfo(revax.ShapeDtypeStruct((2, 3), np.float32), donated=False)
  assert info.shape == (2, 3) and info.dtype == np.float32 and not info.donated
  with pytest.raises(TypeError, match="No shape attribute"):
    _ = stages.ArgInfo(object(), True).shape
  opts: stages.CompilerOptions = {"xla_cpu_enable_fast_math": False}
  assert opts
