"""Fuzz families for autodiff as people write it (issue 14): Python-scalar points and weak types,
has_aux, and Python control flow on concrete primals, each through every transformation,
against jax 0.10.2.

A case is a scalar program (written once against an `Api`, so the same code builds the revax and
the JAX version), a point (Python floats, or float32 arrays where the family needs arrays) and a
transformation drawn from the family's list. `compare` checks structure, values, dtypes and weak
types leaf by leaf, and that no revax tracer leaks into a result.

Programs are smooth at the drawn points: values are drawn from a grid that keeps clear of the
branch thresholds (0 and 1) the control-flow programs test, so revax and JAX take the same
branch and derivatives agree.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import numpy as np
from hypothesis import strategies as st

from revax._src.core.trace import Tracer
from tests.fuzz.harness import JAX, REVAX
from tests.platform_tolerances import allclose_tol

# points, clear of the thresholds 0 and 1 and of each other
POINTS = (-2.3, -1.45, -0.6, -0.35, 0.3, 0.55, 0.8, 1.35, 1.9, 2.6)


def _f32(x):
  return np.float32(x)


# --- programs ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ScalarProgram:
  """`build(api) -> f(x)` of one scalar. `domain` limits the points drawn for it."""
  name: str
  build: Callable
  positive: bool = False

  def __repr__(self):
    return f"ScalarProgram({self.name})"


def _smooth_programs():
  return [
      ScalarProgram("sin_times_x", lambda a: lambda x: a.np.sin(x) * x),
      ScalarProgram("square", lambda a: lambda x: a.np.square(x) + x),
      ScalarProgram("log1p_exp", lambda a: lambda x: a.np.log1p(a.np.exp(x))),
      ScalarProgram("tanh_poly", lambda a: lambda x: a.np.tanh(x) * x ** 3 - 2.0 * x),
      ScalarProgram("strong_constant", lambda a: lambda x: x * a.np.float32(1.5) + a.np.cos(x)),
      ScalarProgram("int_constant", lambda a: lambda x: x * 3 + 2 * a.np.sin(x)),
      ScalarProgram("sqrt_hypot", lambda a: lambda x: a.np.sqrt(x * x + 1.0)),
      ScalarProgram("logaddexp", lambda a: lambda x: a.np.logaddexp(x, 0.5) * x),
      ScalarProgram("where_select", lambda a: lambda x: a.np.where(x > 0, x * x, -x)),
      ScalarProgram("arcsinh_erf", lambda a: lambda x: a.np.arcsinh(x) + a.lax.erf(x)),
      ScalarProgram("softplus", lambda a: lambda x: a.nn.softplus(x) * a.nn.sigmoid(x)),
      ScalarProgram("log_positive", lambda a: lambda x: a.np.log(x) * x, positive=True),
      # (no float powers: JAX's own pow rules give weak types that differ between its eager
      # and jitted grad, so there is no one behaviour to match)
  ]


def _control_flow_programs():
  """Programs that read primal values in Python (bool, int, item, max, sorted, masks)."""
  def branch(a):
    return lambda x: a.np.sin(x) * x if x > 0 else x * x * 0.5

  def while_loop(a):
    def f(x):
      y, n = x, 0
      while a.np.abs(y) < 4.0 and n < 6:
        y, n = y * 1.7 + 0.1, n + 1
      return y
    return f

  def int_count(a):
    return lambda x: x * int(a.np.abs(x) * 2.0) + a.np.exp(x)

  def item(a):
    return lambda x: x * float(a.np.cos(x).item()) + x * x

  def python_max(a):
    return lambda x: max(x, 1.0 - x) * a.np.sin(x)

  def python_sorted(a):
    return lambda x: sum(sorted([x, x * x, 2.0 - x])[:2])

  def bool_mask(a):
    def f(x):
      v = a.np.stack([x, -x, 2.0 * x - 1.0, x * x])
      return a.np.sum(v[v > 0.2] ** 2)
    return f

  def index_by_value(a):
    return lambda x: a.np.arange(1.0, 9.0)[int(a.np.abs(x) * 2.0)] * a.np.tanh(x)

  def early_return(a):
    def f(x):
      for k in range(4):
        if x * k > 1.0:
          return x * k
      return a.np.exp(x)
    return f

  return [ScalarProgram(f.__name__, f) for f in (branch, while_loop, int_count, item,
                                                 python_max, python_sorted, bool_mask,
                                                 index_by_value, early_return)]


SMOOTH = _smooth_programs()
CONTROL_FLOW = _control_flow_programs()


def points_for(program):
  return tuple(p for p in POINTS if p > 0) if program.positive else POINTS


# --- transformations -----------------------------------------------------------------------------
def _custom_vjp_of(api, f):
  g = api.top.custom_vjp(f)

  def fwd(x):
    y, f_vjp = api.top.vjp(f, x)
    return y, (x,)

  def bwd(res, ct):
    (x,) = res
    return (api.top.grad(f)(x) * ct,)

  g.defvjp(fwd, bwd)
  return g


def _custom_jvp_of(api, f):
  g = api.top.custom_jvp(f)
  g.defjvp(lambda primals, tangents: api.top.jvp(f, primals, tangents))
  return g


def weak_type_cases(api, f, x):
  """Transformation name -> thunk, at Python float `x` (weak) unless said otherwise."""
  top = api.top
  return {
      "value": lambda: f(x),
      "jit": lambda: top.jit(f)(x),
      "grad": lambda: top.grad(f)(x),
      "value_and_grad": lambda: top.value_and_grad(f)(x),
      "jvp": lambda: top.jvp(f, (x,), (1.0,)),
      "vjp": lambda: top.vjp(f, x)[1](1.0),
      "vjp_strong_ct": lambda: top.vjp(f, x)[1](_f32(1.0)),
      "jacfwd": lambda: top.jacfwd(f)(x),
      "jacrev": lambda: top.jacrev(f)(x),
      "hessian": lambda: top.hessian(f)(x),
      "linearize": lambda: top.linearize(f, x)[1](0.5),
      "checkpoint": lambda: top.grad(top.checkpoint(f))(x),
      "custom_vjp": lambda: top.grad(_custom_vjp_of(api, f))(x),
      "jit_grad": lambda: top.jit(top.grad(f))(x),
      "grad_jit": lambda: top.grad(top.jit(f))(x),
      "grad_grad": lambda: top.grad(top.grad(f))(x),
      "vmap_scalar_arg": lambda: top.vmap(lambda v, s: f(v * s), in_axes=(0, None))(
          api.np.asarray([0.5, 0.75], api.np.float32), x),
      "vmap_grad": lambda: top.vmap(top.grad(f))(api.np.asarray([x, x * 0.5 + 0.1],
                                                               api.np.float32)),
      "float32_point": lambda: top.grad(f)(_f32(x)),
  }


WEAK_TYPE_TRANSFORMS = tuple(weak_type_cases(REVAX, None, 0.0))


def has_aux_cases(api, f, x):
  """Transformation name -> thunk for `g(x) = (loss, aux)` built from scalar program `f`."""
  top, np_ = api.top, api.np

  def g(v):
    y = f(v)
    return y, {"y": y, "dy": np_.cos(v) * y, "const": 2.5, "pair": (v * 3.0, np_.exp(v))}

  def loss_of_aux(v):  # an outer grad differentiates through the aux of an inner grad
    _, aux = top.grad(g, has_aux=True)(v)
    return aux["dy"] + aux["pair"][1]

  return {
      "grad": lambda: top.grad(g, has_aux=True)(x),
      "value_and_grad": lambda: top.value_and_grad(g, has_aux=True)(x),
      "vjp": lambda: (lambda r: (r[0], r[1](1.0), r[2]))(top.vjp(g, x, has_aux=True)),
      "jvp": lambda: top.jvp(g, (x,), (1.0,), has_aux=True),
      "linearize": lambda: (lambda r: (r[0], r[1](1.0), r[2]))(
          top.linearize(g, x, has_aux=True)),
      "jacfwd": lambda: top.jacfwd(lambda v: (f(v), {"a": v * f(v)}), has_aux=True)(x),
      "jacrev": lambda: top.jacrev(g, has_aux=True)(x),
      "hessian": lambda: top.hessian(lambda v: (f(v), {"a": v * f(v)}), has_aux=True)(x),
      "jit_grad": lambda: top.jit(top.grad(g, has_aux=True))(x),
      "grad_jit": lambda: top.grad(top.jit(g), has_aux=True)(x),
      "vmap_grad": lambda: top.vmap(top.grad(g, has_aux=True))(
          np_.asarray([x, x * 0.5 + 0.1], np_.float32)),
      "outer_grad_of_aux": lambda: top.grad(loss_of_aux)(x),
      "jit_outer_grad_of_aux": lambda: top.jit(top.grad(loss_of_aux))(x),
  }


HAS_AUX_TRANSFORMS = tuple(has_aux_cases(REVAX, None, 0.0))


def control_flow_cases(api, f, x):
  """Every eager transformation at point `x` (a Python float or a float32 scalar)."""
  top = api.top
  return {
      "grad": lambda: top.grad(f)(x),
      "value_and_grad": lambda: top.value_and_grad(f)(x),
      "jvp": lambda: top.jvp(f, (x,), (_f32(1.0) if not isinstance(x, float) else 1.0,)),
      "vjp": lambda: (lambda r: (r[0], r[1](api.np.ones_like(r[0]))))(top.vjp(f, x)),
      "linearize": lambda: (lambda r: (r[0], r[1](api.np.ones_like(x))))(top.linearize(f, x)),
      "jacfwd": lambda: top.jacfwd(f)(x),
      "jacrev": lambda: top.jacrev(f)(x),
      "hessian": lambda: top.hessian(f)(x),
      "grad_grad": lambda: top.grad(top.grad(f))(x),
      "jvp_of_grad": lambda: top.jvp(top.grad(f), (x,), (_f32(1.0) if not isinstance(x, float)
                                                          else 1.0,)),
      # custom rules whose functions read values: JAX runs them untraced on known primals
      "custom_jvp_grad": lambda: top.grad(_custom_jvp_of(api, f))(x),
      "custom_vjp_grad": lambda: top.grad(_custom_vjp_of(api, f))(x),
      "custom_vjp_value_and_grad": lambda: top.value_and_grad(_custom_vjp_of(api, f))(x),
  }


CONTROL_FLOW_TRANSFORMS = tuple(control_flow_cases(REVAX, None, 0.0))


# --- running and comparing -----------------------------------------------------------------------
def run_both(cases_of, program, x, transform):
  """(revax result, jax result) of one case."""
  r = cases_of(REVAX, program.build(REVAX), x)[transform]()
  j = cases_of(JAX, program.build(JAX), x)[transform]()
  return r, j


def compare(r_out, j_out, context, rtol=2e-5, atol=2e-6):
  """Same structure, values, dtypes and weak types, and no revax tracer in the result."""
  r_leaves, r_tree = jax.tree_util.tree_flatten(r_out)
  j_leaves, j_tree = jax.tree_util.tree_flatten(j_out)
  assert r_tree == j_tree, f"{context}: structure {r_tree} != jax's {j_tree}"
  for r, j in zip(r_leaves, j_leaves, strict=True):
    assert not isinstance(r, Tracer), f"{context}: a tracer leaked: {r!r}"
    if not hasattr(j, "dtype"):
      assert type(r) is type(j) and r == j, f"{context}: {r!r} != jax's {j!r}"
      continue
    assert np.dtype(r.dtype) == np.dtype(j.dtype), f"{context}: dtype {r.dtype} != {j.dtype}"
    assert bool(getattr(r, "weak_type", False)) == bool(j.weak_type), \
        f"{context}: weak_type {getattr(r, 'weak_type', None)} != jax's {j.weak_type}"
    # (on a TPU: the chip's log/exp/tanh under jit, TRANSCENDENTAL)
    np.testing.assert_allclose(np.asarray(r, np.float64), np.asarray(j, np.float64),
                               **allclose_tol(rtol, atol), err_msg=context)


def cases(programs, transforms):
  """A hypothesis strategy of (program, point, transform)."""
  return st.sampled_from(programs).flatmap(
      lambda p: st.tuples(st.just(p), st.sampled_from(points_for(p)), st.sampled_from(transforms)))
