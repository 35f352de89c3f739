"""Executable serialization and the persistent compilation cache.

Serialized executables must run exactly like the compiled ones; the on-disk cache must turn every
kind of trouble (bad entries, unwritable or full directories, races, deletions) into at most a
warning and a fresh compile, and keep its size bound.
"""
import os
import subprocess
import sys
import textwrap
import warnings

import ml_dtypes
import numpy as np
import pytest

from revax._src.runtime import compilation_cache as cc
from revax._src.runtime.client import RuntimeBackendError, get_backend
from tests.child_env import child_env



def _module(body_args, body, results):
  return (f"module @m {{\n  func.func public @main({body_args}) -> ({results}) {{\n{body}\n  }}\n}}\n")


ADD_F32 = _module("%a: tensor<3xf32>, %b: tensor<3xf32>",
                  "    %0 = stablehlo.add %a, %b : tensor<3xf32>\n"
                  "    %1 = stablehlo.multiply %a, %b : tensor<3xf32>\n"
                  "    return %0, %1 : tensor<3xf32>, tensor<3xf32>", "tensor<3xf32>, tensor<3xf32>")


def _program(dtype_ir, shape, op="add"):
  t = f"tensor<{'x'.join(map(str, shape)) + 'x' if shape else ''}{dtype_ir}>"
  return _module(f"%a: {t}, %b: {t}", f"    %0 = stablehlo.{op} %a, %b : {t}\n    return %0 : {t}", t)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
  """A fresh cache directory that stores every program (no compile-time threshold)."""
  monkeypatch.setattr(cc.settings, "enabled", True)
  monkeypatch.setattr(cc.settings, "directory", str(tmp_path / "cache"))
  monkeypatch.setattr(cc.settings, "min_compile_time_secs", 0.0)
  monkeypatch.setattr(cc, "_warned", set())
  return tmp_path / "cache"


def _run(exe, *arrays):
  backend = get_backend()
  return [b.to_numpy() for b in exe.execute([backend.buffer_from_numpy(a) for a in arrays])]


# --- serialization ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype_ir,dtype,shape,op", [
    ("f32", np.float32, (3,), "add"), ("f64", np.float64, (2, 2), "multiply"),
    ("i64", np.int64, (4,), "add"), ("i1", np.bool_, (3,), "and"),
    ("bf16", ml_dtypes.bfloat16, (5,), "add"), ("f32", np.float32, (0, 3), "add"),
    ("i32", np.int32, (), "subtract")])
def test_serialize_round_trip(dtype_ir, dtype, shape, op):
  backend = get_backend()
  exe = backend.compile(_program(dtype_ir, shape, op))
  loaded = backend.deserialize_executable(exe.serialize())
  rng = np.random.default_rng(0)
  a = (rng.standard_normal(shape) * 4).astype(dtype)
  b = (rng.standard_normal(shape) * 4).astype(dtype)
  (want,), (got,) = _run(exe, a, b), _run(loaded, a, b)
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_array_equal(got, want)
  assert loaded.out_specs == exe.out_specs
  assert loaded.memory_stats() == exe.memory_stats()


def test_serialize_multi_output_and_memory_stats():
  backend = get_backend()
  exe = backend.compile(ADD_F32)
  loaded = backend.deserialize_executable(exe.serialize())
  a, b = np.arange(3, dtype=np.float32), np.full(3, 2, np.float32)
  for want, got in zip(_run(exe, a, b), _run(loaded, a, b), strict=True):
    np.testing.assert_array_equal(got, want)
  assert loaded.num_outputs == 2


def test_serialize_a_deserialized_executable():
  """The plugin's own serialization of a loaded-from-bytes executable loses its machine code;
  revax hands back the bytes it was loaded from, so a round trip of a round trip runs."""
  backend = get_backend()
  once = backend.deserialize_executable(backend.compile(ADD_F32).serialize())
  twice = backend.deserialize_executable(once.serialize())
  a = np.arange(3, dtype=np.float32)
  np.testing.assert_array_equal(_run(twice, a, a)[0], a + a)


