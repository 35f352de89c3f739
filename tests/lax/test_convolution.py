"""conv_general_dilated: the NumPy-reference grid (strides, paddings, dilations, groups, layouts,
1-D and 3-D), derivatives (check_grads order 2 and VJPs against jax), vmap with lhs, rhs or both
batched (one convolution, no loop), error messages, the lowering, and the wrappers against jax."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.lax as lax
from revax.test_util import check_vmap
from tests.gradcheck import check_grads
from tests.lax.opdb.convolution import reference
from tests.platform_tolerances import ON_TPU, allclose_tol, jax_on_the_chip

_NCHW = ("NCHW", "OIHW", "NCHW")
_NHWC = ("NHWC", "HWIO", "NHWC")


def _case(lhs_shape, rhs_shape, strides, padding, **kw):
  return pytest.param(lhs_shape, rhs_shape, strides, padding, kw,
                      id=f"{lhs_shape}-{rhs_shape}-s{strides}-{padding}-"
                         + "-".join(f"{k}={v}" for k, v in kw.items()))


_PADDINGS = ["SAME", "VALID", [(1, 2), (0, 1)]]
GRID = (
    [_case((2, 3, 5, 5), (4, 3, 3, 3), (s, s), p, dimension_numbers=_NCHW)
     for s in (1, 2) for p in _PADDINGS]
    + [_case((2, 5, 4, 3), (3, 2, 3, 4), (s, 1), p, dimension_numbers=_NHWC)
       for s in (1, 2) for p in _PADDINGS]
    + [_case((1, 2, 5, 4), (3, 2, 2, 3), (1, 2), [(1, 2), (0, 1)], lhs_dilation=(2, 1)),
       _case((1, 2, 5, 5), (3, 2, 2, 2), (2, 1), [(1, 2), (0, 1)], lhs_dilation=(2, 3),
             rhs_dilation=(1, 2)),
       _case((1, 2, 5, 5), (3, 2, 2, 2), (1, 1), "SAME", rhs_dilation=(2, 2)),
       _case((1, 2, 6, 5), (3, 2, 2, 2), (2, 2), "VALID", rhs_dilation=(2, 1)),
       _case((2, 4, 4, 4), (6, 2, 3, 3), (1, 1), "SAME", feature_group_count=2),
       _case((2, 4, 5, 5), (4, 2, 2, 2), (2, 2), [(1, 2), (0, 1)], feature_group_count=2),
       _case((1, 4, 4, 3), (3, 3, 1, 6), (1, 1), "SAME", dimension_numbers=_NHWC,
             feature_group_count=3),
       _case((4, 3, 4, 4), (4, 3, 3, 3), (1, 1), "VALID", batch_group_count=2),
       _case((4, 2, 5, 4), (6, 2, 2, 2), (2, 1), "SAME", batch_group_count=2),
       _case((2, 3, 7), (4, 3, 3), (1,), "SAME"),
       _case((2, 7, 3), (3, 3, 4), (2,), [(1, 2)], dimension_numbers=("NWC", "WIO", "NWC")),
       _case((1, 2, 4, 3, 4), (2, 2, 2, 2, 2), (1, 2, 1), "SAME"),
       _case((1, 4, 3, 4, 2), (2, 2, 2, 2, 3), (2, 1, 1), [(1, 0), (0, 1), (-1, 1)],
             dimension_numbers=("NDHWC", "DHWIO", "NDHWC"), rhs_dilation=(1, 1, 2))])


def _operands(lhs_shape, rhs_shape, seed=0):
  rng = np.random.default_rng(seed)
  return (rng.uniform(-2, 2, lhs_shape).astype(np.float32),
          rng.uniform(-2, 2, rhs_shape).astype(np.float32))


def _fun(strides, padding, kw):
  return lambda x, w: lax.conv_general_dilated(x, w, strides, padding, **kw)


def _jax_fun(strides, padding, kw):
  return lambda x, w: jax.lax.conv_general_dilated(x, w, strides, padding, precision="highest",
                                                   **kw)


@pytest.mark.parametrize("lhs_shape,rhs_shape,strides,padding,kw", GRID)
def test_grid_against_numpy_reference_and_jax(lhs_shape, rhs_shape, strides, padding, kw):
  x, w = _operands(lhs_shape, rhs_shape)
  expected = reference(x, w, strides, padding, **kw)
  f = _fun(strides, padding, kw)
  np.testing.assert_allclose(f(x, w), expected, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(revax.jit(f)(x, w), expected, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(_jax_fun(strides, padding, kw)(x, w), expected, rtol=1e-4,
                             atol=1e-4)


@pytest.mark.parametrize("lhs_shape,rhs_shape,strides,padding,kw", GRID)
def test_grid_derivatives(lhs_shape, rhs_shape, strides, padding, kw):
  """check_grads order 2 (fwd and rev); the VJP, eager and jitted, equals jax's."""
  x, w = _operands(lhs_shape, rhs_shape)
  f = _fun(strides, padding, kw)
  check_grads(f, (x, w), order=2, modes=("fwd", "rev"))
  out, f_vjp = jax.vjp(_jax_fun(strides, padding, kw), x, w)
  ct = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
  expected = f_vjp(ct)
  for got in (revax.vjp(f, x, w)[1](ct),
              revax.jit(lambda a, b, c: revax.vjp(f, a, b)[1](c))(x, w, ct)):
    for g, e in zip(got, expected, strict=True):
      np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("lhs_shape,rhs_shape,strides,padding,kw", GRID)
