"""vmap: JAX's in_axes/out_axes semantics, errors, and composition with jit and grad."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax._src.core.typecheck import check_jaxpr
from tests.platform_tolerances import allclose_tol

rng = np.random.default_rng(0)
xs = rng.standard_normal((3, 4)).astype(np.float32)


def test_in_axes_prefix_and_none():
  f = lambda d, y: d["a"] * y + d["b"]
  d = {"a": xs, "b": np.float32(1.0)}
  out = revax.vmap(f, in_axes=({"a": 0, "b": None}, None))(d, np.float32(2.0))
  np.testing.assert_allclose(out, xs * 2 + 1, rtol=1e-6)


def test_negative_in_axis_and_out_axes():
  out = revax.vmap(lambda x: x * 2.0, in_axes=-1, out_axes=1)(xs)
  np.testing.assert_allclose(out, xs * 2, rtol=1e-6)
  assert out.shape == (3, 4)


def test_out_axes_minus_one_places_unmapped_and_mapped_outputs():
  f = lambda x: (x * 2.0, np.float32(7.0) * np.ones(2, np.float32))
  a, b = revax.vmap(f, out_axes=-1)(xs)
  assert a.shape == (4, 3) and b.shape == (2, 3)
  np.testing.assert_allclose(a, (xs * 2).T, rtol=1e-6)
  np.testing.assert_allclose(b, np.full((2, 3), 7.0))


def test_axis_size_when_nothing_is_mapped():
  out = revax.vmap(lambda x: x + 1.0, in_axes=None, axis_size=5)(np.float32(1.0))
  np.testing.assert_allclose(out, np.full(5, 2.0))


def test_nested_vmap():
  out = revax.vmap(revax.vmap(lambda x, y: x * y, in_axes=(0, None)), in_axes=(None, 0))(
      xs[0], xs[:, 0])
  np.testing.assert_allclose(out, xs[:, 0][:, None] * xs[0][None, :], rtol=1e-6)


def test_inconsistent_sizes_error_lists_each_argument():
  with pytest.raises(ValueError, match=r"inconsistent sizes(.|\n)*size 3(.|\n)*size 5"):
    revax.vmap(lambda a, b: a + b)(xs, np.ones((5, 4), np.float32))


def test_in_axis_out_of_range():
  with pytest.raises(ValueError, match="along axis 2, which implies that its rank should be at "
                                       "least 3, but is only 2"):
    revax.vmap(lambda x: x, in_axes=2)(xs)


def test_out_axes_none_on_mapped_output():
  with pytest.raises(ValueError, match="vmap has mapped output but out_axes is None"):
    revax.vmap(lambda x: x, out_axes=None)(xs)


def test_all_none_in_axes_without_axis_size():
  with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
    revax.vmap(lambda x: x, in_axes=None)(xs)


def _mlp_loss(params, x, y):
  (w1, b1), (w2, b2) = params
  h = rnp.tanh(x @ w1 + b1)
  return ((h @ w2 + b2 - y) ** 2).sum()


def test_per_example_gradients_equal_a_python_loop():
  params = ((rng.standard_normal((4, 8)).astype(np.float32), np.zeros(8, np.float32)),
            (rng.standard_normal((8, 2)).astype(np.float32), np.zeros(2, np.float32)))
  x = rng.standard_normal((5, 4)).astype(np.float32)
  y = rng.standard_normal((5, 2)).astype(np.float32)
  per_ex = revax.vmap(revax.grad(_mlp_loss), in_axes=(None, 0, 0))(params, x, y)
  jitted = revax.jit(revax.vmap(revax.grad(_mlp_loss), in_axes=(None, 0, 0)))(params, x, y)
  loop = [revax.grad(_mlp_loss)(params, x[i], y[i]) for i in range(5)]
  for got in (per_ex, jitted):
    for leaf, leaves in zip(revax.tree_util.tree_leaves(got),
                            zip(*[revax.tree_util.tree_leaves(g) for g in loop])):
      np.testing.assert_allclose(leaf, np.stack([np.asarray(l) for l in leaves]), **allclose_tol(rtol=1e-4,
                                     atol=1e-5))
  check_jaxpr(revax.make_jaxpr(revax.vmap(revax.grad(_mlp_loss), in_axes=(None, 0, 0)))(
      params, x, y))


def test_vmap_of_jit_and_jit_of_vmap():
  f = revax.jit(lambda x: rnp.sin(x) * 2.0)
  np.testing.assert_allclose(revax.vmap(f)(xs), np.sin(xs) * 2, rtol=1e-6)
  np.testing.assert_allclose(revax.jit(revax.vmap(lambda x: rnp.sin(x) * 2.0))(xs),
                             np.sin(xs) * 2, rtol=1e-6)


def test_none_inside_a_registered_node_of_the_axes_spec_as_jax():
  """None inside a registered pytree node of in_axes/out_axes marks an unmapped subtree, as in
  jax (flax's nnx.vmap passes NodeStates(states=(None, 0)) specs)."""
  import jax

  class Pair:
    def __init__(self, a, b):
      self.a, self.b = a, b

  outs = []
  for lib in (jax, revax):
    lib.tree_util.register_pytree_node(Pair, lambda p: ((p.a, p.b), None),
                                       lambda _, c: Pair(*c))
    pair = Pair(lib.numpy.ones(()), lib.numpy.arange(3.0))
    out = lib.vmap(lambda p: Pair(p.a * 2, p.a + p.b), in_axes=(Pair(None, 0),),
                   out_axes=Pair(None, 0))(pair)
    outs.append((np.asarray(out.a), np.asarray(out.b)))
  for j, r in zip(*outs, strict=True):
    np.testing.assert_allclose(j, r)
