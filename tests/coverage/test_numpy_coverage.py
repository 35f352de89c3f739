"""Every public name of jax.numpy 0.10.2 is in revax.numpy (the submodules jnp.linalg and
jnp.fft have their own coverage tests; names.py skips modules)."""
from tests.coverage.names import missing_names

# name -> why revax.numpy does not provide it (a reason a user would accept)
EXCLUSIONS = {}


def test_every_jax_numpy_name_is_in_revax_numpy():
  missing = missing_names("jax.numpy", "revax.numpy", EXCLUSIONS)
  assert not missing, f"jax.numpy names missing from revax.numpy: {missing}"