def test_deserialize_rejects_bad_bytes():
  backend = get_backend()
  data = backend.compile(ADD_F32).serialize()
  with pytest.raises(ValueError, match="not a serialized revax executable"):
    backend.deserialize_executable(b"garbage bytes, not an executable")
  with pytest.raises(RuntimeBackendError):
    backend.deserialize_executable(data[:len(data) // 2])


# --- the persistent cache ------------------------------------------------------------------------
def test_store_then_hit_in_process(cache_dir):
  backend = get_backend()
  text = _program("f32", (7,), "add")
  before = dict(cc.counters)
  backend.compile(text)
  assert cc.counters["store"] == before["store"] + 1
  exe = backend.compile(text)
  assert cc.counters["hit"] == before["hit"] + 1
  a = np.arange(7, dtype=np.float32)
  np.testing.assert_array_equal(_run(exe, a, a)[0], a + a)


def test_a_cached_program_prints_its_optimized_hlo_past_the_cache(cache_dir):
  """An executable loaded from the cache prints XLA's optimized module as the compiled one does
  (Compiled.as_text()): its recorded source is compiled again with the dump options, and that
  compile neither reads nor writes the cache (a hit would skip the dump)."""
  backend = get_backend()
  text = _program("f32", (9,), "multiply")
  compiled = backend.compile(text)
  before = dict(cc.counters)
  loaded = backend.compile(text)
  assert cc.counters["hit"] == before["hit"] + 1
  entries = sorted(cache_dir.iterdir())
  assert loaded.get_hlo_text() == compiled.get_hlo_text()
  assert loaded.get_hlo_text().startswith("HloModule m, is_scheduled=true")
  assert "multiply(" in loaded.get_hlo_text()
  assert dict(cc.counters) == {**before, "hit": before["hit"] + 1}
  assert sorted(cache_dir.iterdir()) == entries


def test_cache_off_writes_nothing(cache_dir, monkeypatch):
  monkeypatch.setattr(cc.settings, "enabled", False)
  get_backend().compile(_program("f32", (11,), "add"))
  assert not cache_dir.exists() or not any(cache_dir.iterdir())


def test_config_options_drive_the_cache(tmp_path):
  """JAX's option names set the directory, the switch, the threshold and the size bound."""
  import revax
  names = ["jax_enable_compilation_cache", "jax_compilation_cache_dir",
           "jax_persistent_cache_min_compile_time_secs", "jax_compilation_cache_max_size"]
  saved = {n: revax.config.read(n) for n in names}
  try:
    # (set every option this test relies on: another test in this worker may have changed one)
    revax.config.update("jax_enable_compilation_cache", True)
    revax.config.update("jax_compilation_cache_dir", str(tmp_path / "via_config"))
    revax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    revax.config.update("jax_compilation_cache_max_size", -1)
    assert cc.settings.directory == str(tmp_path / "via_config")
    assert cc.settings.max_size == float("inf")
    get_backend().compile(_program("f32", (31,), "add"))
    assert len(os.listdir(tmp_path / "via_config")) == 1
    revax.config.update("jax_enable_compilation_cache", False)
    get_backend().compile(_program("f32", (32,), "add"))
    assert len(os.listdir(tmp_path / "via_config")) == 1
    with pytest.raises(ValueError):
      revax.config.update("jax_compilation_cache_max_size", -5)
  finally:
    for n, v in saved.items():
      revax.config.update(n, v)


def test_threshold_skips_fast_compiles(cache_dir, monkeypatch):
  monkeypatch.setattr(cc.settings, "min_compile_time_secs", 1e9)
  get_backend().compile(_program("f32", (12,), "add"))
  assert not cc.entries()


def _entry_path(text):
  backend = get_backend()
  from revax._src.runtime import pjrt
  # a one-device backend compiles for its device, several devices as portable programs
  portable = len(backend.devices) > 1
  key = cc.cache_key(text.encode(), pjrt.compile_options(portable=portable), backend)
  return cc._path(key)


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "foreign", "empty",
                                    "bad_payload"])
