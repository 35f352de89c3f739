"""JAX's `out_sharding=` keyword: functions that take it place their result as asked (checked
with 4 devices in a subprocess), and every jax function that has the keyword either has it in
revax or is in a short list of the ones still missing it."""
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.sharding.children import run_child

# jax 0.10.2 functions whose revax counterparts do not take out_sharding yet (a TypeError for a
# caller who passes it). Remove a name when its function gains the keyword; the test fails if a
# name here has it already, or if a function not listed lacks it.
MISSING = {"lax": set(), "numpy": set(), "random": set(), "nn.initializers": set()}
MODULES = {"lax": (jax.lax, revax.lax), "numpy": (jnp, rnp), "random": (jax.random, revax.random),
           "nn.initializers": (jax.nn.initializers, revax.nn.initializers)}


def _takes_out_sharding(fn) -> bool:
  try:
    params = inspect.signature(fn).parameters
  except (TypeError, ValueError):
    return False
  return "out_sharding" in params


def test_functions_taking_out_sharding_place_their_results():
  run_child("out_sharding_child.py", "OUT_SHARDING_OK")


def test_bad_shardings_are_jaxs_errors():
  for lib in (revax, jax):
    x = lib.numpy.ones(3)
    with pytest.raises(TypeError):
      lib.lax.with_sharding_constraint(x, object())
    with pytest.raises(ValueError):
      lib.lax.with_sharding_constraint(x, None)
    with pytest.raises(TypeError):
      lib.lax.empty((3,), np.float32, out_sharding=object())
    key = lib.random.key(0)
    for call in (lambda s: lib.lax.dot_general(x, x, (((0,), (0,)), ((), ())), out_sharding=s),
                 lambda s: lib.lax.reshape(x, (3, 1), out_sharding=s),
                 lambda s: lib.numpy.zeros(3, out_sharding=s),
                 lambda s: lib.numpy.einsum("i,i->", x, x, out_sharding=s),
                 lambda s: lib.random.normal(key, (3,), out_sharding=s),
                 lambda s: lib.nn.initializers.ones(key, (3,), None, s)):
      with pytest.raises(TypeError):  # not a sharding
        call("x")
      with pytest.raises(ValueError):  # a PartitionSpec outside a mesh context
        call(lib.sharding.PartitionSpec())
    with pytest.raises(NotImplementedError):  # jax's initializer refuses every out_sharding
      lib.nn.initializers.orthogonal()(lib.random.PRNGKey(0), (2, 2), out_sharding=object())


def test_every_jax_function_with_out_sharding_has_it_or_is_listed():
  lacking, listed_but_present = {}, {}
  for name, (jax_mod, revax_mod) in MODULES.items():
    for attr in dir(jax_mod):
      jax_fn = getattr(jax_mod, attr)
      revax_fn = getattr(revax_mod, attr, None)
      if attr.startswith("_") or revax_fn is None or not _takes_out_sharding(jax_fn):
        continue
      has = _takes_out_sharding(revax_fn)
      if not has and attr not in MISSING[name]:
        lacking.setdefault(name, []).append(attr)
      if has and attr in MISSING[name]:
        listed_but_present.setdefault(name, []).append(attr)
  assert not lacking, f"revax functions without jax's out_sharding keyword: {lacking}"
  assert not listed_but_present, f"take out_sharding now; remove from MISSING: {listed_but_present}"


def test_every_jax_numpy_function_with_device_has_it():
  """JAX's `device=` keyword (jax.numpy's creation functions), listed from jax's signatures."""
  lacking = []
  for attr in dir(jnp):
    try:
      params = inspect.signature(getattr(jnp, attr)).parameters
    except (TypeError, ValueError):
      continue
    if attr.startswith("_") or "device" not in params or not hasattr(rnp, attr):
      continue
    if "device" not in inspect.signature(getattr(rnp, attr)).parameters:
      lacking.append(attr)
  assert not lacking, f"revax.numpy functions without jax's device keyword: {lacking}"


def test_device_must_be_a_device_or_a_sharding():
  with pytest.raises(TypeError, match="device must be a Device"):
    rnp.zeros(3, device="cpu")
  with pytest.raises(TypeError, match="device must be a Device"):
    rnp.arange(3, device=revax.sharding.PartitionSpec())
  assert rnp.ones(2, device=None).devices() == {revax.devices()[0]}
