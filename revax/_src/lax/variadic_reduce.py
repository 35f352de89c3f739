"""`lax.reduce` with an arbitrary computation: the variadic `reduce` primitive.

`reduce(operands, init_values, computation, dimensions)` reduces each operand (a pytree of
arrays of one shape) over `dimensions` with `computation((xs...), (ys...)) -> (zs...)`, a
function of two pytrees of scalars shaped like `init_values`. As in JAX, one operand with a
recognized monoid computation (add, mul, max, min, and, or; see `reductions.py`) takes the
fast path of its monoid reduction; everything else binds `reduce_p`, whose params hold the
computation traced on scalars as a closed jaxpr `(xs..., ys...) -> (zs...)`.

`reduce_p` lowers to `stablehlo.reduce` with that jaxpr inlined as its region and runs eagerly
through the same compiled program. Its JVP, as JAX's, reduces by a balanced tree of pairwise
applications of the computation (the first half of the reduced elements against the second,
an odd count padded with the init values), which is differentiable wherever the computation is;
tangents of the init values are not supported (NotImplementedError, as in JAX). Batching moves
the batch dimension of the operands to the front and reduces past it; batched init values are
not supported (NotImplementedError, as in JAX).
"""
from __future__ import annotations

import functools

import numpy as np

from revax._src import tree_util
from revax._src.core.avals import ShapedArray, get_aval, same_type
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Primitive, Tracer
from revax._src.interpreters import ad, batching, mlir, staging
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, convenience, creation, reductions, shapes
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.sharding_constraint import placed

__all__ = ["reduce", "reduce_p"]


def _flat_avals(xs):
  return tuple(get_aval(x) for x in xs)


@functools.lru_cache(maxsize=512)
def _computation_jaxpr(computation, init_avals: tuple, init_tree) -> tuple[ClosedJaxpr, object]:
  """`computation` traced at two pytrees (shaped like the init values) of scalars, flat:
  `(xs..., ys...) -> (zs...)`. Returns (closed jaxpr, output tree)."""
  n = len(init_avals)
  store = {}

  def flat_fun(*args):
    xs = tree_util.tree_unflatten(init_tree, args[:n])
    ys = tree_util.tree_unflatten(init_tree, args[n:])
    outs, store["tree"] = tree_util.tree_flatten(computation(xs, ys))
    for o in outs:
      try:
        get_aval(o)
      except TypeError:
        raise TypeError(f"lax.reduce computation returned a value of type {type(o).__name__} "
                        f"({o!r}); it must return arrays (a pytree of them like init_values)"
                        ) from None
    return outs

  jaxpr, consts = staging.trace_to_jaxpr(flat_fun, list(init_avals) * 2)
  if any(isinstance(c, Tracer) for c in consts):
    raise NotImplementedError("Reduction computations can't close over Tracers (values of an "
                              "enclosing transformation): pass them as operands instead.")
  return ClosedJaxpr(jaxpr, consts), store["tree"]


