"""Testing utilities: numerical gradient checks (as jax.test_util) and vmap checks.

`check_grads` compares forward mode with central finite differences along a random direction,
and reverse mode through the inner-product identity <J t, c> = <t, J^T c>, then repeats both on
the derivative functions up to `order`, with jax.test_util's step, directions and tolerances.
`check_vmap` (revax's own) compares vmap with a Python loop over the mapped axis.
"""
from __future__ import annotations

import functools

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import get_aval

# --- jax.test_util's derivative checks, with its exact semantics ---------------------------------
# EPS, the tolerance tables, the directions (np.random.RandomState(0), drawn afresh by each
# check), finite differences in the arguments' own dtypes and the tolerance scaling by size are
# jax.test_util's (jax 0.10.2), so a library's gradient test decides the same way on revax.

EPS = 1e-4

_default_tolerance = {
    dtypes.float0: 0, np.dtype(np.bool_): 0,
    np.dtype(np.int8): 0, np.dtype(np.int16): 0, np.dtype(np.int32): 0, np.dtype(np.int64): 0,
    np.dtype(np.uint8): 0, np.dtype(np.uint16): 0, np.dtype(np.uint32): 0,
    np.dtype(np.uint64): 0,
    dtypes.bfloat16: 1e-2, np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6,
    np.dtype(np.float64): 1e-15, np.dtype(np.complex64): 1e-6, np.dtype(np.complex128): 1e-15,
}

default_gradient_tolerance = {
    dtypes.bfloat16: 1e-1, np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}

_PYTHON_SCALAR_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64),
                         float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


def _dtype(x) -> np.dtype:
  if hasattr(x, "dtype"):
    return np.dtype(x.dtype)
  if type(x) in _PYTHON_SCALAR_DTYPES:
    return _PYTHON_SCALAR_DTYPES[type(x)]
  return np.asarray(x).dtype


def _is_python_scalar(x) -> bool:
  return not isinstance(x, np.generic) and isinstance(x, (bool, int, float, complex))


def _tolerance(dtype, tol=None):
  tol = {} if tol is None else tol
  if not isinstance(tol, dict):
    return tol
  tol = {np.dtype(k): v for k, v in tol.items()}
  dtype = dtypes.canonicalize_dtype(np.dtype(dtype))
  return tol.get(dtype, _default_tolerance[dtype])


def _merge_tolerance(tol, default):
  if tol is None:
    return default
  if not isinstance(tol, dict):
    return tol
  out = dict(default)
  out.update({np.dtype(k): v for k, v in tol.items()})
  return out


def _assert_numpy_close(a, b, atol=None, rtol=None, err_msg=""):
  a, b = np.asarray(a), np.asarray(b)
  assert a.shape == b.shape
  atol = max(_tolerance(a.dtype, atol), _tolerance(b.dtype, atol))
  rtol = max(_tolerance(a.dtype, rtol), _tolerance(b.dtype, rtol))
  if a.dtype == b.dtype == dtypes.float0:
    np.testing.assert_array_equal(a, b, err_msg=err_msg)
    return
  a = a.astype(np.float32) if a.dtype == dtypes.bfloat16 else a
  b = b.astype(np.float32) if b.dtype == dtypes.bfloat16 else b
  kw = {}
  if atol * a.size:
    kw["atol"] = atol * a.size
  if rtol * b.size:
    kw["rtol"] = rtol * b.size
  with np.errstate(invalid="ignore"):
    np.testing.assert_allclose(a, b, **kw, err_msg=err_msg)


def _check_close(xs, ys, atol=None, rtol=None, err_msg=""):
  tree_util.tree_map(lambda x, y: _assert_numpy_close(x, y, atol, rtol, err_msg), xs, ys)


def _check_dtypes_match(xs, ys):
  def match(x, y):
    assert (dtypes.canonicalize_dtype(_dtype(x)) == dtypes.canonicalize_dtype(_dtype(y)))
  tree_util.tree_map(match, xs, ys)


def _inner_prod(xs, ys):
  def contract(x, y):
    return np.real(np.dot(np.conj(x).reshape(-1), np.asarray(y).reshape(-1)))
  leaves = tree_util.tree_leaves(tree_util.tree_map(contract, xs, ys))
  out = leaves[0]
  for leaf in leaves[1:]:
    out = np.add(out, leaf)
  return out


def _safe_subtract(x, y, *, dtype):
  """x - y with inf - inf == 0."""
  with np.errstate(invalid="ignore"):
    return np.where(np.equal(x, y), np.array(0, dtype), np.subtract(x, y, dtype=dtype))


