"""JAX's top-level config context managers (jax.no_tracing, jax.transfer_guard_host_to_device,
jax.threefry_partitionable, ...): each revax name is a State like JAX's (a context manager
factory with `.value`), its default equals jax 0.10.2's, the default and every value revax
honours work in a with-block and are restored after it, and a value revax cannot honour is a
ValueError that says why (never silently ignored). no_tracing and no_execution have JAX's
effect: RuntimeError on a retrace / on running a compiled program."""
import numpy as np
import pytest

import jax
import revax
import revax.numpy as rnp

# name -> values revax honours besides the default
HONOURED = {
    "threefry_partitionable": (), "debug_key_reuse": (), "transfer_guard_host_to_device": ("allow",),
    "transfer_guard_device_to_host": ("allow",), "transfer_guard_device_to_device": ("allow",),
    "no_tracing": (True,), "no_execution": (True,), "softmax_custom_jvp": (True,),
    "default_device": ("cpu",), "allow_f16_reductions": (),
    "array_garbage_collection_guard": ("allow",), "auto_pcast": (), "enable_custom_prng": (),
    "legacy_prng_key": (), "remove_size_one_mesh_axis_from_type": (), "thread_guard": (),
    "jax2tf_associative_scan_reductions": (),
}
# name -> a value JAX accepts that revax refuses
REFUSED = {
    "threefry_partitionable": False, "debug_key_reuse": True,
    "transfer_guard_host_to_device": "disallow", "transfer_guard_device_to_host": "log",
    "transfer_guard_device_to_device": "disallow_explicit", "allow_f16_reductions": False,
    "array_garbage_collection_guard": "fatal", "auto_pcast": False, "enable_custom_prng": True,
    "legacy_prng_key": "error", "remove_size_one_mesh_axis_from_type": True,
    "thread_guard": True, "jax2tf_associative_scan_reductions": True,
}


def _plain(value):
  return getattr(value, "value", value)  # jax's legacy_prng_key default is an enum


@pytest.mark.parametrize("name", sorted(HONOURED))
def test_state_defaults_values_and_restoring(name):
  state, jstate = getattr(revax, name), getattr(jax, name)
  default = state.value
  assert default == _plain(jstate.value), (name, default, jstate.value)
  for value in (default, *HONOURED[name]):
    with state(value):
      assert state.value == value
    assert state.value == default
  if name in REFUSED:
    with pytest.raises(ValueError, match="not supported by revax"):
      with state(REFUSED[name]):
        pass
    assert state.value == default


def test_checking_leaks_turns_the_check_on_inside_the_block():
  with revax.checking_leaks():
    assert revax.config.jax_check_tracer_leaks is True
  assert revax.config.jax_check_tracer_leaks is False


def test_default_device_accepts_the_first_device_only():
  first = revax.devices()[0]
  with revax.default_device(first):
    assert float(rnp.ones(2).sum()) == 2.0
  with pytest.raises(ValueError, match="takes a Device"):
    with revax.default_device(3):
      pass


def test_no_tracing_raises_on_a_retrace_only():
  for jit, m in ((revax.jit, rnp), (jax.jit, jax.numpy)):
    f = jit(lambda x: x * 2)
    f(m.ones(3))
    with (revax if jit is revax.jit else jax).no_tracing(True):
      np.testing.assert_array_equal(f(m.ones(3)), 2 * np.ones(3))  # cached: no trace
      with pytest.raises(RuntimeError, match="no_tracing"):
        f(m.ones(4))  # a new shape traces


def test_no_execution_raises_before_running_a_program():
  f = revax.jit(lambda x: x + 1)
  x = rnp.ones(3)
  f(x)
  with revax.no_execution(True):
    with pytest.raises(RuntimeError, match="no_execution"):
      f(x)  # the cached call plan
    with pytest.raises(RuntimeError, match="no_execution"):
      revax.jit(lambda x: x * 3)(x)
  np.testing.assert_array_equal(f(x), 2 * np.ones(3))


def test_softmax_custom_jvp_either_way_same_gradient():
  x = rnp.array([0.5, -1.0, 2.0])
  g = lambda: revax.grad(lambda x: revax.nn.softmax(x)[0])(x)
  base = np.asarray(g())
  with revax.softmax_custom_jvp(True):
    np.testing.assert_allclose(np.asarray(g()), base, rtol=1e-6)


def test_effects_barrier_after_an_effect():
  seen = []
  f = revax.jit(lambda x: revax.debug.callback(seen.append, x))
  f(rnp.float32(2.0))
  assert revax.effects_barrier() is None and len(seen) == 1