def test_grid_vmap_is_one_convolution(lhs_shape, rhs_shape, strides, padding, kw):
  """lhs, rhs or both batched (at the front and in the middle) equal a loop, and the batched
  jaxpr holds exactly one convolution."""
  x, w = _operands(lhs_shape, rhs_shape)
  f = _fun(strides, padding, kw)
  xs = np.stack([x, 0.5 * x + 1, -x], axis=0)
  ws = np.stack([w, 2 * w, w - 1], axis=0)
  for (xa, wa) in [(0, None), (None, 0), (0, 0), (2, None), (None, 1), (1, 3)]:
    bx = x if xa is None else np.moveaxis(xs, 0, xa)
    bw = w if wa is None else np.moveaxis(ws, 0, wa)
    check_vmap(f, (bx, bw), in_axes=(xa, wa), atol=1e-4, rtol=1e-4)
    jaxpr = revax.make_jaxpr(revax.vmap(f, in_axes=(xa, wa)))(bx, bw).jaxpr
    names = [e.primitive.name for e in jaxpr.eqns]
    assert names.count("conv_general_dilated") == 1, names


def test_vmap_jitted_and_nested():
  x, w = _operands((2, 4, 5, 5), (4, 2, 3, 3))
  f = lambda a, b: lax.conv_general_dilated(a, b, (1, 2), "SAME", feature_group_count=2)
  xs = np.stack([x, x + 1], 1)
  ws = np.stack([np.stack([w, -w, w * 3]), np.stack([w + 1, w, w])], 0)  # (2, 3, ...)
  got = revax.jit(revax.vmap(revax.vmap(f, in_axes=(None, 0)), in_axes=(1, 0)))(xs, ws)
  expected = np.stack([np.stack([np.asarray(f(xs[:, i], ws[i, j])) for j in range(3)])
                       for i in range(2)])
  np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_vmap_of_zero_size_batch():
  x, w = _operands((1, 2, 4, 4), (3, 2, 2, 2))
  f = lambda a, b: lax.conv(a, b, (1, 1), "VALID")
  empty = np.zeros((0,) + x.shape, np.float32)
  assert revax.vmap(f, in_axes=(0, None))(empty, w).shape == (0, 1, 3, 3, 3)
  assert revax.jit(revax.vmap(f, in_axes=(None, 0)))(x, np.zeros((0,) + w.shape,
                                                                 np.float32)).shape == \
      (0, 1, 3, 3, 3)


