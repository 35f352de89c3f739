"""`pjit` (JAX's deprecated `jax.experimental.pjit.pjit`): `jit` under its older name and
signature.

JAX's module exposes `pjit` only as a deprecated attribute: reading it warns "Please use
`jax.jit` instead" (DeprecationWarning), and `dir()` of the module does not list it; revax's
does the same. The call is `revax.jit` with pjit's positional `in_shardings`/`out_shardings` and
None defaults. One difference remains: JAX's pjit resolves bare PartitionSpecs against the mesh
of a legacy `with mesh:` block (and not against `jax.set_mesh`); revax has no legacy mesh
context (entering a Mesh does nothing), so bare specs resolve against the mesh set with
`revax.set_mesh`, as revax's jit does.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from revax._src.experimental.deprecations import deprecation_getattr
from revax._src.jit import jit

__all__ = ["pjit", "module_getattr"]


def _argnums(value) -> tuple:
  if value is None:
    return ()
  return (value,) if isinstance(value, int) else tuple(value)


def _donated_positions(fun, donate_argnums, donate_argnames) -> tuple:
  """donate_argnums plus the positions of the parameters named in donate_argnames."""
  nums = _argnums(donate_argnums)
  if donate_argnames is None:
    return nums
  names = (donate_argnames,) if isinstance(donate_argnames, str) else tuple(donate_argnames)
  params = list(inspect.signature(fun).parameters.values())
  positional = [p.name for p in params
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  for name in names:
    if name not in positional:
      raise NotImplementedError(f"pjit: donate_argnames names {name!r}, which is not a "
                                "positional parameter; revax donates positional arguments only")
  return tuple(sorted(set(nums) | {positional.index(n) for n in names}))


_UNSPECIFIED = object()


def pjit(fun: Callable, in_shardings: Any = _UNSPECIFIED, out_shardings: Any = _UNSPECIFIED,
         static_argnums: int | Sequence[int] | None = None,
         static_argnames: str | Iterable[str] | None = None,
         donate_argnums: int | Sequence[int] | None = None,
         donate_argnames: str | Iterable[str] | None = None, keep_unused: bool = False,
         device=None, backend: str | None = None, inline: bool = False,
         compiler_options: dict[str, Any] | None = None):
  """`jax.experimental.pjit.pjit` has been deprecated. Please use `revax.jit`.

  Raises:
    NotImplementedError: for `device` or `backend`, which revax's pjit does not take (place the
      arguments with `revax.device_put` instead). `compiler_options` go to `revax.jit`.
  """
  for name, value in (("device", device), ("backend", backend)):
    if value is not None:
      raise NotImplementedError(f"pjit: revax's jit does not take {name}=")
  kwargs = {}
  if in_shardings is not _UNSPECIFIED:
    kwargs["in_shardings"] = in_shardings
  if out_shardings is not _UNSPECIFIED:
    kwargs["out_shardings"] = out_shardings
  static_names = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
  return jit(fun, static_argnums=_argnums(static_argnums),
             static_argnames=tuple(static_names or ()),
             donate_argnums=_donated_positions(fun, donate_argnums, donate_argnames),
             keep_unused=keep_unused, inline=inline, compiler_options=compiler_options, **kwargs)


module_getattr = deprecation_getattr("revax.experimental.pjit", {
    "pjit": ("jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` instead.",
             pjit),
})
