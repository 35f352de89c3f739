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

A program may also lay values out over other meshes of the same devices in the same order
(JAX: `use_abstract_mesh` to other axes inside jit, `reshard` there): each such mesh is
declared beside @mesh as `@mesh_0`, `@mesh_1`, ... (`other_mesh_name`).
"""
from __future__ import annotations

from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.sharding_types import unreduced_of
from revax._src.interpreters import mlir

__all__ = ["mesh_attr", "sharding_attr", "lower_sharded_module", "module_mesh",
           "other_mesh_name"]

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


def sharding_attr(dims, mesh_shape: dict, ndim: int, unreduced=frozenset(),
                  mesh_name: str = MESH_NAME) -> str:
  """`#sdy.sharding<@mesh, [...]>`: `dims` is one tuple of axes per dimension (None: the whole
  sharding is open, `{?}` on every dimension); `unreduced`: the mesh axes over which the value
  is a sum of the devices' partial values (`unreduced={"c"}`: Shardy adds them up where a
  later sharding does not name them); `mesh_name`: the module's mesh it is over."""
  if dims is None:
    dims = [None] * ndim
  names = [a for a in mesh_shape if a in unreduced and mesh_shape[a] > 1]
  tail = (", unreduced={" + ", ".join(f'"{a}"' for a in names) + "}") if names else ""
  return f"#sdy.sharding<@{mesh_name}, {_dims_text(dims, mesh_shape)}{tail}>"


def spec_dims(spec, ndim: int) -> list:
  """One tuple of mesh axes per dimension, from a PartitionSpec (`axes_of`); None (open, `{?}`)
  for a dimension that is `PartitionSpec.UNCONSTRAINED`."""
  unconstrained = type(spec).UNCONSTRAINED
  return [None if d < len(spec) and spec.partitions[d] is unconstrained else tuple(spec.axes_of(d))
          for d in range(ndim)]


def module_mesh(ctx) -> dict | None:
  """The mesh of the module being lowered ({axis: size}), None for a single-device module."""
  return getattr(ctx.module, "sdy_mesh", None)


def other_mesh_name(module, mesh) -> str | None:
  """The name in `module` (being lowered over its program mesh) of the concrete `mesh`: @mesh
  for the program mesh, else one declared beside it for a mesh of the same devices in the same
  order with other axes (declared on first use); None for a mesh of other devices, or of the
  same in another order (JAX refuses those: "incompatible devices")."""
  devices = getattr(module, "sdy_devices", None)
  if devices is None or getattr(mesh, "devices", None) is None:
    return None
  if list(mesh.devices.flat) != devices:
    return None
  shape = dict(mesh.shape)
  if shape == module.sdy_mesh:
    return MESH_NAME
  names = module.sdy_other_meshes
  key = tuple(shape.items())
  if key not in names:
    names[key] = f"{MESH_NAME}_{len(names)}"
  return names[key]


def _declared_meshes(module) -> str:
  return "".join(f"\n  sdy.mesh @{name} = {mesh_attr(dict(shape))}"
                 for shape, name in module.sdy_other_meshes.items())


def _attr_over(module, dims, mesh_shape, aval, mesh) -> str:
  """The `sdy.sharding` of an argument or result: over the program mesh, or over `mesh`."""
  if mesh is None:
    return sharding_attr(dims, mesh_shape, aval.ndim, unreduced_of(aval))
  name = other_mesh_name(module, mesh)
  if name is None:
    raise ValueError(f"a sharding over mesh {mesh!r} in a program over the mesh {mesh_shape} "
                     "of other devices")
  return sharding_attr(dims, dict(mesh.shape), aval.ndim, unreduced_of(aval), name)


def lower_sharded_module(closed: ClosedJaxpr, name: str, mesh_shape: dict, in_dims, out_dims,
                         platform: str = "cpu", donors=(), devices=None, in_meshes=None,
                         out_meshes=None) -> str:
  """The module whose public @main computes `closed` over the mesh.

  Args:
    closed: the program (no constants: jit jaxprs take them as leading arguments).
    name: used for the module name.
    mesh_shape: {axis name: size}, in mesh order.
    in_dims, out_dims: per argument/result, one tuple of axes per dimension, or None (open).
    donors: indices of arguments whose buffers the program may reuse for its results
      (`jax.buffer_donor`: XLA aliases each to a result of its per-device shape where it can).
    devices: the program mesh's devices in mesh order (partition p runs on devices[p]), so
      that values may be laid out over other meshes of the same devices (`other_mesh_name`).
    in_meshes, out_meshes: per argument/result, None where its dims are over the program mesh,
      else the other mesh (of the same devices) they are over.

  Returns:
    The module text, ready for `runtime.sharded.compile_spmd`.
  """
  from revax._src.interpreters import discharge
  if discharge.has_refs(closed.jaxpr):  # refs created inside: their contents become values
    closed = discharge.discharge_state(closed)
  module = mlir.ModuleBuilder(f"jit_{name}", platform)
  module.sdy_mesh = dict(mesh_shape)
  module.sdy_devices = None if devices is None else list(devices)
  module.sdy_other_meshes = {}  # ((axis, size), ...) of another mesh -> its name
  fb = mlir.FuncBuilder(module)
  in_avals, out_avals = closed.in_avals, closed.out_avals
  in_types = [mlir.ir_type(a) for a in in_avals]
  args = [fb.fresh() for _ in in_types]
  for a, t in zip(args, in_types, strict=True):
    fb._types[a] = t
  outs = mlir.jaxpr_subcomp(fb, closed.jaxpr, mlir._consts_as_values(fb, closed), args)
  fb.op("func.return", outs, [])
  donors = set(donors)
  in_meshes = in_meshes or [None] * len(in_avals)
  out_meshes = out_meshes or [None] * len(out_avals)
  params = ", ".join(
      f"{a}: {t} {{{'jax.buffer_donor = true, ' if k in donors else ''}"
      f"sdy.sharding = {_attr_over(module, d, mesh_shape, av, m)}}}"
      for k, (a, t, d, av, m) in enumerate(zip(args, in_types, in_dims, in_avals, in_meshes,
                                               strict=True)))
  results = ", ".join(
      f"{mlir.ir_type(av)} {{sdy.sharding = {_attr_over(module, d, mesh_shape, av, m)}}}"
      for d, av, m in zip(out_dims, out_avals, out_meshes, strict=True))
  body = "\n".join(fb.lines)
  module.funcs.insert(0, f"  func.func public @main({params}) -> ({results}) {{\n{body}\n  }}")
  size = 1
  for n in mesh_shape.values():
    size *= int(n)
  text = module.to_text(num_partitions=size)
  head, rest = text.split("\n", 1)
  return (f"{head}\n  sdy.mesh @{MESH_NAME} = {mesh_attr(mesh_shape)}{_declared_meshes(module)}"
          f"\n{rest}")
