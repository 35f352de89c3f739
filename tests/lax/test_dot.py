"""dot_general: shape-rule errors, JAX's dtype rule, transpose-free batching (structural), the
sum-of-products lowering for bool/integer dots, and precision / preferred_element_type through
differentiation, batching and lowering. Values over the issue's acceptance cases run in the op
database (tests/lax/opdb/dot.py)."""
import itertools
import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.lax as lax
from revax.test_util import check_vmap
from revax._src.interpreters import dispatch, mlir
from revax._src.lax.dot import lower_integer_dots_as_sums
from revax._src.runtime.client import get_backend
from tests.lax.opdb.dot import ACCEPTANCE, einsum_reference

BF16 = ml_dtypes.bfloat16
x = np.ones((3, 2, 4), np.float32)
y = np.ones((4, 2, 5), np.float32)
SHAPES = r"lhs shape \(3, 2, 4\) and rhs shape \(4, 2, 5\)"


# --- shape rule -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dims,message", [
    # a dim out of range, on each side, batch and contracting, too large and negative
    ((((3,), (0,)), ((), ())), r"lhs contracting dimensions to be nonnegative and less than the "
     r"rank of lhs, got lhs_contracting \(3,\) \(dimension 3 is out of range\) for lhs of shape "
     r"\(3, 2, 4\) \(rank 3\)"),
    ((((2,), (-1,)), ((), ())), r"rhs contracting dimensions .* got rhs_contracting \(-1,\) "
     r"\(dimension -1 is out of range\) for rhs of shape \(4, 2, 5\)"),
    ((((2,), (0,)), ((7,), (1,))), r"lhs batch dimensions .* got lhs_batch \(7,\) \(dimension 7 "
     r"is out of range\) for lhs of shape \(3, 2, 4\)"),
    ((((2,), (0,)), ((1,), (3,))), r"rhs batch dimensions .* got rhs_batch \(3,\) .* for rhs of "
     r"shape \(4, 2, 5\) \(rank 3\)"),
    # list lengths differ
    ((((2,), (0,)), ((1,), ())), r"equal numbers of lhs_batch and rhs_batch dimensions, got "
     r"lhs_batch \(1,\) and rhs_batch \(\) for lhs shape \(3, 2, 4\) and rhs shape \(4, 2, 5\)"),
    ((((2, 0), (0,)), ((), ())), r"equal numbers of lhs and rhs contracting dimensions, got "
     r"lhs_contracting \(2, 0\) and rhs_contracting \(0,\) for " + SHAPES),
    # repeats
    ((((2,), (0,)), ((1, 1), (1, 0))), r"lhs batch dimensions to be distinct, got lhs_batch "
     r"\(1, 1\) \(dimension 1 repeats\) for lhs of shape \(3, 2, 4\)"),
    ((((0,), (0,)), ((1, 2), (1, 1))), r"rhs batch dimensions to be distinct, got rhs_batch "
     r"\(1, 1\) \(dimension 1 repeats\) for rhs of shape \(4, 2, 5\)"),
    ((((2, 2), (0, 1)), ((), ())), r"lhs contracting dimensions to be distinct, got "
     r"lhs_contracting \(2, 2\) \(dimension 2 repeats\) for lhs of shape \(3, 2, 4\)"),
    ((((2, 1), (0, 0)), ((), ())), r"rhs contracting dimensions to be distinct, got "
     r"rhs_contracting \(0, 0\) .* for rhs of shape \(4, 2, 5\)"),
    # a dim both batch and contracting
    ((((1,), (1,)), ((1,), (2,))), r"lhs batch dimensions and contracting dimensions to be "
     r"distinct, got lhs_batch \(1,\) and lhs_contracting \(1,\) \(dimension 1 is both\) for lhs "
     r"of shape \(3, 2, 4\)"),
    ((((2,), (0,)), ((1,), (0,))), r"rhs batch dimensions and contracting dimensions to be "
     r"distinct, got rhs_batch \(0,\) and rhs_contracting \(0,\) .* for rhs of shape \(4, 2, 5\)"),
    # sizes differ
    ((((0,), (0,)), ((), ())), r"lhs contracting dimension sizes to equal rhs contracting "
     r"dimension sizes, got lhs contracting dims \(0,\) of sizes \(3,\) and rhs contracting dims "
     r"\(0,\) of sizes \(4,\) \(lhs shape \(3, 2, 4\) and rhs shape \(4, 2, 5\)\)"),
    ((((2,), (0,)), ((0,), (1,))), r"lhs batch dimension sizes to equal rhs batch dimension "
     r"sizes, got lhs batch dims \(0,\) of sizes \(3,\) and rhs batch dims \(1,\) of sizes "
     r"\(2,\) \(lhs shape \(3, 2, 4\) and rhs shape \(4, 2, 5\)\)"),
])
def test_shape_errors_name_dims_and_shapes(dims, message):
  with pytest.raises(TypeError, match=message):
    lax.dot_general(x, y, dims)
  with pytest.raises(TypeError, match=message):  # the same check while tracing
    revax.jit(lambda a, b: lax.dot_general(a, b, dims))(x, y)