def test_per_example_gradients_match_a_loop():
  """vmap(grad) of a conv -> relu-free -> sum loss over a batch equals one grad per example."""
  x, w = _operands((4, 2, 5, 5), (3, 2, 3, 3))
  loss = lambda w_, x_: revax.numpy.sum(revax.numpy.tanh(
      lax.conv(x_[None], w_, (2, 1), [(1, 0), (0, 1)])))
  per_example = revax.jit(revax.vmap(revax.grad(loss), in_axes=(None, 0)))(w, x)
  loop = np.stack([np.asarray(revax.grad(loss)(w, x[i])) for i in range(4)])
  np.testing.assert_allclose(per_example, loop, **allclose_tol(rtol=1e-4, atol=1e-5))  # (tanh)
  jax_loss = lambda w_, x_: jnp.sum(jnp.tanh(jax.lax.conv(x_[None], w_, (2, 1), [(1, 0), (0, 1)],
                                                          precision="highest")))
  want = jax.vmap(jax.grad(jax_loss), (None, 0))(w, x)
  if ON_TPU:  # (CONV_GRADIENTS: as jax's on the chip, tests/tpu/probe_numerics.py's operands)
    want = jax_on_the_chip("conv_per_example/highest")["value"]
  np.testing.assert_allclose(per_example, want, rtol=1e-4, atol=1e-5)
  # the probe that recorded jax's values on the chip asks this test's question
  probe = _probe_numerics().conv_checks(revax)["conv_per_example/highest"]
  np.testing.assert_allclose(np.asarray(probe["value"]), per_example, rtol=1e-5, atol=1e-6)


def _probe_numerics():
  import importlib.util
  import pathlib
  path = pathlib.Path(__file__).parents[1] / "tpu" / "probe_numerics.py"
  spec = importlib.util.spec_from_file_location("probe_numerics", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


# --- dtypes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.complex64, np.float16])
def test_dtypes_against_jax(dtype):
  rng = np.random.default_rng(0)
  x = rng.integers(-2, 3, (2, 3, 4, 4))
  w = rng.integers(-2, 3, (4, 3, 2, 2))
  if dtype == np.complex64:
    x, w = x + 1j * x[::-1], w - 2j * w
  x, w = x.astype(dtype), w.astype(dtype)
  f = lambda a, b: lax.conv(a, b, (1, 1), "SAME")
  expected = np.asarray(jax.lax.conv(x, w, (1, 1), "SAME"))
  for got in (f(x, w), revax.jit(f)(x, w)):
    assert np.asarray(got).dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(got).astype(np.complex128),
                               expected.astype(np.complex128), rtol=1e-3, atol=1e-3)


def test_preferred_element_type():
  x = np.ones((1, 2, 3, 3), np.int8)
  f = lambda a, b: lax.conv(a, b, (1, 1), "SAME", preferred_element_type=np.int32)
  assert f(x, x[:1]).dtype == np.int32
  assert revax.jit(f)(x, x[:1]).dtype == np.int32
  xf = x.astype(np.float16)
  out = lax.conv(xf, xf[:1], (1, 1), "VALID", preferred_element_type=np.float32)
  assert out.dtype == np.float32
  np.testing.assert_allclose(out, np.full((1, 1, 1, 1), 18, np.float32))


def test_complex_gradients_match_jax():
  rng = np.random.default_rng(2)
  x = (rng.standard_normal((1, 2, 4, 4)) + 1j * rng.standard_normal((1, 2, 4, 4))).astype(
      np.complex64)
  w = (rng.standard_normal((2, 2, 2, 2)) + 1j * rng.standard_normal((2, 2, 2, 2))).astype(
      np.complex64)
  f = lambda a, b: lax.conv(a, b, (2, 1), "SAME")
  jf = lambda a, b: jax.lax.conv(a, b, (2, 1), "SAME", precision="highest")
  out, jvjp = jax.vjp(jf, x, w)
  ct = (rng.standard_normal(out.shape) + 1j * rng.standard_normal(out.shape)).astype(np.complex64)
  for g, e in zip(revax.jit(lambda a, b, c: revax.vjp(f, a, b)[1](c))(x, w, ct), jvjp(ct)):
    np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_zero_size_operands():
  f = lambda a, b: lax.conv(a, b, (1, 1), "VALID")
  x, w = np.zeros((0, 2, 4, 4), np.float32), np.ones((3, 2, 2, 2), np.float32)
  assert f(x, w).shape == revax.jit(f)(x, w).shape == (0, 3, 3, 3)
  x = np.ones((1, 2, 2, 2), np.float32)
  w = np.ones((3, 2, 3, 3), np.float32)  # a window larger than the input: empty output
  assert f(x, w).shape == revax.jit(f)(x, w).shape == jax.lax.conv(x, w, (1, 1), "VALID").shape
  g = revax.grad(lambda a, b: revax.numpy.sum(f(a, b)), argnums=(0, 1))(x, w)
  assert not np.any(np.asarray(g[0])) and not np.any(np.asarray(g[1]))


