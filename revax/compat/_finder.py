"""The import hook of the jax-compatibility mode (see `revax.compat`).

A meta-path finder answers for `jax` and every `jax.*` module name. It never loads code of its
own: it imports the revax module the name maps to and puts that very module object in
`sys.modules` under the jax name, so `jax.numpy is revax.numpy` and there is one copy of every
class. The root `jax` module is a small module of its own (it carries jax's version) whose
attributes are looked up in revax.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import logging
import sys
import threading
import types

JAX_VERSION = "0.10.2"  # the jax release whose API revax follows

# jax module name -> the module that provides it in this mode (when not revax.<same path>)
RENAMED = {
    "jax._src": "revax.compat.jax_src",
    "jax.version": "revax.compat.version",
    "jax.experimental.hijax": "revax.compat.hijax",
}

# attributes of the root `jax` module that revax lacks, provided by the compatibility mode
# (module, name); see each module's docstring for which library needs it and why
ROOT_EXTRAS: dict = {}

_lock = threading.Lock()
_finder = None


class _AliasLoader(importlib.abc.Loader):
  """Loads a jax name as an existing revax module: the module object is reused, not copied."""

  def __init__(self, target: types.ModuleType):
    self.target = target

  def create_module(self, spec):
    return None  # a throwaway module; exec_module swaps the real one in

  def exec_module(self, module):
    # importlib reads the module back from sys.modules after exec_module, so the revax module
    # (with its own __name__ and __spec__ untouched) becomes `jax.<name>`
    sys.modules[module.__name__] = self.target


class _ProxyLoader(importlib.abc.Loader):
  """Loads a jax package that has shimmed children (`jax.experimental` holds the
  `jax.experimental.hijax` shim) as a module of its own whose attributes are the revax
  package's: `from jax.experimental import hijax` then finds the shim through this finder."""

  def __init__(self, target: types.ModuleType):
    self.target = target

  def create_module(self, spec):
    target = self.target
    proxy = types.ModuleType(spec.name, target.__doc__)
    proxy.__path__ = []

    def getattr_(name):
      try:
        return getattr(target, name)
      except AttributeError:
        if name.startswith("__"):
          raise
      try:
        return importlib.import_module(f"{spec.name}.{name}")
      except ModuleNotFoundError:
        raise AttributeError(f"module {spec.name!r} has no attribute {name!r} (revax's "
                             f"jax-compatibility mode: revax provides no {spec.name}.{name})")

    proxy.__getattr__ = getattr_
    proxy.__dir__ = lambda: dir(target)
    return proxy

  def exec_module(self, module):
    pass


class _RootLoader(importlib.abc.Loader):
  def create_module(self, spec):
    return _make_root()

  def exec_module(self, module):
    pass


def target_name(fullname: str) -> str | None:
  """The revax module that provides jax module `fullname` in this mode (None: refused)."""
  if fullname in RENAMED:
    return RENAMED[fullname]
  parts = fullname.split(".")
  for i in range(len(parts) - 1, 0, -1):  # a module under a renamed package
    head = ".".join(parts[:i])
    if head in RENAMED:
      return ".".join([RENAMED[head], *parts[i:]])
  if any(p.startswith("_") for p in parts[1:]):
    return None  # jax's private modules are not revax's
  return ".".join(["revax", *parts[1:]])


class JaxFinder(importlib.abc.MetaPathFinder):
  """Finds `jax` and `jax.*` as revax modules (see the module docstring)."""

  def find_spec(self, fullname, path=None, target=None):
    if fullname != "jax" and not fullname.startswith("jax."):
      return None
    if fullname == "jax":
      return importlib.machinery.ModuleSpec("jax", _RootLoader(), is_package=True)
    name = target_name(fullname)
    if name is None:
      raise ModuleNotFoundError(
          f"No module named {fullname!r}: revax's jax-compatibility mode provides jax's public "
          "modules and a few private names major libraries use (revax.compat.jax_src); "
          f"{fullname} is not among them", name=fullname)
    try:
      module = importlib.import_module(name)
    except ModuleNotFoundError as e:
      if e.name is not None and not (name == e.name or name.startswith(e.name + ".")):
        raise  # the revax module exists but something it imports does not
      if fullname.startswith("jax._src."):
        why = ("a private JAX module for which revax's jax-compatibility mode has no shim "
               "(the shims are in revax.compat.jax_src)")
      else:
        why = f"revax's jax-compatibility mode maps it to {name}, which revax does not provide"
      raise ModuleNotFoundError(f"No module named {fullname!r}: {why}", name=fullname) from None
    is_package = hasattr(module, "__path__")
    proxied = any(r.startswith(fullname + ".") for r in RENAMED) and fullname not in RENAMED
    loader = _ProxyLoader(module) if proxied else _AliasLoader(module)
    return importlib.machinery.ModuleSpec(fullname, loader, is_package=is_package)