def test_malformed_dimension_numbers():
  with pytest.raises(TypeError, match=r"dimension_numbers must be \(\(lhs_contracting, "
                     r"rhs_contracting\), \(lhs_batch, rhs_batch\)\)"):
    lax.dot_general(x, y, ((2,), (0,)))
  with pytest.raises(TypeError, match="dimension_numbers must be"):
    lax.dot_general(x, y, (((2.0,), (0,)), ((), ())))


def test_dot_takes_jaxs_keywords_and_refuses_what_it_refuses():
  a, b = np.arange(6.0, dtype=np.float32).reshape(2, 3), np.ones((3, 4), np.float32)
  dims = (((1,), (2,)), ((2,), (1,)))
  p, q = np.ones((2, 3, 4, 5), np.float32), np.ones((6, 4, 3, 7), np.float32)
  for lib in (lax, jax.lax):
    np.testing.assert_array_equal(lib.dot(a, b, preferred_element_type=np.float32), a @ b)
    assert lib.dot(p, q, dimension_numbers=dims).shape == (4, 2, 5, 6, 7)
    for bad in ((a, a), (p, q), (a[0], b[0])):  # mismatched, rank > 2 without dimension_numbers
      with pytest.raises(ValueError, match="dimension_numbers must be specified"):
        lib.dot(*bad)
    with pytest.raises(TypeError):  # everything after the operands is a keyword
      lib.dot(a, b, None)


def test_output_shape_is_batch_then_lhs_free_then_rhs_free():
  a = np.ones((2, 3, 4, 5), np.float32)
  b = np.ones((6, 4, 3, 7), np.float32)
  out = lax.dot_general(a, b, (((1,), (2,)), ((2,), (1,))))
  assert out.shape == (4, 2, 5, 6, 7)
  assert revax.jit(lambda p, q: lax.dot_general(p, q, (((1,), (2,)), ((2,), (1,)))))(
      a, b).shape == (4, 2, 5, 6, 7)


# --- dtype rule, as jax.lax.dot_general -------------------------------------------------------------
@pytest.mark.parametrize("ldt,rdt,pref", [
    (np.float32, np.int32, None), (BF16, np.float32, None), (np.int8, np.int32, None),
    (np.int32, np.uint32, None), (np.bool_, np.int32, None), (np.float16, BF16, None),
    (np.int8, np.uint8, None), (np.bool_, np.bool_, None), (np.complex64, np.float32, None),
    (np.float32, np.float32, np.int32), (BF16, BF16, np.float32), (np.bool_, np.bool_, np.int32),
    (np.int8, np.int8, np.float32), (np.int8, np.int8, np.int32),
])
def test_result_dtype_and_values_match_jax(ldt, rdt, pref):
  rng = np.random.default_rng(0)
  a = rng.integers(-3, 4, (3, 4)).astype(ldt)
  b = rng.integers(-3, 4, (4, 2)).astype(rdt)
  dims = (((1,), (0,)), ((), ()))
  expected = jax.lax.dot_general(a, b, dims, preferred_element_type=pref)
  f = lambda p, q: lax.dot_general(p, q, dims, preferred_element_type=pref)
  for out in (f(a, b), revax.jit(f)(a, b)):
    assert out.dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(out, np.float64).real,
                               np.asarray(expected, np.float64).real, rtol=1e-2)


