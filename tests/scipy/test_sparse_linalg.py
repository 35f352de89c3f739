"""revax.scipy.sparse.linalg (cg, bicgstab, gmres) against jax.scipy.sparse.linalg (and the dense solution): matrix,
function and pytree operators, preconditioners, tolerances, complex systems, jit, vmap and
forward-mode derivatives, and reverse-mode gradients (implicit, through lax.custom_linear_solve)
with respect to b and to the operator's matrix or parameters, against jax.grad."""
import jax
import numpy as np
import pytest

import revax
import revax.scipy.sparse.linalg as rs
import jax.scipy.sparse.linalg as js

RNG = np.random.RandomState(0)
_A = RNG.randn(6, 6).astype(np.float32)
SPD = _A @ _A.T + 6 * np.eye(6, dtype=np.float32)
NONSYM = _A + 6 * np.eye(6, dtype=np.float32)
B = RNG.randn(6).astype(np.float32)
JACOBI = np.diag(1 / np.diag(SPD)).astype(np.float32)
HERM = (SPD + 1j * (_A - _A.T)).astype(np.complex64)

CASES = [
    ("cg", (SPD, B), {}), ("cg", (SPD, B), {"M": JACOBI}),
    ("cg", (lambda x: SPD @ x, B), {"tol": 1e-3}), ("cg", (SPD, B), {"maxiter": 2}),
    ("cg", (HERM, (B + 1j * B).astype(np.complex64)), {}),
    ("bicgstab", (NONSYM, B), {}), ("bicgstab", (NONSYM, B), {"M": JACOBI, "x0": B}),
    ("gmres", (NONSYM, B), {}), ("gmres", (NONSYM, B), {"solve_method": "incremental"}),
    ("gmres", (NONSYM, B), {"restart": 3, "M": JACOBI}),
    ("gmres", (NONSYM, B), {"restart": 3, "solve_method": "incremental", "x0": B}),
    ("gmres", ((NONSYM + 1j * _A.T).astype(np.complex64), (B + 1j * B[::-1]).astype(np.complex64)),
     {"solve_method": "incremental"}),
]


@pytest.mark.parametrize("name,args,kw", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_equals_jax(name, args, kw):
  r, info = getattr(rs, name)(*args, **kw)
  j, j_info = jax.jit(lambda: getattr(js, name)(*args, **kw))()
  assert r.dtype == j.dtype and r.shape == j.shape
  if name == "gmres":
    assert np.asarray(info).dtype == np.asarray(j_info).dtype and int(info) == int(j_info) == 0
  else:
    assert info is None
  np.testing.assert_allclose(np.asarray(r), np.asarray(j), rtol=1e-5, atol=1e-6)
  if "maxiter" not in kw and "tol" not in kw:
    np.testing.assert_allclose(r, np.linalg.solve(args[0], args[1]), rtol=1e-4, atol=1e-4)


def test_pytree_jit_vmap_and_forward_derivative():
  op = lambda t: {"a": 2 * t["a"], "b": SPD @ t["b"]}
  x, _ = rs.cg(op, {"a": np.ones(2, np.float32), "b": B})
  np.testing.assert_allclose(x["a"], 0.5 * np.ones(2), rtol=1e-5)
  np.testing.assert_allclose(x["b"], np.linalg.solve(SPD, B), rtol=1e-4, atol=1e-5)
  x, _ = rs.gmres(op, {"a": np.ones(2, np.float32), "b": B}, solve_method="incremental")
  np.testing.assert_allclose(x["b"], np.linalg.solve(SPD, B), rtol=1e-4, atol=1e-5)
  jitted = revax.jit(lambda b: rs.bicgstab(NONSYM, b)[0])(B)
  np.testing.assert_allclose(jitted, np.linalg.solve(NONSYM, B), rtol=1e-4, atol=1e-5)
  bs = np.stack([B, 2 * B])
  batched = revax.vmap(lambda b: rs.cg(SPD, b)[0])(bs)
  np.testing.assert_allclose(batched, np.linalg.solve(SPD, bs.T).T, rtol=1e-4, atol=1e-5)
  _, tangent = revax.jvp(lambda b: rs.cg(SPD, b, tol=1e-7)[0], (B,), (B,))
  np.testing.assert_allclose(tangent, np.linalg.solve(SPD, B), rtol=1e-3, atol=1e-4)


GRAD_CASES = [("cg", SPD, {}), ("cg", SPD, {"M": JACOBI}), ("bicgstab", NONSYM, {}),
              ("gmres", NONSYM, {"restart": 3})]
WEIGHTS = np.linspace(0.5, 2.0, 6).astype(np.float32)


@pytest.mark.parametrize("name,a,kw", GRAD_CASES,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(GRAD_CASES)])
def test_grad_wrt_matrix_and_b_equals_jax(name, a, kw):
  def loss(mod, solver, a, b):
    x = solver(a, b, tol=1e-6, **kw)[0]
    return mod.numpy.sum(WEIGHTS * x * x)

  r_grads = revax.jit(revax.grad(lambda a, b: loss(revax, getattr(rs, name), a, b), (0, 1)))(a, B)
  j_grads = jax.grad(lambda a, b: loss(jax, getattr(js, name), a, b), (0, 1))(a, B)
  for r, j in zip(r_grads, j_grads, strict=True):
    assert r.dtype == j.dtype and r.shape == j.shape
    np.testing.assert_allclose(np.asarray(r), np.asarray(j), rtol=1e-4, atol=1e-5)
  # and the dense oracle: d/db of w.x^2 is 2 A^-T (w x), d/dA is its outer product with -x
  x = np.linalg.solve(a, B)
  b_bar = np.linalg.solve(a.T, 2 * WEIGHTS * x)
  np.testing.assert_allclose(r_grads[1], b_bar, rtol=1e-3, atol=1e-4)
  np.testing.assert_allclose(r_grads[0], -np.outer(b_bar, x), rtol=1e-3, atol=1e-4)


