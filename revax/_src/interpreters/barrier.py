"""Fences against XLA's common-subexpression elimination: `optimization_barrier` and
`fenced_call`.

Rematerialization (checkpoint) and invertible reverse mode recompute in the backward pass values
the forward pass also computed. If XLA merges the recomputation with the identical forward
computation, every forward intermediate stays alive until the backward pass and the memory
saving silently disappears.

`optimization_barrier(*xs)` returns its operands unchanged, and XLA may not move computation
across it. It is the portable fence, but measured on the XLA:CPU plugin it is not enough: the
CPU pipeline expands barriers before common-subexpression elimination runs, and the
recomputation is merged anyway (a 64-block checkpointed MLP keeps all its activations).

`fenced_call(jaxpr)` evaluates a jaxpr inside a conditional whose predicate XLA cannot know at
compile time (`rng_uniform(0, 1) < 2`, always true), as JAX once lowered remat on CPU and GPU.
Nothing inside a conditional's branch can be merged with computation outside it, and the branch
runs only once its operands exist, so a recomputation whose operands include backward-pass
values is also scheduled in the backward pass.

Cost: one branch per fenced call, and one random number per function body (or region), shared
by every fenced call in it. The predicate only has to be opaque; what keeps each recomputation
in its place in the backward pass is its conditional's operands (the cotangents), not the
predicate. Measured on the XLA:CPU plugin (benchmarks/bench_checkpoint_fences.py: jit(grad) of
64 checkpointed two-matmul blocks, CPU time against plain grad + one extra forward, which is
what the recomputation itself costs): at width 256 the fenced step is 0.94-0.97x of it with
either predicate; with tiny blocks (width 16), where fixed costs show, a random number per call
made it 0.94-1.07x and the shared one 0.87-0.93x. The fences without a conditional fence
nothing or cost more there: a barrier over the step's inputs is expanded before CSE (the
recomputation is merged with the forward: plain grad's 383 dots for 64 blocks instead of 511,
and its XLA temp), and routing every input through a `select` on an opaque predicate read from
the cotangent costs an elementwise pass over each input, weights included (1.01x at width 256,
with 2.5x the conditionals' XLA temp).
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir, partial_eval, staging


def optimization_barrier(operand):
  """Return `operand` (a pytree of arrays) unchanged, as a barrier to XLA's optimizations.

  Args:
    operand: an array or a pytree of arrays.

  Returns:
    The same values, in the same structure.

  Example:
    >>> x, w = jnp.ones(2), jnp.zeros(3)
    >>> lax.optimization_barrier((x, w))
    (Array([1., 1.], dtype=float32), Array([0., 0., 0.], dtype=float32))
  """
  from revax._src import tree_util
  leaves, tree = tree_util.tree_flatten(operand)
  return tree_util.tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


def _barrier_abstract_eval(*avals):
  return list(avals)


def _barrier_impl(*args):
  """The operands as Arrays: a NumPy operand becomes an Array owning a copy (as jax's, whose
  barrier is bound and returns new Arrays), never the caller's array itself."""
  return [a if isinstance(a, dispatch.Array) else dispatch.wrap_host(np.array(a), get_aval(a))
          for a in args]


def _barrier_jvp(primals, tangents):
  """Primals and tangents through separate barriers: one equation mixing them would make the
  primal outputs depend on the tangents under partial evaluation."""
  it = iter(barrier_values(t for t in tangents if type(t) is not ad.Zero))
  return barrier_values(primals), [t if type(t) is ad.Zero else next(it) for t in tangents]


def _barrier_transpose(cts, *args):
  linear = [ad.is_undefined_primal(a) for a in args]
  outs = iter(barrier_values(ad.instantiate_zeros(c) for c, lin in zip(cts, linear) if lin))
  return [next(outs) if lin else None for lin in linear]


def _barrier_batch(vals, dims):
  return optimization_barrier_p.bind(*vals), list(dims)


def _barrier_lower(ctx, *args):
  if not args:
    return []
  return ctx.op("stablehlo.optimization_barrier", list(args), ctx.avals_out)


optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.def_abstract_eval(_barrier_abstract_eval)
dispatch.custom_impls[optimization_barrier_p] = _barrier_impl
ad.primitive_jvps[optimization_barrier_p] = _barrier_jvp
ad.primitive_transposes[optimization_barrier_p] = _barrier_transpose
batching.primitive_batchers[optimization_barrier_p] = _barrier_batch
mlir.register_lowering(optimization_barrier_p, _barrier_lower)


def barrier_values(values):
  """`values` through one barrier (an empty list stays empty; eager values pass unchanged)."""
  values = list(values)
  return optimization_barrier_p.bind(*values) if values else values



# --- fenced_call ---------------------------------------------------------------------------------
fenced_call_p = Primitive("fenced_call", multiple_results=True)


