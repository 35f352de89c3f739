"""Backends as JAX users know them (runtime/backends.py, client.get_backend): which platform is
the default, JAX's errors for platforms that are not present, several backends in one process
(computations run where their committed arguments are), and row-major host transfers whatever
layout the device chose. The TPU itself is exercised on the chip (tests/tpu/)."""
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import revax
import revax.numpy as jnp
from revax._src.runtime import backends, client, pjrt, plugins


# These compare with a jax on the CPU alone, or patch how the TPU is found before the backends
# start: on a TPU machine (tests/tpu/run_suite.py) the TPU backend has started and is present.
cpu_default_only = pytest.mark.skipif(
    backends.platform_order()[0] != "cpu",
    reason="checks a process whose default backend is the CPU (run on a TPU machine here)")


@cpu_default_only
@pytest.mark.parametrize("name", ["gpu", "cuda", "rocm"])
def test_devices_of_absent_hardware_raise_jax_error(name):
  with pytest.raises(RuntimeError) as theirs:
    jax.devices(name)
  with pytest.raises(RuntimeError) as ours:
    revax.devices(name)
  assert str(ours.value) == str(theirs.value)
  with pytest.raises(RuntimeError):
    revax.local_devices(backend=name)
  with pytest.raises(RuntimeError):
    revax.device_count(name)


@cpu_default_only
def test_tpu_without_libtpu_says_how_to_install(monkeypatch):
  monkeypatch.setattr(backends, "tpu_plugin_path", lambda: None)
  with pytest.raises(RuntimeError, match=r"libtpu is not installed \(pip install 'revax\[tpu\]'"):
    revax.devices("tpu")


@cpu_default_only
def test_tpu_without_a_chip_says_so(monkeypatch):
  monkeypatch.setattr(backends, "tpu_plugin_path", lambda: "/nonexistent/libtpu.so")
  monkeypatch.setattr(backends, "tpu_attached", lambda: False)
  with pytest.raises(RuntimeError, match="no TPU chip is attached"):
    revax.devices("tpu")


@cpu_default_only
def test_cpu_backend_by_name_is_the_default_one_here():
  assert revax.devices("cpu") == revax.devices() == jax.devices("cpu")[:len(revax.devices())] \
      or revax.devices("cpu") == revax.devices()
  assert revax.default_backend() == "cpu"
  assert revax.local_device_count("cpu") == len(revax.devices())
  assert client.get_backend("host") is client.get_backend("cpu")


def test_platform_order(monkeypatch):
  monkeypatch.delenv(backends.ENV_VAR, raising=False)
  monkeypatch.setattr(backends, "tpu_plugin_path", lambda: "/x/libtpu.so")
  monkeypatch.setattr(backends, "tpu_attached", lambda: True)
  assert backends.platform_order() == ["tpu", "cpu"]
  monkeypatch.setattr(backends, "tpu_attached", lambda: False)
  assert backends.platform_order() == ["cpu"]
  monkeypatch.setenv(backends.ENV_VAR, "cpu")
  monkeypatch.setattr(backends, "tpu_attached", lambda: True)
  assert backends.platform_order() == ["cpu"]
  monkeypatch.setenv(backends.ENV_VAR, "cuda,tpu,cpu")
  assert backends.platform_order() == ["tpu", "cpu"]
  monkeypatch.setenv(backends.ENV_VAR, "cuda")
  with pytest.raises(RuntimeError, match="Unable to initialize backend 'cuda'"):
    backends.platform_order()


def test_jax_platforms_config_accepts_tpu_and_refuses_unknown():
  before = revax.config.read("jax_platforms")
  try:
    revax.config.update("jax_platforms", "tpu,cpu")
    with pytest.raises(ValueError, match="not supported by revax"):
      revax.config.update("jax_platforms", "cuda")
  finally:
    revax.config.update("jax_platforms", before)


def test_held_chip_error_names_the_cause():
  error = backends.tpu_start_error(
      "INTERNAL: Internal error when accessing libtpu multi-process lockfile. Run \"$ sudo lsof "
      "-w /dev/accel0\" to figure out which process is using the TPU.")
  assert "held by another process" in str(error) and "REVAX_PLATFORMS=cpu" in str(error)
  assert "lockfile" in str(error)  # libtpu's own words are kept
  other = backends.tpu_start_error("INTERNAL: something else")
  assert "Unable to initialize backend 'tpu'" in str(other)


def _run(code, **env):
  environment = dict(os.environ, **env)
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        env=environment, timeout=120)


def test_revax_platforms_env_chooses_and_a_missing_tpu_raises_at_first_use():
  done = _run("import revax; print(revax.default_backend(), revax.devices())",
              REVAX_PLATFORMS="cpu")
  assert done.returncode == 0, done.stderr
  assert done.stdout.split()[0] == "cpu"
  code = ("import sys, revax\n"
          "from revax._src.runtime import backends\n"
          "backends.tpu_plugin_path = lambda: None\n"
          "try:\n  revax.devices()\nexcept RuntimeError as e:\n  print('refused:', e)\n")
  done = _run(code, REVAX_PLATFORMS="tpu")
  assert done.returncode == 0, done.stderr
  assert "refused: Backend 'tpu' failed to initialize: libtpu is not installed" in done.stdout


