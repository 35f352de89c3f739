"""Tensor contractions on lax.dot_general: matmul, dot, vdot, inner, outer, tensordot, einsum.

Operands are promoted to their common dtype first. Every contraction is `dot_general` taking
the dimensions where they are: nothing is transposed or broadcast before a dot (batch dims of
`matmul` that only one operand has, or has with size > 1 against a 1, are free dims of that
operand); at most the result is transposed into the order NumPy promises. `einsum` contracts
pairwise in the order opt_einsum chooses, each pair one `dot_general`.
"""
from __future__ import annotations

import collections
import operator

import numpy as np

from revax._src import lax
from revax._src.core import dtypes, sharding_types
from revax._src.core.shape_poly import is_symbolic_dim, is_symbolic_shape
from revax._src.lax import sharding_constraint
from revax._src.lax.sharding_constraint import placed
from revax._src.numpy import util
from revax._src.numpy.util import aval_of


def _shape(x):
  return aval_of(x).shape


def _promote(fun_name, *args, preferred=None, scalars=True):
  """The operands in their common dtype, as jax.numpy's contractions take them: an operand that
  already has that dtype is passed on as it is, weak or not (dot_general's result is weak only
  when both operands are), so the gradient of a weakly typed operand is strong, as in JAX.
  Converting it to a strong type first would make its cotangent weak through the conversion's
  transpose. Objects with a `__jax_array__` method are converted through it when they are
  pytrees (JAX's contractions are jitted: jit passes a pytree's leaves and abstractifies any
  other object, which raises ValueError for one with `__jax_array__`). Integer operands wider
  than the result type (`preferred`, or the promoted type) are refused as jax's dot_general
  refuses them (`scalars`: whether the function contracts 0-d operands with dot_general too)."""
  util.check_arraylike(fun_name, *args)
  args = util.converted_pytrees(args)
  avals = [aval_of(a) for a in args]
  dtype, weak = dtypes.promote_types_weak(*((a.dtype, a.weak_type) for a in avals))
  if len(avals) > 1 and (scalars or all(a.shape for a in avals)):
    # (matmul refuses scalars and inner multiplies them: only their dot_general checks widths)
    check_integer_widths([a.dtype for a in avals],
                         dtype if preferred is None else dtypes.canonicalize_dtype(preferred))
  return [x if a.dtype == dtype else lax.convert_element_type(x, dtype, weak)
          for x, a in zip(args, avals, strict=True)]


def check_integer_widths(operand_dtypes, result_dtype) -> None:
  """The TypeError jax's contractions raise where the result type is narrower than one of the
  integer operands' own types: jax.numpy passes its operands unpromoted to dot_general with the
  promoted type (or the one asked for) as `preferred_element_type`, and dot_general refuses one
  narrower than its integer operands' (`int8_array @ weak_int32_array`, whose promoted type is
  int8).

  Args:
    operand_dtypes: the operands' dtypes, before promotion.
    result_dtype: their promoted dtype, or the `preferred_element_type` asked for.

  Example:
    >>> from revax._src.numpy.contractions import check_integer_widths
    >>> check_integer_widths([np.dtype("int8"), np.dtype("int32")], np.dtype("int8"))
    Traceback (most recent call last):
    TypeError: `preferred_element_type` must not be narrower than the original type, ...
  """
  if any(dtypes.is_inexact(d) for d in operand_dtypes):
    return  # (dot_general's type is then floating: no width check)
  ints = [d for d in operand_dtypes if dtypes.is_integer(d)]
  widest = max(ints, key=lambda d: (d.itemsize, dtypes.is_signed_integer(d)), default=None)
  if widest is not None and widest.itemsize > np.dtype(result_dtype).itemsize:
    raise TypeError("`preferred_element_type` must not be narrower than the original type, got "
                    f"preferred_element_type of {result_dtype} for result type of {widest}.")


def _dot(a, b, contract, batch, precision, preferred_element_type, out_sharding=None,
         perm=None):
  """One dot_general; `out_sharding` (the caller's, for its result) is handed to it, through
  `perm` when the caller transposes the dot's result by `perm` (JAX's dot takes the result's
  sharding, so where both operands split a contracted dimension no error is raised)."""
  dot_sharding = _dot_out_sharding(out_sharding, perm) if out_sharding is not None else None
  return lax.dot_general(a, b, (contract, batch), precision=precision,
                         preferred_element_type=preferred_element_type,
                         out_sharding=dot_sharding)


