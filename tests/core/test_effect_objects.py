"""`eqn.effects`, `jaxpr.effects` and `closed_jaxpr.effects` hold JAX's effect objects.

Each program of the table is traced by revax and by jax (the oracle, on CPU); the effects of the
closed jaxpr, and of each equation that has any, must be the same: the same class names, the same
`str` and `repr` (a ref's variable written as its role: the jaxpr's i-th input or the k-th ref
created inside), the same number (singletons and equal effects collapse in a set alike) and the
same classification as ordered or not.
"""
import os
import re
import types

import numpy as np
import pytest

import revax
import revax.experimental
import revax.experimental.checkify
import revax.extend.core
import revax.numpy as rnp
from revax._src.core import effect_types
from revax._src.core.jaxpr import ClosedJaxpr, JaxprEqn, Var
from revax._src.lax.control_flow.loops import while_p
from revax._src.jit_primitive import jit_p

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
import jax.experimental  # noqa: E402
import jax.experimental.checkify  # noqa: E402
import jax.extend.core  # noqa: E402
from jax._src import effects as jax_effects  # noqa: E402  (the oracle's ordered set)


def _lib(name):
  if name == "jax":
    return types.SimpleNamespace(
        lib=jax, np=jax.numpy, io_callback=jax.experimental.io_callback,
        checkify=jax.experimental.checkify, Effect=jax.extend.core.Effect,
        is_ordered=jax_effects.ordered_effects.contains)
  return types.SimpleNamespace(
      lib=revax, np=rnp, io_callback=revax.experimental.io_callback,
      checkify=revax.experimental.checkify, Effect=revax.extend.core.Effect,
      is_ordered=effect_types.ordered_effects.contains)


def _print(L, ordered=False):
  return lambda x: (L.lib.debug.print("x={}", x, ordered=ordered), x * 2)[1]


def _callback(L, ordered=False):
  return lambda x: (L.lib.debug.callback(lambda v: None, x, ordered=ordered), x + 1)[1]


def _io(L, ordered=False):
  sds = L.lib.ShapeDtypeStruct((), np.float32)
  return lambda x: L.io_callback(lambda v: v, sds, x, ordered=ordered)


def _refs(L):
  def f(x):
    r = L.lib.new_ref(x)
    r[...] = r[...] + 1.0
    L.lib.ref.addupdate(r, ..., x)
    return L.lib.ref.freeze(r)
  return f


def _ref_in_loops(L):
  def f(x):
    r = L.lib.new_ref(x)
    def body(c, _):
      r[...] += c
      return c, None
    L.lib.lax.scan(body, x, None, length=2)
    L.lib.lax.cond(x[0] > 0, lambda: r.__setitem__(..., x), lambda: None)
    return r[...]
  return f


def _mixed(L):
  def f(x):
    L.lib.debug.print("{}", x)
    L.lib.debug.print("{}", x, ordered=True)
    y = _io(L, ordered=True)(x)
    y = _io(L)(y)
    L.lib.debug.print("again {}", y)  # the same singleton effect: one member of the set
    return y
  return f


def _nested(L):
  def f(x):
    def step(c, _):
      c = L.lib.lax.cond(c > 0, _io(L, ordered=True), lambda v: v, c)
      return c, None
    return L.lib.jit(lambda y: L.lib.lax.scan(step, y, None, length=3)[0])(x)
  return f


def _while_print(L):
  return lambda x: L.lib.lax.while_loop(
      lambda c: c < 3.0, lambda c: (L.lib.debug.print("c={}", c, ordered=True), c + 1.0)[1], x)


def _check(L, payload):
  if payload:
    return lambda x: (L.checkify.check(x > 0, "x={}", x), x)[1]
  return lambda x: (L.checkify.check(x > 0, "negative"), x)[1]


def _check_error(L):
  def f(x):
    err, _ = L.checkify.checkify(lambda y: (L.checkify.check(y > 0, "y={}", y), y)[1])(x)
    L.checkify.check_error(err)
    return x
  return f


def _ffi(L):
  sds = L.lib.ShapeDtypeStruct((), np.float32)
  return lambda x: L.lib.ffi.ffi_call("effects_test_target", sds, has_side_effect=True)(x)


