"""lax.stage (lift a value into the active trace) and lax.dce_sink (keep a value's computation
alive through dead-code elimination), as in JAX.

`stage(x)` is the identity as a primitive: inside a trace it turns a Python scalar or NumPy
array into a value of that trace (an equation in a jaxpr), outside any trace into an Array.
It is linear, batches elementwise and is its own inverse.

`dce_sink(tree)` binds `dce_sink_p` on every leaf: an equation with no outputs and a side
effect, so jaxpr dead-code elimination never removes it nor what computes its operand. It lowers
to nothing: XLA's own dead-code elimination may still drop the computation
(`prevent_mlir_dce=True`, which JAX implements with a no-op custom call of jaxlib that XLA:CPU
alone does not have, raises NotImplementedError).
"""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core import effect_types as eff
from revax._src.core.effects import def_effectful, def_effects
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv

__all__ = ["stage", "stage_p", "dce_sink", "dce_sink_p"]


# --- stage ---------------------------------------------------------------------------------------
def stage(x, /):
  """`x` lifted into the active trace (an Array outside any); as jax.lax.stage.

  Example:
    >>> lax.stage(np.float32(3.0))  # outside any trace: an Array
    Array(3., dtype=float32)
    >>> revax.jit(lambda y: lax.stage(np.arange(3.0)) + y)(1.0)
    Array([1., 2., 3.], dtype=float32)
  """
  return stage_p.bind(x)


stage_p = Primitive("stage")
stage_p.def_abstract_eval(lambda x: x)
dispatch.def_numpy_impl(stage_p, lambda x: x)
mlir.register_lowering(stage_p, lambda ctx, x: x)
ad.deflinear(stage_p, lambda ct, x: [ct])
batching.defvectorized(stage_p)
inv.definverse_unary(stage_p, lambda y: y)


# --- dce_sink ------------------------------------------------------------------------------------
def dce_sink(val, *, prevent_mlir_dce=False):
  """Mark every leaf of `val` as used, so dead-code elimination keeps its computation; as
  jax.lax.dce_sink. Returns None.

  Example:
    >>> def f(x):
    ...   dce_sink(x * 2)  # kept in the jaxpr although nothing reads it
    ...   return x + 1
  """
  for leaf in tree_util.tree_leaves(val):
    dce_sink_p.bind(leaf, prevent_mlir_dce=bool(prevent_mlir_dce))


def _dce_sink_abstract_eval(x, *, prevent_mlir_dce):
  return []


def _dce_sink_impl(x, *, prevent_mlir_dce):
  return []


def _dce_sink_jvp(primals, tangents, *, prevent_mlir_dce):
  dce_sink_p.bind(*primals, prevent_mlir_dce=prevent_mlir_dce)
  return [], []


def _dce_sink_batch(vals, dims, *, prevent_mlir_dce):
  dce_sink_p.bind(*vals, prevent_mlir_dce=prevent_mlir_dce)
  return [], []


def _dce_sink_lower(ctx, x, *, prevent_mlir_dce):
  if prevent_mlir_dce:
    raise NotImplementedError("dce_sink(prevent_mlir_dce=True) needs jaxlib's no-op 'dce_sink' "
                              "custom call, which revax's XLA:CPU does not have")
  return []


dce_sink_p = Primitive("dce_sink", multiple_results=True)
dce_sink_p.def_abstract_eval(_dce_sink_abstract_eval)
dispatch.custom_impls[dce_sink_p] = _dce_sink_impl
ad.primitive_jvps[dce_sink_p] = _dce_sink_jvp
batching.primitive_batchers[dce_sink_p] = _dce_sink_batch
mlir.register_lowering(dce_sink_p, _dce_sink_lower)
def_effectful(dce_sink_p)
def_effects(dce_sink_p, lambda eqn: {eff.no_dce_effect})
inv.not_invertible(dce_sink_p, "it has no outputs to rebuild its operand from")
