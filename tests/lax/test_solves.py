"""custom_linear_solve and custom_root against jax 0.10.2: values eagerly and under jit,
implicit derivatives (grad, jvp, jit(grad)), vmap with the operator and/or the right-hand side
batched, iterative solvers in while loops (never differentiated themselves), has_aux, pytree
right-hand sides, and JAX's errors."""
import numpy as np
import pytest

import revax
import revax.lax as rlax
import revax.numpy as rnp

jax = pytest.importorskip("jax")
jnp, jlax = jax.numpy, jax.lax

rng = np.random.default_rng(5)
M = rng.standard_normal((4, 4)).astype(np.float32) * 0.3
A = M + 2 * np.eye(4, dtype=np.float32)
SPD = (M @ M.T + np.eye(4)).astype(np.float32)
B = rng.standard_normal(4).astype(np.float32)


def _cg(np_, lax, matvec, b, iters=12):
  """Conjugate gradients as a fixed-length while loop (not differentiable in reverse mode)."""
  def body(state):
    k, x, r, p = state
    ap = matvec(p)
    alpha = (r @ r) / (p @ ap)
    x, r_new = x + alpha * p, r - alpha * ap
    p = r_new + ((r_new @ r_new) / (r @ r)) * p
    return k + 1, x, r_new, p
  _, x, _, _ = lax.while_loop(lambda s: s[0] < iters, body, (0, np_.zeros_like(b), b, b))
  return x


def _programs(np_, lax):
  def dense(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, r: np_.linalg.solve(a, r),
                                   lambda vm, r: np_.linalg.solve(a.T, r))

  def cg_symmetric(a, b):
    s = a @ a.T + np_.eye(4)
    return lax.custom_linear_solve(lambda x: s @ x, b, lambda mv, r: _cg(np_, lax, mv, r),
                                   symmetric=True)

  def tree_aux(a, b):
    def solve(mv, r):
      return {"u": np_.linalg.solve(a, r["u"]), "v": r["v"] / 3.0}, np_.sum(r["u"])
    def tsolve(vm, r):
      return {"u": np_.linalg.solve(a.T, r["u"]), "v": r["v"] / 3.0}, np_.sum(r["v"])
    x, aux = lax.custom_linear_solve(lambda x: {"u": a @ x["u"], "v": 3.0 * x["v"]},
                                     {"u": b, "v": b[:2]}, solve, tsolve, has_aux=True)
    return x["u"] + aux, x["v"]

  def newton_sqrt(a, b):
    def newton(g, x0):
      return lax.while_loop(lambda x: np_.max(np_.abs(g(x))) > 1e-6,
                            lambda x: x - g(x) / (2 * x), x0)
    target = a[0] ** 2 + 1.0
    return lax.custom_root(lambda x: x ** 2 - target, np_.ones_like(target), newton,
                           lambda g, y: y / g(np_.ones_like(y)))

  def root_vector_aux(a, b):
    # the root of x -> a x - b (with a solver returning aux), tangent system by a dense solve
    def solve(f, x0):
      return np_.linalg.solve(a, b), np_.float32(1)
    root, aux = lax.custom_root(lambda x: a @ x - b, np_.zeros_like(b), solve,
                                lambda g, y: np_.linalg.solve(a, y), has_aux=True)
    return root * aux

  return {"dense": dense, "cg_symmetric": cg_symmetric, "tree_aux": tree_aux,
          "newton_sqrt": newton_sqrt, "root_vector_aux": root_vector_aux}


R, J = _programs(rnp, rlax), _programs(jnp, jlax)
ARGS = {"cg_symmetric": (M, B)}


def _close(got, want, tol=2e-4):
  for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def _loss(f):
  return lambda a, b: sum(jax.tree.leaves(jax.tree.map(lambda o: (o * o).sum(), f(a, b))))


@pytest.mark.parametrize("name", sorted(R))
def test_values_and_grads_match_jax(name):
  args = ARGS.get(name, (A, B))
  want = jax.jit(J[name])(*args)  # (jax's eager linalg takes seconds; jit is its oracle here)
  _close(R[name](*args), want)
  _close(revax.jit(R[name])(*args), want)
  want = jax.jit(jax.grad(_loss(J[name]), argnums=(0, 1)))(*args)
  _close(revax.grad(_loss(R[name]), argnums=(0, 1))(*args), want)
  _close(revax.jit(revax.grad(_loss(R[name]), argnums=(0, 1)))(*args), want)


@pytest.mark.parametrize("name", ["dense", "cg_symmetric", "newton_sqrt"])
def test_jvp_matches_jax(name):
  args = ARGS.get(name, (A, B))
  tangents = (np.ones_like(args[0]) * 0.1, np.ones_like(args[1]))
  _close(revax.jvp(R[name], args, tangents),
         jax.jit(lambda p, t: jax.jvp(J[name], p, t))(args, tangents))


@pytest.mark.parametrize("name,in_axes", [("dense", (0, 0)), ("dense", (None, 0)),
                                          ("dense", (0, None)), ("cg_symmetric", (None, 0)),
                                          ("newton_sqrt", (0, None)), ("tree_aux", (None, 0))])
def test_vmap_matches_jax(name, in_axes):
  a, b = ARGS.get(name, (A, B))
  args = tuple(np.stack([x, 1.1 * x, -x]) if ax == 0 else x for x, ax in zip((a, b), in_axes))
  _close(revax.vmap(R[name], in_axes=in_axes)(*args),
         jax.jit(jax.vmap(J[name], in_axes=in_axes))(*args))


def test_grad_of_vmap_of_dense_solve():
  bs = np.stack([B, -B])
  f = lambda lib, prog: lambda a: lib.vmap(prog, in_axes=(None, 0))(a, bs).sum() ** 2
  _close(revax.grad(f(revax, R["dense"]))(A), jax.jit(jax.grad(f(jax, J["dense"])))(A))


def test_jaxpr_binds_custom_linear_solve():
  jaxpr = revax.make_jaxpr(R["dense"])(A, B)
  (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == "custom_linear_solve"]
  assert len(eqn.params["jaxprs"]) == 4 and tuple(eqn.params["const_lengths"]) == (1, 1, 1, 1)


def test_errors_of_jax():
  for lib, lax, np_ in ((revax, rlax, rnp), (jax, jlax, jnp)):
    no_transpose = lambda a, b: lax.custom_linear_solve(
        lambda x: a @ x, b, lambda mv, r: np_.linalg.solve(a, r))
    no_transpose(A, B)  # forward mode needs no transpose solver
    lib.jvp(no_transpose, (A, B), (A, B))
    with pytest.raises(TypeError, match="transpose_solve required"):
      lib.grad(lambda b: no_transpose(A, b).sum())(B)
    with pytest.raises(ValueError, match=r"matvec\(\) output shapes must match b"):
      lax.custom_linear_solve(lambda x: x[:2], B, lambda mv, r: r)
    with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match b"):
      lax.custom_linear_solve(lambda x: x, B, lambda mv, r: (r,))
    with pytest.raises(ValueError):  # jax: "too many values to unpack"
      lax.custom_linear_solve(lambda x: x, B, lambda mv, r: r, has_aux=True)
    with pytest.raises(TypeError, match=r"f\(\) output pytree structure must match "
                                        r"initial_guess"):
      lax.custom_root(lambda x: (x, x), B, lambda f, x: x, lambda g, y: y)
  with pytest.raises(ValueError, match="auxiliary output was expected"):
    rlax.custom_linear_solve(lambda x: x, B, lambda mv, r: r, has_aux=True)
