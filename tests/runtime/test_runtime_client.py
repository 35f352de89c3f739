"""The runtime end to end: hand-written StableHLO programs through Backend, Buffer, Executable."""
import os
import subprocess
import sys
import textwrap
import threading

import ml_dtypes
import numpy as np
import pytest

from revax._src.runtime import client
from revax._src.runtime.client import (
    Buffer, CompileError, Device, Executable, MemoryStats, RuntimeBackendError, get_backend)
from tests.child_env import child_env
from tests.platform_tolerances import ON_TPU

ADD = """module @add {
  func.func public @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.add %a, %b : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}"""

# Batch dimension 1 of both operands (not leading), contracting dim 2 of a with dim 0 of b. On a
# TPU at HIGHEST precision, as the suite's jit programs (tests/conftest.py): the TPU's DEFAULT
# rounds float32 operands to bfloat16 (platform_tolerances.DEFAULT_MATMUL_PRECISION).
_PRECISION = ", precision = [HIGHEST, HIGHEST]" if ON_TPU else ""
DOT = """module @dot {
  func.func public @main(%a: tensor<3x2x4xf32>, %b: tensor<4x2x5xf32>) -> tensor<2x3x5xf32> {
    %0 = stablehlo.dot_general %a, %b, batching_dims = [1] x [1], contracting_dims = [2] x [0]PRECISION : (tensor<3x2x4xf32>, tensor<4x2x5xf32>) -> tensor<2x3x5xf32>
    return %0 : tensor<2x3x5xf32>
  }
}""".replace("PRECISION", _PRECISION)

TWO_OUTPUTS = """module @two {
  func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>) {
    %0 = stablehlo.multiply %x, %y : tensor<4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    return %0, %1 : tensor<4xf32>, tensor<f32>
  }
}"""

MIXED_DTYPES = """module @dtypes {
  func.func public @main(%x: tensor<2x3xf64>, %i: tensor<2x3xi32>, %m: tensor<2x3xi1>, %h: tensor<2x3xbf16>) -> (tensor<2x3xf64>, tensor<2x3xi32>, tensor<2x3xi1>, tensor<2x3xbf16>) {
    %0 = stablehlo.convert %i : (tensor<2x3xi32>) -> tensor<2x3xf64>
    %1 = stablehlo.add %x, %0 : tensor<2x3xf64>
    %2 = stablehlo.select %m, %1, %x : tensor<2x3xi1>, tensor<2x3xf64>
    %c = stablehlo.constant dense<3> : tensor<2x3xi32>
    %3 = stablehlo.multiply %i, %c : tensor<2x3xi32>
    %4 = stablehlo.not %m : tensor<2x3xi1>
    %5 = stablehlo.add %h, %h : tensor<2x3xbf16>
    return %2, %3, %4, %5 : tensor<2x3xf64>, tensor<2x3xi32>, tensor<2x3xi1>, tensor<2x3xbf16>
  }
}"""

SCALAR_AND_EMPTY = """module @edges {
  func.func public @main(%s: tensor<f32>, %z: tensor<0x3xf32>) -> (tensor<f32>, tensor<0x3xf32>) {
    %0 = stablehlo.multiply %s, %s : tensor<f32>
    %1 = stablehlo.add %z, %z : tensor<0x3xf32>
    return %0, %1 : tensor<f32>, tensor<0x3xf32>
  }
}"""

# A 256x256 program with real temporaries: tanh -> barrier -> dot.
BIG = """module @big {
  func.func public @main(%x: tensor<256x256xf32>) -> tensor<256x256xf32> {
    %0 = stablehlo.tanh %x : tensor<256x256xf32>
    %1 = stablehlo.optimization_barrier %0 : tensor<256x256xf32>
    %2 = stablehlo.dot_general %1, %x, contracting_dims = [1] x [0] : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
    return %2 : tensor<256x256xf32>
  }
}"""

INVALID = "module { func.func @main( garbage"

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def backend():
  return get_backend()


@pytest.fixture(scope="module")
def add(backend):
  return backend.compile(ADD)


def run(backend, exe, *arrays):
  return [b.to_numpy() for b in exe.execute([backend.buffer_from_numpy(a) for a in arrays])]


