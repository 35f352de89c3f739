"""The deprecated `jax.experimental.shard_map.shard_map`: `shard_map` with its older positional
signature and `check_rep` (now `check_vma`). JAX's module exposes it only as a deprecated
attribute (a DeprecationWarning on access, absent from `dir()`); revax's does the same."""
from __future__ import annotations

from revax._src.experimental.deprecations import deprecation_getattr
from revax._src.shard_map import shard_map as _shard_map

__all__ = ["shard_map", "module_getattr"]


def shard_map(f, mesh, in_specs, out_specs, check_rep=True):
  """Please use `revax.shard_map`. `jax.experimental.shard_map.shard_map` has been deprecated.

  `f` mapped over every axis of `mesh`: `revax.shard_map(f, mesh=mesh, in_specs=in_specs,
  out_specs=out_specs, check_vma=check_rep)`.
  """
  return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                    axis_names=frozenset(), check_vma=check_rep)


module_getattr = deprecation_getattr("revax.experimental.shard_map", {
    "shard_map": ("jax.experimental.shard_map is deprecated in v0.8.0. Used jax.shard_map "
                  "instead.", shard_map),
})
