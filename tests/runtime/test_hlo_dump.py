"""runtime/hlo_dump.py: XLA's HLO of a StableHLO module, dumped by XLA before its optimizations
(what `Lowered.compiler_ir("hlo")` returns; tests/test_stages.py compares it with jax's)."""
import numpy as np
import pytest

import revax
from revax._src.runtime.client import get_backend
from revax._src.runtime.hlo_dump import hlo_before_optimizations
from revax._src.runtime.pjrt import CompileError


def test_the_dump_is_the_modules_hlo_text_and_proto():
  text = revax.jit(lambda x: x * 2.0).lower(np.ones(3, np.float32)).as_text()
  # (XLA:CPU's dump: a TPU's entry layouts carry its tiles, f32[3]{0:T(128)})
  hlo, proto = hlo_before_optimizations(get_backend("cpu"), text)
  assert hlo.startswith("HloModule jit__lambda, entry_computation_layout={(f32[3]{0})")
  assert "multiply(" in hlo and "metadata" not in hlo
  assert b"jit__lambda" in proto  # the HloModuleProto names its module


def test_a_module_xla_refuses_raises_xlas_error():
  with pytest.raises(CompileError):
    hlo_before_optimizations(get_backend(), "module @m { func.func public @main() { nope } }")

