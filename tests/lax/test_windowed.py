"""Window reductions: the NumPy-reference acceptance grid (eager and jitted), padtype_to_pads
against jax, error messages, structure of derivative jaxprs, end-to-end per-example gradients of
a pooling network, the generic (variadic) reduce_window, and differential checks of values,
derivatives and vmaps against jax 0.10.2."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.lax as lax
import revax.numpy as rnp
from revax._src.lax import windowed
from revax.test_util import check_vmap
from tests.platform_tolerances import ON_TPU, REDUCE_WINDOW_COMPUTATION, allclose_tol

# On a TPU the jitted reduce_window of a computation that is no monoid (with its init as the
# identity) is XLA:TPU's fold, not XLA:CPU's (REDUCE_WINDOW_COMPUTATION): only eager is compared
_JIT_NON_MONOID = not ON_TPU
from tests.gradcheck import check_grads
from tests.lax.opdb.windowed import (np_reduce_window, np_select_and_gather_add,
                                     np_select_and_scatter_add, separated)

jax.config.update("jax_platforms", "cpu")

_OPS = {"add": (lax.add, 0.0, np.add, jax.lax.add),
        "max": (lax.max, -np.inf, np.maximum, jax.lax.max),
        "min": (lax.min, np.inf, np.minimum, jax.lax.min)}
_PRIM_OF = {"add": "reduce_window_sum", "max": "reduce_window_max", "min": "reduce_window_min"}


def _grid():
  """The acceptance grid: shape, window, strides, padding, base dilation, window dilation."""
  cases = []
  paddings_2d = ["VALID", "SAME", [(0, 3), (1, 2)], [(1, 0), (0, 1)]]
  dilations_2d = [(None, None), ((2, 1), None), (None, (1, 2)), ((2, 2), (2, 1))]
  for (window, strides), padding, (base, wdil) in itertools.product(
      [((2, 2), (1, 1)), ((3, 2), (2, 1))], paddings_2d, dilations_2d):
    cases.append(((4, 6), window, strides, padding, base, wdil))
  paddings_4d = ["VALID", "SAME", [(0, 1), (1, 0), (2, 3), (0, 2)]]
  for padding, (base, wdil) in itertools.product(
      paddings_4d, [(None, None), ((1, 2, 1, 1), (1, 1, 2, 1))]):
    cases.append(((3, 2, 4, 6), (1, 2, 2, 1), (1, 1, 2, 1), padding, base, wdil))
  return cases


GRID = _grid()


@pytest.mark.parametrize("case", GRID, ids=[f"{i}" for i in range(len(GRID))])
def test_numpy_reference_grid(case):
  """add/max/min windows, eager (NumPy) and jitted (XLA), against an element-by-element loop."""
  shape, window, strides, padding, base, wdil = case
  x = np.random.default_rng(len(shape)).uniform(-3, 3, shape).astype(np.float32)

  def all_three(x):
    return [lax.reduce_window(x, init, op, window, strides, padding, base, wdil)
            for op, init, _, _ in _OPS.values()]

  jitted = revax.jit(all_three)(x)
  for (name, (op, init, np_op, _)), eager, jit_out in zip(_OPS.items(), all_three(x), jitted):
    expected = np_reduce_window(x, init, np_op, window, strides, padding, base, wdil)
    np.testing.assert_allclose(np.asarray(eager), expected, rtol=1e-5, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(np.asarray(jit_out), expected, rtol=1e-5, atol=1e-5, err_msg=name)
  names = {e.primitive.name for e in revax.make_jaxpr(all_three)(x).jaxpr.eqns}
  assert names == set(_PRIM_OF.values())


def test_grid_matches_jax():
  """The whole grid against jax.lax.reduce_window (all of jax's side in one jitted function)."""
  x2 = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
  x4 = np.random.default_rng(1).standard_normal((3, 2, 4, 6)).astype(np.float32)

  def grid(reduce_window, ops, x2, x4):
    return [reduce_window(x2 if len(shape) == 2 else x4, init, op, window, strides, padding,
                          base, wdil)
            for shape, window, strides, padding, base, wdil in GRID for op, init in ops]

  ours = grid(lax.reduce_window, [(op, init) for op, init, _, _ in _OPS.values()], x2, x4)
  theirs = jax.jit(lambda x2, x4: grid(jax.lax.reduce_window,
                                       [(jop, init) for _, init, _, jop in _OPS.values()],
                                       x2, x4))(x2, x4)
  for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5,
                               err_msg=f"{GRID[k // 3]}, {list(_OPS)[k % 3]}")