def test_bad_entry_recompiles_with_a_warning(cache_dir, damage):
  backend = get_backend()
  text = _program("f32", (13,), "multiply")
  backend.compile(text)
  path = _entry_path(text)
  blob = open(path, "rb").read()
  if damage == "truncate":
    blob = blob[:len(blob) // 2]
  elif damage == "flip":
    blob = bytearray(blob)
    blob[len(blob) - 100] ^= 0xFF
    blob = bytes(blob)
  elif damage == "garbage":
    blob = os.urandom(len(blob))
  elif damage == "foreign":  # another program's entry under this name
    other = _program("f32", (14,), "add")
    backend.compile(other)
    blob = open(_entry_path(other), "rb").read()
  elif damage == "empty":
    blob = b""
  elif damage == "bad_payload":  # a valid header and checksum over bytes the plugin refuses
    import hashlib
    payload = b"\0" * 64
    key = os.path.basename(path)[:-len(".rvx")]
    blob = cc._HEADER.pack(cc._MAGIC, cc.FORMAT_VERSION, bytes.fromhex(key), len(payload),
                           hashlib.sha256(payload).digest()) + payload
  with open(path, "wb") as f:
    f.write(blob)
  with pytest.warns(RuntimeWarning, match="compilation cache"):
    exe = backend.compile(text)
  a = np.arange(13, dtype=np.float32)
  np.testing.assert_array_equal(_run(exe, a, a)[0], a * a)
  if damage != "bad_payload":  # the bad entry was replaced by a good one
    assert cc._check(open(path, "rb").read(), os.path.basename(path)[:-4]) is None


def test_entry_deleted_mid_run(cache_dir):
  backend = get_backend()
  text = _program("f32", (15,), "add")
  backend.compile(text)
  os.unlink(_entry_path(text))
  with warnings.catch_warnings():
    warnings.simplefilter("error")  # a missing entry is a plain miss, not worth a warning
    exe = backend.compile(text)
  a = np.ones(15, np.float32)
  np.testing.assert_array_equal(_run(exe, a, a)[0], a + a)


def test_unwritable_directory(tmp_path, monkeypatch, cache_dir):
  blocker = tmp_path / "a_file"
  blocker.write_text("not a directory")
  monkeypatch.setattr(cc.settings, "directory", str(blocker / "cache"))
  with pytest.warns(RuntimeWarning, match="cannot write"):
    exe = get_backend().compile(_program("f32", (16,), "add"))
  a = np.ones(16, np.float32)
  np.testing.assert_array_equal(_run(exe, a, a)[0], a + a)


def test_full_disk(cache_dir, monkeypatch):
  real_fdopen = os.fdopen

  class Full:
    def __init__(self, f):
      self.f = f

    def __enter__(self):
      return self

    def __exit__(self, *exc):
      self.f.close()

    def write(self, data):
      raise OSError(28, "No space left on device")

  monkeypatch.setattr(cc.os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
  with pytest.warns(RuntimeWarning, match="No space left"):
    exe = get_backend().compile(_program("f32", (17,), "add"))
  assert not list(cache_dir.iterdir())  # the temporary file was removed
  a = np.ones(17, np.float32)
  np.testing.assert_array_equal(_run(exe, a, a)[0], a + a)


def test_eviction_keeps_the_bound(cache_dir, monkeypatch):
  backend = get_backend()
  texts = [_program("f32", (20 + i,), "add") for i in range(5)]
  backend.compile(texts[0])
  size = cc.entries()[0][1]
  monkeypatch.setattr(cc.settings, "max_size", int(size * 2.5))
  for i, text in enumerate(texts[1:], 1):
    os.utime(cc.entries()[-1][0], (1e9 + i, 1e9 + i))  # distinct, increasing mtimes
    backend.compile(text)
  found = cc.entries()
  assert sum(s for _, s, _ in found) <= size * 2.5 and len(found) == 2
  kept = {os.path.basename(p) for p, _, _ in found}
  assert os.path.basename(_entry_path(texts[-1])) in kept  # the newest survives


def test_stores_do_not_rescan_the_directory_each_time(cache_dir, monkeypatch):
  """A store scans the directory (a stat per entry) only on the first store into it, when this
  process's running estimate passes the bound, or every _RESCAN_EVERY stores: scanning on every
  store made long sessions quadratic in the number of entries. The bound still holds."""
  scans = []
  real = cc.entries
  monkeypatch.setattr(cc, "entries", lambda: scans.append(1) or real())
  backend = get_backend()
  for i in range(6):
    backend.compile(_program("f32", (40 + i,), "add"))
  assert len(scans) == 1, scans  # the first store only: 6 small entries are far from the bound
  sizes = [s for _, s, _ in real()]
  bound = sum(sizes) + max(sizes) * 3 // 2
  monkeypatch.setattr(cc.settings, "max_size", bound)
  backend.compile(_program("f32", (50,), "add"))  # a 7th entry: still under the bound, no scan
  assert len(scans) == 1
  backend.compile(_program("f32", (51,), "add"))  # an 8th passes it: one scan, which trims
  assert len(scans) == 2
  assert sum(s for _, s, _ in real()) <= bound and len(real()) == 7


def test_clear(cache_dir):
  get_backend().compile(_program("f32", (18,), "add"))
  assert cc.entries()
  cc.clear()
  assert not cc.entries()


# --- across processes ------------------------------------------------------------------------
_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import revax, revax.numpy as jnp
    from revax._src.runtime import compilation_cache as cc
    def f(ws, x):
      for w in ws:
        x = jnp.tanh(x @ w)
      return jnp.sum(x ** 2)
    ws = [jnp.asarray(np.random.default_rng(i).standard_normal((16, 16)).astype(np.float32) * 0.3)
          for i in range(4)]
    g = revax.jit(revax.grad(f))(ws, jnp.ones((2, 16)))
    print("RESULT", b"".join(np.asarray(x).tobytes() for x in g).hex())
    print("COUNTS", cc.counters["hit"], cc.counters["store"])
""")


def _child_env(cache):
  env = child_env(REVAX_COMPILATION_CACHE_DIR=str(cache),
                  REVAX_COMPILATION_CACHE_MIN_COMPILE_TIME_SECS="0")
  env.pop("REVAX_COMPILATION_CACHE", None)
  return env


def _parse(out):
  lines = dict(line.split(" ", 1) for line in out.splitlines() if line.startswith(("RESULT", "COUNTS")))
  hits, stores = map(int, lines["COUNTS"].split())
  return lines["RESULT"], hits, stores


def test_second_process_hits_with_identical_bits(tmp_path):
  env = _child_env(tmp_path / "cache")
  first = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                         timeout=300, check=True)
  second = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
  r1, hits1, stores1 = _parse(first.stdout)
  r2, hits2, stores2 = _parse(second.stdout)
  assert stores1 > 0 and hits1 == 0
  assert hits2 == stores1 and stores2 == 0
  assert r1 == r2


def test_four_processes_race_on_one_key(tmp_path):
  env = _child_env(tmp_path / "cache")
  procs = [subprocess.Popen([sys.executable, "-c", _CHILD], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True) for _ in range(4)]
  results = []
  for p in procs:
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    results.append(_parse(out)[0])
  assert len(set(results)) == 1
  names = os.listdir(tmp_path / "cache")
  assert not [n for n in names if n.startswith(".tmp-")]
  one_run = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                           text=True, timeout=300, check=True)
  assert _parse(one_run.stdout)[0] == results[0]
  assert _parse(one_run.stdout)[2] == 0  # everything was a hit
