"""revax's own finite-difference derivative checks, used by revax's test suite.

These are the checks revax's tests were written and tuned against: central differences computed
in float64 with a per-dtype step (float32: 3e-3) and per-dtype tolerances, random directions
from NumPy Generators. The public `revax.test_util.check_grads/check_jvp/check_vjp` follow
`jax.test_util` exactly instead (its EPS=1e-4, its directions and tolerances), as a library
using them expects (chex's assert_numerical_grads).
"""
from __future__ import annotations

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import get_aval

_EPS = {np.dtype(np.float16): 1e-1, dtypes.bfloat16: 1e-1, np.dtype(np.float32): 3e-3,
        np.dtype(np.float64): 1e-5}
_TOL = {np.dtype(np.float16): 1e-1, dtypes.bfloat16: 1e-1, np.dtype(np.float32): 2e-2,
        np.dtype(np.float64): 1e-5}


def _inexact(x) -> bool:
  return dtypes.is_inexact(get_aval(x).dtype)


def _real_dtype(dtype):
  dtype = np.dtype(dtype)
  return np.finfo(dtype).dtype if dtypes.is_complex(dtype) else dtype


def _rand_like(rng, x):
  aval = get_aval(x)
  if not dtypes.is_inexact(aval.dtype):
    return np.zeros(aval.shape, dtypes.float0)
  v = rng.standard_normal(aval.shape)
  if dtypes.is_complex(aval.dtype):
    v = v + 1j * rng.standard_normal(aval.shape)
  return np.asarray(v, aval.dtype)


def _to64(x) -> np.ndarray:
  a = np.asarray(x)
  return a.astype(np.complex128 if dtypes.is_complex(a.dtype) else np.float64)


def _add_scaled(x, t, eps):
  if not _inexact(x):
    return x
  return (_to64(x) + eps * _to64(t)).astype(get_aval(x).dtype)


def _leaves64(tree):
  return [_to64(leaf) for leaf in tree_util.tree_leaves(tree)
          if np.asarray(leaf).dtype != dtypes.float0]


def _inner(a, b) -> float:
  """The real inner product Re(sum(conj(a) * b)) over the leaves (as jax.test_util's)."""
  la, lb = _leaves64(a), _leaves64(b)
  return sum(np.real(np.vdot(x, y)) for x, y in zip(la, lb, strict=True))


def _conj(tree):
  return tree_util.tree_map(lambda x: np.conj(x) if dtypes.is_complex(np.asarray(x).dtype) else x,
                            tree)


def _assert_close(actual, expected, atol, rtol, what):
  la, le = _leaves64(actual), _leaves64(expected)
  if len(la) != len(le):
    raise AssertionError(f"{what}: {len(la)} leaves vs {len(le)} expected")
  for x, y in zip(la, le):
    np.testing.assert_allclose(x, y, atol=atol, rtol=rtol, err_msg=what)


def _tolerances(args, atol, rtol, eps):
  dts = [get_aval(x).dtype for x in tree_util.tree_leaves(args) if _inexact(x)]
  worst = max(dts, key=lambda d: _TOL[_real_dtype(d)], default=np.dtype(np.float32))
  worst = _real_dtype(worst)
  return (_TOL[worst] if atol is None else atol, _TOL[worst] if rtol is None else rtol,
          _EPS[worst] if eps is None else eps)


def numerical_jvp(f, primals, tangents, eps):
  """Central differences of `f` at `primals` along `tangents` (computed in float64)."""
  plus = f(*[_add_scaled(p, t, eps) for p, t in zip(primals, tangents)])
  minus = f(*[_add_scaled(p, t, -eps) for p, t in zip(primals, tangents)])
  def diff(a, b):
    if np.asarray(a).dtype == dtypes.float0:  # tangents of integer values: nothing to difference
      return a
    return (_to64(a) - _to64(b)) / (2 * eps)
  return tree_util.tree_map(diff, plus, minus)


