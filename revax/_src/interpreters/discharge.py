"""Discharging state: turn a jaxpr that uses mutable array references into a pure one.

A ref is replaced by the value it holds. The interpreter walks the equations with an
environment from variables to values; a ref variable's entry is its current contents. `new_ref`
makes the entry the initial value, `freeze` reads it, and the read/write primitives
(`discharge_rules`, registered with them in lax/state.py) compute their results and the ref's
new contents with pure operations, which replace the entry. A jaxpr nested in a param (a loop
body, a branch, a call) that creates and uses refs of its own is discharged the same way;
nested jaxprs that take refs from outside are threaded by their wrappers before they are bound
(lax/state.py's `call_threading_refs`), so they never reach this pass.

A ref that is a value of the enclosing context rather than an input or a creation of the
program (a residual of a linear program being transposed: the ref a custom_vjp function took,
handed to its `custom_lin`) stays live: what uses it is bound as it is, so the bwd rule that
transposition runs writes into the ref itself (custom_vjp_refs.py).

The result of `discharge_state` takes the values of the original inputs (a Ref input becomes an
input of its inner type) and returns the original outputs followed by the final contents of the
Ref inputs, in order. jit lowers the discharged program (refs passed to a jitted function are
read before the call and written back after it); reverse mode transposes the discharged linear
program (the tangents of refs created inside a differentiated function live in it).
"""
from __future__ import annotations

import threading

from revax._src.core.avals import AbstractRef
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from revax._src.interpreters import staging

# prim -> rule(*invals, **params) -> (per input: its ref's new contents or None, outputs)
discharge_rules: dict = {}
ref_creating: dict = {}  # prim -> fn(*invals, **params) -> the new ref's contents (new_ref)
ref_reading: dict = {}  # prim -> fn(contents) -> output (freeze)
# the rules above that also take operands that stay refs (custom_vjp_call: its operands are
# refs of the enclosing context and contents of discharged refs, mixed)
discharge_rules_with_live_refs: set = set()


def _param_jaxprs(value):
  if isinstance(value, ClosedJaxpr):
    yield value.jaxpr
  elif isinstance(value, Jaxpr):
    yield value
  elif isinstance(value, tuple):
    for v in value:
      yield from _param_jaxprs(v)


def has_refs(jaxpr: Jaxpr) -> bool:
  """Whether `jaxpr` (nested jaxprs included) takes, creates or uses a mutable array ref."""
  if any(isinstance(v.aval, AbstractRef) for v in jaxpr.invars + jaxpr.constvars):
    return True
  for eqn in jaxpr.eqns:
    prim = eqn.primitive
    if prim in discharge_rules or prim in ref_creating or prim in ref_reading:
      return True
    for value in eqn.params.values():
      if any(has_refs(j) for j in _param_jaxprs(value)):
        return True
  return False


ref_reads: set = set()  # prims that only read a ref (get); freeze is in `ref_reading`


def writes_ref(jaxpr: Jaxpr, k: int) -> bool:
  """Whether `jaxpr` may change the contents of its input `k` (a ref): an equation takes it
  that is not a pure read. Its wrappers hand back only the contents of refs it writes (an
  unchanged ref is not written under vmap, where a write to an unbatched ref is an error)."""
  v = jaxpr.invars[k]
  return any(eqn.primitive not in ref_reads and eqn.primitive not in ref_reading
             and any(a is v for a in eqn.invars) for eqn in jaxpr.eqns)


def passes_refs_on(jaxpr: Jaxpr) -> bool:
  """Whether an equation of `jaxpr` hands a ref to a primitive that takes refs themselves
  (`discharge_rules_with_live_refs`: a custom_vjp function taking refs)."""
  return any(eqn.primitive in discharge_rules_with_live_refs and any(
      type(a) is not Literal and isinstance(a.aval, AbstractRef) for a in eqn.invars)
      for eqn in jaxpr.eqns)


