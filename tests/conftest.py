"""Fixtures shared across the suite."""
import jax
import pytest

import revax


@pytest.fixture
def x64():
  """Both libraries with 64-bit types on for the test, off again after it."""
  revax.config.update("enable_x64", True)
  jax.config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    revax.config.update("enable_x64", False)
    jax.config.update("jax_enable_x64", False)