# --- parameters, lowering ------------------------------------------------------------------------
def test_params_are_canonical_and_layout_strings_follow_the_rhs_order():
  x, w = _operands((1, 5, 4, 2), (3, 2, 2, 3))
  f = lambda a, b: lax.conv_general_dilated(a, b, [2, 1], "SAME", rhs_dilation=[1, 2],
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))
  (eqn,) = revax.make_jaxpr(f)(x, w).jaxpr.eqns
  p = eqn.params
  assert p["dimension_numbers"] == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1),
                                                            (0, 3, 1, 2))
  assert p["window_strides"] == (2, 1) and p["rhs_dilation"] == (1, 2)
  assert p["lhs_dilation"] == (1, 1)
  jaxpr = jax.make_jaxpr(lambda a, b: jax.lax.conv_general_dilated(
      a, b, [2, 1], "SAME", rhs_dilation=[1, 2], dimension_numbers=("NHWC", "HWIO", "NHWC")))(x, w)
  assert p["padding"] == jaxpr.eqns[0].params["padding"]
  # spatial order comes from the rhs string: window_strides[0] belongs to 'W' here
  dn = lax.conv_dimension_numbers((1, 5, 4, 2), (2, 3, 2, 3), ("NHWC", "WHIO", "NHWC"))
  assert dn == jax.lax.conv_dimension_numbers((1, 5, 4, 2), (2, 3, 2, 3), ("NHWC", "WHIO", "NHWC"))


@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER", "VALID"])
def test_padding_strings_match_jax(padding):
  x, w = _operands((1, 2, 6, 7), (2, 2, 4, 3))
  for strides in [(1, 1), (2, 3), (3, 2)]:
    f = lambda a, b: lax.conv_general_dilated(a, b, strides, padding, rhs_dilation=(1, 2))
    jf = lambda a, b: jax.lax.conv_general_dilated(a, b, strides, padding, rhs_dilation=(1, 2),
                                                   precision="highest")
    (eqn,) = revax.make_jaxpr(f)(x, w).jaxpr.eqns
    assert eqn.params["padding"] == tuple(map(tuple, jax.make_jaxpr(jf)(x, w).eqns[0].params[
        "padding"]))
    np.testing.assert_allclose(f(x, w), jf(x, w), rtol=1e-4, atol=1e-4)


def test_lowering_matches_jax_generic_form():
  x, w = _operands((2, 5, 5, 4), (3, 3, 2, 6))
  f = lambda a, b: lax.conv_general_dilated(a, b, (2, 1), [(1, 2), (0, 1)], (1, 2), (2, 1),
                                            ("NHWC", "HWIO", "NHWC"), feature_group_count=2,
                                            precision=lax.Precision.HIGHEST)
  text = revax.jit(f).lower(x, w).as_text()
  assert ('"stablehlo.convolution"(%0, %1) <{batch_group_count = 1 : i64, dimension_numbers = '
          '#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 2 : '
          'i64, lhs_dilation = array<i64: 1, 2>, padding = dense<[[1, 2], [0, 1]]> : '
          'tensor<2x2xi64>, precision_config = [#stablehlo<precision HIGHEST>, '
          '#stablehlo<precision HIGHEST>], rhs_dilation = array<i64: 2, 1>, window_reversal = '
          'array<i1: false, false>, window_strides = array<i64: 2, 1>}> : '
          '(tensor<2x5x5x4xf32>, tensor<3x3x2x6xf32>) -> tensor<2x2x8x6xf32>') in text
  jax_text = jax.jit(lambda a, b: jax.lax.conv_general_dilated(
      a, b, (2, 1), [(1, 2), (0, 1)], (1, 2), (2, 1), ("NHWC", "HWIO", "NHWC"),
      feature_group_count=2)).lower(x, w).as_text()
  assert "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]" in jax_text


