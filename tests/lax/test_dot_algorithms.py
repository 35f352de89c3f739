"""dot_general's dot algorithms against jax 0.10.2 on CPU: every DotAlgorithmPreset (by member
and by name) on f32/f16/bf16 operands -- values, dtypes, eagerly and under jit, and JAX's
ValueError for the presets XLA:CPU does not run -- plus the lowered `algorithm` attribute,
gradients through an algorithm dot, and the type names jax.lax exports."""
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.lax as rlax
from revax._src.runtime.pjrt import CompileError
from tests.platform_tolerances import DOT_ALGORITHMS, ON_TPU

# Presets XLA:TPU refuses to compile (measured on the chip 2026-12-06: "Dot algorithm
# ALG_DOT_F32_F32_F32 is not supported."), and those it computes with bfloat16 operands where
# XLA:CPU ignores the algorithm (DOT_ALGORITHMS)
TPU_REFUSED = {"F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "TF32_TF32_F32", "TF32_TF32_F32_X3"}
TPU_BF16 = {"DEFAULT", "BF16_BF16_F32"}

jax = pytest.importorskip("jax")
jlax = jax.lax

rng = np.random.default_rng(4)
A = rng.standard_normal((3, 5)).astype(np.float32)
B = rng.standard_normal((5, 2)).astype(np.float32)
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16]


@pytest.mark.parametrize("preset", [p.name for p in rlax.DotAlgorithmPreset])
def test_presets_match_jax(preset):
  for dt in DTYPES:
    a, b = A.astype(dt), B.astype(dt)
    jitted = lambda: revax.jit(lambda x, y: rlax.dot(x, y, precision=preset))(a, b)  # noqa: E731
    if ON_TPU and preset in TPU_REFUSED:  # (DOT_ALGORITHMS: XLA:TPU's own refusal)
      with pytest.raises(CompileError, match="is not supported"):
        jitted()
    try:
      want = jax.jit(lambda x, y: jlax.dot(x, y, precision=preset))(a, b)
    except ValueError as e:
      assert "not supported by dot_general on CPU" in str(e)
      # (on a TPU: eager dots of host values are the host's, as the CPU's; the chip runs or
      # refuses the jitted one, with no oracle here: DOT_ALGORITHMS)
      calls = (lambda: rlax.dot(a, b, precision=rlax.DotAlgorithmPreset[preset]),) + \
          (() if ON_TPU else (jitted,))
      for call in calls:
        with pytest.raises(ValueError, match=f"'{preset}' is not supported by dot_general on CPU"):
          call()
      if ON_TPU and preset not in TPU_REFUSED:
        try:
          got = jitted()
        except CompileError as e:
          assert "is not supported" in str(e)
        except ValueError as e:  # (jax's lowering: the ANY_F8 presets take float8 operands only)
          assert preset.startswith("ANY_F8") and "requires both inputs to have float8" in str(e)
        else:
          assert got.shape == (3, 2) and np.all(np.isfinite(np.asarray(got, np.float32)))
      continue
    tol = 1e-5 if dt == np.float32 and preset != "F16_F16_F16" else 2e-2
    if ON_TPU and preset in TPU_BF16:
      tol = 2e-2  # (DOT_ALGORITHMS: bfloat16 operands on the chip)
    gots = [rlax.dot(a, b, precision=rlax.DotAlgorithmPreset[preset])]
    if not (ON_TPU and preset in TPU_REFUSED):
      gots.append(jitted())
    for got in gots:
      assert got.dtype == want.dtype
      np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                 rtol=tol, atol=tol)


def test_lowering_grad_and_explicit_algorithm():
  text = revax.jit(lambda x, y: rlax.dot(x, y, precision="BF16_BF16_F32_X3")).lower(A, B).as_text()
  assert ("#stablehlo.dot_algorithm<lhs_precision_type = bf16, rhs_precision_type = bf16, "
          "accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, "
          "num_primitive_operations = 3, allow_imprecise_accumulation = false>") in text
  text = revax.jit(lambda x, y: rlax.dot(x, y, precision="F16_F16_F16")).lower(A, B).as_text()
  assert "tensor<3x5xf16>" in text and "tensor<3x2xf32>" in text  # operands rounded to f16
  (eqn,) = revax.make_jaxpr(lambda x: rlax.dot(x, B, precision="F32_F32_F32"))(A).eqns
  assert eqn.params["precision"] is rlax.DotAlgorithmPreset.F32_F32_F32
  f = lambda lib, lax: lambda x: lib.numpy.sum(lax.dot(x, B, precision="F16_F16_F16") ** 2)
  np.testing.assert_allclose(np.asarray(revax.grad(f(revax, rlax))(A)),
                             np.asarray(jax.grad(f(jax, jlax))(A)), rtol=2e-2, atol=2e-2)
  algorithm = rlax.DotAlgorithm(np.float32, np.float32, np.float32)
  assert algorithm.num_primitive_operations == 1 and algorithm._fields == jlax.DotAlgorithm._fields
  for lax in (rlax, jlax):
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
      jax.block_until_ready(lax.dot(A, B, precision=lax.DotAlgorithm(np.float32, np.float32,
                                                                     np.float32)))