def reduce(operands, init_values, computation, dimensions, out_sharding=None):
  """Reduce `operands` over `dimensions` with `computation`; as jax.lax.reduce.

  `init_values` and `computation` must form a monoid (the init values an identity of an
  associative computation): XLA may reorder and regroup the applications.

  Args:
    operands: an array or a pytree of arrays of one shape.
    init_values: a scalar, or a pytree of scalars with the structure of `operands` and their
      dtypes.
    computation: `(xs, ys) -> zs`, each a pytree of scalars shaped like `init_values`.
    dimensions: the axes to reduce (non-negative ints).
    out_sharding: where to place the results (a sharding; None: as XLA chooses).

  Returns:
    The reduced operands, a pytree like `operands`.

  Example:
    >>> x = jnp.array([[1., 5., 3.], [4., 2., 6.]])
    >>> lax.reduce(x, 0., lax.add, (0,))  # a monoid: the same as lax.reduce_sum(x, (0,))
    Array([5., 7., 9.], dtype=float32)
    >>> def larger(a, b):  # (value, index) pairs: keep the larger value's pair
    ...   take_a = a[0] >= b[0]
    ...   return (lax.select(take_a, a[0], b[0]), lax.select(take_a, a[1], b[1]))
    >>> idx = jnp.broadcast_to(jnp.arange(3), x.shape)
    >>> lax.reduce((x, idx), (-jnp.inf, 0), larger, (1,))  # the max of each row and its column
    (Array([5., 6.], dtype=float32), Array([1, 2], dtype=int32))
  """
  flat_ops, op_tree = tree_util.tree_flatten(operands)
  flat_inits, init_tree = tree_util.tree_flatten(init_values)
  if op_tree != init_tree:
    raise ValueError(f"Operands must have the same tree structure as init_values: {op_tree} vs. "
                     f"{init_tree}")
  if len(flat_ops) != len(flat_inits):
    raise ValueError(f"Must have same total number of operands as init_values:  "
                     f"{len(flat_ops)} vs. {len(flat_inits)}")
  dimensions = tuple(dimensions)
  if len(flat_ops) == 1:
    monoid = reductions.monoid_reduction(flat_ops[0], flat_inits[0], computation, dimensions)
    if monoid is not None:
      return placed(tree_util.tree_unflatten(op_tree, [monoid]), out_sharding)
  init_avals = _flat_avals(flat_inits)
  try:
    hash(computation)
  except TypeError:
    raise TypeError(f"lax.reduce computation must be hashable (it is a parameter of the reduce "
                    f"primitive), got an object of type {type(computation).__name__}") from None
  jaxpr, out_tree = _computation_jaxpr(computation, init_avals, init_tree)
  if out_tree != init_tree:
    raise TypeError(f"lax.reduce computation must return a pytree with the structure of "
                    f"init_values {init_tree}, got {out_tree}")
  try:
    dims = tuple(int(d) for d in dimensions)
  except TypeError:
    raise TypeError(f"reduce dimensions must be integers, got {dimensions!r}") from None
  outs = reduce_p.bind(*flat_ops, *flat_inits, computation=computation, jaxpr=jaxpr,
                       dimensions=dims)
  return placed(tree_util.tree_unflatten(op_tree, outs), out_sharding)


def _reduce_abstract_eval(*avals, computation, jaxpr, dimensions):
  n = len(avals) // 2
  ops, inits = avals[:n], avals[n:]
  if any(a.shape != () for a in inits):
    raise ValueError(f"reduce found non-scalar initial value: {[a.shape for a in inits]}")
  if [a.dtype for a in ops] != [a.dtype for a in inits]:
    raise TypeError(f"reduce operand dtypes should match corresponding initial value dtypes, "
                    f"got operands={[a.str_short() for a in ops]} and "
                    f"initial_values={[a.str_short() for a in inits]}")
  if any(a.shape != ops[0].shape for a in ops):
    raise ValueError(f"reduce operands must have one shape, got {[a.shape for a in ops]}")
  ndim = ops[0].ndim if ops else 0
  for d in dimensions:
    if d >= ndim:
      raise IndexError(f"reduce dimension {d} is out of bounds for operands of rank {ndim} "
                       f"(shape {ops[0].shape})")
    if d < 0:
      raise ValueError(f"reduce dimension {d} is out of bounds: dimensions must be in [0, {ndim})")
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"Duplicate reduction dimension in reduce: {dimensions}")
  outs = jaxpr.out_avals
  scalars = [ShapedArray((), a.dtype) for a in inits]
  if len(outs) != n or not all(map(same_type, outs, scalars)):
    raise TypeError(f"reduce computation must return ({', '.join(a.str_short() for a in scalars)})"
                    f" (the init values' types), got ({', '.join(a.str_short() for a in outs)})")
  kept = tuple(s for i, s in enumerate(ops[0].shape) if i not in dimensions)
  return [ShapedArray(kept, o.dtype, o.weak_type and i.weak_type)
          for o, i in zip(ops, inits, strict=True)]