def test_other_layouts_lower_through_channels_last():
  """XLA:CPU runs convolutions fast only in NHWC x HWIO -> NHWC inside conditionals (the fenced
  backward passes of checkpoint and invertible): other layouts are transposed into it."""
  x, w = _operands((2, 4, 5, 5), (6, 2, 3, 3))
  f = lambda a, b: lax.conv_general_dilated(a, b, (2, 1), [(1, 2), (0, 1)], (1, 2), (2, 1),
                                            ("NCHW", "OIHW", "NHWC"), feature_group_count=2)
  text = revax.jit(f).lower(x, w).as_text()
  assert text.count('"stablehlo.convolution"') == 1
  assert "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]" in text
  assert text.count('"stablehlo.transpose"') == 2  # lhs and rhs; the output is channels-last
  np.testing.assert_allclose(revax.jit(f)(x, w), f(x, w), rtol=1e-5, atol=1e-5)


def test_zero_spatial_dims():
  """A rank-2 'convolution' is a matmul (no spatial dims: empty padding and window attrs)."""
  x, w = _operands((3, 4), (5, 4))
  f = lambda a, b: lax.conv_general_dilated(a, b, (), "VALID")
  np.testing.assert_allclose(f(x, w), x @ w.T, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(revax.jit(f)(x, w), x @ w.T, rtol=1e-5, atol=1e-5)


# --- wrappers ------------------------------------------------------------------------------------
@pytest.mark.parametrize("padding,kw", [
    ("SAME", {}), ("VALID", {}), ([(1, 2), (0, 1)], {}),
    ([(1, 1), (0, 2)], {"use_consistent_padding": True}),
    ("SAME", {"transpose_kernel": True}), ("VALID", {"rhs_dilation": (2, 1)}),
])
def test_conv_transpose_matches_jax(padding, kw):
  # HWIO kernel; transpose_kernel swaps its I and O, so it then needs O == lhs features
  x, w = _operands((2, 4, 3, 2), (3, 2, 3, 2) if kw.get("transpose_kernel") else (3, 2, 2, 3))
  f = lambda a, b: lax.conv_transpose(a, b, (2, 1), padding, **kw)
  jf = lambda a, b: jax.lax.conv_transpose(a, b, (2, 1), padding, precision="highest", **kw)
  np.testing.assert_allclose(f(x, w), jf(x, w), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(revax.jit(f)(x, w), jf(x, w), rtol=1e-4, atol=1e-4)


def test_conv_and_conv_with_general_padding_match_jax():
  x, w = _operands((2, 3, 5, 6), (4, 3, 2, 3))
  np.testing.assert_allclose(lax.conv(x, w, (2, 1), "SAME"),
                             jax.lax.conv(x, w, (2, 1), "SAME", precision="highest"),
                             rtol=1e-4, atol=1e-4)
  args = ((1, 2), [(1, 0), (2, 1)], (2, 1), (1, 2))
  np.testing.assert_allclose(lax.conv_with_general_padding(x, w, *args),
                             jax.lax.conv_with_general_padding(x, w, *args, precision="highest"),
                             rtol=1e-4, atol=1e-4)


def test_shape_tuples_match_jax():
  dn = ("NHWC", "HWIO", "NHWC")
  for padding in ("SAME", "VALID"):
    assert lax.conv_general_shape_tuple((2, 7, 6, 3), (3, 2, 3, 4), (2, 1), padding, dn) == \
        jax.lax.conv_general_shape_tuple((2, 7, 6, 3), (3, 2, 3, 4), (2, 1), padding, dn)
    assert lax.conv_transpose_shape_tuple((2, 7, 6, 3), (3, 2, 3, 4), (2, 1), padding, dn) == \
        tuple(jax.lax.conv_transpose_shape_tuple((2, 7, 6, 3), (3, 2, 3, 4), (2, 1), padding, dn))
  assert lax.conv_shape_tuple((2, 3, 7, 6), (4, 3, 3, 2), (2, 1), [(1, 0), (0, 1)]) == \
      jax.lax.conv_shape_tuple((2, 3, 7, 6), (4, 3, 3, 2), (2, 1), [(1, 0), (0, 1)])


def test_shape_tuples_have_jaxs_element_types():
  """Their entries print as JAX's do (np.int64 where JAX computes with NumPy): the output shapes
  of stax conv layers are these tuples, and users print them."""
  dn = ("NHWC", "HWIO", "NHWC")
  for padding in ("SAME", "VALID", [(1, 0), (0, 2)]):
    assert repr(lax.conv_general_shape_tuple((2, 7, 6, 3), (3, 2, 3, 4), (2, 1), padding, dn)) == \
        repr(jax.lax.conv_general_shape_tuple((2, 7, 6, 3), (3, 2, 3, 4), (2, 1), padding, dn))
  for padding in ("SAME", "VALID"):
    assert repr(lax.conv_transpose_shape_tuple((2, 7, 6, 3), (3, 2, 3, 4), (2, 1), padding, dn)) \
        == repr(jax.lax.conv_transpose_shape_tuple((2, 7, 6, 3), (3, 2, 3, 4), (2, 1), padding, dn))
  for args in [((2, 3, 7, 6), (4, 3, 3, 2), (2, 1), [(1, 0), (0, 1)]),
               ((4, 3, 7), (4, 3, 3), (1,), "SAME", 2)]:
    assert repr(lax.conv_shape_tuple(*args)) == repr(jax.lax.conv_shape_tuple(*args))


# --- errors --------------------------------------------------------------------------------------
x4 = np.ones((2, 4, 5, 5), np.float32)
w4 = np.ones((6, 4, 3, 3), np.float32)


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(feature_group_count=3), ValueError,
     r"feature_group_count must divide lhs feature dimension size, but 3 does not divide 4"),
    (dict(rhs=np.ones((6, 3, 3, 3), np.float32)), ValueError,
     r"lhs feature dimension size divided by feature_group_count must equal the rhs input "
     r"feature dimension size, but 4 // 1 != 3"),
    (dict(rhs=np.ones((5, 2, 3, 3), np.float32), feature_group_count=2), ValueError,
     r"rhs output feature dimension size must be a multiple of feature_group_count, but 5 is not "
     r"a multiple of 2"),
    (dict(lhs=np.ones((3, 4, 5, 5), np.float32), batch_group_count=2), ValueError,
     r"batch_group_count must divide lhs batch dimension size, but 2 does not divide 3"),
    (dict(rhs=np.ones((5, 4, 3, 3), np.float32), batch_group_count=2), ValueError,
     r"multiple of batch_group_count, but 5 is not a multiple of 2"),
    (dict(feature_group_count=2, batch_group_count=2), ValueError,
     r"At most one of batch_group_count and feature_group_count may be > 1"),
    (dict(feature_group_count=0), ValueError, r"feature_group_count must be a positive integer"),
    (dict(rhs=np.ones((6, 2, 3), np.float32)), TypeError,
     r"convolution requires lhs and rhs ndim to be equal, got 4 and 3"),
    (dict(lhs=np.ones((2, 4, 5, 5), np.int32)), TypeError,
     r"requires arguments to have the same dtypes, got int32, float32"),
    (dict(window_strides=(1,)), ValueError,
     r"window_strides must have one entry per spatial dimension \(2 for lhs shape"),
    (dict(window_strides=(1, 0)), ValueError, r"window_strides must be positive, got \(1, 0\)"),
    (dict(rhs_dilation=(0, 1)), TypeError, r"All dilations must be positive, got \(0, 1\)"),
    (dict(padding=[(1, 1)]), ValueError, r"padding must have one entry per spatial dimension"),
    (dict(padding=[(-4, -3), (0, 0)]), ValueError,
     r"Negative padding is larger than the size of the corresponding dimension"),
    (dict(padding="FULL"), RuntimeError, r"Unrecognized padding type: expected 'VALID', 'SAME', "
                                         r"or 'SAME_LOWER', got FULL"),
    (dict(padding=[1, 2]), ValueError,
     r"padding argument to conv_general_dilated should be a string or a sequence of \(low, "
     r"high\) pairs"),
    (dict(lhs_dilation=(2, 1)), ValueError, r"String padding is not implemented for transposed "
                                            r"convolution"),
    (dict(dimension_numbers=("NCHW", "OIHW")), TypeError, r"must be length 3, got 2"),
    (dict(dimension_numbers=("NCHW", "OIHX", "NCHW")), TypeError,
     r"must each have the same set of spatial characters"),
    (dict(dimension_numbers=("NCHW", "OHWO", "NCHW")), TypeError,
     r"dimension_numbers\[1\] must contain the characters 'O' and 'I' exactly once, got OHWO"),
    (dict(dimension_numbers=("NCHWW", "OIHW", "NCHW")), TypeError,
     r"dimension_numbers\[0\] must have len equal to the ndim of lhs and rhs, got 5"),
    (dict(dimension_numbers=("NCHH", "OIHH", "NCHH")), TypeError,
     r"must contain the characters|cannot have duplicate characters"),
    (dict(dimension_numbers=((0, 1, 2, 2), (0, 1, 2, 3), (0, 1, 2, 3))), TypeError,
     r"dimension_numbers.lhs_spec must be a permutation of the dimensions 0..3 of a rank-4 "
     r"operand, got \(0, 1, 2, 2\)"),
    (dict(dimension_numbers=lax.ConvDimensionNumbers((0, 1, 2, 7), (0, 1, 2, 3), (0, 1, 2, 3))),
     TypeError, r"lhs_spec must be a permutation"),
    (dict(dimension_numbers="NCHW"), TypeError, r"must be length 3|must be tuple/list"),
    (dict(preferred_element_type=np.int32), TypeError,
     r"incompatible with preferred_element_type int32"),
    (dict(preferred_element_type=np.float16), TypeError, r"must not be narrower"),
])
def test_errors(kwargs, exc, match):
  args = dict(lhs=x4, rhs=w4, window_strides=(1, 1), padding="SAME")
  args.update(kwargs)
  lhs, rhs, strides, padding = (args.pop(k) for k in ("lhs", "rhs", "window_strides", "padding"))
  with pytest.raises(exc, match=match):
    lax.conv_general_dilated(lhs, rhs, strides, padding, **args)