# name -> (program builder, args, whether the equations are laid out alike): revax moves reads and
# writes of a ref out of a loop or a branch (its control flow holds no refs), so there only the
# jaxpr's effects are compared.
x3 = np.ones(3, np.float32)
PROGRAMS = {
    "debug_print": (_print, (1.0,), True),
    "debug_print_ordered": (lambda L: _print(L, ordered=True), (1.0,), True),
    "debug_callback": (_callback, (1.0,), True),
    "debug_callback_ordered": (lambda L: _callback(L, ordered=True), (1.0,), True),
    "io_callback": (_io, (1.0,), True),
    "io_callback_ordered": (lambda L: _io(L, ordered=True), (1.0,), True),
    "pure_callback": (lambda L: lambda x: L.lib.pure_callback(
        lambda v: v, L.lib.ShapeDtypeStruct((), np.float32), x), (1.0,), True),
    "pure": (lambda L: lambda x: L.np.sin(x) * 2, (1.0,), True),
    "jit_print": (lambda L: L.lib.jit(_print(L)), (1.0,), True),
    "scan_print": (lambda L: lambda x: L.lib.lax.scan(
        lambda c, _: (_print(L)(c), None), x, None, length=2)[0], (1.0,), True),
    "cond_io_ordered": (lambda L: lambda x: L.lib.lax.cond(
        x > 0, _io(L, ordered=True), lambda v: v, x), (1.0,), True),
    "while_print_ordered": (_while_print, (0.0,), True),
    "vmap_print": (lambda L: L.lib.vmap(_print(L)), (x3,), True),
    "remat_callback": (lambda L: L.lib.checkpoint(_callback(L)), (1.0,), True),
    "nested_jit_scan_cond": (_nested, (1.0,), True),
    "mixed": (_mixed, (1.0,), True),
    "refs": (_refs, (x3,), True),
    "refs_in_loops": (_ref_in_loops, (x3,), False),
    "check": (lambda L: _check(L, False), (1.0,), True),
    "check_payload": (lambda L: _check(L, True), (1.0,), True),
    "check_error": (_check_error, (1.0,), False),
    "ffi_side_effect": (_ffi, (1.0,), True),
}
# revax stages jax's debug_print as a debug_callback equation (the same effect); jax's remat
# primitive is named remat2 in 0.10.2, revax's checkpoint
_PRIM_NAMES = {"debug_print": "debug_callback", "remat2": "checkpoint"}


def _labeler(jaxpr):
  """The role of each variable an effect may name: `in<i>` for the jaxpr's i-th input, `ref<k>`
  for the k-th ref created by a new_ref equation."""
  labels = {v: f"in{i}" for i, v in enumerate(jaxpr.invars)}
  k = 0
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "new_ref":
      labels[eqn.outvars[0]] = f"ref{k}"
      k += 1
  return labels


def _normalize(text):
  text = re.sub(r"<(?:[\w.]+\.)?(\w+) object at 0x[0-9a-f]+>", r"<\1 object>", text)
  return re.sub(r"<class '[\w.]+\.(\w+)'>", r"<class '\1'>", text)


def _describe(effects, labels, L):
  """Sorted (class name, str, repr, is an Effect, is ordered) of an effect set, a variable named
  by its role."""
  out = []
  for e in effects:
    s, r = str(e), repr(e)
    if hasattr(e, "input"):  # a JaxprInputEffect
      label = labels[e.input]
      s, r = s.replace(repr(e.input), label), r.replace(repr(e.input), label)
    out.append((type(e).__name__, _normalize(s), _normalize(r), isinstance(e, L.Effect),
                L.is_ordered(e)))
  assert len(out) == len(set(out)), f"equal effects in one set: {out}"
  return sorted(out)


def _effects_of(name, which):
  build, args, eqns_alike = PROGRAMS[name]
  L = _lib(which)
  closed = L.lib.make_jaxpr(build(L))(*args)
  labels = _labeler(closed.jaxpr)
  top = _describe(closed.effects, labels, L)
  assert _describe(closed.jaxpr.effects, labels, L) == top
  per_eqn = [(_PRIM_NAMES.get(e.primitive.name, e.primitive.name), _describe(e.effects, labels, L))
             for e in closed.jaxpr.eqns if e.effects] if eqns_alike else None
  return top, per_eqn


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_effects_match_jax(name):
  assert _effects_of(name, "revax") == _effects_of(name, "jax")


def test_the_table_has_every_kind_of_effect():
  """The comparison above is not between empty sets: every effect class revax defines that jax
  gives these programs occurs in the table."""
  seen = set()
  for name in PROGRAMS:
    top, per_eqn = _effects_of(name, "revax")
    seen |= {d[0] for d in top}
    seen |= {d[0] for _, effs in per_eqn or () for d in effs}
  assert seen >= {"DebugEffect", "OrderedDebugEffect", "IOEffect", "OrderedIOEffect",
                  "InternalMutableArrayEffect", "ReadEffect", "WriteEffect", "AccumEffect",
                  "ErrorEffect", "FfiEffect"}


def test_ref_input_effects_match_jax():
  """Effects on a ref the jaxpr takes as input name that input, in the jaxpr's effects too."""
  def f(L):
    def g(r, x):
      r[...] += x
      return x
    return g

  def described(which):
    L = _lib(which)
    r = L.lib.new_ref(L.np.ones(3))
    closed = L.lib.make_jaxpr(f(L))(r, L.np.ones(3))
    labels = _labeler(closed.jaxpr)
    return (_describe(closed.effects, labels, L),
            [_describe(e.effects, labels, L) for e in closed.jaxpr.eqns])

  assert described("revax") == described("jax")
  assert [d[1] for d in described("revax")[0]] == ["Read<in0>", "Write<in0>"]


