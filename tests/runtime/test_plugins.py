"""Choosing the PJRT plugin: config option `revax_pjrt_plugin` / env `PJRT_PLUGIN`, a path or an
installed package name, its errors, and the plugin lines of `revax.print_environment_info()`.

Resolution is tested in this process on fake packages (nothing is loaded); loading a bogus file
and starting on a package name run in fresh interpreters, since a process has one backend.
"""
import os
import subprocess
import sys
import textwrap
import types

import pytest

import revax
from revax._src.runtime import plugins
from revax._src.runtime.client import get_backend

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code, **env):
  environment = {k: v for k, v in os.environ.items() if k != "PJRT_PLUGIN"}
  environment.update(env)
  environment["PYTHONPATH"] = os.pathsep.join([ROOT, environment.get("PYTHONPATH", "")])
  return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                        text=True, env=environment, timeout=120)


def _fake_package(site, name, version, libraries):
  """A `pip install --target`-style folder: `site/<module>/<lib>` files and their dist-info."""
  module = name.replace("-", "_")
  os.makedirs(site / module, exist_ok=True)
  records = []
  for lib in libraries:
    (site / module / lib).write_bytes(b"\x7fELF not really")
    records.append(f"{module}/{lib},,")
  info = site / f"{module}-{version}.dist-info"
  info.mkdir()
  (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
  (info / "RECORD").write_text("\n".join(records + [f"{info.name}/METADATA,,"]) + "\n")
  return site / module


def test_a_package_name_or_a_path_resolves_to_the_library_and_its_package(tmp_path, monkeypatch):
  folder = _fake_package(tmp_path, "my-pjrt-plugin", "1.2", ["libhelper.so", "pjrt_cpu.so"])
  monkeypatch.syspath_prepend(str(tmp_path))
  by_name = plugins.resolve("my-pjrt-plugin", "revax_pjrt_plugin")
  assert by_name.path == os.path.realpath(folder / "pjrt_cpu.so")  # the one named for PJRT
  assert (by_name.package, by_name.version) == ("my-pjrt-plugin", "1.2")
  # A path finds its owning package even in a folder that is not on sys.path.
  monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))
  by_path = plugins.resolve(str(folder / "pjrt_cpu.so"), "PJRT_PLUGIN")
  assert (by_path.path, by_path.package, by_path.source) == (by_name.path, "my-pjrt-plugin",
                                                              "PJRT_PLUGIN")


def test_names_that_hold_nothing_loadable_are_value_errors(tmp_path, monkeypatch):
  _fake_package(tmp_path, "two-libs", "1.0", ["liba.so", "libb.so"])
  _fake_package(tmp_path, "no-libs", "1.0", [])
  monkeypatch.syspath_prepend(str(tmp_path))
  with pytest.raises(ValueError, match="does not hold exactly one PJRT plugin library"):
    plugins.resolve("two-libs", "revax_pjrt_plugin")
  with pytest.raises(ValueError, match="found: none"):
    plugins.resolve("no-libs", "revax_pjrt_plugin")
  with pytest.raises(ValueError, match="neither an existing file nor an installed package"):
    revax.config.update("revax_pjrt_plugin", "no-such-package-anywhere")
  with pytest.raises(ValueError, match="no such file"):
    revax.config.update("revax_pjrt_plugin", str(tmp_path / "missing.so"))
  with pytest.raises(ValueError, match="takes a path, a package name or None"):
    revax.config.update("revax_pjrt_plugin", 3)
  with pytest.raises(AttributeError, match="Unrecognized config option"):
    revax.config.update("jax_revax_pjrt_plugin", None)  # revax's own name has no jax_ form
  assert revax.config.read("revax_pjrt_plugin") is None


def test_another_plugin_after_the_backend_started_is_refused(tmp_path):
  revax.devices()
  current = plugins.loaded()
  other = tmp_path / "other_pjrt.so"
  other.write_bytes(b"")
  with pytest.raises(ValueError, match="backend already started with the PJRT plugin"):
    revax.config.update("revax_pjrt_plugin", str(other))
  with revax.config.override("revax_pjrt_plugin", current.path):  # the same one is fine
    assert revax.config.values["revax_pjrt_plugin"] == current.path
  assert revax.config.read("revax_pjrt_plugin") is None


def test_environment_info_names_the_loaded_plugin_and_devices():
  backend = get_backend()  # the default: the CPU's, or the TPU's (libtpu) on a TPU machine
  path = plugins.resolve(backend._api.path, "test").path
  assert backend.platform != "cpu" or path == plugins.loaded().path
  text = revax.print_environment_info(return_string=True)
  assert f"pjrt plugin path: {path}" in text
  assert f"pjrt plugin versions: platform {backend.platform}" in text and "PJRT C API 0." in text
  assert f"device info: {backend.devices[0].device_kind}-{len(revax.devices())}" in text
  assert text.startswith("revax:") and "numpy:" in text and "python:" in text


def test_environment_info_describes_a_backend_beside_the_chosen_plugin():
  """A backend on a plugin opened beside the chosen one (libtpu's TPU backend beside the CPU
  plugin) is described by its own plugin: its file, platform and API version, not the
  chosen plugin's (a stand-in backend here, on the CPU plugin's file)."""
  get_backend()
  api = types.SimpleNamespace(path=plugins.loaded().path, version=(0, 77),
                              plugin_attributes=lambda: {})
  beside = types.SimpleNamespace(_api=api, platform="tpu", platform_version="v")
  lines = plugins.describe(beside)
  assert lines[1] == f"pjrt plugin path: {plugins.loaded().path}"
  assert lines[0].endswith("(from the tpu platform)"), lines
  assert lines[2] == "pjrt plugin versions: platform tpu (version 'v'), PJRT C API 0.77"


def test_a_bogus_library_is_a_clear_error_and_the_default_package_name_works(tmp_path):
  bogus = tmp_path / "bogus_pjrt.so"
  bogus.write_bytes(b"not a shared library")
  result = _run(f"""
    import revax
    revax.config.update("revax_pjrt_plugin", {str(bogus)!r})
    try:
      revax.devices()
    except RuntimeError as e:
      print("ERROR", e)
    """)
  assert f"ERROR cannot load the PJRT plugin {bogus}" in result.stdout, result.stderr
  assert f"(revax_pjrt_plugin={str(bogus)!r})" in result.stdout
  # The default package chosen by name, through the environment; it computes and is reported.
  result = _run("""
    import numpy as np, revax, revax.numpy as jnp
    print(revax.jit(lambda x: x * 2 + 1)(np.arange(3.0, dtype=np.float32)))
    print(revax.print_environment_info(return_string=True))
    """, PJRT_PLUGIN="xla-cpu-pjrt")
  assert result.returncode == 0, result.stderr
  assert "[1. 3. 5.]" in result.stdout
  assert "pjrt plugin: xla_cpu_pjrt 0.0.1 (from PJRT_PLUGIN)" in result.stdout
