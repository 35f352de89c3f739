"""Coverage of jax.numpy.linalg, jax.lax.linalg and jax.scipy.linalg 0.10.2 by their revax
mirrors: every public name exists, or is excluded here with its reason (printed by the test).
The names are exercised against jax in tests/numpy/test_linalg.py, tests/scipy/test_linalg.py
and the op database (tests/lax/opdb/linalg.py)."""
import pytest

from tests.coverage.names import missing_names

pytest.importorskip("jax")

NUMPY_LINALG_EXCLUSIONS = {}

LAX_LINALG_EXCLUSIONS = {}

SCIPY_LINALG_EXCLUSIONS = {}


def test_numpy_linalg_names():
  assert missing_names("jax.numpy.linalg", "revax.numpy.linalg", NUMPY_LINALG_EXCLUSIONS) == []


def test_lax_linalg_names():
  assert missing_names("jax.lax.linalg", "revax.lax.linalg", LAX_LINALG_EXCLUSIONS) == []


def test_scipy_linalg_names():
  assert missing_names("jax.scipy.linalg", "revax.scipy.linalg", SCIPY_LINALG_EXCLUSIONS) == []