def _dot_out_sharding(out_sharding, perm):
  """`out_sharding` (for a result that is the dot's transposed by `perm`) for the dot's own
  result; a bare PartitionSpec is resolved against the mesh in context."""
  out_sharding = sharding_constraint.resolve_out_sharding(out_sharding)
  if out_sharding is None or perm is None or perm == tuple(range(len(perm))):
    return out_sharding
  spec = list(out_sharding.spec.partitions) + [None] * (len(perm) - len(out_sharding.spec))
  parts = [None] * len(perm)
  for i, p in enumerate(perm):
    parts[p] = spec[i]
  return sharding_types.make_sharding(out_sharding.mesh, parts, out_sharding.spec.unreduced,
                                     out_sharding.spec.reduced)


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Matrix product with NumPy's rules: 1-d operands are vectors, leading (batch) dims broadcast.

  One `dot_general`, as jax.numpy.matmul: batch dims present in both operands are batch dims of
  the dot; a batch dim that only one operand has (or has with size > 1 against the other's 1)
  is a free dim of that operand, so nothing is broadcast; one transpose of the result puts the
  dims in NumPy's order where needed.

  Args:
    a, b: arrays of rank >= 1.
    precision, preferred_element_type: as for `lax.dot_general`.
    out_sharding: where to place the result (a sharding; None: as XLA chooses).

  Returns:
    The product, of shape broadcast(batch dims) + (a's rows,) + (b's columns,), less the vector
    dims.

  Example:
    >>> jnp.matmul(jnp.ones((4, 2, 3)), jnp.ones((3, 5))).shape  # batch dims broadcast
    (4, 2, 5)
  """
  a, b = _promote("matmul", a, b, preferred=preferred_element_type, scalars=False)
  sa, sb = _shape(a), _shape(b)
  if not sa or not sb:
    raise ValueError(f"matmul: inputs must be at least 1-dimensional, got shapes {sa} and {sb}")
  a_is_mat, b_is_mat = len(sa) > 1, len(sb) > 1
  b_k_dim = len(sb) - 2 if b_is_mat else 0
  if sa[-1] != sb[b_k_dim]:
    raise TypeError(f"matmul: contracting dimensions differ: shapes {sa} and {sb} "
                     f"(size {sa[-1]} vs {sb[b_k_dim]})")
  a_batch = sa[:-2] if a_is_mat else ()
  b_batch = sb[:-2] if b_is_mat else ()
  n = max(len(a_batch), len(b_batch))
  a_batch = (None,) * (n - len(a_batch)) + a_batch
  b_batch = (None,) * (n - len(b_batch)) + b_batch
  a_squeeze, b_squeeze, a_bdims, b_bdims = [], [], [], []
  idx_batch, idx_a_free, idx_b_free = [], [], []  # output positions, in dot_general's order
  for i, (da, db) in enumerate(zip(a_batch, b_batch, strict=True)):
    if da is None:
      idx_b_free.append(i)
    elif db is None:
      idx_a_free.append(i)
    elif da == 1 and db != 1:
      idx_b_free.append(i)
      a_squeeze.append(len(idx_batch) + len(idx_a_free) + len(a_squeeze))
    elif db == 1 and da != 1:
      idx_a_free.append(i)
      b_squeeze.append(len(idx_batch) + len(idx_b_free) + len(b_squeeze))
    elif da == db:
      a_bdims.append(len(idx_batch) + len(idx_a_free))
      b_bdims.append(len(idx_batch) + len(idx_b_free))
      idx_batch.append(i)
    else:
      raise ValueError(f"matmul: Incompatible shapes for broadcasting the batch dimensions: "
                       f"shapes {sa} and {sb}")
  if a_is_mat:
    idx_a_free.append(n)
  if b_is_mat:
    idx_b_free.append(n + a_is_mat)
  a = lax.squeeze(a, tuple(a_squeeze)) if a_squeeze else a
  b = lax.squeeze(b, tuple(b_squeeze)) if b_squeeze else b
  na, nb = len(_shape(a)), len(_shape(b))
  perm = tuple(int(i) for i in np.argsort(idx_batch + idx_a_free + idx_b_free))
  out = _dot(a, b, ((na - 1,), (nb - 1 - b_is_mat,)), (tuple(a_bdims), tuple(b_bdims)),
             precision, preferred_element_type, out_sharding, perm)
  out = out if perm == tuple(range(len(perm))) else lax.transpose(out, perm)
  return placed(out, out_sharding)


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """np.dot: products of scalars, inner products of vectors, and a's last axis contracted with
  b's second-to-last (its only one if b is a vector); `out_sharding` places the result.

  Example:
    >>> jnp.dot(jnp.array([[1., 2.], [3., 4.]]), jnp.array([1., 1.]))
    Array([3., 7.], dtype=float32)
  """
  a, b = _promote("dot", a, b, preferred=preferred_element_type)
  sa, sb = _shape(a), _shape(b)
  if not sa or not sb:
    return placed(lax.mul(a, b), out_sharding)
  cb = 0 if len(sb) == 1 else len(sb) - 2
  if sa[-1] != sb[cb]:
    raise TypeError(f"dot: shapes {sa} and {sb} not aligned: {sa[-1]} (dim {len(sa) - 1}) != "
                     f"{sb[cb]} (dim {cb})")
  return placed(_dot(a, b, ((len(sa) - 1,), (cb,)), ((), ()), precision, preferred_element_type,
                     out_sharding), out_sharding)


def inner(a, b, *, precision=None, preferred_element_type=None):
  """Sum of products over the last axes of `a` and `b`."""
  a, b = _promote("inner", a, b, preferred=preferred_element_type, scalars=False)
  sa, sb = _shape(a), _shape(b)
  if not sa or not sb:
    return lax.mul(a, b)
  if sa[-1] != sb[-1]:
    raise TypeError(f"inner: last dimensions differ: shapes {sa} and {sb}")
  return _dot(a, b, ((len(sa) - 1,), (len(sb) - 1,)), ((), ()), precision,
              preferred_element_type)


def vdot(a, b, *, precision=None, preferred_element_type=None):
  """Inner product of the flattened arrays, conjugating `a` first."""
  from revax._src.numpy.shape_ops import ravel
  from revax._src.numpy.ufuncs import conjugate
  a, b = _promote("vdot", a, b, preferred=preferred_element_type)
  a, b = ravel(conjugate(a)), ravel(b)
  if _shape(a) != _shape(b):
    raise TypeError(f"vdot: operands must have the same size, got {_shape(a)} and {_shape(b)}")
  return _dot(a, b, ((0,), (0,)), ((), ()), precision, preferred_element_type)


def outer(a, b):
  """Outer product of the flattened arrays: out[i, j] = a[i] * b[j]."""
  from revax._src.numpy.shape_ops import ravel
  from revax._src.numpy.ufuncs import multiply
  a, b = util.promote_args("outer", a, b)
  return multiply(lax.expand_dims(ravel(a), (1,)), lax.expand_dims(ravel(b), (0,)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Contract `axes` of `a` with `axes` of `b`: an int N (a's last N with b's first N) or a
  pair of axis sequences; `out_sharding` places the result.

  Example:
    >>> jnp.tensordot(jnp.ones((2, 3, 4)), jnp.ones((3, 4, 5)), 2).shape
    (2, 5)
  """
  a, b = _promote("tensordot", a, b, preferred=preferred_element_type)
  na, nb = len(_shape(a)), len(_shape(b))
  if isinstance(axes, (list, tuple)) and len(axes) == 2:
    ax_a, ax_b = axes
    ax_a = util.canonicalize_axes(ax_a if isinstance(ax_a, (list, tuple)) else (ax_a,), na)
    ax_b = util.canonicalize_axes(ax_b if isinstance(ax_b, (list, tuple)) else (ax_b,), nb)
    if len(ax_a) != len(ax_b):
      raise TypeError(f"tensordot requires axes lists to have equal length, got {axes}")
  else:
    try:
      n = operator.index(axes)
    except TypeError:
      raise TypeError(f"tensordot axes argument must be an int or a pair of sequences, got "
                      f"{axes!r}") from None
    if n < 0 or n > min(na, nb):
      raise TypeError(f"tensordot requires 0 <= axes <= min(a.ndim, b.ndim) = "
                      f"{min(na, nb)}, got {n}")
    ax_a, ax_b = tuple(range(na - n, na)), tuple(range(n))
  for i, j in zip(ax_a, ax_b, strict=True):
    if _shape(a)[i] != _shape(b)[j]:
      raise TypeError(f"tensordot: shape mismatch on contracted axes: a axis {i} has size "
                      f"{_shape(a)[i]}, b axis {j} has size {_shape(b)[j]}")
  return placed(_dot(a, b, (ax_a, ax_b), ((), ()), precision, preferred_element_type,
                     out_sharding), out_sharding)


# --- einsum --------------------------------------------------------------------------------------
class _ShapeOnly:
  """Stands in for an operand in opt_einsum's parser and path search (they need only shapes)."""
  __slots__ = ("shape",)

  def __init__(self, shape):
    self.shape = shape


def _einsum_parse(operands, optimize):
  """Parse einsum arguments (the subscripts string or the interleaved (array, axes) form) with
  opt_einsum and find the contraction order. Returns (arrays, input names, output names,
  contraction list); names are strings of one letter per dimension."""
  import opt_einsum  # imported on first use: start-up is a feature
  operands = list(operands)
  if isinstance(operands[0], str):
    array_positions = range(1, len(operands))
  else:
    array_positions = range(0, 2 * (len(operands) // 2), 2)
  arrays = {}
  for i in array_positions:
    util.check_arraylike("einsum", operands[i])
    stand_in = _ShapeOnly(_shape(operands[i]))
    arrays[id(stand_in)] = util.as_array(operands[i])
    operands[i] = stand_in
  from opt_einsum.parser import parse_einsum_input
  try:
    inputs, output, stand_ins = parse_einsum_input(operands)
  except (ValueError, TypeError) as e:
    raise ValueError(f"einsum: {e}") from None
  input_names = inputs.split(",")
  for names, s in zip(input_names, stand_ins, strict=True):
    if len(names) != len(s.shape):
      raise ValueError(f"einsum: subscripts {names!r} name {len(names)} dimensions for an "
                       f"operand of shape {s.shape}")
  sizes = {}
  for names, s in zip(input_names, stand_ins, strict=True):
    for name, size in zip(names, s.shape, strict=True):
      if size != 1 and sizes.setdefault(name, size) != size:
        raise ValueError(f"einsum: dimension {name!r} has sizes {sizes[name]} and {size} in "
                         f"subscripts {inputs}->{output} for shapes "
                         f"{tuple(x.shape for x in stand_ins)}")
  if optimize is False:
    optimize = [(0, 1)] * (len(stand_ins) - 1) if len(stand_ins) > 1 else [(0,)]
  elif optimize is True:
    optimize = "optimal"
  # opt_einsum wants concrete sizes to plan: symbolic ones stand as 8 there (as in JAX)
  planned = [_ShapeOnly(tuple(8 if is_symbolic_dim(d) else d for d in s.shape))
             if is_symbolic_shape(s.shape) else s for s in stand_ins]
  _, contractions = opt_einsum.contract_path(f"{inputs}->{output}", *planned, einsum_call=True,
                                             use_blas=True, optimize=optimize)
  contractions = [(tuple(c[0]), frozenset(c[1]), c[2]) for c in contractions]
  return [arrays[id(s)] for s in stand_ins], input_names, output, contractions


def _removechars(s, chars):
  return "".join(c for c in s if c not in chars)


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=None, out_sharding=None):
  """Einstein summation, as jax.numpy.einsum.

  The order of pairwise contractions is opt_einsum's (`optimize`: "auto", "optimal", "greedy",
  ..., True for "optimal", False for left to right, or a path from `einsum_path`). Each pairwise
  contraction is a single `lax.dot_general` taking batch and contracting dims where they are in
  its operands, so no operand is transposed; intermediates keep the dot's order, and only the
  final result is transposed if its order differs from the output subscripts. Repeated indices
  of one operand (diagonals) and indices summed from one operand alone are reduced first.

  Args:
    subscripts: e.g. "bij,bjk->bik", or the first array of the interleaved form
      `einsum(x, [0, 1], y, [1, 2], [0, 2])`.
    *operands: the arrays (and, in the interleaved form, their axes lists).
    out: unsupported (as in JAX).
    optimize: the contraction order strategy, as above.
    precision, preferred_element_type: as for `lax.dot_general`.
    _dot_general: the function each pairwise contraction calls in place of `lax.dot_general`
      (as jax's private argument: called as `f(lhs, rhs, dimension_numbers, precision,
      preferred_element_type=...)`, plus `out_sharding=` when one is given; flax passes
      quantizing dots).
    out_sharding: where to place the result (a sharding; None: as XLA chooses).

  Returns:
    The contraction, in the operands' promoted dtype unless `preferred_element_type` is given.

  Example:
    >>> jnp.einsum("bij,bjk->bik", jnp.ones((4, 2, 3)), jnp.ones((4, 3, 5))).shape
    (4, 2, 5)
    >>> jnp.einsum("ii", jnp.array([[1., 2.], [3., 4.]]))  # the trace
    Array(5., dtype=float32)
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to revax.numpy.einsum is not supported.")
  arrays, input_names, output, contractions = _einsum_parse((subscripts, *operands), optimize)
  arrays = (_promote("einsum", *arrays, preferred=preferred_element_type)
            if len(arrays) > 1 else arrays)
  if preferred_element_type is None:
    pref, out_weak = util.result_type_of(*arrays)
  else:
    pref, out_weak = util.canonical_dtype_arg(preferred_element_type), False
  entries = list(zip(arrays, input_names, strict=True))
  named = None  # (mesh, {output name: its split}) for the last contraction, from out_sharding
  resolved = sharding_constraint.resolve_out_sharding(out_sharding)
  if resolved is not None:
    named = (resolved.mesh, dict(zip(output, sharding_types.explicit_parts(
        resolved, len(output)) or (None,) * len(output), strict=True)))
  for step, (indices, removed, einstr) in enumerate(contractions):
    step_output = einstr.split("->")[1]
    picked = [entries.pop(i) for i in indices]
    if len(picked) == 1:
      (x, names), = picked
      x, names = _einsum_reduce_one(x, names, removed, step_output, pref)
    elif len(picked) == 2:
      x, names = _einsum_contract_pair(picked[0], picked[1], removed, step_output, pref,
                                       precision, named if step == len(contractions) - 1 else None,
                                       _dot_general)
    else:
      raise NotImplementedError("revax.numpy.einsum contracts two operands at a time; the "
                                f"path asked for {len(picked)} at once")
    entries.append((x, names))
  (x, names), = entries
  if names != output:
    x = lax.transpose(x, tuple(names.index(n) for n in output))
  return placed(lax.convert_element_type(x, pref, out_weak), out_sharding)


def _einsum_sum(x, axes, pref):
  if not axes:
    return x
  if _dtype(x) != pref and dtypes.promote_types(_dtype(x), pref) == pref:
    x = lax.convert_element_type(x, pref)  # sum in a wider preferred_element_type
  if dtypes.is_bool(_dtype(x)):
    return lax.reduce_or(x, tuple(axes))
  return lax.reduce_sum(x, tuple(axes))


def _dtype(x):
  return aval_of(x).dtype


def _einsum_sum_uniques(x, names, uniques, pref):
  if not uniques:
    return x, names
  x = _einsum_sum(x, [names.index(n) for n in uniques], pref)
  return x, _removechars(names, uniques)


def _einsum_sum_repeats(x, names, keep, pref):
  """Each name repeated within one operand: keep its diagonal (and sum it out unless `keep`
  holds it)."""
  for name, count in collections.Counter(names).items():
    if count < 2:
      continue
    axes = [i for i, n in enumerate(names) if n == name]
    shape = _shape(x)
    first = lax.broadcasted_iota(np.int32, shape, axes[0])
    mask = None
    for ax in axes[1:]:
      same = lax.eq(first, lax.broadcasted_iota(np.int32, shape, ax))
      mask = same if mask is None else lax.bitwise_and(mask, same)
    x = lax.select_n(mask, lax.full_like(x, 0), x)
    if name in keep:
      x = _einsum_sum(x, axes[1:], pref)
      names = names[:axes[1]] + _removechars(names[axes[1]:], name)
    else:
      x = _einsum_sum(x, axes, pref)
      names = _removechars(names, name)
  return x, names


def _einsum_reduce_one(x, names, removed, step_output, pref):
  counts = collections.Counter(names)
  uniques = [n for n in sorted(removed) if counts[n] == 1]
  x, names = _einsum_sum_uniques(x, names, uniques, pref)
  return _einsum_sum_repeats(x, names, step_output, pref)


def _drop_singletons(x, names, other_shape, other_names):
  """Squeeze size-1 dims whose name the other operand has with a size other than 1 (they
  broadcast against it)."""
  shape = _shape(x)
  drop = [i for i, n in enumerate(names)
          if shape[i] == 1 and n in other_names and other_shape[other_names.index(n)] != 1]
  if not drop:
    return x, names
  return lax.squeeze(x, tuple(drop)), "".join(n for i, n in enumerate(names) if i not in drop)


def _einsum_contract_pair(lhs_entry, rhs_entry, removed, step_output, pref, precision,
                          named=None, dot_general=None):
  """One dot_general of two operands, taking batch and contracting dims where they are; `named`
  ((mesh, {name: split})) types its result, from einsum's out_sharding; `dot_general` (None:
  lax.dot_general) is einsum's `_dot_general`."""
  (lhs, lhs_names), (rhs, rhs_names) = lhs_entry, rhs_entry
  lhs, lhs_names = _drop_singletons(lhs, lhs_names, _shape(rhs), rhs_names)
  rhs, rhs_names = _drop_singletons(rhs, rhs_names, _shape(lhs), lhs_names)
  contracted = sorted(removed)
  lhs_counts, rhs_counts = collections.Counter(lhs_names), collections.Counter(rhs_names)
  lhs, lhs_names = _einsum_sum_uniques(
      lhs, lhs_names, [n for n in contracted if lhs_counts[n] == 1 and rhs_counts[n] == 0], pref)
  rhs, rhs_names = _einsum_sum_uniques(
      rhs, rhs_names, [n for n in contracted if rhs_counts[n] == 1 and lhs_counts[n] == 0], pref)
  lhs, lhs_names = _einsum_sum_repeats(lhs, lhs_names, step_output + rhs_names, pref)
  rhs, rhs_names = _einsum_sum_repeats(rhs, rhs_names, step_output + lhs_names, pref)
  contracted = [n for n in contracted if n in lhs_names and n in rhs_names]
  shared = set(lhs_names) & set(rhs_names)
  batch = [n for n in step_output if n in shared]
  batch_str = "".join(batch)
  lhs_rest = _removechars(lhs_names, batch_str + "".join(contracted))
  rhs_rest = _removechars(rhs_names, batch_str + "".join(contracted))
  lhs_c = tuple(lhs_names.index(n) for n in contracted)
  rhs_c = tuple(rhs_names.index(n) for n in contracted)
  lhs_b = tuple(lhs_names.index(n) for n in batch)
  rhs_b = tuple(rhs_names.index(n) for n in batch)
  # Of the two operand orders, take the one whose result is already in the step's output order
  # (opt_einsum tends to contract right to left, so try (rhs, lhs) first).
  typed = lambda names: None if named is None else sharding_types.make_sharding(
      named[0], [named[1].get(n) for n in names])
  def dot(a, b, dims, names):
    if dot_general is None:
      return lax.dot_general(a, b, dims, precision=precision, preferred_element_type=pref,
                             out_sharding=typed(names))
    sharding = typed(names)  # (jax passes out_sharding= only when there is one)
    return dot_general(a, b, dims, precision, preferred_element_type=pref,
                       **({} if sharding is None else {"out_sharding": sharding}))
  if batch_str + rhs_rest + lhs_rest == step_output:
    names = batch_str + rhs_rest + lhs_rest
    return dot(rhs, lhs, ((rhs_c, lhs_c), (rhs_b, lhs_b)), names), names
  names = batch_str + lhs_rest + rhs_rest
  return dot(lhs, rhs, ((lhs_c, rhs_c), (lhs_b, rhs_b)), names), names


def einsum_path(subscripts, /, *operands, optimize="auto"):
  """The contraction order `einsum` would use, without computing it (as jax.numpy.einsum_path).

  Args:
    subscripts, *operands: as for `einsum`.
    optimize: as for `einsum`.

  Returns:
    (path, info): a path `einsum(..., optimize=path)` accepts, and opt_einsum's printable report.
  """
  import opt_einsum
  if optimize is True:
    optimize = "optimal"
  elif optimize is False:
    n = len(operands) if isinstance(subscripts, str) else (len(operands) + 1) // 2
    optimize = [(0, 1)] * (n - 1) if n > 1 else [(0,)]
  operands = [_ShapeOnly(_shape(x)) if util.is_operand(x) else x for x in operands]
  if not isinstance(subscripts, str):
    subscripts = _ShapeOnly(_shape(subscripts))
  return opt_einsum.contract_path(subscripts, *operands, optimize=optimize)
