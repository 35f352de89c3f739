"""revax/_src/runtime/memories.py and the memory side of client.py: buffers put into each memory
of a device (PJRT says where they are), copied between memories, programs whose results name a
memory (read from the text; the CPU plugin's results are moved there), and jax's
`annotate_device_placement` made compilable for the CPU plugin."""
import jax
import numpy as np
import pytest
from jax.sharding import SingleDeviceSharding as JSDS

from revax._src.runtime import memories
from revax._src.runtime.client import get_backend

from tests.platform_tolerances import ON_TPU

# revax refuses host memories on a TPU (memories.HOST_MEMORIES_ON): the chip's first run of these
# tests found arguments in host memory compiled with device layouts and host-memory results
# refused by XLA:TPU; test_host_memories_are_refused_off_the_cpu checks the refusal
pytestmark = pytest.mark.skipif(ON_TPU, reason=(
    "host memories are refused on a TPU (NotImplementedError, memories.HOST_MEMORIES_ON); "
    "these compare with jax's CPU memories"))

KINDS = ("device", "pinned_host", "unpinned_host")
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_buffers_go_into_each_memory_and_between_them():
  backend = get_backend()
  device = backend.devices[0]
  assert [m.kind for m in device.addressable_memories()] == list(KINDS)
  for kind in KINDS:
    buf = backend.buffer_from_numpy(X, device, memories.memory_of(device, kind))
    assert buf.memory.kind == kind
    for other in KINDS:
      moved = memories.in_memory(buf, other)
      assert moved.memory.kind == other
      assert (moved is buf) == (other == kind)
      np.testing.assert_array_equal(moved.to_numpy(), X)


def test_an_unknown_memory_kind_is_jax_s_value_error():
  device = get_backend().devices[0]
  with pytest.raises(ValueError) as r:
    memories.memory_of(device, "hbm")
  with pytest.raises(ValueError) as j:
    JSDS(jax.devices()[0], memory_kind="hbm")
  assert str(r.value) == str(j.value)


_HEAD = ('module @m {\n  func.func public @main('
         '%arg0: tensor<2x3xf32> {mhlo.memory_kind = "device"})')


@pytest.mark.parametrize("results, kinds", [
    ("(tensor<2x3xf32>)", None),
    ('(tensor<2x3xf32> {mhlo.memory_kind = "device"})', None),
    ('(tensor<2x3xf32> {jax.result_info = "result", mhlo.memory_kind = "pinned_host"})',
     ("pinned_host",)),
    ('(tensor<f32> {mhlo.memory_kind = "pinned_host", sdy.sharding = #sdy.sharding<@m, [{}, {}]>}'
     ', tensor<2x3xf32>, tensor<4xf32> {mhlo.memory_kind = "unpinned_host"})',
     ("pinned_host", None, "unpinned_host")),
])
def test_result_memory_kinds_are_read_from_the_text(results, kinds):
  assert memories.output_memory_kinds(f"{_HEAD} -> {results} {{\n".encode()) == kinds


def test_jax_s_placement_annotation_runs_on_the_cpu_plugin():
  """jax's own lowering of out_shardings with a memory kind (an annotate_device_placement
  custom call, which the plugin cannot compile) compiles on revax's backend, and the result
  arrives in pinned host memory with its value."""
  s = JSDS(jax.devices()[0], memory_kind="pinned_host")
  text = jax.jit(lambda a: a * 2, out_shardings=s).lower(X).as_text()
  assert "annotate_device_placement" in text
  assert b"annotate_device_placement" not in memories.strip_placement_annotations(text.encode())
  backend = get_backend()
  executable = backend.compile(text)
  for _ in range(2):
    (out,) = executable.execute([backend.buffer_from_numpy(X)])
    assert out.memory.kind == "pinned_host"
    np.testing.assert_array_equal(out.to_numpy(), X * 2)


def test_host_memories_are_refused_off_the_cpu(monkeypatch):
  """A device of a platform outside HOST_MEMORIES_ON (a TPU) refuses its host memories with
  NotImplementedError naming the kind and the way out, before any buffer or program is made;
  its device memory and unknown kinds (jax's ValueError) are as on the CPU."""
  import revax
  from revax.sharding import SingleDeviceSharding
  monkeypatch.setattr(memories, "HOST_MEMORIES_ON", ())
  device = revax.devices()[0]
  for kind in ("pinned_host", "unpinned_host"):
    with pytest.raises(NotImplementedError, match=f"memory kind '{kind}' on a"):
      memories.memory_of(device, kind)
    with pytest.raises(NotImplementedError, match="use device memory"):
      revax.device_put(X, SingleDeviceSharding(device, memory_kind=kind))
  with pytest.raises(NotImplementedError):
    revax.device_put(X, revax.memory.Space.Host)
  assert memories.memory_of(device, "device").kind == "device"
  with pytest.raises(ValueError, match="Got memory kind: hbm"):
    memories.memory_of(device, "hbm")
