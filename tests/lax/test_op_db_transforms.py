"""Generic transformation suites over the op database: check_grads (order 2, fwd and rev),
check_jaxpr on jvp/linearize/vjp jaxprs, the transposition dot-product test for linear ops,
check_vmap over every combination of batch positions, and rule coverage."""
import itertools

import numpy as np
import pytest

import revax
from revax._src.core import dtypes
from revax._src.core.typecheck import check_jaxpr
from revax._src.interpreters import ad, batching
from revax.test_util import check_vmap
from tests.gradcheck import check_grads
from tests.lax.op_db import all_records, tolerance
from tests.lax.test_op_db import _inputs, _lax_primitives
from tests.platform_tolerances import record_marks

RECORDS = all_records()


def _inexact(x):
  return dtypes.is_inexact(np.asarray(x).dtype)


DIFF_RECORDS = [r for r in RECORDS if r.grad_order > 0]


@pytest.mark.parametrize("record", DIFF_RECORDS, ids=str)
def test_check_grads(record):
  args = _inputs(record)
  if not any(map(_inexact, args)):
    pytest.skip("no floating-point inputs to differentiate")
  check_grads(record.fun, args, order=record.grad_order, modes=("fwd", "rev"))


@pytest.mark.parametrize("record", DIFF_RECORDS, ids=str)
def test_ad_jaxprs_typecheck(record):
  args = _inputs(record)
  if not any(map(_inexact, args)):
    pytest.skip("no floating-point inputs to differentiate")
  tangents = tuple(np.ones_like(a) if _inexact(a) else np.zeros(np.shape(a), dtypes.float0)
                   for a in args)
  check_jaxpr(revax.make_jaxpr(lambda *xs: revax.jvp(record.fun, xs, tangents))(*args))
  check_jaxpr(revax.make_jaxpr(lambda *xs: revax.linearize(record.fun, *xs)[1](*tangents))(*args))

  def vjp_of(*xs):
    out, f_vjp = revax.vjp(record.fun, *xs)
    return f_vjp(revax.tree_util.tree_map(lambda o: revax.numpy.ones_like(o)
                                          if _inexact_aval(o) else o, out))
  check_jaxpr(revax.make_jaxpr(vjp_of)(*args))


def _inexact_aval(o):
  return dtypes.is_inexact(o.dtype)


LINEAR_RECORDS = [r for r in RECORDS if r.linear]


def _real_pairing(a, b):
  """Re(sum(a * b)): the pairing of a value with its cotangent in JAX's convention for complex
  values (no conjugation), which transpose rules such as real's, imag's and fft's follow."""
  return np.real(np.sum(np.asarray(a, np.complex128) * np.asarray(b, np.complex128)))


@pytest.mark.parametrize("record", LINEAR_RECORDS, ids=str)
def test_transpose_dot_product(record):
  """<f(x), c> == <x, f^T(c)> for linear f."""
  args = _inputs(record)
  rng = np.random.default_rng(3)
  out = record.fun(*args)
  ct = rng.standard_normal(np.shape(out))
  if dtypes.is_complex(np.asarray(out).dtype):
    ct = ct + 1j * rng.standard_normal(np.shape(out))
  ct = np.asarray(ct, np.asarray(out).dtype)
  (x_bar,) = revax.linear_transpose(record.fun, args[0])(ct) if len(args) == 1 else \
      (revax.linear_transpose(lambda x: record.fun(x, *args[1:]), args[0])(ct))
  lhs = _real_pairing(out, ct)
  rhs = _real_pairing(args[0], x_bar)
  # Both sides round in the record's dtype: 16-bit records get their own (looser) tolerance.
  tol = max(1e-4, tolerance(np.asarray(out).dtype, record.rtol)[0])
  np.testing.assert_allclose(lhs, rhs, rtol=tol, atol=tol)


MAX_VMAP_COMBINATIONS = 200


def _vmap_axes(record):
  """Every combination of batch positions (None or 0..ndim per operand), not all None. Records
  with many operands (select_n with 7 cases has 6560 combinations) get a deterministic cover
  instead: each operand mapped alone at each position, all mapped at each common position, and
  a fixed random sample of the rest."""
  args = _inputs(record)
  options = [[None] + list(range(np.ndim(a) + 1)) for a in args]
  combos = [axes for axes in itertools.product(*options) if any(a is not None for a in axes)]
  if len(combos) <= MAX_VMAP_COMBINATIONS:
    return combos
  cover = set()
  for k, opts in enumerate(options):
    for d in opts[1:]:
      cover.add(tuple(d if i == k else None for i in range(len(args))))
  for d in range(min(np.ndim(a) for a in args) + 1):
    cover.add(tuple(d for _ in args))
  rng = np.random.default_rng(0)
  picks = rng.choice(len(combos), size=MAX_VMAP_COMBINATIONS - len(cover), replace=False)
  return sorted(cover | {combos[i] for i in picks}, key=str)


VMAP_RECORDS = [pytest.param(r, marks=record_marks(r), id=str(r)) for r in RECORDS if r.vmap]


