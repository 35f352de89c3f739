"""Host plans: a cached shortcut for eager functions of host arrays.

An eager `x + y` on two host arrays passes through revax.numpy's type promotion, lax's wrapper,
`bind` and the dispatcher before NumPy adds the numbers. For one pair of input types all of that
decides the same thing every time: which primitive runs, with which params, giving which output
type. A `PlanCache(fn)` traces `fn` once at those types. When the jaxpr is a single equation
applied to the inputs themselves and its primitive has a NumPy implementation, the plan calls that
implementation directly on the host values, which is exactly what the general path would run.
Anything else (several equations, literals, constants, a primitive without a NumPy impl) has no
plan, and callers take the general path. Plans are dropped when a config flag changes, since
promotion depends on `enable_x64`.
"""
from __future__ import annotations

from revax._src.core.config import config
from revax._src.core.jaxpr import Var
from revax._src.interpreters import dispatch, staging
from revax._src.runtime.denormals import flush_off, flush_on

_caches: list = []  # every plan cache, cleared together when a config flag changes
_MAX_PLANS = 4096


class PlanCache(dict):
  """The host plans of one function, keyed by the avals of its arguments. `plan(avals)` gives
  the plan or None; callers on a hot path may first try `cache.get(avals)` themselves (a plan,
  False for "no plan", or None for "not looked at yet")."""

  def __init__(self, fn):
    super().__init__()
    self.fn = fn
    _caches.append(self)

  def plan(self, avals: tuple):
    plan = self.get(avals)
    if plan is None:
      plan = _make_plan(self.fn, avals)
      if len(self) >= _MAX_PLANS:
        self.clear()
      self[avals] = plan
    return plan or None


def _make_plan(fn, avals):
  if config.debug_checks:  # debug_nans/debug_infs check each primitive: the general path does
    return False
  try:
    jaxpr, consts = staging.trace_to_jaxpr(lambda *xs: [fn(*xs)], avals)
  except Exception:  # noqa: BLE001 (the general path raises the error, with its own message)
    return False
  if consts or len(jaxpr.eqns) != 1 or len(jaxpr.outvars) != 1:
    return False
  (eqn,) = jaxpr.eqns
  prim = eqn.primitive
  impl = dispatch.numpy_impls.get(prim)
  if impl is None or prim in dispatch.custom_impls or prim.multiple_results:
    return False
  if jaxpr.outvars[0] is not eqn.outvars[0]:
    return False
  if not all(type(v) is Var and v in jaxpr.invars for v in eqn.invars):
    return False
  positions = tuple(jaxpr.invars.index(v) for v in eqn.invars)
  params = eqn.params
  out_aval = eqn.outvars[0].aval
  wrap = dispatch.wrap_host

  def run(*values):  # as the dispatcher runs it: with subnormals flushed, as XLA:CPU does
    old = flush_on()
    try:
      return impl(*values, **params)
    finally:
      flush_off(old)
  if positions == (0, 1):
    return lambda x, y: wrap(run(x, y), out_aval)
  if positions == (1, 0):
    return lambda x, y: wrap(run(y, x), out_aval)
  return lambda *xs: wrap(run(*(xs[i] for i in positions)), out_aval)


def _clear_all(name):
  for cache in _caches:
    cache.clear()


config.on_change(_clear_all)
