"""Coverage of jax.debug and jax.ffi by revax.debug and revax.ffi (plus the callback entry points
jax.pure_callback and jax.experimental.io_callback)."""
import revax
import revax.experimental
from tests.coverage.names import missing_names

DEBUG_EXCLUSIONS: dict = {}

FFI_EXCLUSIONS = {
    "register_ffi_target_as_batch_partitionable":
        "jax registers an XLA custom-call partitioner in its own in-process XLA; revax's CPU "
        "plugin has no PJRT custom-partitioner extension to register one with",
}


def test_debug_names():
  assert missing_names("jax.debug", "revax.debug", DEBUG_EXCLUSIONS) == []


def test_ffi_names():
  assert missing_names("jax.ffi", "revax.ffi", FFI_EXCLUSIONS) == []


def test_callback_entry_points():
  assert callable(revax.pure_callback)
  assert callable(revax.experimental.io_callback)
