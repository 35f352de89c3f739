"""vmap: vectorize a function over a mapped axis of its arguments, with JAX's semantics.

`in_axes`/`out_axes` are ints (negative allowed), None, or pytree prefixes of the arguments /
outputs. The function runs once under a BatchTrace; outputs are moved to `out_axes`, and outputs
that do not depend on the mapped axis are broadcast to the batch size there.
"""
from __future__ import annotations


import numpy as np
import optree

from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import AbstractToken, get_aval
from revax._src.interpreters import batching
from revax._src.lax import batch_util, conversion, reductions, shapes

_NONE = object()  # stands for None inside axis specs, where None must be a leaf


def _axes_leaves(name, axes, tree, fn="vmap"):
  """One axis (int or None) per leaf of `tree`, broadcasting the prefix `axes` (errors name
  the transformation `fn`)."""
  # (None marks an unmapped subtree, also inside registered nodes such as flax's NodeStates)
  marked = optree.tree_map(lambda a: _NONE if a is None else a, axes, none_is_leaf=True,
                           namespace=tree_util.NAMESPACE)
  try:
    if any(isinstance(a, int) and a < 0
           for a in optree.tree_leaves(marked, namespace=tree_util.NAMESPACE)):
      marked = _key_axes_on_data(marked, tree)
    full = optree.tree_broadcast_prefix(marked, tree, none_is_leaf=False,
                                        namespace=tree_util.NAMESPACE)
  except ValueError as e:
    raise ValueError(f"{fn} {name} specification must be a tree prefix of the corresponding "
                     f"value, got specification {axes} for value tree "
                     f"{tree_util.tree_structure(tree)}: {e}") from None
  leaves = tree_util.tree_leaves(full)
  out = []
  for a in leaves:
    if a is _NONE:
      out.append(None)
    elif isinstance(a, int) and not isinstance(a, bool):
      out.append(a)
    else:
      raise TypeError(f"{fn} {name} must be an int, None, or a (nested) container with those "
                      f"types as leaves, but got {a!r}.")
  return out


def _key_axes_on_data(marked, tree):
  """`marked` broadcast over `tree` with array leaves (typed keys) whole, a negative axis of
  one counted from the end of the keys' shape, not of their data's (the key-word dims)."""
  full = optree.tree_broadcast_prefix(marked, tree, none_is_leaf=False,
                                      namespace=tree_util.USER_NAMESPACE)

  def on_data(axis, x):
    if tree_util.is_array_leaf(x) and isinstance(axis, int) and axis < 0:
      return axis - (get_aval(tree_util.tree_leaves(x)[0]).ndim - len(x.shape))
    return axis

  return tree_util.tree_map(on_data, full, tree, namespace=tree_util.USER_NAMESPACE)


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None,
         sum_match=False):
  """Vectorize `fun` along a mapped axis.

  Args:
    fun: function of arrays (pytrees).
    in_axes: int, None, or a prefix of the positional arguments' tree (a tuple for several
      arguments): which axis of each input is mapped (None: not mapped).
    out_axes: int, None, or a prefix of the output tree: where the mapped axis goes.
    axis_name: a name for the mapped axis, for collectives (`lax.psum(x, name)`) inside `fun`.
    axis_size: the mapped size, needed only when no input is mapped.
    spmd_axis_name: a mesh axis name or a tuple of them: in a program over a mesh, the batch
      dimension is split over these axes wherever `fun` states a layout (a sharding constraint,
      a jit's shardings, a shard_map's specs, which must not name them themselves).
    sum_match: when True, an output mapped where its out_axes is None is summed over the batch
      instead of being an error.

  Example:
    >>> xs, y = jnp.arange(6.).reshape(3, 2), jnp.array([10., 100.])
    >>> revax.vmap(lambda x, y: x * y, in_axes=(0, None))(xs, y)  # y shared by every row
    Array([[  0., 100.],
           [ 20., 300.],
           [ 40., 500.]], dtype=float32)
    >>> revax.vmap(jnp.dot, in_axes=(1, None))(xs, jnp.ones(3))  # map over xs's columns
    Array([6., 9.], dtype=float32)
  """
  if not callable(fun):
    raise TypeError(f"vmap expects a callable, got {fun!r}")
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  if spmd_axis_name is not None and not isinstance(spmd_axis_name, tuple):
    spmd_axis_name = (spmd_axis_name,)

  @wrapping.wraps(fun)
  def vmap_f(*args, **kwargs):
    hash(spmd_axis_name)  # TypeError for an unhashable name (a list), as JAX raises
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
      raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding "
                       f"to the positional arguments passed to the function, but got "
                       f"len(in_axes)={len(in_axes)}, len(args)={len(args)}")
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    axes = _axes_leaves("in_axes", (in_axes, 0), (args, kwargs))
    size = _mapped_size(leaves, axes, axis_size, args)
    dims = []
    for x, a in zip(leaves, axes, strict=True):
      if a is None:
        dims.append(None)
        continue
      nd = get_aval(x).ndim
      if not -nd <= a < nd:
        raise ValueError(f"vmap was requested to map its argument along axis {a}, which implies "
                         f"that its rank should be at least {a + 1 if a >= 0 else -a}, but is "
                         f"only {nd} (its shape is {get_aval(x).shape})")
      dims.append(a % nd)
    store = {}

    def flat_fun(*flat):
      a, kw = tree_util.tree_unflatten(in_tree, flat)
      out = fun(*a, **kw)
      out_leaves, store["tree"] = tree_util.tree_flatten(out)
      return out_leaves

    outs, out_dims = batching.batch_flat(flat_fun, leaves, dims, size, axis_name,
                                         spmd_axis_name)
    out_tree = store["tree"]
    o_axes = _axes_leaves("out_axes", out_axes, tree_util.tree_unflatten(out_tree, outs))
    final = [_to_out_axis(o, d, a, size, sum_match)
             for o, d, a in zip(outs, out_dims, o_axes, strict=True)]
    return tree_util.tree_unflatten(out_tree, final)

  return vmap_f


