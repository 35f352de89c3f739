"""Public names of a jax 0.10.2 module against the revax module that mirrors it.

Each coverage test (one per mirrored module, in this folder) calls `missing_names` with its
module pair and a short exclusion list {name: reason a user would accept}, prints the exclusions,
and asserts nothing else is missing. The list of names comes from jax itself, never from memory.
"""
import importlib
import types


def public_names(module):
  """Names a user reaches as `module.name`: no leading underscore, no submodules of other
  packages (jax re-exports e.g. `jax.numpy.fft` as attributes; those get their own test)."""
  names = set()
  for name in dir(module):
    if name.startswith("_"):
      continue
    value = getattr(module, name)
    if isinstance(value, types.ModuleType):
      continue
    names.add(name)
  return names


def missing_names(jax_module_name, revax_module_name, exclusions):
  """Sorted jax public names absent from the revax module and not excluded with a reason."""
  jax_mod = importlib.import_module(jax_module_name)
  revax_mod = importlib.import_module(revax_module_name)
  if exclusions:
    print(f"\n{revax_module_name}: excluded names of {jax_module_name}:")
    for name, reason in sorted(exclusions.items()):
      print(f"  {name}: {reason}")
  stale = sorted(n for n in exclusions if n not in public_names(jax_mod))
  assert not stale, f"exclusions that jax does not have: {stale}"
  return sorted(n for n in public_names(jax_mod) - set(dir(revax_mod)) if n not in exclusions)
