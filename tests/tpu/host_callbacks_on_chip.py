"""Host callbacks on a TPU: debug.print, debug.callback, pure_callback, io_callback (ordered too)
through PJRT send/recv host transfers, in ONE process (one program holds the chip).

Run from the repository root on a machine with a TPU and the `libtpu` package:

    python tests/tpu/host_callbacks_on_chip.py --log /tmp/host_callbacks.log

(or set REVAX_TPU_LOG instead of --log). PJRT_PLUGIN defaults to libtpu.so of the installed
`libtpu` package; jax (the oracle of the test files) is kept on the CPU. It writes to the log:
the platform and plugin version, the callback mechanism revax chose, one line per scenario
below (PASS/FAIL, seconds, and the error's traceback on failure), a callback round-trip time,
and then the pytest run of tests/test_debug.py, tests/lax/test_callbacks.py,
tests/runtime/test_host_transfer.py and tests/lax/test_callback_types.py on the chip. A
scenario stuck for 120 s has every thread's stack written to the log and the process exits (a
host transfer that never completes would otherwise hold the chip forever). Exit status: 0 when
everything passed.
"""
import argparse
import contextlib
import faulthandler
import io
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WATCHDOG_S = 120


class _Tee(io.TextIOBase):
  def __init__(self, *streams):
    self.streams = streams

  def write(self, text):
    for s in self.streams:
      s.write(text)
      s.flush()
    return len(text)

  def flush(self):
    for s in self.streams:
      s.flush()


def _setup_environment():
  os.environ.setdefault("JAX_PLATFORMS", "cpu")  # the oracle must not open the chip
  if not os.environ.get("PJRT_PLUGIN"):
    import libtpu
    os.environ["PJRT_PLUGIN"] = os.path.join(os.path.dirname(libtpu.__file__), "libtpu.so")
  sys.path.insert(0, ROOT)


