"""`revax.interpreters.partial_eval.trace_to_jaxpr_nounits` against jax's, with typed PRNG keys
among the unknown inputs (flax's linen scan traces its body at `ShapedArray(shape, key<fry>)`
avals: the keys it folds and splits there must be keys) and among the outputs: which outputs are
known, their values, the avals of the unknown ones."""
import numpy as np
import pytest

import revax
from revax._src.core.avals import ShapedArray as RShapedArray

jax = pytest.importorskip("jax")
from jax._src.core import ShapedArray as JShapedArray  # noqa: E402 (the oracle's aval type)

IMPLS = ("threefry2x32", "rbg")


def _run(lib, shaped, impl, shape, body):
  from importlib import import_module
  pe = import_module(lib.__name__ + ".interpreters.partial_eval")
  lu = import_module(lib.__name__ + ".extend.linear_util")
  key_dtype = lib.random.key(0, impl=impl).dtype
  pvals = [pe.PartialVal.known(np.float32(2.0)),
           pe.PartialVal.unknown(shaped(shape, key_dtype)),
           pe.PartialVal.unknown(shaped((3,), np.dtype(np.float32)))]
  f = lu.wrap_init(lambda *a: body(lib, *a), debug_info=None) if lib is jax else \
      lu.wrap_init(lambda *a: body(lib, *a))
  _, out_pvals, _ = pe.trace_to_jaxpr_nounits(f, pvals)
  out = []
  for pv, const in out_pvals:
    if pv is None:
      out.append(("known", np.asarray(const).tolist()))
    else:
      out.append(("unknown", tuple(pv.shape), str(pv.dtype)))
  return out


BODIES = {
    "fold and split": lambda lib, c, k, x: [lib.random.split(lib.random.fold_in(k, 3)), c * 2],
    "draw": lambda lib, c, k, x: [lib.random.uniform(k, (3,)) + x, c + 1],
    "key through": lambda lib, c, k, x: [k, x * c, c],
    "key data": lambda lib, c, k, x: [lib.random.key_data(k), c],
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", list(BODIES))
def test_unknown_typed_keys_trace_as_keys(impl, name):
  shape = () if name != "key through" else (2,)
  got = _run(revax, RShapedArray, impl, shape, BODIES[name])
  want = _run(jax, lambda s, d: JShapedArray(s, d), impl, shape, BODIES[name])
  assert got == want