def run_python(code, variables=None, **env):
  """Run `code` (after assigning `variables`) in a fresh interpreter, with extra `env` (in
  tests/child_env.py's environment: on a TPU machine the child uses the CPU)."""
  environment = {k: v for k, v in child_env().items()
                 if k not in ("REVAX_DEBUG_RUNTIME", "TF_CPP_MIN_LOG_LEVEL")}
  environment.update(env)
  prelude = "".join(f"{name} = {value!r}\n" for name, value in (variables or {}).items())
  return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                        capture_output=True, text=True, env=environment, timeout=120)


# ----------------------------------------------------------------------------- backend, devices

def test_backend_is_one_object_with_cpu_devices(backend):
  assert get_backend() is backend
  assert backend.platform == ("tpu" if ON_TPU else "cpu")  # the default backend
  assert backend.devices == [backend.devices[0]] and len(backend.devices) == 1


def test_device_identity(backend):
  device = backend.devices[0]
  platform = backend.platform  # the default backend's: cpu, or tpu on a TPU machine
  assert repr(device) == f"{platform.capitalize()}Device(id=0)"
  assert device.id == 0 and isinstance(device.device_kind, str)
  twin = Device(0, platform, device.device_kind, 0)
  assert twin == device and hash(twin) == hash(device) and {device: 1}[twin] == 1
  assert Device(1, platform, platform, 0) != device and device != platform


# ----------------------------------------------------------------------------- programs

def test_add(backend, add):
  x, y = RNG.standard_normal((2, 3), np.float32), RNG.standard_normal((2, 3), np.float32)
  (out,) = run(backend, add, x, y)
  np.testing.assert_array_equal(out, x + y)
  assert add.num_outputs == 1 and add.out_specs == [((2, 3), np.dtype(np.float32))]


def test_dot_general_with_non_leading_batch_dims(backend):
  exe = backend.compile(DOT)
  a, b = RNG.standard_normal((3, 2, 4), np.float32), RNG.standard_normal((4, 2, 5), np.float32)
  (out,) = run(backend, exe, a, b)
  np.testing.assert_allclose(out, np.einsum("ibk,kbj->bij", a, b), rtol=1e-5, atol=1e-5)


def test_multiple_outputs(backend):
  exe = backend.compile(TWO_OUTPUTS)
  x, y = RNG.standard_normal(4, np.float32), RNG.standard_normal(4, np.float32)
  assert exe.num_outputs == 2
  assert exe.out_specs == [((4,), np.dtype(np.float32)), ((), np.dtype(np.float32))]
  product, total = run(backend, exe, x, y)
  np.testing.assert_allclose(product, x * y)
  np.testing.assert_allclose(total, (x * y).sum(), rtol=1e-5)
  assert total.shape == () and total.dtype == np.float32


def test_f64_i32_bool_bf16_programs(backend):
  exe = backend.compile(MIXED_DTYPES)
  x = RNG.standard_normal((2, 3))
  i = RNG.integers(-5, 5, (2, 3), dtype=np.int32)
  m = RNG.random((2, 3)) > 0.5
  h = RNG.standard_normal((2, 3)).astype(ml_dtypes.bfloat16)
  selected, tripled, negated, doubled = run(backend, exe, x, i, m, h)
  if ON_TPU:  # platform_tolerances.FLOAT64_EMULATION
    np.testing.assert_allclose(selected, np.where(m, x + i, x), rtol=1e-13)
  else:
    np.testing.assert_array_equal(selected, np.where(m, x + i, x))
  np.testing.assert_array_equal(tripled, i * 3)
  np.testing.assert_array_equal(negated, ~m)
  np.testing.assert_array_equal(doubled, h + h)
  assert [o.dtype for o in (selected, tripled, negated, doubled)] == [
      np.float64, np.int32, np.bool_, np.dtype(ml_dtypes.bfloat16)]