def _scenarios():
  import numpy as np
  import ml_dtypes
  import revax
  from revax.experimental import io_callback

  sds = revax.ShapeDtypeStruct
  x3 = np.array([0.5, 1.0, 2.0], np.float32)

  def debug_print_jit_vmap():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      f = revax.jit(revax.vmap(lambda x: revax.debug.print("row {x}", x=x) or x * 2))
      y = f(np.arange(4, dtype=np.float32).reshape(2, 2))
      revax.block_until_ready(y)
    # unordered prints (ordered=False, the default) promise no order, in jax as here: on the
    # chip the two examples' prints were seen in either order
    assert sorted(out.getvalue().splitlines()) == ["row [0. 1.]", "row [2. 3.]"], \
        repr(out.getvalue())
    np.testing.assert_array_equal(y, np.arange(4).reshape(2, 2) * 2)

  def pure_values_layouts_dtypes():
    for shape in [(), (3,), (3, 5), (8, 128), (2, 3, 4), (1000, 1000)]:
      for dtype in (np.float32, np.int32, np.int8, np.bool_, ml_dtypes.bfloat16):
        x = (np.arange(int(np.prod(shape))).reshape(shape) % 7).astype(dtype)
        f = revax.jit(lambda v: revax.pure_callback(
            lambda a: np.asarray(a).T.copy(), sds(v.shape, v.dtype), v.T))
        y = np.asarray(f(x))
        assert y.dtype == x.dtype and y.shape == x.shape, (y.dtype, y.shape, shape, dtype)
        np.testing.assert_array_equal(y, x, err_msg=f"{dtype} {shape}")

  def no_operands_and_empty_arrays():
    seen = []
    f = revax.jit(lambda: (revax.debug.callback(lambda: seen.append(1)),
                           revax.pure_callback(lambda: np.float32(7), sds((), np.float32)))[1])
    assert float(f()) == 7.0 and seen == [1]
    g = revax.jit(lambda x, e: revax.pure_callback(
        lambda a, b: (a + 1, np.zeros((0, 2), np.float32)),
        (sds((3,), np.float32), sds((0, 2), np.float32)), x, e))
    a, b = g(x3, np.zeros((2, 0), np.float32))
    np.testing.assert_array_equal(a, x3 + 1)
    assert b.shape == (0, 2)

  def io_ordered_in_scan_and_cond():
    log = []

    def body(c, x):
      io_callback(lambda v: log.append(("a", float(v))), None, x, ordered=True)
      io_callback(lambda v: log.append(("b", float(v))), None, c, ordered=True)
      return c + x, None
    revax.jit(lambda xs: revax.lax.scan(body, 0.0, xs))(np.arange(4, dtype=np.float32))
    assert log == [("a", 0.0), ("b", 0.0), ("a", 1.0), ("b", 0.0), ("a", 2.0), ("b", 1.0),
                   ("a", 3.0), ("b", 3.0)], log
    f = revax.jit(lambda p, x: revax.lax.cond(
        p, lambda v: io_callback(lambda a: a * 2, sds((3,), np.float32), v),
        lambda v: io_callback(lambda a: a * 3, sds((3,), np.float32), v), x))
    np.testing.assert_allclose(f(True, x3), x3 * 2)
    np.testing.assert_allclose(f(False, x3), x3 * 3)

  def vmap_and_grad():
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    for method in ("sequential", "expand_dims", "broadcast_all"):
      g = revax.jit(revax.vmap(lambda v: revax.pure_callback(
          np.sin, sds(v.shape, v.dtype), v, vmap_method=method)))
      np.testing.assert_allclose(g(xs), np.sin(xs), rtol=1e-6)

    @revax.custom_jvp
    def sin(x):
      return revax.pure_callback(np.sin, sds(x.shape, x.dtype), x)
    sin.defjvp(lambda p, t: (sin(p[0]), revax.pure_callback(
        np.cos, sds(p[0].shape, p[0].dtype), p[0]) * t[0]))
    np.testing.assert_allclose(revax.jit(revax.grad(lambda x: sin(x).sum()))(x3), np.cos(x3),
                               rtol=1e-6)

  def loops_many_iterations():
    f = revax.jit(lambda x: revax.lax.fori_loop(
        0, 200, lambda i, v: revax.pure_callback(lambda a: a + 1, sds((3,), np.float32), v), x))
    np.testing.assert_allclose(f(x3), x3 + 200)

  def errors_then_clean_runs():
    from revax._src.runtime.pjrt import RuntimeBackendError

    def cb(a):
      if float(a) < 0:
        raise ZeroDivisionError("negative")
      return np.asarray(a * 2, np.float32)
    f = revax.jit(lambda a: revax.pure_callback(cb, sds((), np.float32), a))
    assert float(f(1.0)) == 2.0
    try:
      f(-1.0)
    except RuntimeBackendError as e:
      assert isinstance(e.__cause__, ZeroDivisionError), repr(e.__cause__)
    else:
      raise AssertionError("the raising callback did not fail the call")
    assert float(f(3.0)) == 6.0

  def nested_program_from_callback_is_refused():
    inner = revax.jit(lambda v: v * 3)
    inner(x3)
    f = revax.jit(lambda x: revax.pure_callback(lambda a: np.asarray(inner(a)),
                                                sds((3,), np.float32), x))
    try:
      f(x3)
    except RuntimeError as e:
      assert "would wait forever" in str(e.__cause__), str(e)
    else:
      pass  # also fine: the plugin ran the callback where a program may start

  def shard_map_one_device_mesh():
    mesh = revax.sharding.Mesh(np.array(revax.devices()[:1]), ("x",))
    spec = revax.sharding.PartitionSpec("x")
    f = revax.jit(revax.shard_map(lambda x: revax.pure_callback(
        lambda a: a * 3, sds(x.shape, x.dtype), x, vmap_method="sequential"),
        mesh=mesh, in_specs=spec, out_specs=spec))
    np.testing.assert_array_equal(f(np.arange(4, dtype=np.float32)), np.arange(4) * 3)

  def round_trip_time():
    f = revax.jit(lambda x: revax.pure_callback(lambda a: a, sds((3,), np.float32), x))
    revax.block_until_ready(f(x3))
    n = 200
    start = time.perf_counter()
    for _ in range(n):
      y = f(x3)
    revax.block_until_ready(y)
    per_call = (time.perf_counter() - start) / n
    print(f"    jitted identity pure_callback: {per_call * 1e6:.0f} us per call ({n} calls)")

  return [debug_print_jit_vmap, pure_values_layouts_dtypes, no_operands_and_empty_arrays,
          io_ordered_in_scan_and_cond, vmap_and_grad, loops_many_iterations,
          errors_then_clean_runs, nested_program_from_callback_is_refused,
          shard_map_one_device_mesh, round_trip_time]


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--log", default=os.environ.get("REVAX_TPU_LOG"),
                      help="where to write the log (or env REVAX_TPU_LOG)")
  parser.add_argument("--no-pytest", action="store_true", help="only the scenarios")
  args = parser.parse_args(argv)
  if not args.log:
    parser.error("give --log PATH or set REVAX_TPU_LOG")
  _setup_environment()
  log = open(args.log, "w", buffering=1)
  sys.stdout = _Tee(sys.__stdout__, log)
  sys.stderr = _Tee(sys.__stderr__, log)
  print(f"# host callbacks on chip, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
  print(f"command: {' '.join([sys.executable] + sys.argv)}")
  print(f"PJRT_PLUGIN={os.environ['PJRT_PLUGIN']}")
  import revax
  from revax._src.runtime import client, host_transfer
  backend = client.get_backend()
  attributes = backend._api.plugin_attributes()
  print(f"platform {backend.platform}, devices {revax.devices()}, PJRT C API "
        f"{backend._api.version}, attributes {attributes}")
  mechanism = host_transfer.callback_mechanism(backend.platform)
  print(f"callback mechanism: {mechanism}")
  failures = 0
  if mechanism != "sendrecv":
    print("FAIL: expected the send/recv mechanism on this plugin")
    failures += 1
  for scenario in _scenarios():
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True, file=log)
    start = time.perf_counter()
    try:
      scenario()
    except BaseException:  # noqa: BLE001 - every scenario is reported
      failures += 1
      print(f"FAIL {scenario.__name__} ({time.perf_counter() - start:.2f} s)")
      print("    " + traceback.format_exc().replace("\n", "\n    "))
    else:
      print(f"PASS {scenario.__name__} ({time.perf_counter() - start:.2f} s)")
    finally:
      faulthandler.cancel_dump_traceback_later()
  if not args.no_pytest:
    import pytest
    os.chdir(ROOT)
    faulthandler.dump_traceback_later(540, exit=True, file=log)
    code = pytest.main(["-rA", "-p", "no:cacheprovider", "-p", "no:warnings",
                        "tests/test_debug.py", "tests/lax/test_callbacks.py",
                        "tests/runtime/test_host_transfer.py",
                        "tests/lax/test_callback_types.py"])
    faulthandler.cancel_dump_traceback_later()
    print(f"pytest exit status {int(code)}")
    failures += int(code) != 0
  print(f"# done: {'all passed' if not failures else f'{failures} failing step(s)'}")
  return 0 if not failures else 1


if __name__ == "__main__":
  sys.exit(main())
