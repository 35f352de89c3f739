"""scatter_apply against jax 0.10.2: repeated indices apply the function repeatedly,
out-of-bounds modes, window updates; eagerly, under jit and under vmap."""
import numpy as np
import pytest

import revax
import revax.lax as rlax
import revax.numpy as rnp

jax = pytest.importorskip("jax")
jlax = jax.lax

X = np.arange(12, dtype=np.float32).reshape(6, 2) * 0.1
IDX = np.array([[1], [4], [1], [9], [1]], np.int32)


def _cases(lax, np_):
  dn_rows = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                        scatter_dims_to_operand_dims=(0,))
  dn_elems = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0, 1),
                                         scatter_dims_to_operand_dims=(0, 1))
  pairs = np.array([[0, 1], [5, 0], [0, 1], [6, 1]], np.int32)
  return {
      "rows_repeated_drop": lambda x: lax.scatter_apply(x, IDX, lambda v: v * 2 + 1, dn_rows,
                                                        update_shape=(5, 2)),
      "rows_clip": lambda x: lax.scatter_apply(x, IDX, np_.sin, dn_rows, update_shape=(5, 2),
                                               mode="clip"),
      "elements_unique_flag": lambda x: lax.scatter_apply(x, pairs[:2], lambda v: -v, dn_elems,
                                                          update_shape=(2,),
                                                          unique_indices=True),
      "elements_repeated": lambda x: lax.scatter_apply(x, pairs, lambda v: v * v + 0.5,
                                                       dn_elems, update_shape=(4,)),
  }


R, J = _cases(rlax, rnp), _cases(jlax, jax.numpy)


@pytest.mark.parametrize("name", sorted(R))
def test_matches_jax(name):
  want = np.asarray(J[name](X))
  for got in (R[name](X), revax.jit(R[name])(X)):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
  xs = np.stack([X, X + 1])
  np.testing.assert_allclose(np.asarray(revax.vmap(R[name])(xs)),
                             np.asarray(jax.vmap(J[name])(xs)), rtol=1e-6)


def test_func_must_keep_the_scalar_type():
  dn = rlax.ScatterDimensionNumbers((1,), (0,), (0,))
  with pytest.raises(TypeError, match="scatter_apply func must map a f32"):
    rlax.scatter_apply(X, IDX, lambda v: v.astype(np.int32), dn, update_shape=(5, 2))