@pytest.mark.parametrize("record", VMAP_RECORDS)
def test_check_vmap(record):
  """check_vmap for every combination of batch positions, with mapped sizes 1 and 3 (one test
  per record: the combinations run in a loop to keep the suite's overhead small)."""
  args = _inputs(record)
  for axes in _vmap_axes(record):
    for size in (1, 3):
      batched = []
      for k, (a, ax) in enumerate(zip(args, axes)):
        if ax is None:
          batched.append(a)
          continue
        examples = [record.args(np.random.default_rng(100 * k + i))[k] for i in range(size)]
        batched.append(np.stack([np.asarray(e) for e in examples], axis=ax))
      try:
        check_vmap(record.fun, batched, in_axes=tuple(axes))
        if size == 3:
          check_jaxpr(revax.make_jaxpr(revax.vmap(record.fun, in_axes=tuple(axes)))(*batched))
      except Exception as e:
        raise AssertionError(f"{record.name}: in_axes={axes}, size={size}: {e}") from e


def test_every_primitive_has_a_jvp_rule_or_a_reason():
  missing = sorted(name for name, p in _lax_primitives().items()
                   if p not in ad.primitive_jvps and p not in ad.not_differentiable_reasons)
  assert not missing, f"primitives with neither a JVP rule nor a not_differentiable reason: {missing}"


def test_every_primitive_has_a_batching_rule():
  missing = sorted(name for name, p in _lax_primitives().items()
                   if p not in batching.primitive_batchers and p not in batching.axis_size_batchers)
  assert not missing, f"primitives without batching rules: {missing}"


def _single_invertible_eqn(record, args):
  """The record's one equation, if it applies a primitive with an inverse rule to the inputs."""
  from revax._src.interpreters import invertible as inv
  jaxpr = revax.make_jaxpr(record.fun)(*args)
  if len(jaxpr.eqns) != 1 or jaxpr.jaxpr.constvars:
    return None, None
  (eqn,) = jaxpr.eqns
  if eqn.primitive not in inv.inverse_rules:
    return None, None
  return jaxpr, eqn


def _has_inverse_rule(record, primitives) -> bool:
  from revax._src.interpreters import invertible as inv
  prim = primitives.get(record.primitive)
  return prim is not None and prim in inv.inverse_rules


def _finite_inputs(record) -> bool:
  """Inverses are defined on finite values (the special-value records test inf and NaN)."""
  return all(np.isfinite(np.asarray(a, np.complex128)).all() for a in _inputs(record))


_PRIMITIVES = _lax_primitives()  # (once: walking every lax module per record cost seconds)
INVERTIBLE_RECORDS = [r for r in RECORDS if _has_inverse_rule(r, _PRIMITIVES)
                      and _finite_inputs(r)]


@pytest.mark.parametrize("record", INVERTIBLE_RECORDS, ids=str)
def test_inverse_round_trip(record):
  """For every input an inverse rule can rebuild (alone, or all at once where it rebuilds all):
  applying the primitive to the rebuilt inputs gives the original output again."""
  from revax._src.core.jaxpr import Literal
  from revax._src.interpreters import invertible as inv
  args = _inputs(record)
  jaxpr, eqn = _single_invertible_eqn(record, args)
  if eqn is None:  # e.g. a wrapper that binds more than its primitive (converts, broadcasts)
    pytest.skip("the record's function is more than its one primitive")
  env = dict(zip(jaxpr.jaxpr.invars, args))
  values = [a.val if type(a) is Literal else env[a] for a in eqn.invars]
  bind = lambda *xs: (list(eqn.primitive.bind(*xs, **eqn.params))
                      if eqn.primitive.multiple_results else [eqn.primitive.bind(*xs, **eqn.params)])
  outs = bind(*values)
  rule = inv.inverse_rules[eqn.primitive]
  facts = inv._Facts(jaxpr.jaxpr)
  masks = [tuple(j != i for j in range(len(values))) for i in range(len(values))]
  masks.append(tuple(False for _ in values))
  tried = 0
  for known in masks:
    if all(known) or not rule.solves(known, eqn, facts):
      continue
    ins = [v if k else None for v, k in zip(values, known)]
    rebuilt = rule.rebuild(outs, ins, [a.aval for a in eqn.invars], **eqn.params)
    for again, out in zip(bind(*rebuilt), outs, strict=True):
      rt, at = tolerance(np.asarray(out).dtype, record.rtol, record.atol)
      np.testing.assert_allclose(np.asarray(again, np.float64), np.asarray(out, np.float64),
                                 rtol=max(rt, 1e-4), atol=max(at, 1e-4), equal_nan=True,
                                 err_msg=f"{record.name}: known={known}")
    tried += 1
  if not tried:
    pytest.skip("the inverse rule solves no single-unknown case here")


def test_every_primitive_has_an_inverse_rule_or_a_reason():
  from revax._src.interpreters import invertible as inv
  missing = sorted(name for name, p in _lax_primitives().items()
                   if p not in inv.inverse_rules and p not in inv.not_invertible_reasons
                   and p not in inv.part_rules)
  assert not missing, f"primitives with neither an inverse rule nor a not_invertible reason: {missing}"


def test_every_inverse_rule_has_a_round_trip():
  """The round trip above skips records whose function is more than one primitive: every
  primitive with an inverse rule must still be exercised by at least one record."""
  from revax._src.interpreters import invertible as inv
  exercised = set()
  for record in INVERTIBLE_RECORDS:
    _, eqn = _single_invertible_eqn(record, _inputs(record))
    if eqn is not None:
      exercised.add(eqn.primitive.name)
  with_rules = {name for name, p in _lax_primitives().items() if p in inv.inverse_rules}
  missing = sorted(with_rules - exercised)
  assert not missing, f"primitives whose inverse rule no op record round-trips: {missing}"