def test_type_names():
  assert [p.name for p in rlax.DotAlgorithmPreset] == [p.name for p in jlax.DotAlgorithmPreset]
  assert str(rlax.DotAlgorithmPreset.F16_F16_F32) == "F16_F16_F32"
  assert repr(rlax.DotAlgorithmPreset.F16_F16_F32) == repr(jlax.DotAlgorithmPreset.F16_F16_F32)
  for p in rlax.DotAlgorithmPreset:
    q = jlax.DotAlgorithmPreset[p.name]
    assert p.accumulation_type == (None if q.accumulation_type is None
                                   else np.dtype(q.accumulation_type))
  dn: rlax.DotDimensionNumbers = (((1,), (0,)), ((), ()))
  assert rlax.dot_general(A, B, dn).shape == (3, 2)
  assert rlax.ConvGeneralDilatedDimensionNumbers is not None and rlax.PrecisionLike is not None


@pytest.mark.parametrize("preset", [p.name for p in rlax.DotAlgorithmPreset
                                    if p.name.startswith("ANY_F8")])
def test_any_f8_presets_lower_as_jax_for_a_tpu(preset):
  """The ANY_F8 presets (which XLA:CPU refuses) as jax lowers them for a TPU: the float8 operands'
  own types accumulated in float32, and jax's ValueError for other operand types (found on the
  chip, where revax's lowering raised a KeyError)."""
  import re
  from revax._src.lax import dot_algorithms
  f8 = ml_dtypes.float8_e4m3fn
  a, b = A.astype(f8), B.astype(ml_dtypes.float8_e5m2)
  text = jax.jit(lambda x, y: jlax.dot(x, y, precision=preset,
                                       preferred_element_type=np.float32)).trace(a, b).lower(
      lowering_platforms=("tpu",)).as_text()
  (want,) = re.findall(r"algorithm = <([^>]*)>", text)
  got = dot_algorithms.algorithm_attr(rlax.DotAlgorithmPreset[preset], a.dtype, b.dtype)
  assert got == f"#stablehlo.dot_algorithm<{want}>"
  for lib in (jax, revax):
    with pytest.raises(ValueError, match="requires both inputs to have float8 dtypes"):
      if lib is jax:
        jax.jit(lambda x, y: jlax.dot(x, y, precision=preset)).trace(A, B).lower(
            lowering_platforms=("tpu",))
      else:
        dot_algorithms.algorithm_attr(rlax.DotAlgorithmPreset[preset], A.dtype, B.dtype)


@pytest.mark.parametrize("preset", [p.name for p in rlax.DotAlgorithmPreset
                                    if p.name != "DEFAULT" and not p.name.startswith("ANY_F8")])
def test_every_preset_s_algorithm_attribute_is_jax_s_for_a_tpu(preset):
  """The class of the ANY_F8 KeyError: every preset's `algorithm` attribute as jax writes it
  when lowering for a TPU (where XLA:CPU's refusal does not hide it), on operands of the type
  the preset computes in."""
  import re
  from revax._src.lax import dot_algorithms
  algorithm = rlax.DotAlgorithmPreset[preset]
  dtype = (algorithm.supported_lhs_types or (np.dtype(np.float32),))[0]
  a, b = A.astype(dtype), B.astype(dtype)
  text = jax.jit(lambda x, y: jlax.dot(x, y, precision=preset)).trace(a, b).lower(
      lowering_platforms=("tpu",)).as_text()
  (want,) = re.findall(r"algorithm = <([^>]*)>", text)
  got = dot_algorithms.algorithm_attr(algorithm, a.dtype, b.dtype)
  assert got == f"#stablehlo.dot_algorithm<{want}>"