def check_jvp(f, args, atol=None, rtol=None, eps=None, rng=None):
  """Check `f`'s JVP against central finite differences in a random tangent direction, as
  `jax.test_util.check_jvp`.

  Args:
    f: the function.
    args: a tuple of its arguments (arrays).
    atol, rtol: tolerances (by default from the arguments' dtypes).
    eps: the finite-difference step (by default from the dtypes).
    rng: a NumPy Generator drawing the tangents (default: seeded 0).

  Returns:
    None; raises AssertionError when they differ.

  Example:
    >>> check_jvp(jnp.sin, (jnp.array([0.5, 1.0]),))
  """
  from revax._src.autodiff import jvp
  rng = rng or np.random.default_rng(0)
  atol, rtol, eps = _tolerances(args, atol, rtol, eps)
  tangents = tuple(_rand_like(rng, a) for a in args)
  out, t_out = jvp(f, tuple(args), tangents)
  _assert_close(out, f(*args), atol, rtol, "jvp primal output")
  _assert_close(t_out, numerical_jvp(f, args, tangents, eps), atol, rtol,
                "jvp tangent vs finite differences")


def check_vjp(f, args, atol=None, rtol=None, eps=None, rng=None):
  """Check `f`'s VJP against finite differences: `<J t, ct> == <t, vjp(ct)>` for a random
  tangent `t` and cotangent `ct`, `J t` by central differences, as `jax.test_util.check_vjp`.

  Args:
    f: the function.
    args: a tuple of its arguments (arrays).
    atol, rtol: tolerances (by default from the arguments' dtypes).
    eps: the finite-difference step (by default from the dtypes).
    rng: a NumPy Generator drawing `t` and `ct` (default: seeded 1).

  Returns:
    None; raises AssertionError when they differ.

  Example:
    >>> check_vjp(jnp.sin, (jnp.array([0.5, 1.0]),))
  """
  from revax._src.autodiff import vjp
  rng = rng or np.random.default_rng(1)
  atol, rtol, eps = _tolerances(args, atol, rtol, eps)
  out, f_vjp = vjp(f, *args)
  _assert_close(out, f(*args), atol, rtol, "vjp primal output")
  tangents = tuple(_rand_like(rng, a) for a in args)
  ct = tree_util.tree_map(lambda o: _rand_like(rng, o), out)
  # JAX's VJP of a complex function applies the transposed (not conjugated) Jacobian, so the
  # adjoint for the real inner product is conj(vjp(conj(ct))), as jax.test_util.check_vjp has it
  cts_in = _conj(f_vjp(_conj(ct)))
  lhs = _inner(numerical_jvp(f, args, tangents, eps), ct)
  rhs = _inner(tangents, cts_in)
  np.testing.assert_allclose(lhs, rhs, atol=atol * max(1.0, abs(lhs)), rtol=rtol,
                             err_msg="vjp inner product <J t, c> vs <t, J^T c>")


def check_grads(f, args, order: int, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
  """Check derivatives of `f` at `args` (a tuple) up to `order`, in forward and/or reverse mode.

  Example:
    >>> check_grads(jnp.sin, (0.5,), order=2)  # passes silently; raises on a mismatch
  """
  args = tuple(args)
  for mode in modes:
    if mode not in ("fwd", "rev"):
      raise ValueError(f"unknown mode {mode!r}; expected 'fwd' and/or 'rev'")
  rng = np.random.default_rng(42)

  def check(fun, order):
    if "fwd" in modes:
      check_jvp(fun, args, atol, rtol, eps, rng)
      if order > 1:
        from revax._src.autodiff import jvp
        tangents = tuple(_rand_like(rng, a) for a in args)
        check(lambda *xs: jvp(fun, xs, tangents)[1], order - 1)
    if "rev" in modes:
      check_vjp(fun, args, atol, rtol, eps, rng)
      if order > 1:
        from revax._src.autodiff import vjp
        out = fun(*args)
        ct = tree_util.tree_map(lambda o: _rand_like(rng, o), out)
        check(lambda *xs: vjp(fun, *xs)[1](ct), order - 1)

  check(f, order)