# --- several backends in one process --------------------------------------------------------
@pytest.fixture
def second_backend():
  """A second client of the CPU plugin, registered as another backend: a stand-in for the TPU
  beside the CPU (its own devices, buffers and executables)."""
  backend = client.Backend(plugins.load_default(), create_options={"cpu_device_count": 1})
  for device in backend.devices:
    device.platform = "second"  # (devices compare by platform and id, as JAX's)
  client._backends["second"] = backend
  try:
    yield backend
  finally:
    del client._backends["second"]


def test_computations_follow_arrays_to_another_backend(second_backend):
  device = second_backend.devices[0]
  assert device != revax.devices()[0]
  x = revax.device_put(np.arange(6.0, dtype=np.float32).reshape(2, 3), device)
  assert x.devices() == {device} and x.committed
  y = revax.jit(lambda a: jnp.sin(a).T * 2)(x)  # compiled again for that backend
  np.testing.assert_allclose(y, np.sin(np.arange(6.0).reshape(2, 3)).T * 2, rtol=1e-6)
  assert y.devices() == {device}
  z = jnp.cos(x) + 1  # eager ops too
  assert z.devices() == {device}
  np.testing.assert_allclose(z, np.cos(np.arange(6.0).reshape(2, 3)) + 1, rtol=1e-6)
  back = revax.device_put(y, revax.devices()[0])  # between backends, through the host
  assert back.devices() == {revax.devices()[0]}
  np.testing.assert_allclose(back, y)
  # the default backend's fast call plan must not take the other backend's buffers
  f = revax.jit(lambda a: a + 1)
  f(np.ones((2, 3), np.float32))
  np.testing.assert_allclose(f(x), np.arange(6.0).reshape(2, 3) + 1)
  with pytest.raises(ValueError, match="incompatible devices"):
    revax.jit(lambda a, b: a + b)(x, revax.device_put(np.ones((2, 3), np.float32),
                                                      revax.devices()[0]))


# --- layouts ----------------------------------------------------------------------------------
def test_host_layout_is_row_major_for_every_rank():
  for ndim in range(5):
    layout = pjrt.HostLayout(ndim)
    assert pjrt.read_layout(layout.layout) == ("tiled", tuple(range(ndim - 1, -1, -1)), ())


def test_transfers_through_to_host_buffer_give_c_order(monkeypatch):
  """The TPU path (Buffer_ToHostBuffer with a row-major host layout) run on the CPU plugin, for
  results whose XLA layout may differ from their shape's order (transposes, batch dims moved,
  sorts along the major axis)."""
  backend = client.get_backend()
  monkeypatch.setattr(backend, "_is_cpu", False)
  rng = np.random.RandomState(0)
  x = rng.randn(2, 3, 4).astype(np.float32)
  cases = [
      (lambda a: a.transpose(0, 2, 1), lambda a: a.transpose(0, 2, 1)),
      (lambda a: a.transpose(2, 0, 1)[::-1], lambda a: a.transpose(2, 0, 1)[::-1]),
      (lambda a: jnp.sort(a, axis=0), lambda a: np.sort(a, axis=0)),
      (lambda a: revax.lax.dot_general(a, a, (((2,), (2,)), ((1,), (1,)))),
       lambda a: np.einsum("ibk,jbk->bij", a, a)),
      (lambda a: a[:, :, 0], lambda a: a[:, :, 0]),
      (lambda a: a.sum(), lambda a: a.sum()),
  ]
  for fn, ref in cases:
    out = revax.jit(fn)(x)
    out._npy = None  # read back through the transfer under test
    np.testing.assert_allclose(np.asarray(out), ref(x), rtol=1e-5, atol=1e-5)


def test_default_device_context_sends_uncommitted_work_to_another_backend(second_backend):
  device = second_backend.devices[0]
  f = revax.jit(lambda a: jnp.tanh(a) * 3)
  x = np.linspace(-1, 1, 6, dtype=np.float32)
  with revax.default_device(device):
    y = f(x)
    z = jnp.sin(jnp.asarray(x)) + 1
    w = revax.device_put(x)
  for out in (y, z, w):
    assert out.devices() == {device} and not out.committed
  np.testing.assert_allclose(y, np.tanh(x) * 3, rtol=1e-6)
  np.testing.assert_allclose(z, np.sin(x) + 1, rtol=1e-6)
  assert f(x).devices() == {revax.devices()[0]}  # outside the context: the default again
  with revax.default_device("cpu"):
    assert f(x).devices() == {revax.devices("cpu")[0]}
  with pytest.raises(RuntimeError, match="Unknown backend"):
    revax.config.update("jax_default_device", "gpu")
