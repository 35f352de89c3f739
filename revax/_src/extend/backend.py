"""jax.extend.backend on revax's runtime: the PJRT clients (revax's `Backend`s) by platform,
the XLA version a plugin reports, and the default device."""
from __future__ import annotations

from revax._src.runtime import backends as _platforms
from revax._src.runtime.client import get_backend


def backends() -> dict:
  """Every backend revax can run on, by platform, the default first (each started on first
  use; a platform that was not asked for and fails to start is left out, as JAX does).

  Example:
    >>> from revax.extend.backend import backends
    >>> "cpu" in backends()
    True
  """
  out = {}
  requested = _platforms.requested_platforms()
  for platform in _platforms.platform_order():
    try:
      out[platform] = get_backend(platform)
    except RuntimeError:
      if requested is not None:
        raise
  return out


def backend_xla_version(platform: str | None = None) -> int | None:
  """The XLA version the backend's PJRT plugin reports (its `xla_version` attribute), or None
  where the plugin does not say. Every revax backend is a PJRT C-API plugin, so the CPU one
  answers too (jax's built-in CPU client, not a plugin, gives None)."""
  return get_backend(platform)._api.plugin_attributes().get("xla_version")
