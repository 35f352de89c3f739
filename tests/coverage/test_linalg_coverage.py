"""Coverage of jax.numpy.linalg, jax.lax.linalg and jax.scipy.linalg 0.10.2 by their revax
mirrors: every public name exists, or is excluded here with its reason (printed by the test).
The names are exercised against jax in tests/numpy/test_linalg.py, tests/scipy/test_linalg.py
and the op database (tests/lax/opdb/linalg.py)."""
import pytest

from tests.coverage.names import missing_names

pytest.importorskip("jax")

_NO_GEES = ("JAX calls LAPACK gees on CPU, which the XLA CPU plugin revax runs on lacks, and "
            "revax has no lax algorithm for it yet (eig calls LAPACK's geev on the host)")
_NO_SCHUR = "needs a Schur decomposition (" + _NO_GEES + ")"

NUMPY_LINALG_EXCLUSIONS = {}

LAX_LINALG_EXCLUSIONS = {
  "schur": _NO_SCHUR, "schur_p": _NO_SCHUR,
}

SCIPY_LINALG_EXCLUSIONS = {
  "schur": _NO_SCHUR, "rsf2csf": "converts the output of schur, which revax lacks",
  "sqrtm": _NO_SCHUR, "funm": _NO_SCHUR,
}


def test_numpy_linalg_names():
  assert missing_names("jax.numpy.linalg", "revax.numpy.linalg", NUMPY_LINALG_EXCLUSIONS) == []


def test_lax_linalg_names():
  assert missing_names("jax.lax.linalg", "revax.lax.linalg", LAX_LINALG_EXCLUSIONS) == []


def test_scipy_linalg_names():
  assert missing_names("jax.scipy.linalg", "revax.scipy.linalg", SCIPY_LINALG_EXCLUSIONS) == []