@pytest.mark.parametrize("ldt,rdt,pref,message", [
    (np.int32, np.int32, np.int8, "preferred_element_type must not be narrower than the original "
     "type, got preferred_element_type of int8 for result type of int32"),
    (np.int32, np.int32, np.bool_, "preferred_element_type of bool for result type of int32"),
])
def test_dtype_errors(ldt, rdt, pref, message):
  with pytest.raises(TypeError, match=message):
    lax.dot_general(np.ones((2, 3), ldt), np.ones((3,), rdt), (((1,), (0,)), ((), ())),
                    preferred_element_type=pref)
  with pytest.raises(TypeError):  # jax refuses the same
    jax.lax.dot_general(np.ones((2, 3), ldt), np.ones((3,), rdt), (((1,), (0,)), ((), ())),
                        preferred_element_type=pref)


# --- transpose-free batching -------------------------------------------------------------------------
def _batch_positions(ls, rs):
  """Every pair of batch positions, None or 0..ndim per operand, not both None."""
  return [p for p in itertools.product([None, *range(len(ls) + 1)], [None, *range(len(rs) + 1)])
          if p != (None, None)]


def _batched(shape, axis, size=2):
  rng = np.random.default_rng(len(shape) + (axis or 0))
  if axis is None:
    return rng.standard_normal(shape).astype(np.float32)
  return rng.standard_normal(shape[:axis] + (size,) + shape[axis:]).astype(np.float32)


def _assert_one_dot_and_nothing_moved_before_it(closed, what):
  names = [e.primitive.name for e in closed.jaxpr.eqns]
  assert names.count("dot_general") == 1, f"{what}: {names}"
  before = names[:names.index("dot_general")]
  after = names[names.index("dot_general") + 1:]
  assert not {"transpose", "broadcast_in_dim", "reshape"} & set(before), f"{what}: {names}"
  assert set(after) <= {"transpose"} and len(after) <= 1, f"{what}: {names}"


@pytest.mark.parametrize("name,ls,rs,dims,spec", ACCEPTANCE, ids=[c[0] for c in ACCEPTANCE])
def test_vmap_emits_one_dot_and_no_transpose_before_it(name, ls, rs, dims, spec):
  f = lambda a, b: lax.dot_general(a, b, dims)
  for in_axes in _batch_positions(ls, rs):
    args = (_batched(ls, in_axes[0]), _batched(rs, in_axes[1]))
    closed = revax.make_jaxpr(revax.vmap(f, in_axes=in_axes))(*args)
    _assert_one_dot_and_nothing_moved_before_it(closed, f"{name} in_axes={in_axes}")


def test_vmap_keeps_the_mapped_axis_where_the_rule_puts_it():
  """out_axes equal to the rule's output batch dim: the jaxpr is a single dot_general."""
  dims = (((2,), (0,)), ((1,), (2,)))  # (3,5,2) x (2,4,5), batch in odd positions
  f = lambda a, b: lax.dot_general(a, b, dims)
  a, b = _batched((3, 5, 2), 2), _batched((2, 4, 5), None)
  # lhs mapped at 2: it is the lhs's free dim after dim 0, so output dim 2 (batch, i, mapped, k)
  closed = revax.make_jaxpr(revax.vmap(f, in_axes=(2, None), out_axes=2))(a, b)
  assert [e.primitive.name for e in closed.jaxpr.eqns] == ["dot_general"]
  np.testing.assert_allclose(revax.vmap(f, in_axes=(2, None), out_axes=2)(a, b),
                             np.einsum("ibmj,jkb->bimk", a, b), rtol=1e-5)


def test_nested_vmap_is_transpose_free_before_the_dot():
  dims = (((2,), (0,)), ((1,), (2,)))
  f = lambda a, b: lax.dot_general(a, b, dims)
  a = np.ones((2, 3, 5, 3, 2), np.float32)  # mapped at 0 (outer) and 2 (inner)
  b = np.ones((2, 4, 3, 5), np.float32)  # unmapped by the outer map, mapped at 2 (inner)
  g = revax.vmap(revax.vmap(f, in_axes=(2, 2)), in_axes=(0, None))
  _assert_one_dot_and_nothing_moved_before_it(revax.make_jaxpr(g)(a, b), "nested")
  check_vmap(revax.vmap(f, in_axes=(2, 2)), (a, b), in_axes=(0, None))


# --- bool and integer dots: native on CPU, sum of products where selected ---------------------------
SUMS = "test_platform_without_integer_dots"
lower_integer_dots_as_sums(SUMS)
lower_integer_dots_as_sums(SUMS)  # a second call changes nothing


