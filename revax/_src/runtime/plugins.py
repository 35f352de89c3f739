"""Which PJRT plugin the backend loads, and what it is (package, version, file, API version).

The plugin is chosen once, when the backend starts; the first of these that is set wins:

1. the config option `revax_pjrt_plugin` (`revax.config.update("revax_pjrt_plugin", value)`);
2. the environment variable `PJRT_PLUGIN`;
3. the default, the `xla-cpu-pjrt` package (revax's pinned dependency).

A value is either a path to the plugin's shared library (anything with a `/`, or ending in
`.so`/`.dylib`/`.dll`) or the name of an installed package (`pip install fastatomstruct-xla-cpu`,
then `revax_pjrt_plugin="fastatomstruct-xla-cpu"`): the package's own file list (its
`importlib.metadata` RECORD) names its shared library, so no package-specific convention is
assumed. A value that names nothing loadable is a ValueError from `config.update`, or a
RuntimeError naming the value and where it came from when the backend starts; a different plugin
requested after the backend started is a ValueError (the process has one backend).

`describe()` reports the choice for `revax.print_environment_info()`.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import pathlib

from revax._src.core.config import config
from revax._src.runtime import pjrt

__all__ = ["PluginChoice", "choose", "resolve", "load", "loaded", "describe", "DEFAULT_PACKAGE"]

DEFAULT_PACKAGE = "xla-cpu-pjrt"
_LIBRARY_SUFFIXES = (".so", ".dylib", ".dll")
ENV_VAR = "PJRT_PLUGIN"
OPTION = "revax_pjrt_plugin"


@dataclasses.dataclass(frozen=True)
class PluginChoice:
  """A resolved plugin choice.

  Attributes:
    path: absolute path of the plugin's shared library (symlinks resolved).
    package: the installed distribution that holds the file, or None (a loose file).
    version: that distribution's version, or None.
    source: where the choice came from: "revax_pjrt_plugin", "PJRT_PLUGIN" or "default".
    requested: the value as given (a path or a package name).
  """
  path: str
  package: str | None
  version: str | None
  source: str
  requested: str


_loaded: tuple[PluginChoice, pjrt.Api] | None = None


def _looks_like_path(value: str) -> bool:
  return (os.sep in value or "/" in value or value.endswith(_LIBRARY_SUFFIXES)
          or os.path.isfile(value))


def _is_library(name: str) -> bool:
  return name.endswith(_LIBRARY_SUFFIXES) or ".so." in name


def _library_of_package(name: str, where: str) -> tuple[str, str, str]:
  """(library path, distribution name, version) of installed package `name`; ValueError if none."""
  try:
    dist = importlib.metadata.distribution(name)
  except (importlib.metadata.PackageNotFoundError, ValueError):
    raise ValueError(f"{where}={name!r} is neither an existing file nor an installed package "
                     f"(pip install {name}, or give the path of the plugin's shared "
                     "library)") from None
  libraries = [f for f in (dist.files or ()) if _is_library(f.name)]
  if len(libraries) > 1:  # e.g. a plugin shipped with helper libraries: take the PJRT one
    libraries = [f for f in libraries if "pjrt" in f.name.lower()] or libraries
  if len(libraries) != 1:
    found = ", ".join(str(f) for f in libraries) or "none"
    raise ValueError(f"{where}={name!r}: package {dist.metadata['Name']} "
                     f"{dist.version} does not hold exactly one PJRT plugin library (found: "
                     f"{found}); give the path of the one to load")
  path = os.path.realpath(dist.locate_file(libraries[0]))
  if not os.path.isfile(path):
    raise ValueError(f"{where}={name!r}: {path} is listed by package {dist.metadata['Name']} "
                     "but missing (reinstall it)")
  return path, dist.metadata["Name"], dist.version


def _owner_of(path: str) -> tuple[str | None, str | None]:
  """The (name, version) of the installed distribution whose file list holds `path`.

  Looks at the `*.dist-info` folders of the library's ancestors (a site-packages folder, or a
  `pip install --target` folder that is not on sys.path).
  """
  target = pathlib.Path(path)
  for folder in list(target.parents)[:4]:
    try:
      infos = [p for p in folder.iterdir() if p.name.endswith(".dist-info")]
    except OSError:
      continue
    for info in infos:
      dist = importlib.metadata.PathDistribution(info)
      try:
        for f in dist.files or ():
          if _is_library(f.name) and os.path.realpath(dist.locate_file(f)) == path:
            return dist.metadata["Name"], dist.version
      except (OSError, ValueError):
        continue
  return None, None


def resolve(value: str | os.PathLike | None, source: str) -> PluginChoice:
  """The plugin a value names (a path or an installed package name; None: the default).

  Args:
    value: a path to a shared library, an installed package's name, or None for the default.
    source: where the value came from, for messages ("revax_pjrt_plugin", "PJRT_PLUGIN").

  Returns:
    The `PluginChoice`.

  Raises:
    ValueError: the file does not exist, or no installed package has that name or holds exactly
      one shared library.
  """
  if value is None or value == "":
    try:
      path, package, version = _library_of_package(DEFAULT_PACKAGE, "default")
    except ValueError:
      raise ValueError(f"the PJRT CPU plugin is missing: pip install {DEFAULT_PACKAGE}==0.0.1 "
                       f"(or choose another with {OPTION} or env {ENV_VAR})") from None
    return PluginChoice(path, package, version, "default", DEFAULT_PACKAGE)
  value = os.fspath(value)
  if _looks_like_path(value):
    path = os.path.realpath(os.path.expanduser(value))
    if not os.path.isfile(path):
      raise ValueError(f"{source}={value!r}: no such file (give the path of a PJRT plugin's "
                       "shared library, or the name of an installed plugin package)")
    package, version = _owner_of(path)
    return PluginChoice(path, package, version, source, value)
  path, package, version = _library_of_package(value, source)
  return PluginChoice(path, package, version, source, value)


def choose() -> PluginChoice:
  """The plugin the backend would load now: config option, else env PJRT_PLUGIN, else default."""
  value = config.read(OPTION)
  if value is not None:
    return resolve(value, OPTION)
  env = os.environ.get(ENV_VAR)
  if env:
    return resolve(env, ENV_VAR)
  return resolve(None, "default")


def load() -> pjrt.Api:
  """Resolve and open the chosen plugin (once per process; the backend calls this).

  Returns:
    The initialized `pjrt.Api`.

  Raises:
    RuntimeError: the choice names nothing, or the library does not load as a PJRT plugin (no
      `GetPjrtApi`, an unsupported API version, a failed initialization); the message names the
      value and where it came from.
  """
  global _loaded
  if _loaded is not None:
    return _loaded[1]
  try:
    choice = choose()
  except ValueError as e:
    raise RuntimeError(f"cannot start the PJRT backend: {e}") from None
  try:
    api = pjrt.Api(choice.path)
  except (OSError, AttributeError, RuntimeError) as e:
    origin = ("the default plugin" if choice.source == "default"
              else f"{choice.source}={choice.requested!r}")
    raise RuntimeError(f"cannot load the PJRT plugin {choice.path} ({origin}): "
                       f"{type(e).__name__}: {e}") from e
  _loaded = (choice, api)
  return api


def explicit_choice() -> bool:
  """Whether config `revax_pjrt_plugin` or env `PJRT_PLUGIN` names the plugin to use."""
  return config.read(OPTION) is not None or bool(os.environ.get(ENV_VAR))


_opened: dict[str, pjrt.Api] = {}


def load_path(path: str, what: str) -> pjrt.Api:
  """Open the plugin at `path` (once per file), for a backend beside the chosen one (`what`
  names it in errors, e.g. "libtpu")."""
  api = _opened.get(path)
  if api is None:
    try:
      api = _opened.setdefault(path, pjrt.Api(path))
    except (OSError, AttributeError, RuntimeError) as e:
      raise RuntimeError(f"cannot load the PJRT plugin {path} ({what}): "
                         f"{type(e).__name__}: {e}") from e
  return api


def load_default() -> pjrt.Api:
  """The default CPU plugin (`xla-cpu-pjrt`), for the CPU backend beside an explicitly chosen
  plugin or a TPU; the same Api as `load()` when that is the choice."""
  if _loaded is not None and _loaded[0].source == "default":
    return _loaded[1]
  if not explicit_choice():
    return load()
  try:
    choice = resolve(None, "default")
  except ValueError as e:
    raise RuntimeError(f"cannot start the CPU backend: {e}") from None
  return load_path(choice.path, DEFAULT_PACKAGE)


def loaded() -> PluginChoice | None:
  """The plugin the backend loaded, or None before the backend starts."""
  return None if _loaded is None else _loaded[0]


def _check_option(value) -> None:
  """Refuse a value that names nothing now, and a different plugin once one is loaded."""
  if value is None:
    choice = None
  else:
    choice = resolve(value, OPTION)
  current = loaded()
  if current is None:
    return
  wanted = choice.path if choice is not None else None
  if wanted is not None and wanted != current.path:
    raise ValueError(f"{OPTION}={value!r} cannot be applied: the backend already started with "
                     f"the PJRT plugin {current.path}; set it before the first computation "
                     "(or in a new process)")


config.add_validator(OPTION, _check_option)


def describe(backend=None) -> list[str]:
  """Lines describing the plugin for `print_environment_info`.

  Args:
    backend: the started `Backend` (its platform and devices), or None to describe the choice
      only.

  Returns:
    Lines such as ``"pjrt plugin: xla-cpu-pjrt 0.0.1 (default)"``, the file, and the platform,
    PJRT C API and StableHLO versions once loaded: those of `backend`'s own plugin (libtpu's for
    a TPU backend, which is opened beside the chosen plugin).
  """
  if backend is not None and (_loaded is None or backend._api is not _loaded[1]):
    choice, api = resolve(backend._api.path, f"the {backend.platform} platform"), backend._api
  elif _loaded is not None:
    choice, api = _loaded
  else:
    choice, api = choose(), None
  package = (f"{choice.package} {choice.version}" if choice.package
             else "(a file outside any installed package)")
  origin = "default" if choice.source == "default" else f"from {choice.source}"
  lines = [f"pjrt plugin: {package} ({origin})", f"pjrt plugin path: {choice.path}"]
  if api is not None:
    details = [f"PJRT C API {api.version[0]}.{api.version[1]}"]
    try:
      stablehlo = api.plugin_attributes().get("stablehlo_current_version")
    except Exception:  # an optional entry point; absent on some plugins
      stablehlo = None
    if stablehlo:
      details.append("StableHLO " + ".".join(str(v) for v in stablehlo))
    if backend is not None:
      details.insert(0, f"platform {backend.platform} (version {backend.platform_version!r})")
    lines.append("pjrt plugin versions: " + ", ".join(details))
  return lines