@pytest.mark.parametrize("dtype", list(client.pjrt.NUMPY_TO_PJRT), ids=lambda d: d.name)
def test_round_trip_every_dtype(backend, dtype):
  x = RNG.standard_normal((3, 5)).astype(dtype) if dtype.kind != "b" else RNG.random((3, 5)) > .5
  buf = backend.buffer_from_numpy(x)
  assert buf.shape == (3, 5) and buf.dtype == dtype and buf.nbytes == x.nbytes
  out = buf.to_numpy()
  assert out.dtype == dtype
  if ON_TPU and dtype in (np.float64, np.complex128):  # platform_tolerances.FLOAT64_EMULATION
    np.testing.assert_allclose(out, x, rtol=1e-13)
  else:
    np.testing.assert_array_equal(out.view(np.uint8), x.view(np.uint8))


@pytest.mark.parametrize("name", ["float8_e5m2", "float8_e4m3fn", "float8_e4m3b11fnuz",
                                  "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e4m3",
                                  "float8_e3m4", "float8_e8m0fnu"])
def test_float8_enum_values_mean_the_ml_dtypes_types(backend, name):
  """XLA's own f32 -> f8 conversion must agree with ml_dtypes' for the type we map it to."""
  mlir_type = {"float8_e5m2": "f8E5M2", "float8_e4m3fn": "f8E4M3FN",
               "float8_e4m3b11fnuz": "f8E4M3B11FNUZ", "float8_e5m2fnuz": "f8E5M2FNUZ",
               "float8_e4m3fnuz": "f8E4M3FNUZ", "float8_e4m3": "f8E4M3", "float8_e3m4": "f8E3M4",
               "float8_e8m0fnu": "f8E8M0FNU"}[name]
  program = f"""module @f8 {{
    func.func public @main(%x: tensor<64xf32>) -> tensor<64x{mlir_type}> {{
      %0 = stablehlo.convert %x : (tensor<64xf32>) -> tensor<64x{mlir_type}>
      return %0 : tensor<64x{mlir_type}>
    }}
  }}"""
  dtype = np.dtype(getattr(ml_dtypes, name))
  exe = backend.compile(program)
  assert exe.out_specs == [((64,), dtype)]
  x = np.linspace(0.25, 8.0, 64, dtype=np.float32)
  (out,) = run(backend, exe, x)
  np.testing.assert_array_equal(out.astype(np.float32), x.astype(dtype).astype(np.float32))


def test_scalar_and_zero_size_arrays(backend):
  exe = backend.compile(SCALAR_AND_EMPTY)
  s, z = np.float32(3.0), np.zeros((0, 3), np.float32)
  squared, empty = run(backend, exe, np.asarray(s), z)
  assert squared.shape == () and squared == 9.0
  assert empty.shape == (0, 3) and empty.dtype == np.float32
  zero_buf = backend.buffer_from_numpy(np.zeros((4, 0, 2), np.int32)[::-1])
  assert zero_buf.shape == (4, 0, 2) and zero_buf.nbytes == 0
  assert zero_buf.to_numpy().shape == (4, 0, 2)


def test_non_contiguous_inputs(backend):
  exe = backend.compile(DOT)
  big = RNG.standard_normal((3, 2, 8), np.float32)
  b = RNG.standard_normal((4, 2, 5), np.float32)
  cases = [
      (big[:, :, ::2], b),                        # step slice
      (big[::-1, :, 1::2], b),                    # negative stride
      (np.asfortranarray(big[:, :, :4]), np.asfortranarray(b)),  # Fortran order
      (np.broadcast_to(big[:1, :, :4], (3, 2, 4)), b[:, ::-1, :]),  # zero stride
  ]
  for a, bb in cases:
    (out,) = run(backend, exe, a, bb)
    np.testing.assert_allclose(out, np.einsum("ibk,kbj->bij", a, bb), rtol=1e-5, atol=1e-5)


def test_byte_swapped_and_python_inputs(backend, add):
  x = np.arange(6, dtype=">f4").reshape(2, 3)
  (out,) = run(backend, add, x, x)
  np.testing.assert_array_equal(out, 2 * x)
  buf = backend.buffer_from_numpy(x)
  assert buf.dtype == np.float32
  np.testing.assert_array_equal(buf.to_numpy(), x)
  nested = backend.buffer_from_numpy([[1, 2, 3]])
  assert nested.shape == (1, 3) and nested.dtype == np.asarray([1]).dtype
  with pytest.raises(TypeError, match="not supported"):
    backend.buffer_from_numpy(np.array(["a"]))


