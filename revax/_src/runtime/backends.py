"""Which platforms revax starts, in which order, and where each one's PJRT plugin is.

A *backend* is one PJRT client: "cpu" (the `xla-cpu-pjrt` plugin, or the one `PJRT_PLUGIN` /
`revax_pjrt_plugin` names) is always available; "tpu" is available where the `libtpu` package
is installed (`pip install 'revax[tpu]'`) and a TPU chip is attached. As in JAX:

- with no choice made, the default backend is the TPU when there is one, else the CPU; the CPU
  backend can be used beside it (`revax.devices("cpu")`, `revax.device_put(x, cpu_device)`);
- `revax.config.update("jax_platforms", "cpu")` or env `REVAX_PLATFORMS=cpu` (a comma-separated
  list, in order of preference) chooses: the first listed is the default, and only the listed
  ones start. (revax does not read `JAX_PLATFORMS`, so that a jax oracle in the same process can
  be kept on the CPU while revax uses the chip.)

This module only decides; `client.py` creates the clients.
"""
from __future__ import annotations

import glob
import importlib.util
import os

from revax._src.core.config import config

__all__ = ["KNOWN_PLATFORMS", "requested_platforms", "platform_order", "tpu_plugin_path",
           "tpu_attached", "canonical_platform", "unknown_backend_error", "tpu_start_error"]

# The platforms revax can run on, and the names JAX users may ask for that denote other hardware.
KNOWN_PLATFORMS = ("cpu", "tpu")
_ALIASES = {"host": "cpu"}
ENV_VAR = "REVAX_PLATFORMS"


def canonical_platform(name: str) -> str:
  """The platform a backend name denotes ("host" is "cpu"), lower case."""
  name = name.strip().lower()
  return _ALIASES.get(name, name)


def requested_platforms() -> list[str] | None:
  """The platforms the user asked for (config `jax_platforms`, else env REVAX_PLATFORMS), in
  order, or None for the automatic choice."""
  value = config.read("platforms") or config.read("platform_name") or os.environ.get(ENV_VAR)
  if not value:
    return None
  names = [canonical_platform(p) for p in value.split(",") if p.strip()]
  return names or None


def tpu_plugin_path() -> str | None:
  """The `libtpu.so` of the installed `libtpu` package, or None where it is not installed."""
  spec = importlib.util.find_spec("libtpu")
  if spec is None or not spec.origin:
    return None
  path = os.path.join(os.path.dirname(spec.origin), "libtpu.so")
  return path if os.path.isfile(path) else None


def tpu_attached() -> bool:
  """Whether this machine shows a TPU chip (the accelerator device files libtpu opens)."""
  return bool(glob.glob("/dev/accel[0-9]*") or glob.glob("/dev/vfio/[0-9]*"))


def platform_order() -> list[str]:
  """The platforms to offer, the default first: the requested ones, else "tpu" (when libtpu is
  installed and a chip is attached) then "cpu".

  Raises:
    RuntimeError: a requested platform is one revax cannot run on (JAX's message).
  """
  requested = requested_platforms()
  if requested is None:
    return ["tpu", "cpu"] if tpu_plugin_path() and tpu_attached() else ["cpu"]
  known = [name for name in requested if name in KNOWN_PLATFORMS]
  if not known:
    raise RuntimeError(
        f"Unable to initialize backend '{requested[0]}': revax runs on "
        f"{', '.join(KNOWN_PLATFORMS)} only (set {ENV_VAR} or jax_platforms to '' to choose an "
        "available backend automatically)")
  return known


def unknown_backend_error(name: str, present: list[str]) -> RuntimeError:
  """JAX's error for `devices(name)` where no such backend is present."""
  platform = canonical_platform(name)
  if platform == "gpu":
    return RuntimeError(f"Unknown backend: '{name}' requested, but no platforms that are "
                        f"instances of {name} are present. Platforms present are: "
                        f"{','.join(present)}")
  if platform == "tpu" and tpu_plugin_path() is None:
    return RuntimeError(f"Backend 'tpu' failed to initialize: libtpu is not installed (pip "
                        f"install 'revax[tpu]'). Available backends are {present}")
  if platform == "tpu":
    return RuntimeError(f"Backend 'tpu' failed to initialize: no TPU chip is attached to this "
                        f"machine. Available backends are {present}")
  return RuntimeError(f"Unknown backend {name}. Available backends are {present}")


def tpu_start_error(message: str) -> RuntimeError:
  """A clear error for a TPU client that did not start; names the usual cause (another process
  holds the chip: libtpu lets one process open it) where libtpu's message points there."""
  held = "lockfile" in message or "already in use" in message or "TPU is in use" in message
  if held:
    return RuntimeError(
        "The TPU chip is held by another process: libtpu lets one process at a time open a "
        "chip. End that process (or run your work inside it), or use the CPU with "
        f"{ENV_VAR}=cpu. (libtpu said: {message})")
  return RuntimeError(f"Unable to initialize backend 'tpu': {message} (set {ENV_VAR}=cpu to "
                      "use the CPU)")