def test_errors_under_jit_are_raised_before_lowering():
  with pytest.raises(ValueError, match="feature_group_count must divide"):
    revax.jit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME",
                                                    feature_group_count=3))(x4, w4)


def test_rank_mismatch_with_conv_dimension_numbers():
  dn = lax.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2), (0, 1, 2, 3))
  with pytest.raises(ValueError, match=r"lhs and rhs must have the same number of dimensions"):
    lax.conv_general_dilated(x4, np.ones((6, 4, 3), np.float32), (1, 1), [(0, 0)] * 2,
                             dimension_numbers=dn)


def test_rank_below_two():
  with pytest.raises(ValueError, match="rank at least 2"):
    lax.conv_general_dilated(np.ones((3,), np.float32), np.ones((3,), np.float32), (), [])


def test_conv_dimension_numbers_and_permutations_match_jax():
  for dn in [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("HNWC", "OHWI", "NCWH"),
             ("NWHC", "HWIO", "CHWN")]:
    assert lax.conv_general_permutations(dn) == jax.lax.conv_general_permutations(dn)
    assert tuple(lax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), dn)) == \
        tuple(jax.lax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), dn))
  assert lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None) == ((0, 1, 2),) * 3
  for bad in [itertools.repeat(0), 3]:
    with pytest.raises(TypeError):
      lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), bad)


def test_negative_padding_with_strides_is_cropped_before_xla():
  """XLA:CPU computes convolutions with a negative low padding and a stride > 1 from the wrong
  memory (jax.jit too); the lowering crops negative padding with a pad of the lhs first."""
  x = np.arange(1, 26, dtype=np.float32).reshape(1, 1, 5, 5)
  w = np.ones((1, 1, 3, 3), np.float32)
  for strides, pads in [((2, 1), ((-1, 1), (0, 0))), ((1, 2), ((0, 0), (-1, 2))),
                        ((2, 2), ((-1, 2), (-1, 2))), ((2, 2), ((-1, 1), (0, 0)))]:
    def f(a, c, strides=strides, pads=pads):
      return lax.conv_general_dilated(a, c, strides, pads)
    np.testing.assert_allclose(revax.jit(f)(x, w), f(x, w), rtol=1e-6,
                               err_msg=f"strides={strides}, padding={pads}")
