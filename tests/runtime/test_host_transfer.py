"""Host callbacks through PJRT send/recv host transfers (runtime/host_transfer.py, lowered by
lax/callback_transfers.py): the mechanism of plugins without the FFI extension (libtpu).

XLA:CPU compiles no host send/recv ("HLO opcode `send` is not supported by XLA:CPU
ThunkEmitter", test_cpu_compiler_refuses_host_send_recv), so with
REVAX_CALLBACK_MECHANISM=sendrecv on a CPU each transfer runs as an FFI call that invokes the
same C send/recv callbacks through their C pointers: lowering, channels, per-execution state and
the callbacks' C ABI all run here; the chip is tested by tests/tpu/host_callbacks_on_chip.py.
"""
import ctypes as C
import os
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax.experimental import io_callback
from revax._src.runtime import client, ffi, host_transfer
from revax._src.runtime.pjrt import CompileError, RuntimeBackendError
from tests.child_env import child_env
from tests.platform_tolerances import printed_lines

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
x3 = np.array([0.5, 1.0, 2.0], np.float32)


cpu_only = pytest.mark.skipif(client.get_backend().platform != "cpu",
                              reason="about the CPU plugin and its emulation of host transfers")


@pytest.fixture
def sendrecv(monkeypatch):
  monkeypatch.setenv(host_transfer.MECHANISM_ENV, "sendrecv")


def _sds(shape, dtype=np.float32):
  return revax.ShapeDtypeStruct(shape, dtype)


def _transfers(text):
  """(op, channel, type, operand types) of each send/recv in a lowered program."""
  pattern = re.compile(r'"stablehlo\.(send|recv)"\(([^)]*)\) <\{channel_handle = '
                       r'#stablehlo\.channel_handle<handle = (\d+), type = (\d+)>, '
                       r'is_host_transfer = true\}> \{mhlo\.frontend_attributes = '
                       r'\{_xla_host_transfer_handler_name = "pjrt_rendezvous", '
                       r'_xla_host_transfer_rendezvous = "(\d+)"\}\} : \(([^)]*)\) -> (.*)$',
                       re.MULTILINE)
  out = []
  for m in pattern.finditer(text):
    assert m[3] == m[5]  # the rendezvous is named by the channel, as JAX names it
    out.append((m[1], int(m[3]), int(m[4]), m[6], m[7]))
  return out


# ----------------------------------------------------------------------------- the mechanism

@cpu_only
def test_mechanism_follows_the_plugin_and_the_override(monkeypatch):
  monkeypatch.delenv(host_transfer.MECHANISM_ENV, raising=False)
  assert host_transfer.callback_mechanism("cpu") == "ffi"  # the CPU plugin has the extension
  monkeypatch.setenv(host_transfer.MECHANISM_ENV, "sendrecv")
  assert host_transfer.callback_mechanism("cpu") == "sendrecv"
  monkeypatch.setenv(host_transfer.MECHANISM_ENV, "custom")
  with pytest.raises(ValueError, match="REVAX_CALLBACK_MECHANISM must be one of"):
    host_transfer.callback_mechanism("cpu")


@cpu_only
def test_cpu_compiler_refuses_host_send_recv(sendrecv):
  """Why the CPU emulates: the plugin's compiler refuses a host send (checked on the real op,
  compiled without the rewrite)."""
  text = revax.jit(lambda x: revax.pure_callback(np.sin, _sds((3,)), x)).lower(x3).as_text()
  backend = client.get_backend()
  with pytest.raises(CompileError, match="`send` is not supported by XLA:CPU"):
    backend._compile(text.encode(), client.pjrt.compile_options(), False)