def _lower_and_run(platform, f, *args):
  closed = revax.make_jaxpr(f)(*args)
  text = mlir.lower_jaxpr_to_module(closed, "f", platform=platform)
  program = dispatch.CompiledProgram(get_backend().compile(text), closed.in_avals,
                                     closed.out_avals, text, "f")
  (out,) = program.call_arrays(args)
  return closed, text, np.asarray(out)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_], ids=["i32", "bool"])
@pytest.mark.parametrize("name,ls,rs,dims,spec", ACCEPTANCE, ids=[c[0] for c in ACCEPTANCE])
def test_sum_of_products_lowering_matches_numpy(name, ls, rs, dims, spec, dtype):
  rng = np.random.default_rng(7)
  make = (lambda s: rng.random(s) < 0.5) if dtype == np.bool_ else \
      (lambda s: rng.integers(-9, 10, s).astype(dtype))
  a, b = make(ls), make(rs)
  f = lambda p, q: lax.dot_general(p, q, dims)
  closed, text, out = _lower_and_run(SUMS, f, a, b)
  assert [e.primitive.name for e in closed.jaxpr.eqns] == ["dot_general"]
  assert "stablehlo.dot_general" not in text
  assert ("stablehlo.and" if dtype == np.bool_ else "stablehlo.multiply") in text
  expected = einsum_reference(spec, dtype)(a, b)
  assert out.dtype == expected.dtype
  np.testing.assert_array_equal(out, expected)
  # on the real platform, the same dot is a native one with the same values
  _, native_text, native = _lower_and_run("cpu", f, a, b)
  assert "stablehlo.dot_general" in native_text
  np.testing.assert_array_equal(native, expected)


@pytest.mark.parametrize("ldt,rdt,pref", [
    (np.int8, np.int8, np.int32), (np.bool_, np.bool_, np.int32), (np.bool_, np.int32, None),
    (np.uint8, np.int8, None),
])
def test_sum_of_products_lowering_converts_to_the_result_dtype(ldt, rdt, pref):
  rng = np.random.default_rng(1)
  a = rng.integers(0 if ldt == np.bool_ else -100, 2 if ldt == np.bool_ else 100, (4, 6)).astype(ldt)
  b = rng.integers(0 if rdt == np.bool_ else -100, 2 if rdt == np.bool_ else 100, (6, 3)).astype(rdt)
  f = lambda p, q: lax.dot_general(p, q, (((1,), (0,)), ((), ())), preferred_element_type=pref)
  _, text, out = _lower_and_run(SUMS, f, a, b)
  assert "stablehlo.dot_general" not in text
  np.testing.assert_array_equal(out, np.asarray(f(a, b)))  # eager: the NumPy implementation
  np.testing.assert_array_equal(out, np.asarray(jax.lax.dot_general(
      a, b, (((1,), (0,)), ((), ())), preferred_element_type=pref)))


def test_float_dots_stay_native_where_integer_dots_are_expanded():
  a = np.arange(12, dtype=np.int8).reshape(3, 4)
  f32 = lambda p, q: lax.dot_general(p, q, (((1,), (0,)), ((), ())))
  _, text, out = _lower_and_run(SUMS, f32, a.astype(np.float32), a.T.astype(np.float32))
  assert "stablehlo.dot_general" in text
  # int8 operands with a float32 result: converted, then a native float dot
  to_f32 = lambda p, q: lax.dot_general(p, q, (((1,), (0,)), ((), ())), preferred_element_type=np.float32)
  _, text, out8 = _lower_and_run(SUMS, to_f32, a, a.T)
  assert "stablehlo.dot_general" in text and "stablehlo.convert" in text
  np.testing.assert_array_equal(out8, out)


# --- precision and preferred_element_type survive jvp, grad and vmap ---------------------------------
DIMS = (((2,), (0,)), ((1,), (2,)))  # (3,5,2) x (2,4,5)


def _loss(a, b):
  out = lax.dot_general(a, b, DIMS, precision=lax.Precision.HIGHEST, preferred_element_type=np.float32)
  return (out * out).sum()


def _dot_params(closed):
  eqns = [e for e in _all_eqns(closed.jaxpr) if e.primitive.name == "dot_general"]
  assert eqns
  return [(e.params["precision"], e.params["preferred_element_type"]) for e in eqns]


