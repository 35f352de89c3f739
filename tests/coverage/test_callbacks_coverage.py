"""Coverage of jax.debug and jax.ffi by revax.debug and revax.ffi (plus the callback entry points
jax.pure_callback and jax.experimental.io_callback)."""
import revax
import revax.experimental
from tests.coverage.names import missing_names

DEBUG_EXCLUSIONS = {
    "DebugEffect": "revax has no effect objects: side effects are a per-primitive flag "
                   "(core/effects.py)",
    "OrderedDebugEffect": "as DebugEffect",
}

FFI_EXCLUSIONS = {
    "include_dir": "revax ships no C headers (XLA's c_api.h is the reference)",
    "register_ffi_target_as_batch_partitionable": "sharding: issue 18",
    "register_ffi_type": "user-defined FFI state types need XLA's C++ type registry",
    "register_ffi_type_id": "as register_ffi_type",
}


def test_debug_names():
  assert missing_names("jax.debug", "revax.debug", DEBUG_EXCLUSIONS) == []


def test_ffi_names():
  assert missing_names("jax.ffi", "revax.ffi", FFI_EXCLUSIONS) == []


def test_callback_entry_points():
  assert callable(revax.pure_callback)
  assert callable(revax.experimental.io_callback)
