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


CALLS = [  # (function, jit options, positional arguments, keyword arguments)
    (lambda x, y, z=1.0: {"a": x * 2, "b": (y,)}, dict(donate_argnums=0),
     (np.ones(3, np.float32), 2.0), {"z": np.ones(2, np.float32)}),
    (lambda x, n: x * n, dict(static_argnums=1), (np.ones(2, np.float32), 3), {}),
    (lambda p: [p["w"] @ p["b"], p["b"].sum()], {},
     ({"w": np.ones((2, 3), np.float32), "b": np.ones(3, np.int32)},), {}),
]


@pytest.mark.parametrize("k", range(len(CALLS)))
def test_traced_and_lowered_describe_the_call_as_jax(k):
  """jit(f).trace(...) is a Traced and its attributes, and those of the Lowered, print as jax's
  (argument and result pytrees of avals, ArgInfo with donation, ShapeDtypeStructs, weak types
  dropped from a lowered stage's results)."""
  jax = pytest.importorskip("jax")
  fun, options, args, kwargs = CALLS[k]
  seen = []
  for lib in (revax, jax):
    traced = lib.jit(fun, **options).trace(*args, **kwargs)
    lowered = traced.lower()
    assert isinstance(traced, lib.stages.Traced) and isinstance(lowered, lib.stages.Lowered)
    seen.append([repr(x) for x in (
        traced.in_avals, traced.args_info, traced.out_avals, traced.out_info, traced.in_tree,
        traced.out_tree, traced.donate_argnums, traced.fun_name, lowered.in_avals,
        lowered.args_info, lowered.out_info, lowered.in_tree, lowered.out_tree)])
    assert type(traced.jaxpr).__name__ == "ClosedJaxpr"
  # tree structures print as optree's (PyTreeSpec) in revax, as jax's own (PyTreeDef) in jax
  normalize = lambda s: s.replace("PyTreeSpec(", "PyTreeDef(").replace(", namespace='revax')", ")")
  assert [normalize(s) for s in seen[0]] == seen[1]