def _all_eqns(jaxpr):
  for e in jaxpr.eqns:
    yield e
    for p in e.params.values():
      inner = getattr(p, "jaxpr", None)
      if inner is not None:
        yield from _all_eqns(inner)


def test_precision_and_preferred_type_survive_jvp_grad_and_vmap():
  a = np.random.default_rng(0).standard_normal((3, 5, 2)).astype(BF16)
  b = np.random.default_rng(1).standard_normal((2, 4, 5)).astype(BF16)
  want = ("HIGHEST", "HIGHEST"), np.dtype(np.float32)
  programs = {
      "jvp": revax.make_jaxpr(lambda p, q: revax.jvp(_loss, (p, q), (p, q)))(a, b),
      "grad": revax.make_jaxpr(revax.grad(_loss, argnums=(0, 1)))(a, b),
      "vmap": revax.make_jaxpr(revax.vmap(revax.grad(_loss), in_axes=(0, None)))(
          np.stack([a, a]), b),
  }
  for what, closed in programs.items():
    assert set(_dot_params(closed)) == {want}, what
  text = revax.jit(revax.grad(_loss, argnums=(0, 1))).lower(a, b).as_text()
  dots = [line for line in text.splitlines() if "stablehlo.dot_general" in line]
  assert len(dots) == 3
  for line in dots:
    assert "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]" in line
    assert re.search(r"-> tensor<[0-9x]*xf32>$", line), line
  grads = revax.jit(revax.grad(_loss, argnums=(0, 1)))(a, b)
  expected = jax.jit(jax.grad(lambda p, q: (jnp.square(jax.lax.dot_general(
      p, q, DIMS, precision=jax.lax.Precision.HIGHEST,
      preferred_element_type=np.float32))).sum(), argnums=(0, 1)))(a, b)
  for g, e in zip(grads, expected, strict=True):
    assert g.dtype == e.dtype == BF16
    np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(e, np.float32), rtol=2e-2,
                               atol=1e-2)


def test_params_are_tuples_and_precision_reaches_stablehlo():
  f = lambda a, b: lax.dot_general(a, b, [[[2], [0]], [[1], [1]]], precision=lax.Precision.HIGHEST)
  closed = revax.make_jaxpr(f)(x, y)
  params = closed.eqns[0].params
  assert params["dimension_numbers"] == (((2,), (0,)), ((1,), (1,)))
  assert params["precision"] == ("HIGHEST", "HIGHEST")
  text = revax.jit(f).lower(x, y).as_text()
  assert "#stablehlo<precision HIGHEST>" in text
  g = lambda a, b: lax.dot_general(a, b, (((2,), (0,)), ((1,), (1,))),
                                   precision=("DEFAULT", "highest"))
  assert "[#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]" in \
      revax.jit(g).lower(x, y).as_text()
  with pytest.raises(ValueError, match="unknown precision 'fast'"):
    lax.dot_general(x, y, (((2,), (0,)), ((1,), (1,))), precision="fast")


def test_preferred_element_type_sets_the_result_type():
  a = np.ones((2, 3), np.int8)
  out = lax.dot_general(a, a.T, (((1,), (0,)), ((), ())), preferred_element_type=np.int32)
  assert out.dtype == np.int32
  text = revax.jit(lambda p, q: lax.dot_general(p, q, (((1,), (0,)), ((), ())),
                                                preferred_element_type=np.int32)).lower(a, a.T).as_text()
  assert re.search(r"stablehlo.dot_general.*\(tensor<2x3xi8>, tensor<3x2xi8>\) -> tensor<2x2xi32>",
                   text)


@pytest.mark.parametrize("name,ls,rs,dims,spec", ACCEPTANCE[3:], ids=[c[0] for c in ACCEPTANCE[3:]])
def test_grad_matches_jax(name, ls, rs, dims, spec):
  rng = np.random.default_rng(2)
  a, b = rng.standard_normal(ls).astype(np.float32), rng.standard_normal(rs).astype(np.float32)
  loss = lambda lib: lambda p, q: (lib.lax.dot_general(p, q, dims) ** 3).sum()
  got = revax.jit(revax.grad(loss(revax), argnums=(0, 1)))(a, b)
  want = jax.grad(loss(jax), argnums=(0, 1))(a, b)
  for g, w in zip(got, want, strict=True):
    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