def test_public_names_are_the_classes_in_jaxprs():
  closed = revax.make_jaxpr(_print(_lib("revax"), ordered=True))(1.0)
  (eff,) = closed.effects
  assert type(eff) is revax.debug.OrderedDebugEffect
  assert isinstance(eff, revax.extend.core.Effect)
  (eff,) = revax.make_jaxpr(_print(_lib("revax")))(1.0).effects
  assert type(eff) is revax.debug.DebugEffect
  assert revax.extend.core.no_effects == frozenset() == revax.make_jaxpr(rnp.sin)(1.0).effects


def test_equality_and_hashing_as_jax():
  """Ref effects are equal when class and input are; a read is never a write."""
  for L in (_lib("revax"), _lib("jax")):
    mod = effect_types if L.lib is revax else __import__("jax._src.state.types", fromlist=["x"])
    assert mod.ReadEffect(0) == mod.ReadEffect(0) and hash(mod.ReadEffect(0)) == hash(
        mod.ReadEffect(0))
    assert mod.ReadEffect(0) != mod.WriteEffect(0) and mod.ReadEffect(0) != mod.ReadEffect(1)
    assert len({mod.ReadEffect(1), mod.ReadEffect(1), mod.AccumEffect(1)}) == 2


def test_custom_primitive_effects_are_its_rule_s():
  """A primitive defined with `def_effectful_abstract_eval` carries the effects its rule
  returns, an effect on an input by position naming that input's variable (as in jax)."""
  class MyEffect(revax.extend.core.Effect):
    pass

  my_effect = MyEffect()
  p = revax.extend.core.Primitive("effects_test_touch")
  p.def_impl(lambda r, x: x)
  p.def_effectful_abstract_eval(lambda r, x: (x, {my_effect, effect_types.WriteEffect(0)}))

  def f(r, x):
    return p.bind(r, x) * 2

  r = revax.new_ref(rnp.ones(3))
  closed = revax.make_jaxpr(f)(r, rnp.ones(3))
  eqn = closed.jaxpr.eqns[0]
  assert eqn.effects == {my_effect, effect_types.WriteEffect(closed.jaxpr.invars[0])}
  assert closed.effects == eqn.effects


def _ref_jaxpr(read_only=False):
  def g(r, x):
    if read_only:
      return r[...] + x
    r[...] += x
    return x
  return revax.make_jaxpr(g)(revax.new_ref(rnp.ones(3)), rnp.ones(3)).jaxpr


def test_nested_effects_name_the_outer_operand():
  """An effect on a ref input of a nested jaxpr becomes one on the operand the equation passes
  there: for jit the i-th operand; for while, the body's consts follow the cond's consts."""
  inner = _ref_jaxpr()
  outer_ref, outer_x = (Var(v.aval) for v in inner.invars)
  out = Var(inner.outvars[0].aval)
  eqn = JaxprEqn(jit_p, [outer_ref, outer_x], [out], {"jaxpr": ClosedJaxpr(inner, [])})
  assert eqn.effects == {effect_types.ReadEffect(outer_ref), effect_types.WriteEffect(outer_ref)}

  cond_ref = Var(outer_ref.aval)  # the cond reads another ref: its const comes first
  cond = _ref_jaxpr(read_only=True)
  eqn = JaxprEqn(while_p, [cond_ref, outer_ref, outer_x], [out],
                 {"cond_jaxpr": ClosedJaxpr(cond, []),
                  "body_jaxpr": ClosedJaxpr(inner, []),
                  "cond_nconsts": 1, "body_nconsts": 1})
  assert eqn.effects == {effect_types.ReadEffect(cond_ref), effect_types.ReadEffect(outer_ref),
                         effect_types.WriteEffect(outer_ref)}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_objects_agree_with_the_flags_revax_runs_on(name):
  """Dead-code elimination keeps exactly the equations whose `effects` are non-empty: the
  per-primitive flag (core/effects.py) and the effect objects say the same of every equation,
  nested ones included."""
  from revax._src.core.effects import eqn_has_effects, _param_jaxprs

  def walk(jaxpr):
    for eqn in jaxpr.eqns:
      assert bool(eqn.effects) == eqn_has_effects(eqn), (name, eqn.primitive.name)
      for v in eqn.params.values():
        for inner in _param_jaxprs(v):
          walk(inner)

  build, args, _ = PROGRAMS[name]
  walk(revax.make_jaxpr(build(_lib("revax")))(*args).jaxpr)