def fenced_call(closed: ClosedJaxpr, *args, barrier_on: tuple[str, ...] = ()):
  """Evaluate `closed` on `args` where XLA cannot merge it with computation outside: inside a
  conditional, or on the platforms named in `barrier_on` behind an optimization barrier
  (`lower_fenced_call_as_barrier`; only for platforms that keep barriers through CSE)."""
  return fenced_call_p.bind(*args, jaxpr=closed, barrier_on=tuple(barrier_on))


def _fenced_call_abstract_eval(*avals, jaxpr: ClosedJaxpr, barrier_on=()):
  dispatch.check_arg_avals("fenced_call", jaxpr.in_avals, avals)
  return jaxpr.out_avals


def _fenced_call_impl(*args, jaxpr: ClosedJaxpr, barrier_on=()):
  return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


def _fenced_call_jvp(primals, tangents, *, jaxpr, barrier_on=()):
  return ad.call_jvp(jaxpr, primals, tangents, lambda jvp_closed, args: fenced_call_p.bind(
      *args, jaxpr=jvp_closed, barrier_on=barrier_on))


def _fenced_call_transpose(cts, *args, jaxpr, barrier_on=()):
  from revax._src.interpreters.transpose import call_transpose  # transpose imports this module
  return call_transpose(jaxpr, cts, args)


def _fenced_call_partial_eval(trace, args, params, unknowns):
  return partial_eval.partial_eval_call(trace, fenced_call_p, args, params, unknowns)


def _fenced_call_batch(axis_size, vals, dims, *, jaxpr, barrier_on=()):
  batched, out_dims = batching.batch_jaxpr(jaxpr, dims, axis_size)
  return fenced_call_p.bind(*vals, jaxpr=batched, barrier_on=barrier_on), list(out_dims)


_F32 = ShapedArray((), dtypes.float32)


def _opaque_true(fb) -> str:
  """`rng_uniform(0, 1) < 2`: always true, unknown to XLA at compile time."""
  lo, hi, two = (fb.constant(np.float32(v), _F32) for v in (0.0, 1.0, 2.0))
  shape = fb.constant(np.zeros((0,), np.int64), ShapedArray((0,), dtypes.int64))
  (u,) = fb.op("stablehlo.rng", [lo, hi, shape], [mlir.ir_type(_F32)],
               props={"rng_distribution": "#stablehlo<rng_distribution UNIFORM>"})
  (pred,) = fb.op("stablehlo.compare", [u, two], ["tensor<i1>"],
                  props={"comparison_direction": "#stablehlo<comparison_direction LT>",
                         "compare_type": "#stablehlo<comparison_type FLOAT>"})
  return pred


def _fenced_call_lower(ctx, *args, jaxpr, barrier_on=()):
  """`if pred { jaxpr(args) } else { zeros }`, `pred` the body's one opaque true value; on a
  platform in `barrier_on`, `lower_fenced_call_as_barrier`."""
  if ctx.platform in barrier_on:
    return lower_fenced_call_as_barrier(ctx, *args, jaxpr=jaxpr)
  fb = ctx.fb
  pred = fb.body_value("fence_predicate", _opaque_true)

  def then_branch(sub):
    return mlir.inline_closed_jaxpr(sub, jaxpr, args)

  def else_branch(sub):
    return [sub.constant(np.zeros(a.shape, a.dtype if a.dtype != dtypes.float0 else np.bool_), a)
            for a in ctx.avals_out]

  return fb.op("stablehlo.if", [pred], [mlir.ir_type(a) for a in ctx.avals_out],
               regions=[fb.region([], then_branch), fb.region([], else_branch)])


fenced_call_p.def_abstract_eval(_fenced_call_abstract_eval)
dispatch.custom_impls[fenced_call_p] = _fenced_call_impl
ad.primitive_jvps[fenced_call_p] = _fenced_call_jvp
ad.primitive_transposes[fenced_call_p] = _fenced_call_transpose
partial_eval.partial_eval_rules[fenced_call_p] = _fenced_call_partial_eval
batching.axis_size_batchers[fenced_call_p] = _fenced_call_batch
mlir.register_lowering(fenced_call_p, _fenced_call_lower)
staging.dce_rules[fenced_call_p] = staging.dce_call()


def lower_fenced_call_as_barrier(ctx, *args, jaxpr, barrier_on=()):
  """`fenced_call`'s other lowering: an optimization_barrier over the operands, then the body
  inline (jax.checkpoint's fence). A backend that keeps barriers through CSE (TPU; XLA:CPU
  with its `cse_barrier_expander` pass disabled) can then neither merge the body with the
  forward computation nor start it before all its operands exist, and, with no conditional, the
  operands are not held live for the whole body. Not registered by default: XLA:CPU expands
  barriers before CSE (see the module docstring). A fenced call chooses it per platform
  (`barrier_on`): checkpoint's backward steps on a TPU (as jax.checkpoint's); invertible's walk
  keeps the conditional there, which measured faster for it (benchmarks/RESULTS.md)."""
  if args:
    args = ctx.op("stablehlo.optimization_barrier", list(args), ctx.avals_in)
  return mlir.inline_closed_jaxpr(ctx.fb, jaxpr, args)