def test_lowering_sends_each_operand_and_receives_each_result(sendrecv):
  def f(x, e):
    a, b, c = revax.pure_callback(lambda x, e: (x * 2, np.zeros((0, 2), np.int32), e.sum()),
                                  (_sds((3,)), _sds((0, 2), np.int32), _sds(())), x, e)
    return a, b, c
  text = revax.jit(f).lower(x3, np.zeros((2, 0), np.float32)).as_text()
  ops = _transfers(text)
  # the empty operand is not sent, the empty result not received (libtpu cannot move empty
  # arrays): it is a constant of the program
  assert [(op, kind, types) for op, _, kind, types, _ in ops] == [
      ("send", 2, "tensor<3xf32>, !stablehlo.token"), ("recv", 3, "!stablehlo.token"),
      ("recv", 3, "!stablehlo.token")]
  assert [out for *_, out in ops][1:] == ["(tensor<3xf32>, !stablehlo.token)",
                                          "(tensor<f32>, !stablehlo.token)"]
  assert len({channel for _, channel, *_ in ops}) == 3
  assert "revax_python_callback" not in text and "tensor<0x2xi32>" in text
  out = revax.jit(f)(x3, np.zeros((2, 0), np.float32))
  np.testing.assert_array_equal(out[0], x3 * 2)
  assert out[1].shape == (0, 2) and out[1].dtype == np.int32 and float(out[2]) == 0.0


def test_dummy_send_and_recv(sendrecv):
  """A callback without operands sends one f32[1] (else it never runs); a side effect without
  results waits on one f32[] recv; a pure callback's results are its only recvs."""
  seen = []
  f = revax.jit(lambda: (revax.debug.callback(lambda: seen.append("ran")),
                         revax.pure_callback(lambda: np.float32(7), _sds(())))[1])
  ops = _transfers(f.lower().as_text())
  assert [(op, types.split(",")[0]) for op, _, _, types, _ in ops] == [
      ("send", "tensor<1xf32>"), ("recv", "!stablehlo.token"),
      ("send", "tensor<1xf32>"), ("recv", "!stablehlo.token")]
  assert [out for *_, out in ops if "(" in out] == ["(tensor<f32>, !stablehlo.token)"] * 2
  assert float(f()) == 7.0 and seen == ["ran"]


def test_ordered_callbacks_share_one_token_chain(sendrecv):
  log = []
  f = revax.jit(lambda x: (io_callback(log.append, None, x, ordered=True),
                           io_callback(log.append, None, x + 1, ordered=True)))
  text = f.lower(x3).as_text()
  sends = [line for line in text.splitlines() if '"stablehlo.send"' in line]
  recvs = [line for line in text.splitlines() if '"stablehlo.recv"' in line]
  first_token = re.match(r"\s*(%\d+):2", recvs[0])[1] + "#1"
  assert sends[1].split("(")[1].split(")")[0].endswith(first_token)
  assert text.count('"stablehlo.after_all"') == 1
  f(x3)
  assert [np.asarray(v).tolist() for v in log] == [x3.tolist(), (x3 + 1).tolist()]


def test_callbacks_in_a_function_called_twice_get_their_own_channels(sendrecv):
  inner = revax.jit(lambda v: revax.pure_callback(lambda a: a + 1, _sds((3,)), v))
  f = revax.jit(lambda x: inner(x) * inner(x * 2))
  channels = [c for _, c, *_ in _transfers(f.lower(x3).as_text())]
  assert len(channels) == 4 and len(set(channels)) == 4
  np.testing.assert_allclose(f(x3), (x3 + 1) * (x3 * 2 + 1), rtol=1e-6)


def test_a_channel_twice_or_unknown_is_refused(sendrecv):
  text = revax.jit(lambda x: revax.pure_callback(np.cos, _sds((3,)), x)).lower(x3).as_text()
  send = next(line for line in text.splitlines() if '"stablehlo.send"' in line)
  twice = text.replace(send, send + "\n" + send.replace("%2 =", "%99 ="))
  with pytest.raises(ValueError, match="appears twice"):
    host_transfer.prepare_program(twice.encode(), client.get_backend())
  unknown = re.sub(r"handle = (\d+), type = 2", "handle = 987654321, type = 2", text)
  with pytest.raises(ValueError, match="was not made by revax"):
    host_transfer.prepare_program(unknown.encode(), client.get_backend())


