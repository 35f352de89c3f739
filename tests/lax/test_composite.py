"""lax.composite and lax.platform_dependent against jax 0.10.2: values eagerly and under jit,
the lowered stablehlo.composite (name, version, attributes, decomposition function), JAX's
errors (no derivative rules, traced attributes), and the branch chosen on CPU."""
import numpy as np
import pytest

import revax
import revax.lax as rlax
from tests.platform_tolerances import ON_TPU

jax = pytest.importorskip("jax")
jlax = jax.lax

X = np.linspace(-1.0, 1.0, 6, dtype=np.float32)


def _tangent(lax):
  return lax.composite(lambda x: lax.sin(x) / lax.cos(x), name="my.tangent")


def _affine(lax):
  return lax.composite(lambda x, y, *, scale, shift, unused: x * scale + y + shift,
                       name="my.affine", version=3)


def test_values_match_jax_eager_and_jit():
  for make, call in ((_tangent, lambda f: f(X)),
                     (_affine, lambda f: f(X, X[::-1], scale=np.float32(2), shift=0.5,
                                           unused=None))):
    want = np.asarray(call(make(jlax)))
    np.testing.assert_allclose(np.asarray(call(make(rlax))), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(revax.jit(lambda: call(make(rlax)))()), want,
                               rtol=1e-6)


def test_lowering_is_a_named_composite_with_its_decomposition():
  f = _affine(rlax)
  text = revax.jit(lambda x, y: f(x, y, scale=2, shift=0.5, unused=None)).lower(X, X).as_text()
  (line,) = [ln for ln in text.splitlines() if "stablehlo.composite" in ln]
  assert 'name = "my.affine"' in line and "version = 3 : i32" in line
  assert "scale = 2 : i64" in line and "shift = 0.5 : f64" in line and "unused" not in line
  callee = line.split("decomposition = @")[1].split(",")[0].split("}")[0]
  assert f"func.func private @{callee}(" in text
  (eqn,) = revax.make_jaxpr(lambda x: _tangent(rlax)(x))(X).eqns
  assert eqn.primitive.name == "composite" and eqn.params["name"] == "my.tangent"


def test_errors_of_jax_and_vmap():
  for lib, lax in ((revax, rlax), (jax, jlax)):
    with pytest.raises(ValueError, match="JVP rule for composite not implemented"):
      lib.grad(lambda x: _tangent(lax)(x).sum())(X)
    with pytest.raises(lib.errors.UnexpectedTracerError):
      lib.jit(lambda s: _affine(lax)(X, X, scale=s, shift=0.0, unused=None))(2.0)
  # jax has no batching rule for composite; revax runs the batched decomposition
  xs = np.stack([X, X / 2])
  np.testing.assert_allclose(np.asarray(revax.vmap(_tangent(rlax))(xs)), np.tan(xs), rtol=1e-5)


def test_platform_dependent_picks_the_cpu_branch():
  for lib, lax in ((revax, rlax), (jax, jlax)):
    f = lambda x: lax.platform_dependent(x, cpu=lambda v: v + 1, cuda=lambda v: v * 10,
                                         default=lambda v: v - 1)
    g = lambda x: lax.platform_dependent(x, tpu=lambda v: v + 1, default=lambda v: v * 3)
    # (revax on a TPU takes the default branch of f and the tpu branch of g, as jax on a TPU)
    on_tpu = ON_TPU and lib is revax
    for h, want in ((f, X - 1 if on_tpu else X + 1), (g, X + 1 if on_tpu else X * 3)):
      np.testing.assert_allclose(np.asarray(h(X)), want)
      np.testing.assert_allclose(np.asarray(lib.jit(h)(X)), want)
    with pytest.raises(ValueError, match="Use 'cuda' or 'rocm'"):
      lax.platform_dependent(X, gpu=lambda v: v)
    with pytest.raises(TypeError, match="branch must be a callable"):
      lax.platform_dependent(X, cpu=1)
    tpu_only = lib.jit(lambda x: lax.platform_dependent(x, tpu=lambda v: v + 1))
    if on_tpu:  # (the chip has its branch)
      np.testing.assert_allclose(np.asarray(tpu_only(X)), X + 1)
    else:
      with pytest.raises(NotImplementedError):
        tpu_only(X)