# --- padtype_to_pads -----------------------------------------------------------------------------
PADTYPE_CASES = [
    ((4, 6), (2, 2), (1, 1), "SAME"), ((4, 6), (3, 2), (2, 1), "SAME"),
    ((4, 6), (3, 2), (2, 1), "VALID"), ((5,), (2,), (2,), "SAME"),
    ((5,), (2,), (2,), "SAME_LOWER"), ((7, 7), (3, 3), (2, 2), "same"),
    ((7, 7), (4, 4), (3, 3), "SAME_LOWER"), ((1, 1), (3, 3), (1, 1), "SAME"),
    ((2, 9), (5, 1), (1, 4), "SAME"), ((0, 3), (2, 2), (1, 1), "SAME"),
    ((3, 2, 4, 6), (1, 2, 2, 1), (1, 1, 2, 1), "SAME"), ((10,), (1,), (3,), "SAME"),
    ((10,), (7,), (3,), "SAME"), ((10,), (7,), (3,), "valid"), ((6, 6), (6, 6), (1, 1), "SAME"),
    ((8,), (3,), (8,), "SAME"), ((8,), (9,), (1,), "SAME_LOWER"),
    ((3, 3, 3), (2, 3, 4), (3, 2, 1), "SAME"), ((13, 2), (5, 2), (4, 3), "SAME"),
    ((2,), (5,), (1,), "VALID"),
]


@pytest.mark.parametrize("case", PADTYPE_CASES, ids=[str(i) for i in range(len(PADTYPE_CASES))])
def test_padtype_to_pads_matches_jax(case):
  ours = lax.padtype_to_pads(*case)
  theirs = jax.lax.padtype_to_pads(*case)
  assert [tuple(map(int, p)) for p in ours] == [tuple(map(int, p)) for p in theirs]
  assert all(type(v) is int for p in ours for v in p)


def test_same_padding_accounts_for_window_dilation():
  x = np.arange(10.0, dtype=np.float32)
  ours = lax.reduce_window(x, 0.0, lax.add, (3,), (1,), "SAME", None, (3,))
  theirs = jax.lax.reduce_window(x, 0.0, jax.lax.add, (3,), (1,), "SAME", None, (3,))
  assert ours.shape == (10,)
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))


# --- errors --------------------------------------------------------------------------------------
def _x(shape=(4, 6)):
  return np.zeros(shape, np.float32)


def test_padding_errors():
  with pytest.raises(RuntimeError, match="Unrecognized padding type: expected 'VALID', 'SAME', "
                                         "or 'SAME_LOWER', got FULL"):
    lax.padtype_to_pads((4,), (2,), (1,), "FULL")
  with pytest.raises(TypeError, match="Unknown padding type: 3"):
    lax.padtype_to_pads((4,), (2,), (1,), 3)
  with pytest.raises(ValueError, match=r"reduce_window padding must have one \(lo, hi\) pair per "
                                       r"operand dimension: got 1 pairs \(\(0, 1\),\) for operand "
                                       r"shape \(4, 6\)"):
    lax.reduce_window(_x(), 0.0, lax.add, (2, 2), (1, 1), [(0, 1)])
  with pytest.raises(ValueError, match=r"must be a sequence of \(lo, hi\) pairs, got "
                                       r"\[\(0, 1, 2\), \(0, 0\)\]"):
    lax.reduce_window(_x(), 0.0, lax.add, (2, 2), (1, 1), [(0, 1, 2), (0, 0)])
  with pytest.raises(ValueError, match="padding pairs must hold integers"):
    lax.reduce_window(_x(), 0.0, lax.add, (2, 2), (1, 1), [(0.5, 1), (0, 0)])
  with pytest.raises(ValueError, match=r"reduce_window padding \(-3, -2\) of dimension 0 removes "
                                       r"more elements than it has: size 4 \(4 after base "
                                       r"dilation\) padded to -1"):
    lax.reduce_window(_x(), 0.0, lax.add, (1, 1), (1, 1), [(-3, -2), (0, 0)])
  # a base-dilated dimension has more elements to cut: 6 elements dilated by 2 are 11
  out = lax.reduce_window(_x(), 0.0, lax.add, (1, 1), (1, 1), [(0, 0), (-8, 0)], (1, 2))
  assert out.shape == (4, 3)
  # emptied exactly: a size-0 output, as in jax
  assert lax.reduce_window(_x(), -np.inf, lax.max, (1, 1), (1, 1), [(-2, -2), (0, 0)]).shape == \
      (0, 6)


