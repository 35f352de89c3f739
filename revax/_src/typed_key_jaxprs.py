"""A jitted program's jaxpr with its key-array arguments and results typed as keys, as
`jax.jit(f).trace(key).jaxpr` shows them (`{ lambda ; a:key<fry>[]. let ...`).

revax compiles a jitted function over its key arrays' uint32 data (a key array flattens to its
data for jit, so calls, caches and executables deal in arrays only): its traced program takes
`u32[2]` and wraps it (`random_wrap`) before the first key primitive, and unwraps the keys it
returns. The jaxpr that `Traced.jaxpr` and `Lowered.jaxpr` report is that program rewritten at
its boundary: each key argument becomes a key-typed input whose data the body reads through
`random_unwrap`, each key result a key-typed output (`random_wrap` of its data), and then
`random_wrap(random_unwrap(k))` is `k`, `random_unwrap(random_wrap(d))` is `d`, and the
conversions left unused are dropped. Both jaxprs compute the same thing; the one compiled is
unchanged (its lowering gives the same module: keys lower to their data)."""
from __future__ import annotations

import numpy as np

from revax._src import tree_util
from revax._src.core.extended_dtypes import KeyTy
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from revax._src.lax import prng_keys

__all__ = ["key_impls_of_tree", "with_typed_keys"]


def key_impls_of_tree(treedef) -> list:
  """For each leaf of `treedef` (a structure flattened for jit, key arrays as nodes over their
  data): the PRNG implementation of the key array it is the data of, or None."""
  n = treedef.num_leaves
  marks = tree_util.tree_unflatten(treedef, [_Mark(i) for i in range(n)])
  impls = [None] * n
  for x in tree_util.tree_leaves(marks, is_leaf=tree_util.is_array_leaf):
    dtype = getattr(x, "dtype", None) if type(x) is not _Mark else None
    if isinstance(dtype, KeyTy):
      (mark,) = tree_util.tree_leaves(x)
      if type(mark) is _Mark:
        impls[mark.index] = dtype._impl
  return impls


class _Mark:
  """A leaf's position, placed in a structure to find where its key arrays' data lies."""
  __slots__ = ("index",)

  def __init__(self, index: int):
    self.index = index


def with_typed_keys(closed: ClosedJaxpr, in_impls, out_impls) -> ClosedJaxpr:
  """`closed` with the inputs and outputs whose entry of `in_impls`/`out_impls` is an
  implementation (the others None) typed as keys of it; `closed` itself when there are none."""
  if not any(in_impls) and not any(out_impls):
    return closed
  jaxpr = closed.jaxpr
  if not all(_is_key_data(v.aval, impl) for vs, impls in ((jaxpr.invars, in_impls),
                                                          (jaxpr.outvars, out_impls))
             for v, impl in zip(vs, impls, strict=True) if impl is not None):
    return closed  # (positions that do not hold key data: a program of another layout)
  unwrap, wrap = prng_keys.random_unwrap_p, prng_keys.random_wrap_p
  keys_of_data = {}  # a data var -> the key var it is the random_unwrap of
  subst = {}
  invars, eqns = [], []
  for v, impl in zip(jaxpr.invars, in_impls, strict=True):
    if impl is None:
      invars.append(v)
      continue
    k = Var(_key_aval(v.aval, impl))
    invars.append(k)
    eqns.append(JaxprEqn(unwrap, [k], [v], {}))
    keys_of_data[v] = k
  for eqn in jaxpr.eqns:
    ins = [subst.get(x, x) if isinstance(x, Var) else x for x in eqn.invars]
    if (eqn.primitive is wrap and isinstance(ins[0], Var) and ins[0] in keys_of_data
        and keys_of_data[ins[0]].aval.dtype._impl == eqn.params["impl"]):
      subst[eqn.outvars[0]] = keys_of_data[ins[0]]
      continue
    if eqn.primitive is unwrap and isinstance(ins[0], Var):
      keys_of_data[eqn.outvars[0]] = ins[0]
    eqns.append(eqn.replace(invars=ins) if ins != eqn.invars else eqn)
  outvars = []
  for v, impl in zip(jaxpr.outvars, out_impls, strict=True):
    v = subst.get(v, v) if isinstance(v, Var) else v
    if impl is None:
      outvars.append(v)
    elif (isinstance(v, Var) and v in keys_of_data
          and keys_of_data[v].aval.dtype._impl == impl):
      outvars.append(keys_of_data[v])
    else:
      k = Var(_key_aval(v.aval, impl))
      eqns.append(JaxprEqn(wrap, [v], [k], {"impl": impl}))
      outvars.append(k)
  return ClosedJaxpr(Jaxpr(jaxpr.constvars, invars, outvars, _drop_unused(eqns, outvars)),
                     closed.consts)


def _is_key_data(aval, impl) -> bool:
  k = len(impl.key_shape)
  shape = tuple(getattr(aval, "shape", ()))
  return (getattr(aval, "dtype", None) == np.uint32 and len(shape) >= k
          and shape[len(shape) - k:] == tuple(impl.key_shape))


def _key_aval(data_aval, impl):
  return prng_keys._random_wrap_abstract_eval(data_aval, impl=impl)


def _drop_unused(eqns, outvars):
  """The equations without the key conversions (random_wrap, random_unwrap) whose results no
  one reads (the others stay, as the program has them)."""
  conversions = (prng_keys.random_unwrap_p, prng_keys.random_wrap_p)
  used = {v for v in outvars if isinstance(v, Var)}
  kept = []
  for eqn in reversed(eqns):
    if eqn.primitive in conversions and not any(v in used for v in eqn.outvars):
      continue
    kept.append(eqn)
    used.update(x for x in eqn.invars if isinstance(x, Var))
  return kept[::-1]
