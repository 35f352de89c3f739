"""pure_callback and io_callback against jax 0.10.2: values, batching by vmap_method, ordering,
differentiation through custom_jvp/custom_vjp, and the error paths (raising callbacks, wrong
result shapes/dtypes, callbacks that call revax)."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
import revax
import revax.numpy as rnp
from revax.experimental import io_callback
from revax._src.runtime.ffi import CallbackResultError
from revax._src.runtime.pjrt import RuntimeBackendError
from tests.platform_tolerances import NESTED_PROGRAMS, skip_on_tpu

x3 = np.array([0.5, 1.0, 2.0], np.float32)
xb = np.arange(6, dtype=np.float32).reshape(2, 3) / 4


def _sds(lib, shape, dtype=np.float32):
  return lib.ShapeDtypeStruct(shape, dtype)


def _sin_sum(lib):
  def f(x, y):
    outs = lib.pure_callback(lambda a, b: {"s": np.sin(a), "t": (a * b).sum(dtype=np.float32)},
                             {"s": _sds(lib, x.shape), "t": _sds(lib, ())}, x, b=y)
    return outs["s"] * 2, outs["t"]
  return f


@pytest.mark.parametrize("jit", [False, True])
def test_pure_callback_values_pytrees_kwargs(jit):
  f_r, f_j = _sin_sum(revax), _sin_sum(jax)
  if jit:
    f_r, f_j = revax.jit(f_r), jax.jit(f_j)
  for r, j in zip(f_r(x3, x3[::-1].copy()), f_j(x3, x3[::-1].copy()), strict=True):
    np.testing.assert_allclose(np.asarray(r), np.asarray(j), rtol=1e-6)
    assert r.dtype == j.dtype and r.shape == j.shape


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
def test_vmap_methods_match_jax(method):
  def run(lib):
    seen = []

    def cb(a, b):
      seen.append((a.shape, b.shape))
      return a * b + 1

    def f(a, b):
      shape = np.broadcast_shapes(a.shape, b.shape)
      return lib.pure_callback(cb, _sds(lib, shape), a, b, vmap_method=method)
    out = lib.jit(lib.vmap(f, in_axes=(0, None)))(xb, x3)
    return np.asarray(out), seen
  (r, seen_r), (j, seen_j) = run(revax), run(jax)
  np.testing.assert_allclose(r, j, rtol=1e-6)
  assert seen_r == seen_j


def test_vmap_method_errors():
  f = lambda lib, m: (lambda a: lib.pure_callback(np.sin, _sds(lib, ()), a, vmap_method=m))
  for lib in (revax, jax):
    with pytest.raises(NotImplementedError, match="vmap_method"):
      lib.vmap(f(lib, None))(x3)
    with pytest.raises(ValueError, match="vmap_method"):
      lib.pure_callback(np.sin, _sds(lib, ()), 1.0, vmap_method="bogus")


def test_grad_raises_and_custom_jvp_vjp_differentiate():
  for lib in (revax, jax):
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
      lib.grad(lambda x: lib.pure_callback(np.sin, _sds(lib, ()), x))(np.float32(1.0))

  def with_jvp(lib):
    @lib.custom_jvp
    def sin(x):
      return lib.pure_callback(np.sin, _sds(lib, x.shape), x, vmap_method="sequential")
    sin.defjvp(lambda p, t: (sin(p[0]), lib.pure_callback(np.cos, _sds(lib, p[0].shape), p[0],
                                                          vmap_method="sequential") * t[0]))
    return sin

  def with_vjp(lib):
    @lib.custom_vjp
    def sin(x):
      return lib.pure_callback(np.sin, _sds(lib, x.shape), x)
    sin.defvjp(lambda x: (sin(x), x),
               lambda x, g: (lib.pure_callback(np.cos, _sds(lib, x.shape), x) * g,))
    return sin

  for make in (with_jvp, with_vjp):
    for transform in (lambda lib, f: lib.grad(lambda x: f(x).sum()),
                      lambda lib, f: lib.jit(lib.grad(lambda x: f(x).sum()))):
      r = transform(revax, make(revax))(x3)
      j = transform(jax, make(jax))(x3)
      np.testing.assert_allclose(np.asarray(r), np.asarray(j), rtol=1e-6)
  r = revax.vmap(revax.grad(lambda x: with_jvp(revax)(x)))(x3)
  np.testing.assert_allclose(np.asarray(r), np.cos(x3), rtol=1e-6)


def test_pure_callback_in_scan_and_cond():
  def f(lib):
    def body(c, x):
      y = lib.pure_callback(lambda a, b: a * b, _sds(lib, ()), c, x)
      return c + y, y
    return lib.jit(lambda xs: lib.lax.scan(body, np.float32(1.0), xs))
  for r, j in zip(f(revax)(x3), f(jax)(x3), strict=True):
    np.testing.assert_allclose(np.asarray(r), np.asarray(j), rtol=1e-6)


def test_unused_pure_callback_is_removed_but_io_callback_stays():
  calls = []

  def f(x):
    revax.pure_callback(lambda a: calls.append("pure") or a, _sds(revax, ()), x)
    io_callback(lambda a: calls.append("io"), None, x)
    return x + 1
  revax.jit(f)(np.float32(1.0))
  assert calls == ["io"]


def test_io_callback_ordered_in_loops_and_cond():
  def run(lib, io):
    log = []

    def record(tag):
      return lambda v: log.append((tag, float(v)))

    def f(xs):
      def body(c, x):
        io(record("scan"), None, x, ordered=True)
        return c + x, None
      c, _ = lib.lax.scan(body, np.float32(0.0), xs)
      io(record("after_scan"), None, c, ordered=True)

      def wbody(i):
        io(record("while"), None, i, ordered=True)
        return i + 1
      lib.lax.while_loop(lambda i: i < 3, wbody, 0)
      lib.lax.cond(c > 1, lambda: io(record("true"), None, c, ordered=True),
                   lambda: io(record("false"), None, c, ordered=True))
      return c
    lib.jit(f)(x3)
    return log
  assert run(revax, io_callback) == run(jax, jax.experimental.io_callback)


def test_io_callback_results_vmap_and_errors():
  def run(lib, io):
    seen = []

    def cb(a):
      seen.append(a.shape)
      return a * 2
    out = lib.jit(lib.vmap(lambda a: io(cb, _sds(lib, a.shape), a)))(xb)
    return np.asarray(out), seen
  (r, sr), (j, sj) = run(revax, io_callback), run(jax, jax.experimental.io_callback)
  np.testing.assert_allclose(r, j)
  assert sr == sj
  for lib, io in ((revax, io_callback), (jax, jax.experimental.io_callback)):
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
      lib.vmap(lambda a: io(lambda v: v, _sds(lib, ()), a, ordered=True))(x3)
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
      lib.grad(lambda a: io(lambda v: v, _sds(lib, ()), a))(np.float32(1.0))


def _boom(a):
  raise KeyError("boom from the callback")


@pytest.mark.parametrize("jit", [False, True])
def test_raising_callback_keeps_original_exception(jit):
  f = lambda x: revax.pure_callback(_boom, _sds(revax, x.shape), x)
  f = revax.jit(f) if jit else f
  with pytest.raises(RuntimeError, match="boom from the callback") as info:
    f(x3)
  assert isinstance(info.value, RuntimeBackendError)
  assert isinstance(info.value.__cause__, KeyError)
  assert info.value.__cause__.__traceback__ is not None
  # the runtime is still usable afterwards
  np.testing.assert_allclose(revax.jit(lambda x: x + 1)(x3), x3 + 1)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("result, expected", [
    (np.ones(4, np.float32), "float32\\[4\\], expected float32\\[3\\]"),
    (np.ones(3, np.int32), "int32\\[3\\], expected float32\\[3\\]"),
    # (a float64 result is cast to a declared float32 with x64 off, as in jax: see
    # test_callback_types.py; a float16 one is not)
    (np.ones(3, np.float16), "float16\\[3\\], expected float32\\[3\\]"),
])
def test_wrong_result_shape_or_dtype_is_refused(jit, result, expected):
  f = lambda x: revax.pure_callback(lambda a: result, _sds(revax, x.shape), x)
  f = revax.jit(f) if jit else f
  with pytest.raises(RuntimeError, match=expected) as info:
    f(x3)
  assert isinstance(info.value.__cause__, CallbackResultError)


def test_declared_64_bit_result_without_x64():
  with pytest.raises(ValueError, match="64-bit"):
    revax.pure_callback(np.sin, _sds(revax, (3,), np.float64), x3)


@skip_on_tpu(NESTED_PROGRAMS)
def test_callback_calling_revax_does_not_deadlock():
  inner = revax.jit(lambda y: y * 3)

  def cb(a):
    return np.asarray(inner(rnp.asarray(a)) + rnp.sin(rnp.asarray(a)))
  f = revax.jit(lambda x: revax.pure_callback(cb, _sds(revax, x.shape), x))
  g = revax.jit(lambda x: revax.pure_callback(lambda a: np.asarray(f(a)), _sds(revax, x.shape),
                                              x + 1))
  np.testing.assert_allclose(g(x3), 3 * (x3 + 1) + np.sin(x3 + 1), rtol=1e-6)


def test_callback_on_an_xla_thread_never_deadlocks():
  """XLA runs the callback of an asynchronously executed program (here one with a large dot) on
  one of its own threads. Host computation works there; launching a compiled program from there
  would wait forever for the device, so it raises instead (or works, if XLA ran it inline)."""
  inner = revax.jit(lambda a: rnp.cos(a) * 2)
  inner(x3)

  def host_only(a):
    return np.asarray(rnp.sin(revax.device_put(a)) + rnp.cos(rnp.asarray(a)), np.float32)

  def nested(a):
    return np.asarray(inner(a))

  def program(cb):
    def g(m, v):
      return (m @ m).sum(), revax.pure_callback(cb, _sds(revax, v.shape), v)
    return revax.jit(g)
  m = np.ones((256, 256), np.float32)
  _, out = program(host_only)(m, x3)
  np.testing.assert_allclose(out, np.sin(x3) + np.cos(x3), rtol=1e-6)
  try:
    _, out = program(nested)(m, x3)
  except RuntimeError as e:
    assert "would wait forever" in str(e.__cause__)
  else:
    np.testing.assert_allclose(out, np.cos(x3) * 2, rtol=1e-6)
  np.testing.assert_allclose(revax.jit(lambda v: v - 1)(x3), x3 - 1)


def _argument_report(lib, lib_np, x):
  """What each kind of callback sees of its array arguments, eager or under jit/vmap: the Array
  type, dtype, weak type, NumPy interop and lib.numpy working on it."""
  from_lib = {"revax": revax, "jax": jax}[lib.__name__]
  io = io_callback if lib is revax else __import__("jax.experimental").experimental.io_callback
  seen = []

  def record(tag):
    def cb(a, s=None):
      host = np.asarray(a)
      seen.append((tag, isinstance(a, from_lib.Array), a.block_until_ready() is a, str(a.dtype),
                   bool(getattr(a, "weak_type", None)), type(host).__name__, host.tolist(),
                   float(lib_np.sum(a)), s))
      return lib_np.sum(a) * 2  # a callback may return the library's own arrays
    return cb

  sds = lib.ShapeDtypeStruct((), np.float32)
  out = [lib.pure_callback(record("pure"), sds, x), io(record("io"), sds, x)]
  lib.debug.callback(record("debug"), x, "static")
  jitted = lib.jit(lambda v: (lib.pure_callback(record("pure-jit"), sds, v),
                              io(record("io-jit"), sds, v, ordered=True),
                              lib.debug.callback(record("debug-jit"), v, "static"))[:2])
  out += list(jitted(x))
  out.append(lib.vmap(lambda v: lib.pure_callback(record("pure-vmap"), sds, v,
                                                  vmap_method="sequential"))(np.stack([x, x])))
  out.append(lib.pure_callback(record("python-scalar"), sds, 2.0))  # weak in, strong inside
  # callbacks of one compiled program that are not ordered may run in any order
  return [np.asarray(o).tolist() for o in out], sorted(seen, key=lambda entry: entry[0])


def test_callback_arguments_are_library_arrays_as_in_jax():
  x = np.array([0.5, 1.0, 2.0], np.float32)
  r = _argument_report(revax, rnp, x)
  j = _argument_report(jax, jnp, x)
  assert r == j
  assert all(entry[1] and entry[2] for entry in r[1])  # every argument was an Array
  mine = np.ones(3, np.float32)
  revax.pure_callback(lambda a: np.asarray(a).sum(), revax.ShapeDtypeStruct((), np.float32), mine)
  assert mine.flags.writeable  # the caller's NumPy array is not frozen by becoming an Array