def test_window_errors():
  with pytest.raises(TypeError, match=r"reduce_window got the wrong number of window_dimensions "
                                      r"for operand: got operand shape \(4, 6\) with "
                                      r"window_dimensions \(2,\)"):
    lax.reduce_window(_x(), 0.0, lax.add, (2,), (1,), "VALID")
  with pytest.raises(TypeError, match=r"reduce_window got inconsistent window_strides and "
                                      r"window_dimensions: got window_strides \(1,\) and "
                                      r"window_dimensions \(2, 2\)"):
    lax.reduce_window(_x(), 0.0, lax.add, (2, 2), (1,), [(0, 0), (0, 0)])
  with pytest.raises(TypeError, match=r"reduce_window window_dimensions must have every "
                                      r"element be strictly positive, got \(0, 2\)"):
    lax.reduce_window(_x(), -np.inf, lax.max, (0, 2), (1, 1), "VALID")
  with pytest.raises(TypeError, match=r"window_strides must have every element be strictly "
                                      r"positive, got \(1, -1\)"):
    lax.reduce_window(_x(), 0.0, lax.add, (2, 2), (1, -1), "VALID")
  with pytest.raises(TypeError, match=r"window_strides must have every element be strictly "
                                      r"positive, got \(0, 1\)"):
    lax.reduce_window(_x(), 0.0, lax.add, (2, 2), (0, 1), "SAME")
  with pytest.raises(TypeError, match=r"base_dilation must have every element be strictly "
                                      r"positive, got \(0, 1\)"):
    lax.reduce_window(_x(), 0.0, lax.add, (2, 2), (1, 1), "VALID", (0, 1))
  with pytest.raises(TypeError, match=r"window_dilation must have every element be strictly "
                                      r"positive"):
    lax.reduce_window(_x(), 1.0, lax.mul, (2, 2), (1, 1), "VALID", None, (1, 0))
  with pytest.raises(TypeError, match="window_dimensions must be a sequence of integers"):
    lax.reduce_window(_x(), 0.0, lax.add, (2.0, 2), (1, 1), "VALID")
  with pytest.raises(TypeError, match="operand to reduce_window_sum must have a number dtype, "
                                      "got bool"):
    lax.reduce_window(np.zeros((2, 2), np.bool_), 0, lax.add, (1, 1), (1, 1), "VALID")


def test_generic_errors():
  x = _x()
  with pytest.raises(ValueError, match="Operands must have the same tree structure as "
                                       "init_values"):
    lax.reduce_window((x, x), (1.0,), lax.mul, (2, 2), (1, 1), "VALID")
  with pytest.raises(ValueError, match="reduce_window must have at least one operand."):
    lax.reduce_window((), (), lax.mul, (2, 2), (1, 1), "VALID")
  with pytest.raises(TypeError, match=r"reduce_window got inconsistent dtypes for operands and "
                                      r"init_values: got operand dtypes \['float32'\] and "
                                      r"init_value dtypes \['int32'\]"):
    lax.reduce_window(x, np.int32(1), lax.mul, (2, 2), (1, 1), "VALID")
  with pytest.raises(TypeError, match=r"reduce_window expected init_values to be scalars but "
                                      r"init_values have shapes \[\(2,\)\]"):
    windowed.reduce_window_p.bind(x, np.ones(2, np.float32), jaxpr=_mul_jaxpr(),
                                  window_dimensions=(2, 2),
                                  window_strides=(1, 1), padding=((0, 0), (0, 0)),
                                  base_dilation=(1, 1), window_dilation=(1, 1))
  with pytest.raises(TypeError, match=r"reduce_window operands must have the same shape, got "
                                      r"\(4, 6\), \(4, 5\)"):
    lax.reduce_window((x, _x((4, 5))), (1.0, 1.0), lambda a, b: (a[0] * b[0], a[1] * b[1]),
                      (2, 2), (1, 1), "VALID")
  with pytest.raises(TypeError, match=r"reduce_window computation must return scalars of the "
                                      r"init values' types \(f32\[\]\), got \(bool\[\]\)"):
    lax.reduce_window(x, 1.0, lax.lt, (2, 2), (1, 1), "VALID")
  with pytest.raises(ValueError, match="reduce_window output must have the same tree structure "
                                       "as the operands"):
    lax.reduce_window(x, 1.0, lambda a, b: (a, b), (2, 2), (1, 1), "VALID")

  def closes_over_a_tracer(y):
    return lax.reduce_window(x, 1.0, lambda a, b: a * b * y, (2, 2), (1, 1), "VALID")
  with pytest.raises(TypeError, match="computation must not close over traced values"):
    revax.jit(closes_over_a_tracer)(np.float32(2.0))


def _mul_jaxpr():
  from revax._src.core.avals import ShapedArray
  return windowed._computation_jaxpr(lax.mul, revax.tree_util.tree_structure(0.0),
                                     (ShapedArray((), np.float32),))


def test_select_primitive_errors():
  t, x = _x(), _x()
  with pytest.raises(TypeError, match=r"select_and_gather_add tangents and operand shapes must "
                                      r"match, got \(4, 5\) and \(4, 6\)"):
    windowed.select_and_gather_add(_x((4, 5)), x, lax.ge_p, (2, 2), (1, 1), [(0, 0), (0, 0)])
  with pytest.raises(ValueError, match="select_prim must be revax.lax's ge_p .* or le_p"):
    windowed.select_and_gather_add(t, x, lax.gt_p, (2, 2), (1, 1), [(0, 0), (0, 0)])
  with pytest.raises(TypeError, match="select_and_gather_add operand must have a floating-point "
                                      "dtype, got int32"):
    windowed.select_and_gather_add(t, np.zeros((4, 6), np.int32), lax.ge_p, (2, 2), (1, 1),
                                   [(0, 0), (0, 0)])
  with pytest.raises(TypeError, match=r"select_and_scatter_add source must have the shape of the "
                                      r"windows' output \(3, 5\), got \(4, 6\)"):
    windowed.select_and_scatter_add(t, x, lax.le_p, (2, 2), (1, 1), [(0, 0), (0, 0)])