def test_grad_wrt_operator_parameters_pytrees_and_complex_equals_jax():
  def shifted(mod, solver, p, b):  # A(p) = SPD + p diag(1..6), p closed over by the function
    d = mod.numpy.arange(1.0, 7.0)
    x = solver(lambda v: SPD @ v + p * d * v, b, tol=1e-6)[0]
    return mod.numpy.sum(x * x)

  for name in ("cg", "bicgstab", "gmres"):
    r = revax.grad(lambda p: shifted(revax, getattr(rs, name), p, B))(np.float32(0.5))
    j = jax.grad(lambda p: shifted(jax, getattr(js, name), p, B))(np.float32(0.5))
    assert r.dtype == j.dtype and r.shape == j.shape == ()
    np.testing.assert_allclose(r, j, rtol=1e-4)

  def tree(mod, solver, b):  # a pytree right-hand side
    x = solver(lambda t: {"a": 2 * t["a"], "b": SPD @ t["b"]}, b, tol=1e-6)[0]
    return mod.numpy.sum(x["a"] ** 3) + mod.numpy.sum(x["b"] ** 2)

  b_tree = {"a": np.array([1.0, -2.0], np.float32), "b": B}
  r = revax.grad(lambda b: tree(revax, rs.cg, b))(b_tree)
  j = jax.grad(lambda b: tree(jax, js.cg, b))(b_tree)
  for key in ("a", "b"):
    np.testing.assert_allclose(r[key], j[key], rtol=1e-4, atol=1e-5)

  def herm(mod, b):  # Hermitian, not symmetric: the transpose solve runs cg on conj(A)
    solver = rs.cg if mod is revax else js.cg
    x = solver(HERM, b.astype(np.complex64), tol=1e-6)[0]
    return mod.numpy.sum(mod.numpy.abs(x) ** 2)

  r = revax.grad(lambda b: herm(revax, b))(B)
  j = jax.grad(lambda b: herm(jax, b))(B)
  np.testing.assert_allclose(r, j, rtol=1e-4, atol=1e-5)


def test_errors_match_jax():
  for m in (rs, js):
    with pytest.raises(ValueError, match="square matrix"):
      m.cg(np.ones((2, 3), np.float32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="function or ndarray"):
      m.cg("A", np.ones(2, np.float32))
    with pytest.raises(ValueError, match="tree structure"):
      m.cg(lambda x: x, {"a": np.ones(2)}, x0=[np.ones(2)])
    with pytest.raises(ValueError, match="matching shapes"):
      m.bicgstab(lambda x: x, np.ones(2, np.float32), x0=np.ones(3, np.float32))
    with pytest.raises(ValueError, match="invalid solve_method"):
      m.gmres(SPD, B, solve_method="direct")