def _preserve_input_types(f):
  def wrapped(*args):
    result = np.array(f(*args), dtype=_dtype(args[0]))
    return result.item() if all(_is_python_scalar(a) for a in args) else result
  return wrapped


def _add(xs, ys):
  return tree_util.tree_map(_preserve_input_types(lambda x, y: np.add(x, y)), xs, ys)


def _sub(xs, ys):
  return tree_util.tree_map(_preserve_input_types(lambda x, y: np.subtract(x, y)), xs, ys)


def _conj(xs):
  return tree_util.tree_map(_preserve_input_types(np.conj), xs)


def _scalar_mul(xs, a):
  def mul(x):
    dtype = _dtype(x)
    result = np.multiply(x, np.array(a, dtype=dtype), dtype=dtype)
    return result.item() if _is_python_scalar(x) else result
  return tree_util.tree_map(mul, xs)


def _rand_like(rng, x):
  shape, dtype = np.shape(x), _dtype(x)
  randn = lambda: np.asarray(rng.randn(*shape), dtype=dtype)  # noqa: E731
  result = randn() + dtype.type(1.0j) * randn() if dtypes.is_complex(dtype) else randn()
  return result.item() if _is_python_scalar(x) else result


def numerical_jvp(f, primals, tangents, eps=EPS):
  """Central differences of `f` at `primals` along `tangents`, in the primals' dtypes (as
  `jax.test_util`'s).

  Args:
    f: the function.
    primals, tangents: tuples of its arguments and of their tangents.
    eps: the step.

  Returns:
    The finite-difference tangent of the output (a tree like `f`'s output).

  Example:
    >>> revax.test_util.numerical_jvp(np.sin, (np.float32(0.),), (np.float32(1.),))
    np.float32(1.0)
  """
  delta = _scalar_mul(tangents, eps)
  f_pos = f(*_add(primals, delta))
  f_neg = f(*_sub(primals, delta))
  diff = tree_util.tree_map(lambda x, y: _safe_subtract(x, y, dtype=_dtype(x)), f_pos, f_neg)
  return _scalar_mul(diff, 0.5 / eps)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
  """Check a JVP from automatic differentiation against finite differences, as
  `jax.test_util.check_jvp`: in one random direction (np.random.RandomState(0)).

  Args:
    f: function to check at `f(*args)`.
    f_jvp: a function computing `revax.jvp` of `f`, typically `functools.partial(revax.jvp, f)`.
    args: tuple of argument values.
    atol, rtol: tolerances (a number or {dtype: value}; default jax's gradient tolerances).
    eps: the finite-difference step.
    err_msg: text added to the error.

  Raises:
    AssertionError: the derivatives do not match.

  Example:
    >>> import functools
    >>> f = jnp.sin
    >>> revax.test_util.check_jvp(f, functools.partial(revax.jvp, f), (0.5,))
  """
  atol = _merge_tolerance(atol, default_gradient_tolerance)
  rtol = _merge_tolerance(rtol, default_gradient_tolerance)
  rng = np.random.RandomState(0)
  tangent = tree_util.tree_map(lambda x: _rand_like(rng, x), args)
  v_out, t_out = f_jvp(args, tangent)
  _check_dtypes_match(v_out, t_out)
  v_out_expected = f(*args)
  _check_dtypes_match(v_out, v_out_expected)
  t_out_expected = numerical_jvp(f, args, tangent, eps=eps)
  _check_close(v_out, v_out_expected, atol=atol, rtol=rtol,
               err_msg=f"{err_msg} primal" if err_msg else "primal")
  _check_close(t_out, t_out_expected, atol=atol, rtol=rtol,
               err_msg=f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
  """Check a VJP from automatic differentiation against finite differences, as
  `jax.test_util.check_vjp`: `<J t, c> == <t, J^T c>` for random `t` and `c`.

  Args:
    f: function to check at `f(*args)`.
    f_vjp: a function computing `revax.vjp` of `f`, typically `functools.partial(revax.vjp, f)`.
    args: tuple of argument values.
    atol, rtol: tolerances (a number or {dtype: value}; default jax's gradient tolerances).
    eps: the finite-difference step.
    err_msg: text added to the error.

  Raises:
    AssertionError: the derivatives do not match.

  Example:
    >>> import functools
    >>> f = jnp.sin
    >>> revax.test_util.check_vjp(f, functools.partial(revax.vjp, f), (0.5,))
  """
  atol = _merge_tolerance(atol, default_gradient_tolerance)
  rtol = _merge_tolerance(rtol, default_gradient_tolerance)
  rng = np.random.RandomState(0)
  v_out, vjpfun = f_vjp(*args)
  v_out_expected = f(*args)
  _check_close(v_out, v_out_expected, atol=atol, rtol=rtol,
               err_msg=f"{err_msg} primal" if err_msg else "primal")
  tangent = tree_util.tree_map(lambda x: _rand_like(rng, x), args)
  tangent_out = numerical_jvp(f, args, tangent, eps=eps)
  cotangent = tree_util.tree_map(lambda x: _rand_like(rng, x), v_out)
  cotangent_out = _conj(vjpfun(_conj(cotangent)))
  ip = _inner_prod(tangent, cotangent_out)
  ip_expected = _inner_prod(tangent_out, cotangent)
  _check_close(ip, ip_expected, atol=atol, rtol=rtol,
               err_msg=f"{err_msg} cotangent projection" if err_msg else "cotangent projection")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
  """Check gradients from automatic differentiation against finite differences, as
  `jax.test_util.check_grads` (the same directions, step and tolerances).

  Args:
    f: function to check at `f(*args)`.
    args: tuple of argument values.
    order: derivatives up to this order are checked.
    modes: 'fwd', 'rev' and/or 'lin' (forward mode through linearize).
    atol, rtol: tolerances (a number or {dtype: value}).
    eps: the finite-difference step (default 1e-4).

  Raises:
    AssertionError: the derivatives do not match.

  Example:
    >>> from revax.test_util import check_grads
    >>> check_grads(jnp.sin, (0.5,), order=2)  # passes silently; raises on a mismatch
  """
  from revax._src.autodiff import jvp, linearize, vjp
  args = tuple(args)
  eps = eps or EPS

  def jvp_from_lin(fun, primals, tangents):
    primal_out, f_lin = linearize(fun, *primals)
    return primal_out, f_lin(*tangents)

  def check(fun, args, order, err_msg=""):
    if "fwd" in modes:
      fwd_msg = f"JVP of {err_msg}" if err_msg else "JVP"
      check_jvp(fun, functools.partial(jvp, fun), args, atol, rtol, eps, fwd_msg)
      if order > 1:
        check(functools.partial(jvp, fun), (args, args), order - 1, fwd_msg)
    if "rev" in modes:
      rev_msg = f"VJP of {err_msg}" if err_msg else "VJP"
      check_vjp(fun, functools.partial(vjp, fun), args, atol, rtol, eps, rev_msg)
      if order > 1:
        def f_vjp(*xs):
          out_primal, vjp_fn = vjp(fun, *xs)
          return vjp_fn(out_primal)
        check(f_vjp, args, order - 1, rev_msg)
    if "lin" in modes:
      lin_msg = f"LIN of {err_msg}" if err_msg else "LIN"
      check_jvp(fun, functools.partial(jvp_from_lin, fun), args, atol, rtol, eps, lin_msg)
      if order > 1:
        check(functools.partial(jvp_from_lin, fun), (args, args), order - 1, lin_msg)

  check(f, args, order)


def check_vmap(f, args, in_axes=0, out_axes=0, atol=1e-5, rtol=1e-5):
  """vmap(f, in_axes, out_axes)(*args) equals stacking f over the mapped axis example by example."""
  from revax._src.vmap import _axes_leaves, vmap
  args = tuple(args)
  leaves, tree = tree_util.tree_flatten(args)
  axes = _axes_leaves("in_axes", in_axes if not isinstance(in_axes, list) else tuple(in_axes), args)
  sizes = {np.shape(x)[a] for x, a in zip(leaves, axes) if a is not None}
  assert len(sizes) == 1, f"check_vmap needs one mapped size, got {sizes}"
  (n,) = sizes
  batched = vmap(f, in_axes, out_axes)(*args)
  per_example = []
  for i in range(n):
    ex = [np.take(np.asarray(x), i, axis=a) if a is not None else x for x, a in zip(leaves, axes)]
    per_example.append(f(*tree_util.tree_unflatten(tree, ex)))
  out_leaves, out_tree = tree_util.tree_flatten(batched)
  o_axes = _axes_leaves("out_axes", out_axes, batched)
  for j, (b, oa) in enumerate(zip(out_leaves, o_axes)):
    expected = [np.asarray(tree_util.tree_leaves(p)[j]) for p in per_example]
    if oa is None:
      for e in expected:
        np.testing.assert_allclose(np.asarray(b), e, atol=atol, rtol=rtol)
      continue
    stacked = np.stack(expected, axis=oa % (np.ndim(b)))
    assert np.asarray(b).dtype == stacked.dtype, f"vmap output dtype {np.asarray(b).dtype} != {stacked.dtype}"
    np.testing.assert_allclose(np.asarray(b), stacked, atol=atol, rtol=rtol)
