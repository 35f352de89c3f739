"""revax.errors has every public name of jax.errors, each with JAX's builtin base classes."""
import builtins

import jax.errors
import pytest

import revax.errors
from tests.coverage.names import missing_names, public_names


def test_errors_names_complete():
  assert missing_names("jax.errors", "revax.errors", {}) == []


@pytest.mark.parametrize("name", sorted(public_names(jax.errors)))
def test_errors_same_builtin_bases_and_hierarchy(name):
  ours, theirs = getattr(revax.errors, name), getattr(jax.errors, name)
  assert isinstance(ours, type) and issubclass(ours, BaseException)
  builtin_bases = {c for c in vars(builtins).values() if isinstance(c, type)
                   and issubclass(c, BaseException)}
  assert ({c for c in theirs.__mro__ if c in builtin_bases}
          == {c for c in ours.__mro__ if c in builtin_bases})
  # the jax.errors classes a class derives from map to the revax.errors classes of that name
  their_public = {c.__name__ for c in theirs.__mro__[1:] if c.__module__ == "jax.errors"}
  our_public = {c.__name__ for c in ours.__mro__[1:] if getattr(revax.errors, c.__name__, None) is c}
  assert their_public == our_public