def _mapped_size(leaves, axes, axis_size, args):
  sizes = {}
  for i, (x, a) in enumerate(zip(leaves, axes)):
    if a is None:
      continue
    shape = get_aval(x).shape
    if not -len(shape) <= a < len(shape):
      raise ValueError(f"vmap was requested to map its argument along axis {a}, which implies "
                       f"that its rank should be at least {a + 1 if a >= 0 else -a}, but is "
                       f"only {len(shape)} (its shape is {shape})")
    sizes.setdefault(shape[a], []).append((i, a, get_aval(x)))
  if not sizes:
    if axis_size is None:
      if not leaves:
        raise ValueError(f"vmap wrapped function must be passed at least one argument "
                         f"containing an array, got empty *args={args}")
      raise ValueError("vmap must have at least one non-None value in in_axes (or pass "
                       "axis_size)")
    return int(axis_size)
  if len(sizes) > 1 or (axis_size is not None and int(axis_size) not in sizes):
    lines = [f"  * axis {a} of flat argument {i} of type {aval.str_short()} had size {s}"
             for s, entries in sizes.items() for i, a, aval in entries]
    head = "vmap got inconsistent sizes for array axes to be mapped:\n"
    if axis_size is not None:
      head = f"vmap got axis_size={axis_size} but the mapped axes have sizes:\n"
    raise ValueError(head + "\n".join(lines))
  return next(iter(sizes))


def _to_out_axis(x, dim, out_axis, size, sum_match=False):
  aval = get_aval(x)
  if out_axis is None:
    if dim is not None:
      if sum_match:
        return _sum_over(x, dim)
      raise ValueError("vmap has mapped output but out_axes is None")
    return x
  if type(aval) is AbstractToken:
    raise TypeError("vmap cannot map a token output along an axis (a token has no shape): "
                    "give that output out_axes=None")
  nd = aval.ndim + (1 if dim is None else 0)
  if not -nd <= out_axis < nd:
    raise ValueError(f"vmap out_axes {out_axis} is out of bounds for an output of rank {nd}")
  out_axis %= nd
  if dim is None:  # unmapped: broadcast to the batch size at out_axis
    shape = aval.shape[:out_axis] + (size,) + aval.shape[out_axis:]
    dims = tuple(i if i < out_axis else i + 1 for i in range(aval.ndim))
    return shapes.broadcast_in_dim(x, shape, dims)
  return batch_util.moveaxis(x, dim, out_axis)



def _sum_over(x, dim):
  """`x` summed over axis `dim`, in the dtype JAX's `x.sum(dim)` gives: bools and integers
  narrower than the default integer are summed as the default int (unsigned: uint), the
  rest in their own dtype."""
  dtype = get_aval(x).dtype
  wide = dtypes.canonicalize_dtype(np.uint64 if dtype.kind == "u" else np.int64)
  if dtype == np.bool_ or (dtype.kind in "iu" and dtype.itemsize < wide.itemsize):
    x = conversion.convert_element_type(x, wide)
  return reductions.reduce_sum(x, (dim,))