def test_memory_stats_of_a_256x256_program(backend):
  stats = backend.compile(BIG).memory_stats()
  assert isinstance(stats, MemoryStats)
  for field in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes",
                "peak_memory_in_bytes"):
    value = getattr(stats, field)
    # (platform_tolerances.NO_TEMP_BYTES: XLA:TPU measures no temporaries)
    assert type(value) is int and (value > 0 or ON_TPU and field == "temp_size_in_bytes"), field
  assert stats.argument_size_in_bytes == stats.output_size_in_bytes == 256 * 256 * 4
  assert all(type(v) is int for v in vars(stats).values())


# ----------------------------------------------------------------------------- buffers

def test_buffer_lifetime(backend, add):
  buf = backend.buffer_from_numpy(np.ones((2, 3), np.float32))
  assert not buf.is_deleted()
  assert buf.block_until_ready() is buf
  buf.delete()
  assert buf.is_deleted()
  buf.delete()  # idempotent
  with pytest.raises(RuntimeError, match="deleted"):
    buf.to_numpy()
  with pytest.raises(RuntimeError, match="deleted"):
    add.execute([buf, buf])
  assert "deleted" in repr(buf)


def test_outputs_stay_valid_after_inputs_are_freed(backend, add):
  x = backend.buffer_from_numpy(np.ones((2, 3), np.float32))
  (y,) = add.execute([x, x])
  x.delete()
  del x
  np.testing.assert_array_equal(y.to_numpy(), np.full((2, 3), 2.0, np.float32))
  (z,) = add.execute([y, y])  # outputs are valid inputs
  np.testing.assert_array_equal(z.to_numpy(), np.full((2, 3), 4.0, np.float32))
  assert z.device == backend.devices[0]


# ----------------------------------------------------------------------------- errors

def test_compile_error_carries_the_plugin_message(backend):
  with pytest.raises(CompileError) as info:
    backend.compile(INVALID)
  message = str(info.value)
  assert message.startswith("XLA compilation failed: ")
  assert "expected non-function type" in message  # the MLIR parser's own words
  assert isinstance(info.value, RuntimeBackendError) and info.value.code == "UNKNOWN"


def test_execute_errors_are_runtime_backend_errors(backend, add):
  x = backend.buffer_from_numpy(np.ones((2, 3), np.float32))
  # The plugin's words: "expected 2 buffers" (default), "compiled program expected 2" (newer XLA).
  with pytest.raises(RuntimeBackendError, match="expected 2") as info:
    add.execute([x])
  assert info.value.code == "INVALID_ARGUMENT"
  wrong_size = backend.buffer_from_numpy(np.ones((3, 3), np.float32))
  with pytest.raises(RuntimeBackendError, match="size"):
    add.execute([x, wrong_size])
  with pytest.raises(TypeError, match="Buffers"):
    add.execute([x, np.ones((2, 3), np.float32)])
  (ok,) = add.execute([x, x])  # the executable is still usable
  assert ok.to_numpy()[0, 0] == 2.0


