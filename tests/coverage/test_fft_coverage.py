"""Coverage of jax.numpy.fft, jax.scipy.fft and jax.scipy.signal (and lax.fft/FftType): every
public name of jax 0.10.2's module exists in the revax module that mirrors it, or is excluded
below with a reason. Each name is exercised against jax in tests/numpy/test_fft.py and
tests/scipy/test_fft_signal.py."""
import pytest

from tests.coverage.names import missing_names

pytest.importorskip("jax")

MODULES = {
    ("jax.numpy.fft", "revax.numpy.fft"): {},
    ("jax.scipy.fft", "revax.scipy.fft"): {},
    ("jax.scipy.signal", "revax.scipy.signal"): {},
}


@pytest.mark.parametrize("jax_name,revax_name", list(MODULES), ids=[j for j, _ in MODULES])
def test_every_public_name_exists(jax_name, revax_name):
  missing = missing_names(jax_name, revax_name, MODULES[(jax_name, revax_name)])
  assert not missing, f"{revax_name} lacks {missing}"


def test_lax_fft_names():
  import jax.lax

  import revax.lax
  for name in ("fft", "FftType"):
    assert hasattr(jax.lax, name) and hasattr(revax.lax, name), name
  assert [m.name for m in revax.lax.FftType] == [m.name for m in jax.lax.FftType]
  assert [int(m) for m in revax.lax.FftType] == [int(m) for m in jax.lax.FftType]