def _apply_elementwise(jaxpr: ClosedJaxpr, xs, ys):
  """The scalar computation applied elementwise to arrays of one shape (a batched jaxpr over
  the flattened elements)."""
  shape = get_aval(xs[0]).shape
  size = int(np.prod(shape, dtype=np.int64))
  flat = [shapes.reshape(v, (size,)) for v in list(xs) + list(ys)]
  batched, out_dims = batching.batch_jaxpr(jaxpr, (0,) * len(flat), size)
  outs = eval_jaxpr(batched.jaxpr, batched.consts, *flat)
  return [shapes.reshape(batch_util.bdim_at(o, d, 0, size), shape)
          for o, d in zip(outs, out_dims, strict=True)]


def _reduce_tree(jaxpr, inits, xs):
  """Reduce axis 0 of `xs` by halves: the first half against the second (an odd count padded
  with the init values) until one element is left."""
  rest = get_aval(xs[0]).shape[1:]
  if get_aval(xs[0]).shape[0] == 0:
    return [creation.full(rest, i, get_aval(x).dtype) for x, i in zip(xs, inits, strict=True)]
  while get_aval(xs[0]).shape[0] > 1:
    n = get_aval(xs[0]).shape[0]
    n1 = (n + 1) // 2
    lo = [convenience.slice_in_dim(x, 0, n1, axis=0) for x in xs]
    hi = [convenience.slice_in_dim(x, n1, n, axis=0) for x in xs]
    if n - n1 != n1:
      pads = [(0, 1, 0)] + [(0, 0, 0)] * len(rest)
      hi = [shapes.pad(h, convert_element_type(i, get_aval(h).dtype), pads)
            for h, i in zip(hi, inits, strict=True)]
    xs = _apply_elementwise(jaxpr, lo, hi)
  return [shapes.reshape(x, rest) for x in xs]


def _reduce_jvp(primals, tangents, *, computation, jaxpr, dimensions):
  n = len(primals) // 2
  xs, inits = list(primals[:n]), list(primals[n:])
  if any(type(t) is not ad.Zero for t in tangents[n:]):
    raise NotImplementedError("Gradient of general lax.reduce with non-zero tangents for "
                              "initial values to reduction not implemented")
  shape = get_aval(xs[0]).shape
  kept = tuple(d for d in range(len(shape)) if d not in dimensions)
  count = int(np.prod([shape[d] for d in dimensions], dtype=np.int64))
  new_shape = (count,) + tuple(shape[d] for d in kept)
  perm = tuple(dimensions) + kept

  def moved(v):
    return shapes.reshape(shapes.transpose(v, perm), new_shape)

  def tree(*vals):
    return _reduce_tree(jaxpr, inits, [moved(v) for v in vals])

  return ad.jvp_flat(tree, xs, list(tangents[:n]))


def _reduce_batch(axis_size, vals, dims, *, computation, jaxpr, dimensions):
  n = len(vals) // 2
  if any(d is not batching.not_mapped for d in dims[n:]):
    raise NotImplementedError("lax.reduce under vmap with batched init values is not "
                              "supported (as in JAX)")
  ops = [batch_util.bdim_at(x, d, 0, axis_size) for x, d in zip(vals[:n], dims[:n], strict=True)]
  outs = reduce_p.bind(*ops, *vals[n:], computation=computation, jaxpr=jaxpr,
                       dimensions=tuple(d + 1 for d in dimensions))
  return outs, [0] * n


def _reduce_lower(ctx, *args, computation, jaxpr, dimensions):
  n = len(args) // 2
  scalar_types = [mlir.ir_type(ShapedArray((), a.dtype)) for a in ctx.avals_in[n:]]
  region = ctx.fb.region(scalar_types * 2,
                         lambda fb, *xy: mlir.inline_closed_jaxpr(fb, jaxpr, list(xy)))
  return ctx.op("stablehlo.reduce", list(args), ctx.avals_out,
                props={"dimensions": mlir.i64_array(dimensions)}, regions=[region])


reduce_p = Primitive("reduce", multiple_results=True)
reduce_p.def_abstract_eval(_reduce_abstract_eval)
ad.primitive_jvps[reduce_p] = _reduce_jvp
batching.axis_size_batchers[reduce_p] = _reduce_batch
mlir.register_lowering(reduce_p, _reduce_lower)
inv.not_invertible(reduce_p, "many-to-one: a reduction")