def test_nothing_on_stderr_for_compile_errors():
  code = """
    import numpy as np
    from revax._src.runtime.client import get_backend, CompileError
    backend = get_backend()
    try:
      backend.compile("module { func.func @main( garbage")
    except CompileError as e:
      print("CAUGHT", str(e).splitlines()[0])
    # An error the plugin also logs at ERROR level with a stack trace (a RET_CHECK failure):
    # Shardy annotations compiled without the Shardy partitioner.
    shardy = '''module @s attributes {mhlo.num_partitions = 2 : i32} {
      sdy.mesh @mesh = <["x"=2]>
      func.func public @main(%x: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
        %0 = stablehlo.multiply %x, %x : tensor<8xf32>
        return %0 : tensor<8xf32>
      }
    }'''
    try:
      backend.compile(shardy, num_partitions=2, use_shardy_partitioner=False)
    except CompileError as e:
      print("CAUGHT", e.code)
    (y,) = backend.compile('''module @m { func.func public @main(%a: tensor<f32>) -> tensor<f32> {
      return %a : tensor<f32> } }''').execute([backend.buffer_from_numpy(np.float32(1))])
    print("RAN", y.to_numpy())
    """
  quiet = run_python(code, REVAX_CPU_DEVICE_COUNT="2")
  assert quiet.returncode == 0, quiet.stderr
  assert quiet.stdout.count("CAUGHT") == 2 and "CAUGHT INTERNAL" in quiet.stdout
  assert "RAN 1.0" in quiet.stdout
  assert quiet.stderr == ""
  # The control: with REVAX_DEBUG_RUNTIME=1 the plugin's own log lines do reach stderr.
  loud = run_python(code, REVAX_CPU_DEVICE_COUNT="2", REVAX_DEBUG_RUNTIME="1")
  assert loud.returncode == 0 and "stack trace" in loud.stderr
  # ... and the user's TF_CPP_MIN_LOG_LEVEL is left as it was.
  env_kept = run_python("import os\nfrom revax._src.runtime.client import get_backend\n"
                        "get_backend()\nprint(os.environ.get('TF_CPP_MIN_LOG_LEVEL'))",
                        TF_CPP_MIN_LOG_LEVEL="1")
  assert env_kept.stdout.strip() == "1" and env_kept.stderr == ""


# ----------------------------------------------------------------------------- threads, memory

def test_concurrent_execute_and_compile_from_8_threads(backend, add):
  errors, results = [], {}

  def work(k):
    try:
      x = np.full((2, 3), k, np.float32)
      y = np.arange(6, dtype=np.float32).reshape(2, 3)
      own = backend.compile(ADD.replace("@add", f"@add{k}"))
      ok = True
      for n in range(300):
        exe = add if n % 2 else own
        (out,) = exe.execute([backend.buffer_from_numpy(x), backend.buffer_from_numpy(y)])
        ok &= np.array_equal(out.to_numpy(), x + y)
      results[k] = ok
    except Exception as e:  # noqa: BLE001 - reported below
      errors.append(e)

  threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not errors
  assert results == {k: True for k in range(8)}


def _rss_bytes():
  with open("/proc/self/statm") as f:
    return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_10000_executes_do_not_grow_memory(backend, add):
  x = np.ones((2, 3), np.float32)
  bx = backend.buffer_from_numpy(x)
  for _ in range(1000):  # warm up allocator pools and scratch
    (out,) = add.execute([bx, bx])
    out.to_numpy()
  before = _rss_bytes()
  for _ in range(10_000):
    (out,) = add.execute([bx, backend.buffer_from_numpy(x)])
    out.to_numpy()
  grown = _rss_bytes() - before
  assert grown < 4 * 2**20, f"RSS grew by {grown} bytes over 10,000 calls"


# ----------------------------------------------------------------------------- start-up

def test_import_does_not_load_the_plugin():
  result = run_python("""
    import revax._src.runtime.client, revax._src.runtime.pjrt, revax._src.runtime.plugins
    plugin = revax._src.runtime.plugins.choose().path  # whichever plugin is selected
    maps = open("/proc/self/maps").read()
    print("LOADED" if plugin in maps else "NOT LOADED")
    revax._src.runtime.client.get_backend()
    print("LOADED" if plugin in open("/proc/self/maps").read() else "NOT LOADED")
    """)
  assert result.stdout.split() == ["NOT", "LOADED", "LOADED"], result.stderr


def test_lazy_creation_is_thread_safe_and_counts_devices():
  result = run_python("""
    import threading
    from revax._src.runtime.client import get_backend
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(id(get_backend()))) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    print(len(set(seen)), get_backend().devices)
    """, REVAX_CPU_DEVICE_COUNT="3")
  assert result.returncode == 0, result.stderr
  assert result.stdout.strip() == "1 [CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2)]"
  bad = run_python("from revax._src.runtime.client import get_backend\nget_backend()",
                   REVAX_CPU_DEVICE_COUNT="zero")
  assert bad.returncode != 0 and "REVAX_CPU_DEVICE_COUNT" in bad.stderr


