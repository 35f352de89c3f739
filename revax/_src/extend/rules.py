"""JAX's rule-table interfaces (`jax.interpreters.ad`, `.batching`, `.mlir`) where they differ
from revax's, as adapters that register into revax's own tables.

Most of JAX's tables have revax's conventions already (`primitive_jvps`, `primitive_transposes`,
`primitive_batchers` and `register_lowering` are re-exported as they are). The rest:

- `axis_primitive_batchers[p] = rule(axis_size, axis_name, trace_type, vals, dims, **params)`
  and `fancy_primitive_batchers[p] = rule(axis_data, vals, dims, **params)` register into
  revax's `axis_size_batchers` (the rule gets the batching axis' size and name);
- `deflinear(p, transpose(ct, **params))` (JAX's form, without the primal arguments), with
  `deflinear2` the form with them, and `defjvp2` revax's `defjvp_from_output`;
- `defreducer(p)`: batching of a reduction over its `axes` param, as revax's own reductions
  batch (an `input_shape` param follows the batched operand's shape);
- `lower_fun(fun, multiple_results=True)` with JAX's default. A lowering rule written against
  JAX's MLIR Python bindings cannot run here (revax emits StableHLO text); `lower_fun` is the way
  a library's primitive lowers: by tracing its implementation.
"""
from __future__ import annotations

from revax._src.interpreters import ad, batching, mlir
from revax._src.core.avals import get_aval
from revax._src.lax import batch_util
from revax._src.lax.reductions import _reduction_batch_rule

__all__ = ["axis_primitive_batchers", "fancy_primitive_batchers", "AxisData", "deflinear",
           "deflinear2", "defjvp2", "get_primitive_transpose", "lower_fun", "bdim_at_front",
           "broadcast", "moveaxis", "defbroadcasting", "defreducer"]


class AxisData:
  """The batching axis a `fancy_primitive_batchers` rule is given: its name, size and the
  mesh axis it is split over (JAX's `batching.AxisData`)."""
  __slots__ = ("name", "size", "spmd_name", "explicit_mesh_axis")

  def __init__(self, name, size, spmd_name=None, explicit_mesh_axis=None):
    self.name, self.size, self.spmd_name = name, size, spmd_name
    self.explicit_mesh_axis = explicit_mesh_axis

  def __repr__(self):
    return f"AxisData(name={self.name!r}, size={self.size})"


class _AxisPrimitiveBatchers:
  """`axis_primitive_batchers[p] = rule`: JAX's rule gets (axis_size, axis_name, trace_type)."""

  def __setitem__(self, prim, rule):
    def sized(axis_size, vals, dims, **params):
      return rule(axis_size, batching.batching_axis_name(), None, vals, dims, **params)
    batching.axis_size_batchers[prim] = sized

  def __contains__(self, prim):
    return prim in batching.axis_size_batchers


class _FancyPrimitiveBatchers(_AxisPrimitiveBatchers):
  """`fancy_primitive_batchers[p] = rule(axis_data, vals, dims, **params)`."""

  def __setitem__(self, prim, rule):
    def sized(axis_size, vals, dims, **params):
      axis = AxisData(batching.batching_axis_name(), axis_size,
                      batching.batching_spmd_axis_name())
      return rule(axis, vals, dims, **params)
    batching.axis_size_batchers[prim] = sized


axis_primitive_batchers = _AxisPrimitiveBatchers()
fancy_primitive_batchers = _FancyPrimitiveBatchers()


def bdim_at_front(x, bdim, size: int):
  """`x` with its batch dimension first (an unmapped `x` broadcast to `size`)."""
  return batch_util.bdim_to_front(x, bdim, size)


def broadcast(x, sz: int, axis: int, mesh_axis=None):
  """`x` broadcast along a new axis `axis` of length `sz`."""
  del mesh_axis
  return batch_util.broadcast_batched(x, sz, axis)


def moveaxis(x, src: int, dst: int):
  """Move axis `src` of `x` to `dst`."""
  return batch_util.moveaxis(x, src, dst)


def defbroadcasting(prim):
  """Batching for an elementwise primitive of several operands of one rank: operands are
  aligned at the first mapped operand's batch dimension (unmapped ones broadcast there)."""
  def rule(axis_size, vals, dims, **params):
    d = next(d for d in dims if d is not batching.not_mapped)
    vals = [batch_util.bdim_at(x, dx, d, axis_size) for x, dx in zip(vals, dims, strict=True)]
    return prim.bind(*vals, **params), d
  batching.axis_size_batchers[prim] = rule
  return rule


def defreducer(prim):
  """JAX's `batching.defreducer`: batch `prim`, a reduction of one operand over the axes in its
  `axes` param, by reducing the batched operand over those axes moved past the batch dimension.
  """
  rule = _reduction_batch_rule(prim)

  def batched(vals, dims, **params):
    if "input_shape" in params:
      params["input_shape"] = get_aval(vals[0]).shape
    return rule(vals, dims, **params)
  batching.primitive_batchers[prim] = batched


def deflinear(prim, transpose_rule):
  """JAX's `ad.deflinear`: `transpose_rule(ct, **params)` gives the cotangents of all inputs."""
  return ad.deflinear(prim, lambda ct, *args, **params: transpose_rule(ct, **params))


def deflinear2(prim, transpose_rule):
  """JAX's `ad.deflinear2`: `transpose_rule(ct, *args, **params)` (args may be undefined)."""
  return ad.deflinear(prim, transpose_rule)


def defjvp2(prim, *jvp_fns):
  """JAX's `ad.defjvp2`: one `fn(tangent, ans, *primals, **params)` per input."""
  return ad.defjvp_from_output(prim, *jvp_fns)


def get_primitive_transpose(prim):
  """The transpose rule registered for `prim` (NotImplementedError naming it if none)."""
  try:
    return ad.primitive_transposes[prim]
  except KeyError:
    raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                              f"'{prim}' not implemented") from None


def lower_fun(fun, multiple_results: bool = True):
  """A lowering rule that traces `fun(*args, **params)` at the equation's input types and lowers
  the result in place (JAX's `mlir.lower_fun`).

  Args:
    fun: a function of revax values (the primitive's implementation, typically).
    multiple_results: whether `fun` returns a list of outputs.

  Returns:
    A rule for `register_lowering`.
  """
  return mlir.lower_fun(fun, multiple_results)