def test_generic_reverse_mode_and_batched_init_are_refused():
  x = separated((4, 6))(np.random.default_rng(0))
  f = lambda x: lax.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 1), "VALID").sum()
  with pytest.raises(NotImplementedError, match="reverse-mode differentiation of reduce_window "
                                                "with a generic computation is not supported"):
    revax.grad(f)(x)
  g = lambda x, init: lax.reduce_window(x, init, lax.mul, (2, 2), (1, 1), "VALID")
  with pytest.raises(NotImplementedError, match="reduce_window batching is not implemented for "
                                                "initial values"):
    revax.vmap(g, in_axes=(None, 0))(x, np.ones(3, np.float32))


# --- monoid recognition and the generic form -----------------------------------------------------
def _prims(f, *args):
  return [e.primitive.name for e in revax.make_jaxpr(f)(*args).jaxpr.eqns]


def test_monoid_recognition():
  x = _x()
  w = ((2, 2), (1, 1), "VALID")
  assert _prims(lambda x: lax.reduce_window(x, 0.0, lax.add, *w), x) == ["reduce_window_sum"]
  assert _prims(lambda x: lax.reduce_window(x, 0, lambda a, b: a + b, *w), x) == \
      ["reduce_window_sum"]
  assert _prims(lambda x: lax.reduce_window(x, -np.inf, rnp.maximum, *w), x) == \
      ["reduce_window_max"]
  assert _prims(lambda x: lax.reduce_window(x, np.float32(np.inf), lax.min, *w), x) == \
      ["reduce_window_min"]
  # the identity of an integer operand, or -inf for it (as jax), bind the monoid too
  xi = np.zeros((4, 6), np.int32)
  assert _prims(lambda x: lax.reduce_window(x, -np.inf, lax.max, *w), xi) == \
      ["reduce_window_max"]
  assert _prims(lambda x: lax.reduce_window(x, np.iinfo(np.int32).max, lax.min, *w), xi) == \
      ["reduce_window_min"]
  # a non-identity init or another computation: the generic primitive
  assert _prims(lambda x: lax.reduce_window(x, 1.0, lax.add, *w), x) == ["reduce_window"]
  assert _prims(lambda x: lax.reduce_window(x, 0.0, lax.max, *w), x) == ["reduce_window"]
  assert _prims(lambda x: lax.reduce_window(x, 1.0, lax.mul, *w), x) == ["reduce_window"]
  assert _prims(lambda x, i: lax.reduce_window(x, i, lax.add, *w), x, np.float32(0)) == \
      ["reduce_window"]
  np.testing.assert_allclose(np.asarray(lax.reduce_window(x + 1, 1.0, lax.add, *w)),
                             np.full((3, 5), 5.0))


def test_generic_variadic_pytree_matches_jax():
  rng = np.random.default_rng(2)
  x = rng.standard_normal((4, 6)).astype(np.float32)
  y = rng.standard_normal((4, 6)).astype(np.float32)

  def comp(np_mod):
    def f(a, b):
      return {"hi": np_mod.maximum(a["hi"], b["hi"]), "s": a["s"] + b["s"] * b["s"]}
    return f

  window = ((2, 3), (1, 2), [(1, 0), (0, 1)], (2, 1), (1, 1))
  init = {"hi": -np.inf, "s": 0.5}
  ours = lax.reduce_window({"hi": x, "s": y}, init, comp(rnp), *window)
  jitted = revax.jit(lambda x, y: lax.reduce_window({"hi": x, "s": y}, init, comp(rnp),
                                                    *window))(x, y)
  theirs = jax.lax.reduce_window({"hi": x, "s": y}, init, comp(jnp), *window)
  for k in ("hi", "s"):
    np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(theirs[k]), rtol=1e-6)
    if _JIT_NON_MONOID or k == "hi":  # ("s" folds a + b * b: no monoid)
      np.testing.assert_allclose(np.asarray(jitted[k]), np.asarray(theirs[k]), rtol=1e-6)


def test_generic_skips_padding_and_holes_as_xla_does():
  """Each window folds only its operand elements into the init value (XLA's semantics, which
  differ from folding the padding in when the init is not an identity)."""
  x = np.arange(1.0, 5.0, dtype=np.float32).reshape(2, 2)
  for args in [((2, 1), (1, 1), [(1, 0), (0, 0)]), ((1, 1), (1, 1), "VALID", (2, 1)),
               ((3, 2), (1, 1), [(2, 1), (1, 1)], (1, 2), (2, 1))]:
    ours = lax.reduce_window(x, 2.0, lax.mul, *args)
    jitted = revax.jit(lambda x: lax.reduce_window(x, 2.0, lax.mul, *args))(x)
    theirs = jax.lax.reduce_window(x, 2.0, jax.lax.mul, *args)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))
    if _JIT_NON_MONOID:  # (init 2.0 is no identity of mul)
      np.testing.assert_allclose(np.asarray(jitted), np.asarray(theirs))