def test_a_plugin_with_host_send_recv_gets_the_program_unchanged(sendrecv):
  """On a platform that compiles host send/recv (TPU) the text is not rewritten; a plugin
  without the stream functions is refused at compile time, not mid-execution."""
  text = revax.jit(lambda x: revax.pure_callback(np.cos, _sds((3,)), x)).lower(x3).as_text()
  real = client.get_backend()._api

  class Api:
    path, functions = "libfake.so", dict(real.functions)

  class Backend:
    platform, _api = "tpu", Api()
  code, transfers = host_transfer.prepare_program(text.encode(), Backend())
  assert code == text.encode() and not transfers.emulated
  assert [kind for _, kind in transfers.channels] == [2, 3]
  del Api.functions["CopyToDeviceStream_AddChunk"]
  Backend._api = Api()
  with pytest.raises(RuntimeError, match="lacks PJRT_CopyToDeviceStream_AddChunk"):
    host_transfer.prepare_program(text.encode(), Backend())


# ----------------------------------------------------------------------------- values

DTYPES = [np.float32, np.int32, np.int8, np.uint32, np.bool_, np.complex64, np.float16,
          ml_dtypes.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_every_dtype_and_rank(sendrecv, dtype):
  for shape in [(), (5,), (2, 3), (2, 1, 4)]:
    x = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
    f = revax.jit(lambda v: revax.pure_callback(lambda a: np.asarray(a)[..., ::-1].copy()
                                                if a.ndim else np.asarray(a),
                                                _sds(v.shape, v.dtype), v))
    out = f(x)
    expected = x[..., ::-1] if x.ndim else x
    assert out.dtype == x.dtype and out.shape == x.shape
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_transformations(sendrecv):
  cb = lambda a: np.sin(a)  # noqa: E731

  def pure(x):
    return revax.pure_callback(cb, _sds(x.shape), x, vmap_method="sequential")

  xs = np.arange(6, dtype=np.float32).reshape(2, 3)
  np.testing.assert_allclose(revax.jit(revax.vmap(pure))(xs), np.sin(xs), rtol=1e-6)
  for method in ("expand_dims", "broadcast_all", "sequential_unrolled"):
    g = revax.jit(revax.vmap(lambda x, y: revax.pure_callback(
        lambda a, b: np.asarray(a + b), _sds(x.shape), x, y, vmap_method=method),
        in_axes=(0, None)))
    np.testing.assert_allclose(g(xs, x3), xs + x3, rtol=1e-6)

  @revax.custom_jvp
  def sin(x):
    return pure(x)
  sin.defjvp(lambda p, t: (sin(p[0]), revax.pure_callback(np.cos, _sds(p[0].shape), p[0]) * t[0]))
  np.testing.assert_allclose(revax.jit(revax.grad(lambda x: sin(x).sum()))(x3), np.cos(x3),
                             rtol=1e-6)

  def scanned(c, x):
    return c + pure(x).sum(), pure(x * 2)
  carry, ys = revax.jit(lambda xs: revax.lax.scan(scanned, 0.0, xs))(xs)
  np.testing.assert_allclose(carry, np.sin(xs).sum(), rtol=1e-5)
  np.testing.assert_allclose(ys, np.sin(xs * 2), rtol=1e-6)
  branch = revax.jit(lambda p, x: revax.lax.cond(p, pure, lambda v: -pure(v), x))
  np.testing.assert_allclose(branch(True, x3), np.sin(x3), rtol=1e-6)
  np.testing.assert_allclose(branch(False, x3), -np.sin(x3), rtol=1e-6)
  loop = revax.jit(lambda x: revax.lax.fori_loop(0, 5, lambda i, v: pure(v), x))
  expected = x3
  for _ in range(5):
    expected = np.sin(expected)
  np.testing.assert_allclose(loop(x3), expected, rtol=1e-5)


def test_debug_print_from_jit_of_vmap(sendrecv, capfd):
  f = revax.jit(revax.vmap(lambda x: revax.debug.print("row {x}", x=x) or x * 2))
  np.testing.assert_array_equal(f(np.arange(4, dtype=np.float32).reshape(2, 2)),
                                np.arange(4).reshape(2, 2) * 2)
  # (on a TPU the rows print in XLA:TPU's schedule: platform_tolerances.PRINT_ORDER)
  assert printed_lines(capfd.readouterr().out) == printed_lines("row [0. 1.]\nrow [2. 3.]\n")


def test_ordered_io_callbacks_in_loops_keep_program_order(sendrecv):
  log = []

  def body(c, x):
    io_callback(lambda v: log.append(("a", float(v))), None, x, ordered=True)
    io_callback(lambda v: log.append(("b", float(v))), None, c, ordered=True)
    return c + x, None
  revax.jit(lambda xs: revax.lax.scan(body, 0.0, xs))(np.arange(4, dtype=np.float32))
  assert log == [("a", 0.0), ("b", 0.0), ("a", 1.0), ("b", 0.0), ("a", 2.0), ("b", 1.0),
                 ("a", 3.0), ("b", 3.0)]


def test_errors_reach_the_caller_and_later_executions_are_clean(sendrecv):
  calls = []

  def cb(a, b, c):
    calls.append(float(a))
    if float(a) < 0:
      raise ZeroDivisionError("negative")
    return np.asarray(a + b + c, np.float32)
  f = revax.jit(lambda a, b, c: revax.pure_callback(cb, _sds(()), a, b, c))
  assert float(f(1.0, 2.0, 3.0)) == 6.0
  with pytest.raises(RuntimeBackendError) as info:
    f(-1.0, 2.0, 3.0)
  assert isinstance(info.value.__cause__, ZeroDivisionError)
  assert float(f(4.0, 5.0, 6.0)) == 15.0  # fresh state: nothing of the failed run is reused
  bad = revax.jit(lambda a: revax.pure_callback(lambda v: np.ones(2, np.float32), _sds(()), a))
  with pytest.raises(RuntimeBackendError) as info:
    bad(1.0)
  assert isinstance(info.value.__cause__, ffi.CallbackResultError)


def test_shard_map_program_on_a_one_device_mesh(sendrecv, capfd):
  mesh = revax.sharding.Mesh(np.array(revax.devices()[:1]), ("x",))
  P = revax.sharding.PartitionSpec

  def body(x):
    revax.debug.print("shard {x}", x=x)
    return revax.pure_callback(lambda a: a * 3, _sds(x.shape), x, vmap_method="sequential")
  f = revax.jit(revax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
  np.testing.assert_array_equal(f(np.arange(4, dtype=np.float32)), np.arange(4) * 3)
  assert capfd.readouterr().out == "shard [0. 1. 2. 3.]\n"


# ----------------------------------------------------------------------------- the C callbacks

class _FakeStreams:
  def __init__(self, fail=False):
    self.written, self.destroyed, self.zeroed, self.fail = [], [], [], fail

  def write(self, stream, data):
    if self.fail:
      raise RuntimeError("the device expects 8 bytes, the host has 4")
    self.written.append((stream, data))

  def write_zeros(self, stream):
    self.zeroed.append(stream)

  def destroy(self, stream):
    self.destroyed.append(stream)


def test_a_failed_recv_fills_the_stream_with_zeros_and_says_why(capfd):
  """A recv that cannot write its result (sizes disagree) must not leave the device waiting
  forever: the stream gets zeros, stderr says why, and the stream is destroyed."""
  site = host_transfer.register_site(lambda a: (a,), [((), np.float32)], [((), np.float32)],
                                     wait=False)
  streams = _FakeStreams(fail=True)
  state = host_transfer._SiteState(site, streams)
  state._push([np.float32(1)])
  key = next(host_transfer._entry_ids)
  host_transfer._entries[key] = host_transfer._Entry(state, 3, 0)
  host_transfer._RECV_FN(host_transfer._RECV_ADDRESS)(555, key)
  assert streams.zeroed == [555] and streams.destroyed == [555] and streams.written == []
  assert "could not be sent to the device" in capfd.readouterr().err


def test_c_callbacks_take_chunks_in_pieces_free_them_and_report_errors():
  """The send callback as a plugin calls it: an operand in two chunks (done only on the last),
  each chunk's deleter called once; the recv callback writes the result to the stream and
  destroys it; a raising function gives the plugin an error made with its callback_error."""
  site = host_transfer.register_site(lambda a, b: (np.asarray(a) * b,),
                                     [((2, 2), np.float32), ((), np.float32)],
                                     [((2, 2), np.float32)], wait=False)
  streams = _FakeStreams()
  state = host_transfer._SiteState(site, streams)
  keys = {}
  for kind, pairs in ((2, site.sends), (3, site.recvs)):
    for channel, index in pairs:
      key = next(host_transfer._entry_ids)
      host_transfer._entries[key] = host_transfer._Entry(state, kind, index)
      keys[channel] = key
  send = host_transfer._SEND_FN(host_transfer._SEND_ADDRESS)
  recv = host_transfer._RECV_FN(host_transfer._RECV_ADDRESS)
  freed = []
  deleter = host_transfer._DELETER_FN(lambda data, arg: freed.append((data, arg)))
  made = []
  error_fn = host_transfer._CALLBACK_ERROR_FN(
      lambda code, message, size: made.append((code, C.string_at(message, size))) or 12345)
  error_pointer = C.c_void_p(C.cast(error_fn, C.c_void_p).value)

  def send_bytes(channel, data, done, arg):
    buffer = C.create_string_buffer(data, max(len(data), 1))
    chunk = host_transfer._Chunk(C.addressof(buffer), len(data),
                                 C.cast(deleter, C.c_void_p).value, arg)
    return send(C.pointer(chunk), C.addressof(error_pointer), 20, done, keys[channel])

  a = np.arange(4, dtype=np.float32).reshape(2, 2).tobytes()
  (ch_a, _), (ch_b, _) = site.sends
  assert send_bytes(ch_a, a[:8], False, 1) is None
  assert send_bytes(ch_a, a[8:], True, 2) is None
  assert send_bytes(ch_b, np.float32(3).tobytes(), True, 3) is None
  assert [arg for _, arg in freed] == [1, 2, 3] and made == []
  (ch_out, _), = site.recvs
  recv(777, keys[ch_out])
  assert streams.written == [(777, (np.arange(4, dtype=np.float32).reshape(2, 2) * 3).tobytes())]
  assert streams.destroyed == [777]
  failing = host_transfer.register_site(lambda a: 1 / 0, [((), np.float32)], [], wait=True)
  fstate = host_transfer._SiteState(failing, streams)
  key = next(host_transfer._entry_ids)
  host_transfer._entries[key] = host_transfer._Entry(fstate, 2, 0)
  buffer = C.create_string_buffer(np.float32(1).tobytes())
  chunk = host_transfer._Chunk(C.addressof(buffer), 4, None, None)
  assert send(C.pointer(chunk), C.addressof(error_pointer), 4, True, key) == 12345
  code, message = made[0]
  assert code == 13 and b"ZeroDivisionError" in message  # INTERNAL, the callback's error
  assert fstate.results[None].get_nowait() is not None  # the dummy recv does not wait forever
  short = host_transfer._Chunk(C.addressof(buffer), 2, None, None)  # 2 of the 4 bytes, done
  assert send(C.pointer(short), C.addressof(error_pointer), 2, True, key) == 12345
  assert b"carried 2 bytes, expected 4" in made[1][1]
  assert fstate.results[None].get_nowait() is not None


# ----------------------------------------------------------------------------- the suites again

@cpu_only
def test_callback_suites_pass_with_sendrecv():
  """tests/test_debug.py and tests/lax/test_callbacks.py (debug.print/callback, pure_callback,
  io_callback ordered and unordered, under jit, vmap, grad, scan and cond, against jax) with
  every compiled callback going through send/recv host transfers."""
  env = child_env(REVAX_CALLBACK_MECHANISM="sendrecv")
  # (`-o addopts=`: the project's `--dist` needs pytest-xdist, which a TPU machine may lack)
  run = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:warnings",
                        "-p", "no:cacheprovider", "-o", "addopts=", "tests/test_debug.py",
                        "tests/lax/test_callbacks.py"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
  assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
  assert run.stdout.count("\nPASSED ") >= 30 and "\nFAILED " not in run.stdout
