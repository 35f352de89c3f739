"""Slicing primitives: error paths (exception type and message), modes and params, second-order
derivatives of the indexed records with the indices closed over, batching structure, and
differential checks against jax.lax."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.lax as lax
from tests.gradcheck import check_grads
from tests.lax.opdb.slicing import SECOND_ORDER_CLOSED_OVER
from tests.lax.test_op_db import _inputs

GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers
x23 = np.arange(6, dtype=np.float32).reshape(2, 3)
x53 = np.arange(15, dtype=np.float32).reshape(5, 3)
ROWS = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
SROWS = SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))


def _eqns(fun, *args):
  return revax.make_jaxpr(fun)(*args).jaxpr.eqns


def _names(fun, *args):
  return [e.primitive.name for e in _eqns(fun, *args)]


# --- slice ---------------------------------------------------------------------------------------
def test_slice_errors():
  with pytest.raises(TypeError, match=r"start_indices must have length equal to the number of "
                                      r"dimensions of the operand, got start_indices \(0,\) for "
                                      r"operand shape \(2, 3\)"):
    lax.slice(x23, (0,), (1,))
  with pytest.raises(TypeError, match=r"limit_indices must be less than or equal to operand "
                                      r"shape, got limit_indices \(3, 3\) for operand shape"):
    lax.slice(x23, (0, 0), (3, 3))
  with pytest.raises(TypeError, match=r"limit_indices must be greater than or equal to "
                                      r"start_indices, got start_indices \(1, 0\) and "
                                      r"limit_indices \(0, 3\)"):
    lax.slice(x23, (1, 0), (0, 3))
  with pytest.raises(TypeError, match=r"start_indices must be greater than or equal to zero"):
    lax.slice(x23, (-1, 0), (1, 3))
  with pytest.raises(TypeError, match=r"slice strides must be positive, got \(0, 1\)"):
    lax.slice(x23, (0, 0), (2, 3), (0, 1))
  with pytest.raises(TypeError, match="slice start_indices must be a sequence of integers"):
    lax.slice(x23, (0.5, 0), (2, 3))


def test_slice_params_and_unit_strides():
  (eqn,) = _eqns(lambda a: lax.slice(a, [0, 1], [2, 3], [1, 1]), x23)
  assert eqn.params == {"start_indices": (0, 1), "limit_indices": (2, 3), "strides": None}


def test_slice_transpose_is_a_pad_with_interior():
  f = lambda a: lax.slice(a, (1,), (8,), (3,))  # noqa: E731
  ct_fn = revax.linear_transpose(f, np.zeros(9, np.float32))
  names = [e.primitive.name for e in revax.make_jaxpr(ct_fn)(np.ones(3, np.float32)).jaxpr.eqns]
  assert "pad" in names
  (ct,) = ct_fn(np.array([1.0, 2.0, 3.0], np.float32))
  np.testing.assert_array_equal(ct, [0, 1, 0, 0, 2, 0, 0, 3, 0])


# --- dynamic_slice / dynamic_update_slice --------------------------------------------------------
def test_dynamic_slice_errors():
  with pytest.raises(ValueError, match=r"length of start_indices must match number of operand "
                                       r"dimensions \(1 vs \(2, 3\)\)"):
    lax.dynamic_slice(x23, (0,), (1, 1))
  with pytest.raises(TypeError, match=r"slice_sizes must be less than or equal to operand shape, "
                                      r"got slice_sizes \(3, 3\) for operand shape \(2, 3\)"):
    lax.dynamic_slice(x23, (0, 0), (3, 3))
  with pytest.raises(TypeError, match=r"slice_sizes must have one entry per operand dimension"):
    lax.dynamic_slice(x23, (0, 0), (1,))
  with pytest.raises(TypeError, match=r"slice_sizes must be greater than or equal to zero"):
    lax.dynamic_slice(x23, (0, 0), (-1, 1))
  with pytest.raises(TypeError, match="start_indices must be integers, got dtype float32"):
    lax.dynamic_slice(x23, (np.float32(0), 0), (1, 1))
  with pytest.raises(TypeError, match=r"start_indices must be scalars, got an index of shape "
                                      r"\(2,\)"):
    lax.dynamic_slice(x23, (np.zeros(2, np.int32), 0), (1, 1))


def test_dynamic_update_slice_errors():
  with pytest.raises(TypeError, match=r"update shape must be smaller than operand shape, got "
                                      r"update shape \(3, 3\) for operand shape \(2, 3\)"):
    lax.dynamic_update_slice(x23, np.ones((3, 3), np.float32), (0, 0))
  with pytest.raises(TypeError, match=r"update must have the same rank as operand, got update "
                                      r"shape \(3,\) for operand shape \(2, 3\)"):
    lax.dynamic_update_slice(x23, np.ones(3, np.float32), (0, 0))
  with pytest.raises(TypeError, match="update and operand dtypes must match, got int32 for "
                                      "operand dtype float32"):
    lax.dynamic_update_slice(x23, np.ones((1, 1), np.int32), (0, 0))


def test_dynamic_slice_static_indices_wrap_then_clamp():
  x = np.arange(10, dtype=np.int32)
  for start, want in ((-2, [7, 8, 9]), (-20, [0, 1, 2]), (20, [7, 8, 9]), (3, [3, 4, 5])):
    np.testing.assert_array_equal(lax.dynamic_slice(x, (start,), (3,)), want)
    np.testing.assert_array_equal(revax.jit(lambda a, s=start: lax.dynamic_slice(a, (s,), (3,)))(x),
                                  want)
  (eqn,) = _eqns(lambda a: lax.dynamic_slice(a, (-2,), (3,)), x)
  assert eqn.primitive.name == "dynamic_slice" and eqn.invars[1].val == 8


def test_vmap_dynamic_slice_with_batched_indices_is_one_gather():
  x = np.arange(20, dtype=np.float32).reshape(4, 5)
  starts = np.array([0, 3, -1, 9], np.int32)
  f = revax.vmap(lambda i: lax.dynamic_slice(x, (1, i), (2, 2)))
  names = _names(f, starts)
  assert "gather" in names and "dynamic_slice" not in names
  want = [jax.lax.dynamic_slice(x, (1, i), (2, 2)) for i in starts]
  np.testing.assert_array_equal(f(starts), np.stack(want))
  g = revax.vmap(lambda a, i: lax.dynamic_update_slice(a, np.ones((2, 2), np.float32), (i, 1)))
  assert "scatter" in _names(g, np.stack([x, x]), starts[:2])


# --- gather --------------------------------------------------------------------------------------
def test_gather_errors():
  idx = np.zeros((2, 1), np.int32)
  with pytest.raises(TypeError, match="gather indices must have an integer dtype, got float32"):
    lax.gather(x53, idx.astype(np.float32), ROWS, (1, 3))
  with pytest.raises(TypeError, match=r"1 elements in start_index_map and the last dimension of "
                                      r"the indices .* has size 2"):
    lax.gather(x53, np.zeros((2, 2), np.int32), ROWS, (1, 3))
  with pytest.raises(TypeError, match=r"offset_dims must be sorted; got \(2, 1\)"):
    lax.gather(np.zeros((5, 3, 2)), idx, GDN((2, 1), (0,), (0,)), (1, 3, 2))
  with pytest.raises(TypeError, match=r"offset_dims must be in range \[0, 2\); got \(2,\)"):
    lax.gather(x53, idx, GDN((2,), (0,), (0,)), (1, 3))
  with pytest.raises(TypeError, match=r"start_index_map must not contain any duplicate"):
    lax.gather(x53, np.zeros((2, 2), np.int32), GDN((1,), (0,), (0, 0)), (1, 3))
  with pytest.raises(TypeError, match="one slice size for every operand dimension"):
    lax.gather(x53, idx, ROWS, (1,))
  with pytest.raises(TypeError, match=r"Slice size at index 1 in gather op is out of range, must "
                                      r"be within \[0, 3 \+ 1\), got 4"):
    lax.gather(x53, idx, ROWS, (1, 4))
  with pytest.raises(TypeError, match=r"collapse slice dims and batching dims of slice size 1, "
                                      r"but slice_sizes\[0\] is 2"):
    lax.gather(x53, idx, ROWS, (2, 3))
  with pytest.raises(TypeError, match="offset dimension or explicitly collapsed/batching"):
    lax.gather(x53, idx, GDN((1,), (), (0,)), (1, 3))
  with pytest.raises(TypeError, match=r"collapsed_slice_dims and operand_batching_dims must be "
                                      r"disjoint"):
    lax.gather(x53, np.zeros((5, 1), np.int32), GDN((1,), (0,), (1,), (0,), (0,)), (1, 3))
  with pytest.raises(TypeError, match=r"operand batching dimensions and indices batching "
                                      r"dimensions to have the same shape, got \(5,\) and \(2,\)"):
    lax.gather(x53, idx, GDN((), (1,), (1,), (0,), (0,)), (1, 1))
  with pytest.raises(TypeError, match="cannot have the index vector dimension as a batching"):
    lax.gather(x53, idx, GDN((), (1,), (1,), (0,), (1,)), (1, 1))
  with pytest.raises(ValueError, match='Unknown gather mode "wrap"'):
    lax.gather(x53, idx, ROWS, (1, 3), mode="wrap")


def test_gather_modes_and_params_match_jax():
  idx = np.array([[4], [7], [-3]], np.int32)
  jrows = jax.lax.GatherDimensionNumbers((1,), (0,), (0,))
  (eqn,) = _eqns(lambda a, i: lax.gather(a, i, ROWS, (1, 3)), x53, idx)
  assert eqn.params["mode"] is lax.GatherScatterMode.PROMISE_IN_BOUNDS
  assert eqn.params["fill_value"] is None
  for mode in (None, "clip", "fill", "promise_in_bounds"):
    want = jax.lax.gather(x53, idx, jrows, (1, 3), mode=mode)
    got = lax.gather(x53, idx, ROWS, (1, 3), mode=mode)
    jitted = revax.jit(lambda a, i, m=mode: lax.gather(a, i, ROWS, (1, 3), mode=m))(x53, idx)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(jitted, want)
  ints = x53.astype(np.uint8)
  np.testing.assert_array_equal(lax.gather(ints, idx, ROWS, (1, 3), mode="fill"),
                                jax.lax.gather(ints, idx, jrows, (1, 3), mode="fill"))


def test_scatter_modes_match_jax():
  x = np.arange(10, dtype=np.float32)
  dn = SDN((1,), (), (0,))
  jdn = jax.lax.ScatterDimensionNumbers((1,), (), (0,))
  idx = np.array([[8], [-1], [2], [9]], np.int32)
  u = np.full((4, 3), 100, np.float32)
  for mode in (None, "clip", "drop", "promise_in_bounds"):
    want = jax.lax.scatter_add(x, idx, u, jdn, mode=mode)
    np.testing.assert_array_equal(lax.scatter_add(x, idx, u, dn, mode=mode), want)
    np.testing.assert_array_equal(
        revax.jit(lambda a, i, v, m=mode: lax.scatter_add(a, i, v, dn, mode=m))(x, idx, u), want)
  (eqn,) = _eqns(lambda a, i, v: lax.scatter_add(a, i, v, dn), x, idx, u)
  assert eqn.primitive.name == "scatter-add"
  assert eqn.params["mode"] is lax.GatherScatterMode.FILL_OR_DROP


def test_scatter_errors():
  idx = np.zeros((2, 1), np.int32)
  u = np.ones((2, 3), np.float32)
  with pytest.raises(TypeError, match=r"updates must be of rank 2 .* got updates shape \(3,\)"):
    lax.scatter_add(x53, idx, np.ones(3, np.float32), SROWS)
  with pytest.raises(TypeError, match="requires updates of the operand's dtype, got updates int32"):
    lax.scatter_add(x53, idx, u.astype(np.int32), SROWS)
  with pytest.raises(TypeError, match=r"For dimension 1, updates bound is 4, operand bound is 3"):
    lax.scatter(x53, idx, np.ones((2, 4), np.float32), SROWS)
  with pytest.raises(TypeError, match=r"For scatter dimension 0, updates bound is 3, indices "
                                      r"bound is 2"):
    lax.scatter_max(x53, idx, np.ones((3, 3), np.float32), SROWS)
  with pytest.raises(TypeError, match=r"has a window of rank 1 .* must match the operand rank 2"):
    lax.scatter_min(x53, idx, u, SDN((1,), (), (0,)))
  with pytest.raises(TypeError, match=r"inserted_window_dims must be sorted; got \(1, 0\)"):
    lax.scatter_mul(np.ones((2, 2, 2)), np.zeros((1, 2), np.int32), np.ones((1, 2)),
                    SDN((1,), (1, 0), (0, 1)))
  with pytest.raises(TypeError, match=r"2 elements in scatter_dims_to_operand_dims"):
    lax.scatter_add(x53, idx, u, SDN((1,), (0,), (0, 1)))
  with pytest.raises(TypeError, match="dimension_numbers must be a ScatterDimensionNumbers"):
    lax.scatter_add(x53, idx, u, "rows")


def test_scatter_add_repeated_indices_against_jax():
  idx = np.array([[1], [1], [4], [1]], np.int32)
  u = np.arange(12, dtype=np.float32).reshape(4, 3)
  want = jax.lax.scatter_add(x53, idx, u, jax.lax.ScatterDimensionNumbers((1,), (0,), (0,)))
  np.testing.assert_array_equal(lax.scatter_add(x53, idx, u, SROWS), want)
  np.testing.assert_array_equal(revax.jit(lambda *a: lax.scatter_add(*a, SROWS))(x53, idx, u),
                                want)


# --- derivatives ---------------------------------------------------------------------------------
@pytest.mark.parametrize("record", SECOND_ORDER_CLOSED_OVER, ids=str)
def test_second_order_with_indices_closed_over(record):
  args = _inputs(record)
  floats = [k for k, a in enumerate(args) if np.issubdtype(np.asarray(a).dtype, np.inexact)]

  def fun(*xs):
    full = list(args)
    for k, x in zip(floats, xs):
      full[k] = x
    return record.fun(*full)
  check_grads(fun, [args[k] for k in floats], order=2, modes=("fwd", "rev"))


def test_gather_transpose_is_scatter_add():
  idx = np.array([[0], [2], [0]], np.int32)
  f = lambda a: lax.gather(a, idx, ROWS, (1, 3))  # noqa: E731
  ct_fn = revax.linear_transpose(f, x53)
  assert "scatter-add" in _names(ct_fn, np.ones((3, 3), np.float32))


def _jax_rows(x, i):
  return jax.lax.gather(x, i, jax.lax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 3),
                        mode="clip")


def test_grad_and_vmap_against_jax():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((5, 3)).astype(np.float32)
  idx = np.array([[1], [1], [6], [-2]], np.int32)
  u = rng.standard_normal((4, 3)).astype(np.float32)

  def loss(lib, gather, scatter_max, dslice):
    def f(a, v):
      g = gather(a, idx)
      s = scatter_max(a, idx, v)
      d = dslice(a, idx[2, 0])
      return lib.sum(lib.sin(g)) + lib.sum(s * s) + lib.sum(d ** 3)
    return f

  f_rx = loss(revax.numpy, lambda a, i: lax.gather(a, i, ROWS, (1, 3), mode="clip"),
              lambda a, i, v: lax.scatter_max(a, i, v, SROWS),
              lambda a, i: lax.dynamic_slice(a, (i, 1), (2, 2)))
  f_jx = loss(jnp, _jax_rows,
              lambda a, i, v: jax.lax.scatter_max(a, i, v,
                                                  jax.lax.ScatterDimensionNumbers((1,), (0,), (0,))),
              lambda a, i: jax.lax.dynamic_slice(a, (i, 1), (2, 2)))
  for argnums in (0, 1):
    np.testing.assert_allclose(revax.grad(f_rx, argnums)(x, u), jax.grad(f_jx, argnums)(x, u),
                               rtol=1e-5, atol=1e-5)
  xs = rng.standard_normal((3, 5, 3)).astype(np.float32)
  idxs = np.array([[[0], [4]], [[2], [2]], [[9], [-1]]], np.int32)
  got = revax.vmap(lambda a, i: lax.gather(a, i, ROWS, (1, 3), mode="clip"), (2, 0))(
      np.moveaxis(xs, 0, 2), idxs)
  np.testing.assert_array_equal(got, jax.vmap(_jax_rows)(xs, idxs))


def test_gather_batching_moves_no_operand_axes():
  """vmap of a gather with the operand batched at any position reads the operand as it is (the
  only transpose, if any, is vmap's out_axes=0 on the result)."""
  idx = np.array([[0], [2]], np.int32)
  xs = np.zeros((5, 3, 4), np.float32)
  for ax in range(3):
    for fun, args in (
        (revax.vmap(lambda a: lax.gather(a, idx, ROWS, (1, 3)), in_axes=ax),
         (np.moveaxis(xs, 2, ax),)),
        (revax.vmap(lambda a, i: lax.gather(a, i, ROWS, (1, 3)), in_axes=(ax, 0)),
         (np.moveaxis(xs, 2, ax), np.zeros((4, 2, 1), np.int32)))):
      jaxpr = revax.make_jaxpr(fun)(*args).jaxpr
      (gather,) = [e for e in jaxpr.eqns if e.primitive.name == "gather"]
      assert gather.invars[0] is jaxpr.invars[0]
      assert jaxpr.eqns[0] is gather


def test_vmap_of_gather_over_a_batch_of_zero():
  """Operand and indices both mapped over a batch of 0: the operand batching dim's slice size is
  0, not 1 (as in JAX); found by the zero-size sweep of tests/runtime/test_robustness.py."""
  x, i = np.zeros((0, 3, 2), np.float32), np.zeros((0, 4), np.int32)
  take = lambda x, i: x[i]  # noqa: E731
  assert revax.vmap(take)(x, i).shape == (0, 4, 2)
  assert revax.jit(revax.vmap(take))(x, i).shape == (0, 4, 2)
  grads = revax.vmap(revax.grad(lambda x, i: x[i].sum()))(x, i)
  assert grads.shape == (0, 3, 2)
  x1, i1 = np.arange(12, dtype=np.float32).reshape(2, 3, 2), np.array([[2, 0], [1, 1]], np.int32)
  np.testing.assert_array_equal(revax.vmap(take)(x1, i1), np.stack([x1[0][[2, 0]], x1[1][[1, 1]]]))


EMPTY_BATCH_INDEXING = {  # name -> function of (lib, x, i), vmapped over a batch of zero
    "dynamic_slice": lambda lib, x, i: lib.lax.dynamic_slice(x, (i, 1), (2, 2)),
    "dynamic_slice_in_dim": lambda lib, x, i: lib.lax.dynamic_slice_in_dim(x, i, 2, 0),
    "dynamic_update_slice": lambda lib, x, i: lib.lax.dynamic_update_slice(
        x, lib.numpy.ones((2, 2), x.dtype), (i, i)),
    "index": lambda lib, x, i: x[i],
    "index_and_slice": lambda lib, x, i: x[i, 1:],
    "at_set": lambda lib, x, i: x.at[i].set(5.0),
    "at_add": lambda lib, x, i: x.at[i, 2].add(5.0),
    "take": lambda lib, x, i: lib.numpy.take(x, i, axis=1),
    "take_along_axis": lambda lib, x, i: lib.numpy.take_along_axis(
        x, lib.numpy.full((3, 1), i), axis=1),
    "gather_fill": lambda lib, x, i: x.at[i].get(mode="fill", fill_value=-1.0),
}


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("name", sorted(EMPTY_BATCH_INDEXING))
def test_vmap_of_indexing_with_mapped_indices_over_a_batch_of_zero(name, jit):
  """vmap over a batch of zero of indexing with mapped operand and indices (optax's
  hungarian_algorithm under vmap of 0 cost matrices): dynamic_slice's batching gather has slice
  size 1 along the empty batching dim; as in JAX, the shape rule allows it where there are no
  indices and the lowering of an empty gather is a constant (XLA refuses the slice size)."""
  x, i = np.ones((0, 3, 4), np.float32), np.zeros((0,), np.int32)
  outs = []
  for lib in (revax, jax):
    f = lib.vmap(lambda x, i: EMPTY_BATCH_INDEXING[name](lib, x, i))
    out = (lib.jit(f) if jit else f)(x, i)
    outs.append((out.shape, out.dtype))
  assert outs[0] == outs[1]


def test_scatter_transpose_with_empty_updates():
  """The cotangent of empty updates is empty zeros, without a gather from an operand that may be
  empty too (the gather's shape rule refused it); found by tests/fuzz."""
  x, u = np.zeros((1, 0), np.float32), np.zeros((0,), np.float32)
  f = lambda x, u: revax.numpy.sum(revax.numpy.asarray(x).at[0].add(u))  # noqa: E731
  for g in (revax.grad(f, argnums=(0, 1)), revax.jit(revax.grad(f, argnums=(0, 1)))):
    gx, gu = g(x, u)
    assert gx.shape == (1, 0) and gu.shape == (0,)