def eval_discharged(jaxpr: Jaxpr, consts, args) -> tuple[list, list]:
  """Evaluate `jaxpr` (under the current trace) with every ref replaced by its contents; a Ref
  input's argument is its initial contents. Returns (outputs, final contents of the Ref
  inputs)."""
  env = {}

  def read(a):
    return a.val if type(a) is Literal else env[a]

  for v, c in zip(jaxpr.constvars, consts, strict=True):
    env[v] = c
  for v, x in zip(jaxpr.invars, args, strict=True):
    env[v] = x
  for eqn in jaxpr.eqns:
    prim = eqn.primitive
    invals = [read(a) for a in eqn.invars]
    if prim in ref_creating:
      outs = [ref_creating[prim](*invals, **eqn.params)]
    elif any(map(_is_live_ref, invals)) and prim not in discharge_rules_with_live_refs:
      # a ref of the enclosing context (a residual of the program being transposed): it stays
      # a ref, and what uses it acts on it (a custom_vjp's bwd writing into it)
      outs = prim.bind(*invals, **eqn.params)
      outs = outs if prim.multiple_results else [outs]
    elif prim in ref_reading:
      outs = [ref_reading[prim](*invals)]
    elif prim in discharge_rules:
      new_vals, outs = discharge_rules[prim](*invals, **eqn.params)
      for v, new in zip(eqn.invars, new_vals, strict=True):
        if new is not None:
          env[v] = new
      outs = outs if prim.multiple_results else [outs]
    else:
      if any(type(a) is not Literal and isinstance(a.aval, AbstractRef)
             and not _is_live_ref(x) for a, x in zip(eqn.invars, invals, strict=True)):
        raise NotImplementedError(
            f"No state discharge rule implemented for primitive: {prim.name} (a mutable array "
            "reference is passed into it)")
      params = {k: _discharge_param(v) for k, v in eqn.params.items()}
      outs = prim.bind(*invals, **params)
      outs = outs if prim.multiple_results else [outs]
    for v, x in zip(eqn.outvars, outs, strict=True):
      env[v] = x
  finals = [env[v] for v in jaxpr.invars if isinstance(v.aval, AbstractRef)]
  return [read(v) for v in jaxpr.outvars], finals


def _is_live_ref(x) -> bool:
  """Whether `x` (a value of the discharge interpreter's environment) is a ref itself rather
  than the contents of a discharged one."""
  return isinstance(getattr(x, "aval", None), AbstractRef)


def _discharge_param(value):
  if isinstance(value, ClosedJaxpr):
    if not has_refs(value.jaxpr):
      return value
    if any(isinstance(a, AbstractRef) for a in value.in_avals):
      raise NotImplementedError("a nested jaxpr takes a mutable array reference as an input")
    return discharge_state(value)
  if isinstance(value, tuple) and any(isinstance(v, ClosedJaxpr) for v in value):
    return tuple(_discharge_param(v) for v in value)
  return value


@staging.memoize_on_jaxpr
def _result_avals(closed: ClosedJaxpr) -> tuple:
  if not has_refs(closed.jaxpr):
    return tuple(closed.out_avals)
  return tuple(discharge_state(closed).out_avals[:len(closed.out_avals)])


def result_avals(closed: ClosedJaxpr) -> list:
  """The types of what `closed` returns when it runs compiled: those of its discharged program
  where it uses refs. As in jax's jitted programs, a value read from a ref there has the type
  of what was last written into it (written values are strong), not the ref's type. Memoized
  per jaxpr (jit's abstract evaluation asks on every bind)."""
  return list(_result_avals(closed))


def inner_aval(aval):
  return aval.inner_aval if isinstance(aval, AbstractRef) else aval


class _Linear(threading.local):
  active = False


_linear = _Linear()


def discharging_linear_program() -> bool:
  """Whether the program being discharged is a linear one about to be transposed. Its writes
  at integer-array indices are then transposed as JAX transposes ref writes: each index reads
  the cotangent written there, repeated indices included (rules promise unique indices)."""
  return _linear.active


@staging.memoize_on_jaxpr
def discharge_state(closed: ClosedJaxpr, linear: bool = False) -> ClosedJaxpr:
  """The pure version of `closed`: Ref inputs become inputs of their inner types, and their
  final contents are returned after the original outputs (in input order). `linear`: see
  `discharging_linear_program`."""
  in_avals = [inner_aval(a) for a in closed.in_avals]

  def fun(*args):
    saved, _linear.active = _linear.active, linear
    try:
      outs, finals = eval_discharged(closed.jaxpr, closed.consts, args)
    finally:
      _linear.active = saved
    return outs + finals

  jaxpr, consts = staging.trace_to_jaxpr(fun, in_avals)
  return ClosedJaxpr(jaxpr, consts)


def ref_error_for_outputs(avals, what: str, paths=None, origin=None) -> None:
  """JAX's ValueError when a traced function returns a mutable array reference; `origin(k)`
  names the argument output `k` is (None: not an argument), for JAX's closing sentence."""
  for k, a in enumerate(avals):
    if isinstance(a, AbstractRef):
      where = f" at output tree path {paths[k]}" if paths is not None else ""
      name = origin(k) if origin is not None else None
      came = ("" if name is None else
              f"\n\nThe returned mutable array was passed in as the argument {name}.")
      raise ValueError(f"{what} returned a mutable array reference of type {a!r}"
                       f"{where}, but mutable array references cannot be returned.{came}")