def _root_getattr(name: str):
  import revax
  if f"jax.{name}" in RENAMED:  # a shimmed module (jax.version is not revax.version)
    return importlib.import_module(f"jax.{name}")
  if not name.startswith("_") or name.startswith("__"):  # jax._src is not revax._src
    try:
      return getattr(revax, name)
    except AttributeError:
      pass
  if name in ROOT_EXTRAS:
    module, attr = ROOT_EXTRAS[name]
    return getattr(importlib.import_module(module), attr)
  if not name.startswith("__"):
    try:  # a public submodule not imported yet (jax.extend, jax.interpreters, ...)
      return importlib.import_module(f"jax.{name}")
    except ModuleNotFoundError:
      pass
  raise AttributeError(f"module 'jax' has no attribute {name!r} (revax's jax-compatibility "
                       f"mode: revax provides no jax.{name})")


def _make_root() -> types.ModuleType:
  import revax
  root = types.ModuleType("jax", "jax, provided by revax's jax-compatibility mode "
                                 "(revax.compat): attributes are revax's.")
  root.__path__ = []
  root.__version__ = JAX_VERSION
  root.__version_info__ = tuple(int(p) for p in JAX_VERSION.split("."))
  root.__getattr__ = _root_getattr
  root.__dir__ = lambda: sorted(set(dir(revax)) | {"__version__", "__version_info__"})
  root.__revax__ = revax
  return root


class _ToJaxLogger(logging.Handler):
  """Hands revax's log records (compilation logs, ...) to the 'jax' logger, where programs
  written for jax listen (optax's tests count "Finished ... compilation" records there)."""

  def emit(self, record):
    logging.getLogger("jax").handle(record)


_log_handler = _ToJaxLogger()


def _forward_logs(on: bool) -> None:
  revax_logger = logging.getLogger("revax")
  if on:
    revax_logger.addHandler(_log_handler)
    revax_logger.propagate = False  # (the 'jax' logger propagates: one copy reaches the root)
  else:
    revax_logger.removeHandler(_log_handler)
    revax_logger.propagate = True


def install() -> None:
  """Make `import jax` resolve to revax in this process (see `revax.compat`).

  Raises:
    RuntimeError: the real jax is already imported in this process.

  Example:
    >>> import revax.compat
    >>> # (not run: it changes what `import jax` means for the whole process)
    >>> revax.compat.install()   # doctest: +SKIP
  """
  global _finder
  with _lock:
    if _finder is not None:
      return
    loaded = sys.modules.get("jax")
    if loaded is not None and not hasattr(loaded, "__revax__"):
      raise RuntimeError("revax.compat.install(): the real jax is already imported in this "
                         "process; install the compatibility mode before anything imports jax "
                         "(or run the program with `python -m revax.run_as_jax`)")
    _finder = JaxFinder()
    sys.meta_path.insert(0, _finder)
    _forward_logs(True)


def uninstall() -> None:
  """Undo `install()`: remove the import hook and forget the `jax` modules it provided.

  Example:
    >>> import revax.compat
    >>> revax.compat.uninstall()   # (nothing to undo when it is not installed)
  """
  global _finder
  with _lock:
    if _finder is None:
      return
    sys.meta_path.remove(_finder)
    _finder = None
    _forward_logs(False)
    for name in [n for n in sys.modules if n == "jax" or n.startswith("jax.")]:
      del sys.modules[name]


def is_installed() -> bool:
  """Whether the jax-compatibility mode is installed in this process.

  Example:
    >>> import revax.compat
    >>> revax.compat.is_installed()
    False
  """
  return _finder is not None