def test_degenerate_operands():
  """Empty operands (windows of padding only: the init value), empty outputs, and 0-d operands
  (their own window: computation(init, x), as for a one-element window of any rank)."""
  e = np.zeros((0, 3), np.float32)
  for op, init, _, jop in _OPS.values():
    for f in (lambda e: lax.reduce_window(e, init, op, (2, 1), (1, 1), [(1, 2), (0, 0)]),):
      np.testing.assert_array_equal(np.asarray(f(e)), np.full((2, 3), init, np.float32))
      np.testing.assert_array_equal(np.asarray(revax.jit(f)(e)), np.full((2, 3), init))
  x = np.ones((3, 4), np.float32)
  for f in (lambda x: lax.reduce_window(x, 0.0, lax.add, (4, 1), (1, 1), "VALID"),
            lambda x: lax.reduce_window(x, 2.0, lax.mul, (4, 1), (1, 1), "VALID")):
    assert f(x).shape == revax.jit(f)(x).shape == (0, 4)
  s = np.float32(3.0)
  for f, expected in [(lambda s: lax.reduce_window(s, 0.0, lax.add, (), (), ()), 3.0),
                      (lambda s: lax.reduce_window(s, -np.inf, lax.max, (), (), ()), 3.0),
                      (lambda s: lax.reduce_window(s, 2.0, lax.mul, (), (), ()), 6.0)]:
    assert float(f(s)) == float(revax.jit(f)(s)) == expected
  one = lambda v: lax.reduce_window(v, 2.0, lax.mul, (1,), (1,), "VALID")
  assert float(one(np.array([3.0], np.float32))[0]) == 6.0
  t = np.float32(0.5)
  assert float(windowed.select_and_gather_add(t, s, lax.ge_p, (), (), ())) == 0.5
  assert float(revax.jit(lambda t, s: windowed.select_and_gather_add(t, s, lax.ge_p, (), (), ()))(
      t, s)) == 0.5
  assert float(revax.jit(lambda t, s: windowed.select_and_scatter_add(t, s, lax.ge_p, (), (),
                                                                      ()))(t, s)) == 0.5


def test_computation_closing_over_an_array():
  c = np.float32(0.5) * np.ones((), np.float32)
  x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
  k = np.asarray([2.0], np.float32)
  f = lambda x: lax.reduce_window(x, 0.0, lambda a, b: a + b * k[0] + c, (2, 2), (1, 1), "SAME")
  expected = np_reduce_window(x, 0.0, lambda a, b: a + b * 2 + 0.5, (2, 2), (1, 1), "SAME")
  np.testing.assert_allclose(np.asarray(f(x)), expected, rtol=1e-5)
  if _JIT_NON_MONOID:  # (a + 2 b + 0.5 is no monoid)
    np.testing.assert_allclose(np.asarray(revax.jit(f)(x)), expected, rtol=1e-5)


# --- structure -----------------------------------------------------------------------------------
def test_max_pool_derivative_jaxprs():
  x = separated((2, 5, 7, 3))(np.random.default_rng(0))
  pool = lambda x: revax.nn.max_pool(x, (2, 2), (2, 2), ((0, 1), (1, 0)))
  jvp_names = _prims(lambda x: revax.jvp(pool, (x,), (x,)), x)
  assert "select_and_gather_add" in jvp_names
  ct = np.ones(pool(x).shape, np.float32)
  vjp_names = _prims(lambda x: revax.vjp(pool, x)[1](ct), x)
  assert "select_and_scatter_add" in vjp_names and "select_and_gather_add" not in vjp_names
  min_jvp = revax.make_jaxpr(lambda x: revax.jvp(
      lambda x: lax.reduce_window(x, np.inf, lax.min, (1, 2, 2, 1), (1, 1, 1, 1), "SAME"),
      (x,), (x,)))(x)
  (eqn,) = [e for e in min_jvp.jaxpr.eqns if e.primitive.name == "select_and_gather_add"]
  assert eqn.params["select_prim"] is lax.le_p
  # the transpose of select_and_scatter_add is select_and_gather_add
  t = lambda ct: revax.linear_transpose(
      lambda s: windowed.select_and_scatter_add(s, x, lax.ge_p, (1, 2, 2, 1), (1, 2, 2, 1),
                                                [(0, 0), (0, 1), (1, 0), (0, 0)]), ct)(x)
  assert "select_and_gather_add" in _prims(t, ct)


