"""set_cache_dir / reset_cache drive revax's persistent compilation cache as jax's drive jax's:
set_cache_dir is the jax_compilation_cache_dir option, later compiles store there, and
reset_cache keeps the directory and the files."""
import os

import pytest

import revax
import revax.numpy as jnp
from revax._src.runtime import compilation_cache as cc
from revax.experimental.compilation_cache import compilation_cache


@pytest.fixture
def saved_options():
  names = ["jax_enable_compilation_cache", "jax_compilation_cache_dir",
           "jax_persistent_cache_min_compile_time_secs"]
  saved = {n: revax.config.read(n) for n in names}
  try:
    yield
  finally:
    for n, v in saved.items():
      revax.config.update(n, v)


def test_set_cache_dir_stores_compiled_programs_there(tmp_path, saved_options):
  revax.config.update("jax_enable_compilation_cache", True)
  revax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
  compilation_cache.set_cache_dir(str(tmp_path / "c"))
  assert revax.config.read("jax_compilation_cache_dir") == str(tmp_path / "c")
  assert cc.settings.directory == str(tmp_path / "c")
  before = cc.counters["store"]
  revax.jit(lambda x: jnp.sin(x) * 3.25 + 0.5)(jnp.ones((7, 3)))
  assert cc.counters["store"] > before and os.listdir(tmp_path / "c")
  compilation_cache.reset_cache()
  assert revax.config.read("jax_compilation_cache_dir") == str(tmp_path / "c")
  assert cc.settings.directory == str(tmp_path / "c") and os.listdir(tmp_path / "c")
  with pytest.raises(ValueError):  # jax: a path or None
    compilation_cache.set_cache_dir(3)
