"""`set_cache_dir` / `reset_cache` (JAX's `jax.experimental.compilation_cache.compilation_cache`)
over revax's persistent compilation cache (revax/_src/runtime/compilation_cache.py).

As in JAX, `set_cache_dir(path)` is `config.update("jax_compilation_cache_dir", path)`: later
compiles look for and store their executables there. `reset_cache()` brings the cache back to its
uninitialized state, to be set up again from the config options on its next use; it removes no
files and keeps the directory option. revax's cache holds no state beyond its settings (each
lookup reads the directory), so resetting re-reads them from the config.
"""
from __future__ import annotations

from revax._src.core.config import config
from revax._src.runtime import compilation_cache as _cache

__all__ = ["reset_cache", "set_cache_dir"]


def set_cache_dir(path) -> None:
  """Sets the persistent compilation cache directory.

  After calling this, jit-compiled functions are saved to `path`, so they do not need to be
  recompiled if the process is restarted or otherwise run again. This also tells revax where to
  look for compiled functions before compiling.

  The compilation cache is considered trusted: do not share a cache directory with users you
  do not trust (whoever can write to it can make this process run their code).
  """
  config.update("jax_compilation_cache_dir", path)


def reset_cache() -> None:
  """Get back to pristine, uninitialized state (the settings are read again from the config;
  nothing on disk changes)."""
  _cache.settings.refresh()
