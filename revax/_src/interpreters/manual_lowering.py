"""shard_map lowered into a program partitioned over a mesh: `sdy.manual_computation`.

Inside the manual region every device runs the member program on its own block; collectives
over mesh axes are StableHLO collectives naming partitions (mesh positions, row-major over the
mesh axes). For a set of axes, the replica groups put together the partitions that differ only
along those axes (ordered by their index along them, the first axis major); `axis_index` is
computed from `stablehlo.partition_id`. The region's in/out shardings name the manual axes; in a
partial-manual region (some mesh axes left to Shardy) the dimensions are left open for the others
(`{"a", ?}`, `{?}`).

The module being lowered records the manual axes of the region it is in (`module.manual_axes`),
which the collectives' lowering rules (lax/parallel_lowering.py) read.
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.interpreters import mlir, sharding_lowering
from revax._src.runtime import host_transfer

__all__ = ["lower_shard_map", "replica_groups", "member_index", "channel_handle",
           "manual_context"]


def manual_context(ctx):
  """(mesh {axis: size}, manual axes) of the manual region being lowered, or None."""
  mesh = sharding_lowering.module_mesh(ctx)
  manual = getattr(ctx.module, "manual_axes", None)
  if mesh is None or not manual:
    return None
  return mesh, manual


def _coords(mesh: dict):
  names = list(mesh)
  return [dict(zip(names, c)) for c in np.ndindex(*[mesh[a] for a in names])]


def member_index(coord: dict, axes, mesh: dict) -> int:
  """A partition's index among the members of `axes` (the first axis major)."""
  k = 0
  for a in axes:
    k = k * mesh[a] + int(coord[a])
  return k


def replica_groups(mesh: dict, axes) -> list[list[int]]:
  """Partition ids grouped by their coordinates along the other axes; each group ordered by
  the member index along `axes`."""
  groups: dict = {}
  for p, coord in enumerate(_coords(mesh)):
    key = tuple(int(coord[a]) for a in mesh if a not in axes)
    groups.setdefault(key, []).append((member_index(coord, axes, mesh), p))
  return [[p for _, p in sorted(g)] for _, g in sorted(groups.items())]


def groups_attr(groups) -> str:
  g = np.asarray(groups, dtype=np.int64)
  return mlir.i64_dense(g.reshape(-1), g.shape)


def channel_handle(ctx) -> str:
  """A fresh `#stablehlo.channel_handle` (unique within the module), device-to-device."""
  module = ctx.module
  n = getattr(module, "channel_count", 0) + 1
  module.channel_count = n
  return f"#stablehlo.channel_handle<handle = {n}, type = {host_transfer.DEVICE_TO_DEVICE}>"


def _region_dims(spec, ndim: int, mesh: dict, partial: bool) -> str:
  parts = []
  for d in range(ndim):
    names = [f'"{a}"' for a in spec.axes_of(d) if mesh[a] > 1]
    if partial:
      names.append("?")
    parts.append("{" + ", ".join(names) + "}")
  return f"<@{sharding_lowering.MESH_NAME}, [" + ", ".join(parts) + "]>"


def lower_shard_map(ctx, *args, body, fallback, mesh, in_specs, out_specs, manual, **_):
  """The lowering of shard_map_p: a manual computation when the module is partitioned over
  this mesh, else (a single-device program, or a region already manual) the vmap form."""
  module_mesh = sharding_lowering.module_mesh(ctx)
  if (module_mesh is None or module_mesh != dict(mesh.shape)
      or getattr(ctx.module, "manual_axes", None)):
    return mlir.call_jaxpr(ctx, fallback, args, "shard_map")
  fb, module = ctx.fb, ctx.module
  mesh_shape = dict(mesh.shape)
  partial = set(manual) != {a for a in mesh_shape if mesh_shape[a] > 1} and any(
      mesh_shape[a] > 1 for a in mesh_shape if a not in manual)
  in_attrs = [_region_dims(s, a.ndim, mesh_shape, partial)
              for s, a in zip(in_specs, ctx.avals_in, strict=True)]
  out_attrs = [_region_dims(s, a.ndim, mesh_shape, partial)
               for s, a in zip(out_specs, ctx.avals_out, strict=True)]
  sub = mlir.FuncBuilder(module, fb.indent + 2)
  member_types = [mlir.ir_type(a) for a in body.in_avals]
  block = [sub.fresh() for _ in member_types]
  for v, t in zip(block, member_types, strict=True):
    sub._types[v] = t
  module.manual_axes = tuple(manual)
  try:
    outs = mlir.jaxpr_subcomp(sub, body.jaxpr, mlir._consts_as_values(sub, body), block)
  finally:
    module.manual_axes = None
  out_member_types = [sub.type_of(v) for v in outs]
  sub.lines.append(" " * sub.indent + f"sdy.return {', '.join(outs)} : "
                   f"{', '.join(out_member_types)}")
  in_types = [fb.type_of(a) for a in args]
  out_types = [mlir.ir_type(a) for a in ctx.avals_out]
  res = fb.fresh()
  n = len(out_types)
  results = [res] if n == 1 else [f"{res}#{i}" for i in range(n)]
  head = f"{res}:{n}" if n != 1 else res
  manual_attr = "{" + ", ".join(f'"{a}"' for a in mesh_shape if a in manual) + "}"
  block_args = ", ".join(f"{v}: {t}" for v, t in zip(block, member_types, strict=True))
  pad = " " * fb.indent
  outs_t = out_types[0] if n == 1 else f"({', '.join(out_types)})"
  fb.lines.append(
      f"{pad}{head} = sdy.manual_computation({', '.join(args)}) in_shardings=[{', '.join(in_attrs)}]"
      f" out_shardings=[{', '.join(out_attrs)}] manual_axes={manual_attr} ({block_args}) {{")
  fb.lines.extend(sub.lines)
  fb.lines.append(f"{pad}}} : ({', '.join(in_types)}) -> {outs_t}")
  for v, t in zip(results, out_types, strict=True):
    fb._types[v] = t
  return results


def axis_size(mesh: dict, axes) -> int:
  return math.prod(mesh[a] for a in axes)