def test_batching_inserts_a_unit_window_without_transposes():
  xb = np.zeros((3, 4, 5, 6), np.float32)
  for in_axis in range(4):
    for op, init, _, _ in _OPS.values():
      f = revax.vmap(lambda x: lax.reduce_window(x, init, op, (2, 2, 1), (1, 2, 1),
                                                 [(1, 0), (0, 1), (0, 0)]),
                     in_axes=in_axis, out_axes=in_axis)
      (eqn,) = revax.make_jaxpr(f)(np.moveaxis(xb, 0, in_axis)).jaxpr.eqns
      assert eqn.params["window_dimensions"][in_axis] == 1
      assert eqn.params["padding"][in_axis] == (0, 0)
  t = np.zeros((4, 3, 6), np.float32)
  x = np.zeros((4, 3, 6), np.float32)
  g = revax.vmap(lambda t, x: windowed.select_and_gather_add(t, x, lax.ge_p, (2, 2), (1, 1),
                                                             [(0, 1), (1, 0)]), in_axes=(1, 1),
                 out_axes=1)
  names = _prims(g, t, x)
  assert names == ["select_and_gather_add"], names
  s = np.zeros((4, 3, 6), np.float32)
  h = revax.vmap(lambda s, x: windowed.select_and_scatter_add(s, x, lax.ge_p, (2, 2), (1, 1),
                                                              [(0, 1), (1, 0)]), in_axes=(1, 1),
                 out_axes=1)
  assert _prims(h, s, x) == ["select_and_scatter_add"]


# --- derivatives ---------------------------------------------------------------------------------
def _random_windows(rng, count):
  """Random 2-d window configurations (pair padding, also negative, strides, dilations) whose
  output is not empty."""
  cases = []
  while len(cases) < count:
    shape = tuple(int(v) for v in rng.integers(1, 7, 2))
    window = tuple(int(v) for v in rng.integers(1, 4, 2))
    strides = tuple(int(v) for v in rng.integers(1, 4, 2))
    base = tuple(int(v) for v in rng.integers(1, 3, 2))
    wdil = tuple(int(v) for v in rng.integers(1, 3, 2))
    padding = [tuple(int(v) for v in rng.integers(-2, 4, 2)) for _ in range(2)]
    dilated = [(n - 1) * b + 1 for n, b in zip(shape, base)]
    if any(d + lo + hi < 0 for d, (lo, hi) in zip(dilated, padding)):
      continue
    out = windowed.reduce_window_shape_tuple(shape, window, strides, padding, base, wdil)
    if 0 in out:
      continue
    cases.append((shape, window, strides, padding, base, wdil))
  return cases


def test_sum_window_transpose_for_any_padding_strides_and_dilations():
  """<f(x), c> == <x, f^T(c)> and f^T == jax's vjp, over random configurations."""
  rng = np.random.default_rng(4)
  cases = _random_windows(rng, 40)
  xs, cs, x_bars = [], [], []
  for shape, window, strides, padding, base, wdil in cases:
    f = lambda x: lax.reduce_window(x, 0.0, lax.add, window, strides, padding, base, wdil)
    x = rng.standard_normal(shape).astype(np.float32)
    out = np.asarray(f(x))
    c = rng.standard_normal(out.shape).astype(np.float32)
    (x_bar,) = revax.linear_transpose(f, x)(c)
    np.testing.assert_allclose(np.vdot(out, c), np.vdot(x, np.asarray(x_bar)), rtol=1e-4,
                               atol=1e-4)
    xs.append(x), cs.append(c), x_bars.append(x_bar)

  def jax_transposes(xs, cs):
    return [jax.vjp(lambda x: jax.lax.reduce_window(x, 0.0, jax.lax.add, *case[1:]), x)[1](c)[0]
            for case, x, c in zip(cases, xs, cs)]
  for ours, theirs in zip(x_bars, jax.jit(jax_transposes)(xs, cs), strict=True):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["max", "min"])
def test_max_min_window_vjp_equals_the_jacobian(kind):
  """Reverse mode through select_and_scatter_add (also for negative padding and window dilation,
  which jax does not differentiate) against the transposed forward-mode Jacobian."""
  op, init, _, _ = _OPS[kind]
  rng = np.random.default_rng(5)
  for k, (shape, window, strides, padding, base, wdil) in enumerate(_random_windows(rng, 10)):
    x = separated(shape)(rng)
    f = lambda x: lax.reduce_window(x, init, op, window, strides, padding, base, wdil)
    out = np.asarray(f(x))
    finite = np.isfinite(out)
    c = np.where(finite, rng.standard_normal(out.shape), 0).astype(np.float32)
    eye = np.eye(x.size, dtype=np.float32).reshape((x.size,) + shape)
    jac = np.stack([np.asarray(revax.jvp(f, (x,), (e,))[1]).ravel() for e in eye], 1)
    jac = np.where(finite.reshape(-1, 1), jac, 0)
    (x_bar,) = revax.vjp(f, x)[1](c)
    np.testing.assert_allclose(np.asarray(x_bar).ravel(), jac.T @ c.ravel(), rtol=1e-5,
                               atol=1e-6)
    if k < 3:
      jitted = revax.jit(lambda x, c: revax.vjp(f, x)[1](c)[0])(x, c)
      np.testing.assert_allclose(np.asarray(jitted), np.asarray(x_bar), rtol=1e-6)