def test_two_devices_execute_where_the_arguments_are_and_spmd():
  result = run_python("""
    import numpy as np
    from revax._src.runtime.client import get_backend
    backend = get_backend()
    d0, d1 = backend.devices
    add = backend.compile(ADD)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = add.execute([backend.buffer_from_numpy(x, d1), backend.buffer_from_numpy(x, d1)])
    print("ON", y.device, np.array_equal(y.to_numpy(), 2 * x))
    (z,) = add.execute([backend.buffer_from_numpy(x), backend.buffer_from_numpy(x)])
    print("ON", z.device)
    spmd = '''module @spmd attributes {mhlo.num_partitions = 2 : i32} {
      sdy.mesh @mesh = <["x"=2]>
      func.func public @main(%x: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
        %0 = stablehlo.add %x, %x : tensor<8x4xf32>
        return %0 : tensor<8x4xf32>
      }
    }'''
    exe = backend.compile(spmd, num_partitions=2)
    big = np.arange(32, dtype=np.float32).reshape(8, 4)
    outs = exe.execute_sharded([[backend.buffer_from_numpy(big[:4], d0)],
                                [backend.buffer_from_numpy(big[4:], d1)]])
    print("SPMD", exe.out_specs, [o[0].device for o in outs],
          np.array_equal(np.concatenate([o[0].to_numpy() for o in outs]), 2 * big))
    """, {"ADD": ADD}, REVAX_CPU_DEVICE_COUNT="2")
  assert result.returncode == 0, result.stderr
  assert result.stdout.splitlines() == [
      "ON cpu:1 True", "ON cpu:0",  # (a CPU device prints as jax's: "cpu:1")
      "SPMD [((4, 4), dtype('float32'))] [CpuDevice(id=0), CpuDevice(id=1)] True"]
  assert result.stderr == ""


def test_general_upload_path_matches_the_fast_one(backend, monkeypatch):
  assert backend._fast_numpy  # the NumPy header layout check passes on this interpreter
  arrays = [np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, ::-1, 1::2],
            np.asarray(np.int64(7)), np.ones((3, 2), ml_dtypes.bfloat16).T]
  fast = [backend.buffer_from_numpy(a).to_numpy() for a in arrays]
  monkeypatch.setattr(backend, "_fast_numpy", False)
  general = [backend.buffer_from_numpy(a).to_numpy() for a in arrays]
  for a, f, g in zip(arrays, fast, general, strict=True):
    np.testing.assert_array_equal(f, a)
    np.testing.assert_array_equal(g, a)


def test_interpreter_exit_with_live_buffers_and_executables_is_clean():
  result = run_python("""
    import numpy as np
    from revax._src.runtime.client import get_backend
    backend = get_backend()
    exe = backend.compile(ADD)
    x = backend.buffer_from_numpy(np.ones((2, 3), np.float32))
    outs = exe.execute([x, x])
    cycle = [outs]
    cycle.append(cycle)  # only the cyclic GC at shutdown can reach these
    print("done")
    """, {"ADD": ADD})
  assert result.returncode == 0 and result.stdout == "done\n" and result.stderr == ""


def test_single_device_programs_are_pinned_to_the_only_device(monkeypatch):
  """A one-device backend compiles its programs for that device (as jax does: libtpu launches
  them at less than half the cost of portable ones); REVAX_PORTABLE_EXECUTABLES=1 compiles
  them as portable executables instead; both run and give the same result."""
  backend = get_backend()
  if len(backend.devices) > 1:
    pytest.skip("the default applies to one-device backends only")
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  x = backend.buffer_from_numpy(a)
  monkeypatch.delenv("REVAX_PORTABLE_EXECUTABLES", raising=False)
  pinned = backend.compile(ADD)
  monkeypatch.setenv("REVAX_PORTABLE_EXECUTABLES", "1")
  portable = backend.compile(ADD)
  assert portable._portable and not pinned._portable
  for exe in (portable, pinned):
    (y,) = exe.execute([x, x])
    np.testing.assert_array_equal(y.to_numpy(), a + a)
