"""revax's Device and Memory against jax's: every public attribute of a jax CPU device (read from
jax itself) is present, and each gives what jax's gives for the same device (the CPU device of
both: on a TPU machine too, where the jax oracle runs on the CPU)."""
import pytest

import revax
from revax._src.core.errors import JaxRuntimeError

jax = pytest.importorskip("jax")

EXCLUDED = {
    "live_buffers": "deprecated in jax (use live_arrays); revax does not track buffers per device",
    "get_stream_for_external_ready_events": "GPU streams: no counterpart on CPU",
    "poison_execution": "fault injection into running programs: not part of revax's runtime",
}


def _public(obj):
  return {n for n in dir(obj) if not n.startswith("_")}


def test_every_device_attribute_is_present():
  missing = _public(jax.devices("cpu")[0]) - _public(revax.devices("cpu")[0]) - set(EXCLUDED)
  assert not missing, sorted(missing)
  assert not [n for n in EXCLUDED if hasattr(revax.devices("cpu")[0], n)]  # the list stays honest


def test_device_values_match_jax():
  rd, jd = revax.devices("cpu")[0], jax.devices("cpu")[0]
  for name in ("id", "platform", "device_kind", "process_index", "host_id", "task_id",
               "local_hardware_id"):
    assert getattr(rd, name) == getattr(jd, name), name
  assert rd.memory_stats() == jd.memory_stats()  # None on CPU
  assert isinstance(rd.client, type(revax._src.runtime.client.get_backend()))


def test_memories_match_jax():
  rd, jd = revax.devices("cpu")[0], jax.devices("cpu")[0]
  got, want = rd.addressable_memories(), jd.addressable_memories()
  assert [m.kind for m in got] == [m.kind for m in want]
  assert [repr(m) for m in got] == [repr(m) for m in want]
  assert [str(m) for m in got] == [str(m) for m in want]
  assert _public(jd.default_memory()) <= _public(rd.default_memory())
  dm = rd.default_memory()
  assert dm.kind == "device" and dm.addressable_by_devices() == [rd]
  assert dm.process_index == 0 and dm.platform == "cpu" and dm == rd.memory("device")
  assert rd.memory("pinned_host").kind == "pinned_host"
  with pytest.raises(JaxRuntimeError, match="Got memory kind: nowhere"):
    rd.memory("nowhere")
  with pytest.raises(type(jax.errors.JaxRuntimeError("x")), match="Got memory kind: nowhere"):
    jd.memory("nowhere")