def test_generic_forward_mode_matches_jax():
  rng = np.random.default_rng(6)
  x = rng.uniform(0.5, 1.5, (4, 6)).astype(np.float32)
  t = rng.standard_normal((4, 6)).astype(np.float32)
  window = ((2, 2), (1, 1), [(1, 0), (0, 1)], (1, 2), (2, 1))
  f = lambda x: lax.reduce_window(x, 1.0, lax.mul, *window)
  fj = lambda x: jax.lax.reduce_window(x, 1.0, jax.lax.mul, *window)
  ours, theirs = revax.jvp(f, (x,), (t,)), jax.jvp(fj, (x,), (t,))
  for a, b in zip(ours, theirs):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)
  jitted = revax.jit(lambda x, t: revax.jvp(f, (x,), (t,)))(x, t)
  np.testing.assert_allclose(np.asarray(jitted[1]), np.asarray(theirs[1]), rtol=1e-5)
  check_grads(f, (x,), order=2, modes=("fwd",))
  # a differentiable init value (jax refuses its tangent): checked by finite differences
  g = lambda x, init: lax.reduce_window(x, init, lax.mul, *window)
  check_grads(g, (x, np.float32(1.3)), order=2, modes=("fwd",))
  # vmaps against jax's (batch in the middle), and of forward mode against loops (tangents
  # batched, primal not, and both)
  tb = np.stack([t, -t, 2 * t])
  xb = np.stack([x, x * 1.1, x[::-1]], 1)
  np.testing.assert_allclose(np.asarray(revax.vmap(f, in_axes=1)(xb)),
                             np.asarray(jax.vmap(fj, in_axes=1)(xb)), rtol=1e-5)
  check_vmap(lambda t: revax.jvp(f, (x,), (t,))[1], (tb,))
  check_vmap(lambda x, t: revax.jvp(f, (x,), (t,))[1], (np.stack([x, x * 1.1, x]), tb),
             in_axes=(0, 0))


# --- end to end: per-example gradients of a pooling network --------------------------------------
def _network(np_mod, pool):
  def loss(params, x, y):
    w1, b1, w2 = params
    h = np_mod.tanh(np_mod.dot(x, w1) + b1)
    h = np_mod.reshape(h, (4, 6, 2))
    h = pool(h)
    out = np_mod.dot(np_mod.reshape(h, (-1,)), w2)
    return np_mod.sum((out - y) ** 2)
  return loss


def test_per_example_gradients_of_a_pooling_network():
  rng = np.random.default_rng(7)
  params = (rng.standard_normal((5, 48)).astype(np.float32) * 0.5,
            rng.standard_normal(48).astype(np.float32) * 0.1,
            rng.standard_normal((12, 3)).astype(np.float32) * 0.5)
  xs = rng.standard_normal((6, 5)).astype(np.float32)
  ys = rng.standard_normal((6, 3)).astype(np.float32)
  padding = ((0, 1), (1, 0))
  loss = _network(rnp, lambda h: revax.nn.max_pool(h, (2, 2), (2, 2), padding))
  per_example = revax.vmap(revax.grad(loss), in_axes=(None, 0, 0))
  loop = [revax.grad(loss)(params, x, y) for x, y in zip(xs, ys)]
  for grads in (per_example(params, xs, ys), revax.jit(per_example)(params, xs, ys)):
    for k in range(3):
      np.testing.assert_allclose(np.asarray(grads[k]),
                                 np.stack([np.asarray(g[k]) for g in loop]),
                                 **allclose_tol(rtol=1e-5, atol=1e-6))  # (tanh: on a TPU, chip's)

  def jax_pool(h):
    return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (2, 2, 1), (2, 2, 1),
                                 padding + ((0, 0),))
  jax_loss = _network(jnp, jax_pool)
  theirs = jax.vmap(jax.grad(jax_loss), in_axes=(None, 0, 0))(params, xs, ys)
  ours = per_example(params, xs, ys)
  for k in range(3):
    np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(theirs[k]), rtol=1e-5, atol=1e-6)


# --- differential tests against jax --------------------------------------------------------------
_DIFF_CASES = [((2, 2), (1, 1), [(1, 0), (0, 1)], None, None),
               ((3, 2), (2, 1), "SAME", (2, 1), None),
               ((2, 3), (1, 2), [(0, 1), (2, 0)], (1, 2), (1, 1))]  # (jax: no dilated max vjp)


