"""MkDocs hook: the API reference pages, generated from revax's public modules at build time.

Every public module (a module under `revax/` outside `revax/_src`) gets one page,
`reference/<module>.md`, with a mkdocstrings block per public name it exports, so a name added to
a module is documented by the next build with no page to edit. `public_api()` is also what
tests/docs/test_docs.py compares with the built site's inventory.
"""
from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import types

from mkdocs.structure.files import File

try:  # revax's docstrings title their doctest blocks "Example:" (griffe knows only "Examples:")
  from griffe import DocstringSectionKind
  from griffe._internal.docstrings import google as _google
  _google._section_kind.setdefault("example", DocstringSectionKind.examples)
except (ImportError, AttributeError):  # another griffe: the blocks render as an admonition
  pass


def public_modules() -> list[str]:
  import revax
  names = ["revax"]
  for info in pkgutil.walk_packages(revax.__path__, "revax."):
    if "._src" in info.name or info.name.split(".")[-1].startswith("_"):
      continue
    if info.name.startswith("revax.compat."):  # the compat mode's shims of JAX's own (private)
      continue                                 # modules: JAX's names, not revax's API
    if info.name == "revax.run_as_jax":  # a command (`python -m revax.run_as_jax`), no API
      continue
    names.append(info.name)
  return sorted(names)


def public_names(module_name: str) -> list[str]:
  """The names a user reaches as `module.name`, submodules excepted (they get their own page)."""
  module = importlib.import_module(module_name)
  names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
  return sorted(n for n in names if not isinstance(getattr(module, n), types.ModuleType)
                and n not in ("annotations",))


def public_api() -> dict[str, list[str]]:
  return {m: public_names(m) for m in public_modules()}


def _page(module_name: str, names: list[str]) -> str:
  module = importlib.import_module(module_name)
  doc = (module.__doc__ or "").strip()
  lines = [f"# `{module_name}`", "", doc, ""]
  subs = [m for m in public_modules() if m.rsplit(".", 1)[0] == module_name]
  if subs:
    lines += ["Submodules: " + ", ".join(f"[`{s}`]({s}.md)" for s in subs), ""]
  for name in names:
    obj = getattr(module, name)
    if _documented_by_mkdocstrings(obj):
      lines += [f"::: {module_name}.{name}", "    options:", "      show_root_heading: true",
                "      heading_level: 2", ""]
    else:  # constants, dtypes and objects of other libraries: their repr and first doc line
      summary = (inspect.getdoc(obj) or "").strip().split("\n")[0] if callable(obj) else ""
      lines += [f'<a id="{module_name}.{name}"></a>', "", f"## `{module_name}.{name}`", "",
                f"`{_short_repr(obj)}`", "", summary, ""]
  return "\n".join(lines)


def _documented_by_mkdocstrings(obj) -> bool:
  """Functions and classes defined in revax itself (mkdocstrings renders their signatures and
  docstrings); everything else is listed with its repr."""
  if not (inspect.isfunction(obj) or inspect.isclass(obj)):
    return False
  module = getattr(obj, "__module__", "") or ""
  return module.startswith("revax") and getattr(obj, "__qualname__", "") == obj.__name__


def _short_repr(obj) -> str:
  text = repr(obj)
  return text if len(text) <= 80 else text[:77] + "..."


def _index(api: dict[str, list[str]]) -> str:
  lines = ["# API reference", "", "One page per public module; every name it exports is listed.",
           "", "| module | names |", "|---|---|"]
  for module, names in api.items():
    lines.append(f"| [`{module}`]({module}.md) | {len(names)} |")
  return "\n".join(lines) + "\n"


def on_config(config):
  """The guides' code runs in the build's process; the sharding guide needs several devices, and
  the CPU client's device count is fixed when the first computation creates it. Set here, when a
  build starts, not on import: tests import this module for `public_api()`, and their process
  must keep its one device."""
  os.environ.setdefault("REVAX_CPU_DEVICE_COUNT", "4")
  return config


def on_files(files, config):
  api = public_api()
  files.append(File.generated(config, "reference/index.md", content=_index(api)))
  for module, names in api.items():
    files.append(File.generated(config, f"reference/{module}.md", content=_page(module, names)))
  return files
