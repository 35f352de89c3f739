"""The op database's records against jax: each record whose function is a public revax.lax
function binds its primitive with the param names jax's same-named function binds (the class of
`accuracy=None`, which revax's transcendental equations lacked until 2026-12-07). Records built
from lambdas or internal wrappers have no jax counterpart to ask and are left out."""
import numpy as np
import pytest

import revax
from tests.lax.op_db import all_records

jax = pytest.importorskip("jax")

# primitive -> why revax's equation holds other params than jax's
KNOWN = {
    "mul": ("jax's mul_p carries out_dtype (None unless asked); revax's lax.mul applies out_dtype "
            "by a conversion around a mul_p that has no such param"),
}


def _jax_counterpart(record):
  name = getattr(record.fun, "__name__", "")
  if name == "<lambda>" or not (getattr(record.fun, "__module__", "") or "").startswith("revax"):
    return None
  return getattr(jax.lax, name, None)


RECORDS = [r for r in all_records() if _jax_counterpart(r) is not None]


def _param_names(closed, primitive: str) -> list:
  """The param names of the first equation binding `primitive`, in jit bodies too (jax wraps
  some lax functions in a jit)."""
  for e in closed.jaxpr.eqns:
    if e.primitive.name == primitive:
      return sorted(e.params)
    if e.primitive.name in ("jit", "pjit"):
      inner = _param_names(e.params["jaxpr"], primitive)
      if inner is not None:
        return inner
  return None


@pytest.mark.parametrize("record", RECORDS, ids=str)
def test_binds_jax_s_param_names(record):
  args = record.args(np.random.default_rng(0))
  try:
    theirs = _param_names(jax.make_jaxpr(_jax_counterpart(record))(*args), record.primitive)
  except Exception as e:  # noqa: BLE001 - jax refuses the record's inputs: nothing to compare
    pytest.skip(f"jax's {record.primitive} refuses these inputs: {type(e).__name__}")
  ours = _param_names(revax.make_jaxpr(record.fun)(*args), record.primitive)
  if theirs is None:  # (random_gamma_grad: jax expands it into elementwise operations)
    pytest.skip(f"jax's lax function binds no {record.primitive} equation")
  assert ours is not None, f"revax's {record.fun.__name__} binds no {record.primitive}"
  if record.primitive in KNOWN:
    assert ours != theirs, f"{record.primitive} now binds jax's params: drop it from KNOWN"
    return
  assert ours == theirs