def _quantities(reduce_window, op, init, vjp, jvp, vmap, x, xb, ct, t):
  """Values, vjp, jvp, jvp of the vjp, and vmaps of the function and of its vjp (batch at axes
  0, 1, 2) of a max/min/sum window, for each case of _DIFF_CASES."""
  res = []
  for window, strides, padding, base, wdil in _DIFF_CASES:
    f = lambda x: reduce_window(x, init, op, window, strides, padding, base, wdil)
    vj = lambda x, c: vjp(f, x)[1](c)[0]
    res += [f(x), vj(x, ct[window]), jvp(f, (x,), (t,))[1],
            jvp(vj, (x, ct[window]), (t, ct[window]))[1]]
    for in_axis in (0, 1, 2):
      xs = jnp.moveaxis(xb, 1, in_axis) if vmap is jax.vmap else np.moveaxis(xb, 1, in_axis)
      cts = (jnp if vmap is jax.vmap else np).stack([ct[window]] * 3, in_axis)
      res += [vmap(f, in_axes=in_axis)(xs), vmap(vj, in_axes=(in_axis, in_axis))(xs, cts)]
  return res


@pytest.mark.parametrize("name", ["add", "max", "min"])
def test_values_grads_and_vmaps_match_jax(name):
  """Every quantity of `_quantities`, revax eager against jax jitted (one program)."""
  op, init, _, jop = _OPS[name]
  rng = np.random.default_rng(8)
  x = separated((4, 6))(rng)
  xb = np.stack([separated((4, 6))(rng) for _ in range(3)], 1)
  t = rng.standard_normal(x.shape).astype(np.float32)
  ct = {}
  for window, strides, padding, base, wdil in _DIFF_CASES:
    out = np.asarray(lax.reduce_window(x, init, op, window, strides, padding, base, wdil))
    # no cotangent on the windows of padding only (their -inf/+inf outputs)
    ct[window] = np.where(np.isfinite(out), rng.standard_normal(out.shape), 0).astype(np.float32)
  ours = _quantities(lax.reduce_window, op, init, revax.vjp, revax.jvp, revax.vmap, x, xb, ct, t)
  theirs = jax.jit(lambda x, xb, ct, t: _quantities(jax.lax.reduce_window, jop, init, jax.vjp,
                                                    jax.jvp, jax.vmap, x, xb, ct, t))(x, xb, ct, t)
  for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
    a, b = np.asarray(a), np.asarray(b)
    finite = np.isfinite(b)  # jvp tangents of infinite outputs: nan in one, 0 in the other
    np.testing.assert_allclose(np.where(finite, a, 0), np.where(finite, b, 0), rtol=1e-5,
                               atol=1e-5, err_msg=f"quantity {k}")
  # a jitted vmap of the vjp (the batched select_and_scatter_add lowering)
  window, strides, padding, base, wdil = _DIFF_CASES[1]
  vj = lambda x, c: revax.vjp(lambda x: lax.reduce_window(x, init, op, window, strides, padding,
                                                          base, wdil), x)[1](c)[0]
  cts = np.stack([ct[window]] * 3, 2)
  jitted = revax.jit(revax.vmap(vj, in_axes=(2, 2)))(np.moveaxis(xb, 1, 2), cts)
  np.testing.assert_allclose(np.asarray(jitted), np.asarray(ours[4 + 2 * 3 + 4 + 5]), rtol=1e-6,
                             atol=1e-6)


def test_select_primitives_match_references_and_jax():
  """select_and_gather_add / select_and_scatter_add on their own, against the element loops and
  against jax's primitives (through jax's derivative of a max window)."""
  rng = np.random.default_rng(9)
  x = separated((5, 6))(rng)
  t = rng.standard_normal((5, 6)).astype(np.float32)
  window, strides, padding = (2, 3), (2, 1), [(1, 0), (0, 1)]
  for select_prim, np_select, init, jop in [(lax.ge_p, np.greater_equal, -np.inf, jax.lax.max),
                                            (lax.le_p, np.less_equal, np.inf, jax.lax.min)]:
    g = windowed.select_and_gather_add(t, x, select_prim, window, strides, padding)
    np.testing.assert_allclose(np.asarray(g), np_select_and_gather_add(
        t, x, np_select, window, strides, padding))
    fj = lambda x: jax.lax.reduce_window(x, init, jop, window, strides, padding)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jax.jvp(fj, (x,), (t,))[1]))
    s = rng.standard_normal(g.shape).astype(np.float32)
    sc = windowed.select_and_scatter_add(s, x, select_prim, window, strides, padding)
    np.testing.assert_allclose(np.asarray(sc), np_select_and_scatter_add(
        s, x, np_select, window, strides, padding), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(sc), np.asarray(jax.vjp(fj, x)[1](s)[0]), rtol=1e-6)


def test_transpose_of_window_reading_padding_only():
  """XLA:CPU miscompiles a pad followed by a window-dilated reduce_window that reads padding
  only; the transpose folds its padding into the window's own padding and base dilation."""
  x = np.array([[0.5]], np.float32)

  def f(x):
    return rnp.sum(lax.reduce_window(x, 0.0, lax.add, (2, 1), (1, 1), ((1, 1), (0, 0)),
                                     window_dilation=(2, 1)))
  eager = revax.grad(f)(x)
  np.testing.assert_array_equal(eager, [[0.0]])  # the only window reads padding
  np.testing.assert_array_equal(revax.jit(revax.grad(f))(x), eager)
