"""StableHLO text for programs partitioned over a mesh by XLA's Shardy partitioner.

A sharded program is the module jit lowers anyway, plus:
- `sdy.mesh @mesh = <["a"=2, "b"=2]>` at module level and `mhlo.num_partitions = N`;
- `sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>` on every argument and result of @main: one
  `{...}` per dimension listing the mesh axes it is split over (major first), `{}` for a
  dimension that is not split, `{?}` for one left open for XLA to choose;
- `sdy.sharding_constraint` where the program asks for a sharding (with_sharding_constraint).

A mesh here is described by `{axis name: size}` (ordered); a sharding by one tuple of axis names
per dimension, or None for "unspecified" (every dimension open). Axes of size 1 are dropped (they
split nothing). The module records its mesh on the ModuleBuilder (`sdy_mesh`), so that lowering
rules of primitives that name a mesh can refer to @mesh, or see that there is none.
"""
from __future__ import annotations

from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.sharding_types import unreduced_of
from revax._src.interpreters import mlir

__all__ = ["mesh_attr", "sharding_attr", "lower_sharded_module", "module_mesh"]

MESH_NAME = "mesh"


def mesh_attr(mesh_shape: dict) -> str:
  """`<["a"=2, "b"=2]>` for the ordered mesh {axis: size}."""
  return "<[" + ", ".join(f'"{a}"={int(n)}' for a, n in mesh_shape.items()) + "]>"


def _dims_text(dims, mesh_shape: dict) -> str:
  parts = []
  for axes in dims:
    if axes is None:
      parts.append("{?}")
      continue
    names = [a for a in axes if mesh_shape[a] > 1]
    parts.append("{" + ", ".join(f'"{a}"' for a in names) + "}")
  return "[" + ", ".join(parts) + "]"


def sharding_attr(dims, mesh_shape: dict, ndim: int, unreduced=frozenset()) -> str:
  """`#sdy.sharding<@mesh, [...]>`: `dims` is one tuple of axes per dimension (None: the whole
  sharding is open, `{?}` on every dimension); `unreduced`: the mesh axes over which the value
  is a sum of the devices' partial values (`unreduced={"c"}`: Shardy adds them up where a
  later sharding does not name them)."""
  if dims is None:
    dims = [None] * ndim
  names = [a for a in mesh_shape if a in unreduced and mesh_shape[a] > 1]
  tail = (", unreduced={" + ", ".join(f'"{a}"' for a in names) + "}") if names else ""
  return f"#sdy.sharding<@{MESH_NAME}, {_dims_text(dims, mesh_shape)}{tail}>"


def spec_dims(spec, ndim: int) -> list:
  """One tuple of mesh axes per dimension, from a PartitionSpec (`axes_of`); None (open, `{?}`)
  for a dimension that is `PartitionSpec.UNCONSTRAINED`."""
  unconstrained = type(spec).UNCONSTRAINED
  return [None if d < len(spec) and spec.partitions[d] is unconstrained else tuple(spec.axes_of(d))
          for d in range(ndim)]


def module_mesh(ctx) -> dict | None:
  """The mesh of the module being lowered ({axis: size}), None for a single-device module."""
  return getattr(ctx.module, "sdy_mesh", None)


def lower_sharded_module(closed: ClosedJaxpr, name: str, mesh_shape: dict, in_dims, out_dims,
                         platform: str = "cpu", donors=()) -> str:
  """The module whose public @main computes `closed` over the mesh.

  Args:
    closed: the program (no constants: jit jaxprs take them as leading arguments).
    name: used for the module name.
    mesh_shape: {axis name: size}, in mesh order.
    in_dims, out_dims: per argument/result, one tuple of axes per dimension, or None (open).
    donors: indices of arguments whose buffers the program may reuse for its results
      (`jax.buffer_donor`: XLA aliases each to a result of its per-device shape where it can).

  Returns:
    The module text, ready for `runtime.sharded.compile_spmd`.
  """
  from revax._src.interpreters import discharge
  if discharge.has_refs(closed.jaxpr):  # refs created inside: their contents become values
    closed = discharge.discharge_state(closed)
  module = mlir.ModuleBuilder(f"jit_{name}", platform)
  module.sdy_mesh = dict(mesh_shape)
  fb = mlir.FuncBuilder(module)
  in_avals, out_avals = closed.in_avals, closed.out_avals
  in_types = [mlir.ir_type(a) for a in in_avals]
  args = [fb.fresh() for _ in in_types]
  for a, t in zip(args, in_types, strict=True):
    fb._types[a] = t
  outs = mlir.jaxpr_subcomp(fb, closed.jaxpr, mlir._consts_as_values(fb, closed), args)
  fb.op("func.return", outs, [])
  donors = set(donors)
  params = ", ".join(
      f"{a}: {t} {{{'jax.buffer_donor = true, ' if k in donors else ''}"
      f"sdy.sharding = {sharding_attr(d, mesh_shape, av.ndim, unreduced_of(av))}}}"
      for k, (a, t, d, av) in enumerate(zip(args, in_types, in_dims, in_avals, strict=True)))
  results = ", ".join(
      f"{mlir.ir_type(av)} "
      f"{{sdy.sharding = {sharding_attr(d, mesh_shape, av.ndim, unreduced_of(av))}}}"
      for d, av in zip(out_dims, out_avals, strict=True))
  body = "\n".join(fb.lines)
  module.funcs.insert(0, f"  func.func public @main({params}) -> ({results}) {{\n{body}\n  }}")
  size = 1
  for n in mesh_shape.values():
    size *= int(n)
  text = module.to_text(num_partitions=size)
  head, rest = text.split("\n", 1)
  return f"{head}\n  sdy.mesh @{MESH_NAME} = {mesh_attr(mesh_shape)}\n{rest}"
