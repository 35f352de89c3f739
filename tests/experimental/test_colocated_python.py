"""`revax.experimental.colocated_python` against jax's on the CPU backend (where jax, like
revax, runs a colocated function in its own process): colocated CPU devices of devices and
meshes, calls with pytrees of arrays, `specialize` (devices, and its errors), a function of no
arrays. orbax's checkpointing imports the module (and its `func` and `serialization`
submodules) at import time, so flax's nnx integration tests import it."""
import numpy as np
import pytest

import revax

jax = pytest.importorskip("jax")


def _cp(lib):
  from importlib import import_module
  return import_module(lib.__name__ + ".experimental.colocated_python")


def _outcome(fn):
  try:
    out = fn()
  except Exception as e:  # noqa: BLE001 (the exception's type and message are the outcome)
    return type(e).__name__, str(e)
  return "value", [np.asarray(v).tolist() for v in (out if isinstance(out, list) else
                                                     revax.tree_util.tree_leaves(out)
                                                     if not hasattr(out, "__array__") else [out])]


CALLS = {
    "pytree": lambda lib, cp: cp.colocated_python(lambda x, y: (x * 2, {"a": y + 1}))(
        lib.numpy.arange(3.0), y=lib.numpy.ones(2)),
    "specialized": lambda lib, cp: cp.colocated_python(lambda x: x - 1).specialize(
        devices=cp.colocated_cpu_devices(lib.devices()))(lib.numpy.arange(3.0)),
    "no arrays": lambda lib, cp: cp.colocated_python(lambda: lib.numpy.ones(2))(),
    "no arrays specialized": lambda lib, cp: cp.colocated_python(
        lambda: lib.numpy.ones(2)).specialize(devices=lib.devices())(),
    "specialized twice": lambda lib, cp: cp.colocated_python(lambda x: x).specialize(
        devices=lib.devices()).specialize(devices=lib.devices()),
    "python argument": lambda lib, cp: cp.colocated_python(lambda x, n: x * n)(
        lib.numpy.ones(2), 3),
    "python result": lambda lib, cp: cp.colocated_python(lambda x: [x, 1])(lib.numpy.ones(2)),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_calls_match_jax(name):
  got = _outcome(lambda: CALLS[name](revax, _cp(revax)))
  want = _outcome(lambda: CALLS[name](jax, _cp(jax)))
  assert got[0] == want[0]
  if got[0] == "value":
    assert got == want
  elif name != "python argument":  # (jax's AttributeError there is its `.dtype` read)
    assert got[1].split(".")[0] == want[1].split(".")[0]


def test_colocated_cpu_devices_match_jax():
  for lib in (revax, jax):
    cp = _cp(lib)
    devs = cp.colocated_cpu_devices(lib.devices())
    # (the CPU devices beside the default ones: on a TPU machine the host's, not the chip's)
    assert [d.id for d in devs] == [d.id for d in lib.devices()]
    assert devs[0] is lib.devices("cpu")[0]
    assert [d.id for d in cp.colocated_cpu_devices(tuple(lib.devices()))] == [0]
    mesh = lib.make_mesh((1,), ("a",))
    cmesh = cp.colocated_cpu_devices(mesh)
    assert (cmesh.axis_names, cmesh.axis_sizes, cmesh.axis_types) == (
        ("a",), (1,), mesh.axis_types)


def test_submodules_import_as_orbax_imports_them():
  from revax.experimental.colocated_python import func, serialization  # noqa: F401
  with pytest.raises(NotImplementedError, match="colocated_python_class"):
    _cp(revax).colocated_python_class(type("Obj", (), {}))


def test_device_list_matches_jax():
  def outcome(lib):
    from importlib import import_module
    D = import_module(lib.__name__ + ".experimental.colocated_python.serialization").DeviceList
    devices = lib.devices("cpu")  # (the oracle's platform, whatever the default one is)
    d = D(tuple(devices))
    out = [repr(d), len(d), [x.id for x in d], d[0].id, d == D(tuple(devices)),
           hash(d) == hash(D(tuple(devices))), d == tuple(devices),
           d.is_fully_addressable, [x.id for x in d.addressable_device_list],
           d.process_indices, d.default_memory_kind, d.memory_kinds, d.device_kind]
    try:
      D(list(devices))
    except TypeError as e:
      out.append(type(e).__name__)
    return out
  assert outcome(revax) == outcome(jax)
