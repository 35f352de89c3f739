"""revax's version, written here only: pyproject.toml reads `_version` from this file at build
time (`[tool.setuptools.dynamic]`), so the installed package's metadata and
`revax.__version__` cannot disagree. As `jax.version`: `__version__` is the string,
`__version_info__` its numeric parts.

Example:
  >>> import revax.version
  >>> revax.version.__version__ == revax.__version__
  True
  >>> len(revax.version.__version_info__)
  3
"""
from __future__ import annotations

_version: str = "0.1.0"  # a literal: setuptools reads it without importing revax
__version__: str = _version
__version_info__: tuple[int, ...] = tuple(int(part) for part in _version.split("+")[0].split(".")
                                          if part.isdigit())
