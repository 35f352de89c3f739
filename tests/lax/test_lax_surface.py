"""jax.lax names composed from existing primitives (revax/_src/lax/convenience.py) and the
derivatives of the bit-level primitives, against jax.lax: values, jit, grad and vmap."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
from revax import lax as rl

rs = np.random.RandomState(0)
X = rs.randn(4, 5, 3).astype(np.float32)


def _same(a, b, **kw):
  for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
    u, v = np.asarray(u), np.asarray(v)
    assert u.dtype == v.dtype and u.shape == v.shape
    np.testing.assert_allclose(u, v, **(kw or {"rtol": 1e-6, "atol": 1e-6}))


CASES = [
    ("slice_in_dim", (X, 1, None, 2, 1), {}), ("slice_in_dim", (X, -3, -1), {"axis": 0}),
    ("index_in_dim", (X, -1, 1), {}), ("index_in_dim", (X, 2, 2, False), {}),
    ("dynamic_slice_in_dim", (X, np.int32(2), 2, 1), {}),
    ("dynamic_slice_in_dim", (X, np.int32(-2), 2, 0), {}),
    ("dynamic_index_in_dim", (X, np.int32(3), 1, False), {}),
    ("dynamic_update_slice_in_dim", (X, np.ones((4, 2, 3), np.float32), np.int32(1), 1), {}),
    ("dynamic_update_index_in_dim", (X, np.ones((5, 3), np.float32), np.int32(-1), 0), {}),
    ("collapse", (X, 1), {}), ("collapse", (X, 0, 2), {}),
    ("stack", ([X[0], X[1], X[2]], 1), {}), ("unstack", (X, 2), {}),
    ("split", (X, [1, 3, 1], 1), {}), ("tile", (X[0], (2, 1)), {}),
    ("broadcast_like", (X[0, :, :1], X), {}),
    ("select", (X > 0, X, -X), {}), ("reciprocal", (X + 10,), {}),
    ("batch_matmul", (X, np.swapaxes(X, 1, 2)), {}),
    ("approx_max_k", (X, 2), {}), ("approx_min_k", (X, 2, 1), {}),
    ("reduce_xor", (rs.randint(0, 1000, (4, 5)).astype(np.int32), (0,)), {}),
    ("cumlogsumexp", (X, 1), {}), ("cumlogsumexp", (X, 0, True), {}),
    ("index_take", (X, (np.array([0, 1, -1], np.int32), np.array([2, 0, 2], np.int32)), (0, 2)),
     {}),
]


@pytest.mark.parametrize("name,args,kw", CASES, ids=lambda c: str(c) if isinstance(c, str) else "")
def test_matches_jax(name, args, kw):
  _same(getattr(rl, name)(*args, **kw), getattr(jax.lax, name)(*args, **kw), rtol=1e-5, atol=1e-6)


def test_jit_grad_vmap_of_dynamic_indexing():
  f = lambda x, i: (rl.dynamic_index_in_dim(x, i, 1, False) ** 2).sum()
  g = lambda x, i: (jax.lax.dynamic_index_in_dim(x, i, 1, False) ** 2).sum()
  _same(revax.jit(revax.grad(f))(X, np.int32(2)), jax.grad(g)(X, np.int32(2)))
  idx = np.array([0, 4, -1, 2], np.int32)
  h = lambda x, i: rl.dynamic_update_index_in_dim(x, x[0] * 0, i, 0)
  _same(revax.vmap(h)(X, idx), jax.vmap(lambda x, i: jax.lax.dynamic_update_index_in_dim(
      x, x[0] * 0, i, 0))(X, idx))


def test_associative_scan_pytrees_reverse_and_grad():
  for n in (1, 2, 5, 8, 13):
    x = rs.randn(n, 3).astype(np.float32)
    _same(rl.associative_scan(rl.add, x), jax.lax.associative_scan(jax.lax.add, x))
    _same(rl.associative_scan(rl.max, x, reverse=True, axis=0),
          jax.lax.associative_scan(jax.lax.max, x, reverse=True, axis=0))
  pair = lambda a, b: (a[0] * b[0], a[1] * b[0] + b[1])  # linear recurrence, non-commutative
  elems = (rs.rand(7).astype(np.float32), rs.randn(7).astype(np.float32))
  _same(rl.associative_scan(pair, elems), jax.lax.associative_scan(pair, elems), rtol=1e-5)
  _same(revax.grad(lambda v: rl.cumlogsumexp(v).sum())(X[:, 0, 0]),
        jax.grad(lambda v: jax.lax.cumlogsumexp(v).sum())(X[:, 0, 0]), rtol=1e-5)
  _same(revax.jit(lambda v: rl.associative_scan(rl.add, v, axis=1))(X),
        jax.lax.associative_scan(jax.lax.add, X, axis=1), rtol=1e-5)


def test_cumlogsumexp_infinities():
  x = np.array([-np.inf, -np.inf, 0.0, np.inf, 1.0], np.float32)
  _same(rl.cumlogsumexp(x), jax.lax.cumlogsumexp(x))


def test_scatter_sub():
  dn = jax.lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))
  rdn = rl.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
  x = np.arange(5, dtype=np.float32)
  idx = np.array([[0], [2], [2]], np.int32)
  u = np.array([1.0, 2.0, 3.0], np.float32)
  _same(rl.scatter_sub(x, idx, u, rdn), jax.lax.scatter_sub(x, idx, u, dn))


def test_dtype_empty_broadcast_shapes_and_errors():
  for v in (1, 1.0, np.float64(1), np.int8(3), "float16", np.ones(2, np.uint8)):
    assert rl.dtype(v) == jax.lax.dtype(v)
  e = rl.empty((2, 3), np.float32)
  assert e.shape == (2, 3) and e.dtype == np.float32
  assert rl.broadcast_shapes((3, 1), (1, 4)) == jax.lax.broadcast_shapes((3, 1), (1, 4))
  with pytest.raises(ValueError):
    rl.broadcast_shapes((3,), (4,))
  with pytest.raises(ValueError, match="Sum of sizes"):
    rl.split(X, [1, 1], 0)
  with pytest.raises(ValueError, match="at least 2D"):
    rl.batch_matmul(X[0, 0], X[0, 0])
  with pytest.raises(ValueError, match="collapse"):
    rl.collapse(X, 2, 1)


def test_bit_primitives_match_jax_and_reduce_precision_derivatives():
  x = rs.randint(-2**31, 2**31 - 1, (6,), dtype=np.int64).astype(np.int32)
  _same(rl.population_count(x), jax.lax.population_count(x))
  _same(revax.jit(rl.clz)(x), jax.lax.clz(x))
  _same(revax.vmap(rl.clz)(x.reshape(2, 3)), jax.vmap(jax.lax.clz)(x.reshape(2, 3)))
  with pytest.raises(TypeError):
    rl.clz(np.ones(3, np.float32))
  y = rs.randn(5).astype(np.float32)
  f = lambda v: (rl.reduce_precision(v, 5, 10) * v).sum()
  g = lambda v: (jax.lax.reduce_precision(v, 5, 10) * v).sum()
  _same(revax.grad(f)(y), jax.grad(g)(y))
  _same(revax.jvp(lambda v: rl.reduce_precision(v, 8, 7), (y,), (y * 3,))[1],
        jax.jvp(lambda v: jax.lax.reduce_precision(v, 8, 7), (y,), (y * 3,))[1])
  with pytest.raises(ValueError, match="exponent_bits"):
    rl.reduce_precision(y, 0, 3)
  with pytest.raises(TypeError, match="floating-point"):
    rl.reduce_precision(np.ones(2, np.int32), 5, 2)
  assert "reduce_precision" in str(revax.make_jaxpr(lambda v: rl.reduce_precision(v, 5, 2))(y))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int8, np.uint16])
def test_mulhi_matches_jax(dtype):
  info = np.iinfo(dtype)
  a = rs.randint(info.min, info.max, 64, dtype=np.int64).astype(dtype)
  b = rs.randint(info.min, info.max, 64, dtype=np.int64).astype(dtype)
  a[:4] = [info.min, info.max, 0, info.max]
  b[:4] = [info.min, info.min, info.max, info.max]
  _same(rl.mulhi(a, b), jax.lax.mulhi(a, b))
  _same(revax.jit(rl.mulhi)(a, b[:1]), jax.lax.mulhi(a, b[:1]))
  _same(revax.vmap(rl.mulhi)(a, b), jax.vmap(jax.lax.mulhi)(a, b))
  with pytest.raises(TypeError):
    rl.mulhi(a.astype(np.float32), b.astype(np.float32))


_M = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
_V = np.array([3.0, 1.0, 2.0], np.float32)
CONTAINER_CASES = {
    "top_k": lambda l: l.top_k(_V, 2),
    "approx_max_k": lambda l: l.approx_max_k(_V, 2),
    "approx_min_k": lambda l: l.approx_min_k(_V, 2),
    "sort_tuple": lambda l: l.sort((_V, _V), num_keys=1),
    "sort_list": lambda l: l.sort([_V, _V], num_keys=1),
    "sort_key_val": lambda l: l.sort_key_val(_V, _V),
    "linalg.eig": lambda l: l.linalg.eig(_M),
    "linalg.eigh": lambda l: l.linalg.eigh(_M),
    "linalg.lu": lambda l: l.linalg.lu(_M),
    "linalg.qr": lambda l: l.linalg.qr(_M),
    "linalg.svd": lambda l: l.linalg.svd(_M),
    "linalg.tridiagonal": lambda l: l.linalg.tridiagonal(_M),
    "linalg.hessenberg": lambda l: l.linalg.hessenberg(_M),
    "reduce_tuple": lambda l: l.reduce((_V, _V), (0.0, 0.0),
                                       lambda a, b: (a[0] + b[0], a[1] + b[1]), (0,)),
    "while_loop": lambda l: l.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1]),
                                         (0, 1.0)),
    "scan": lambda l: l.scan(lambda c, x: (c, x), 0.0, _V),
    "cond": lambda l: l.cond(True, lambda: (1.0, 2.0), lambda: (3.0, 4.0)),
    "optimization_barrier": lambda l: l.optimization_barrier((_V, _V)),
}


@pytest.mark.parametrize("name", CONTAINER_CASES)
def test_multiple_results_come_in_jaxs_container(name):
  """Functions with several results return the container JAX's return (a list where JAX hands
  back the primitive's outputs, e.g. top_k and lu; a tuple elsewhere): users print them."""
  want = CONTAINER_CASES[name](jax.lax)
  got = CONTAINER_CASES[name](rl)
  assert type(got) is type(want)
  assert [type(g) for g in got if isinstance(g, (list, tuple))] == \
      [type(w) for w in want if isinstance(w, (list, tuple))]
