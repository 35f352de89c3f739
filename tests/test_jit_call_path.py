"""The cached call path of `revax.jit` (issue 21): a call whose signature ran before goes through
that signature's plan, which reads each argument's aval and buffer and runs the executable.

Every test here compares a warm jitted function (its plan made by earlier calls) with a cold one
(a fresh `jit`, whose first call takes the general path) or with JAX: the plan must never change
an outcome -- a value, a retrace, or the error that bad input deserves.
"""
import collections
import textwrap
import threading

import jax
import numpy as np
import pytest

import revax
from revax._src.runtime.array import Array as ConcreteArray  # the concrete class
import revax.numpy as rnp
from tests.runtime.test_runtime_client import run_python

X3 = np.arange(3, dtype=np.float32)
Point = collections.namedtuple("Point", "x y")


def _plan(f):
  return f._traces.plan


def _outcome(f, *args):
  """("ok", value as NumPy, weak_type) or ("error", exception type) of `f(*args)`."""
  try:
    out = f(*args)
  except Exception as e:  # noqa: BLE001 - the outcome is what is compared
    return ("error", type(e))
  leaves = revax.tree_util.tree_leaves(out)
  return ("ok", revax.tree_util.tree_structure(out),
          [(np.asarray(l).tolist(), getattr(l, "weak_type", None)) for l in leaves])


def _leaked_tracer():
  leak = []
  revax.grad(lambda v: (leak.append(v), v.sum())[1])(rnp.ones(3))
  return leak[0]


def test_a_repeated_call_runs_through_the_plan_and_matches_numpy():
  f = revax.jit(lambda a, b: (a * b + 1.0, a - b))
  x, y = revax.device_put(X3), revax.device_put(X3 + 1)
  first = f(x, y)
  plan = _plan(f)
  assert plan is not None and plan.treedef is None  # all-Array positional arguments
  for _ in range(3):
    out = f(x, y)
    assert _plan(f) is plan
  np.testing.assert_array_equal(out[0], X3 * (X3 + 1) + 1)
  np.testing.assert_array_equal(out[1], -np.ones(3, np.float32))
  assert all(type(o) is ConcreteArray and not o.is_deleted() for o in out + first)
  assert out[0]._buf is not first[0]._buf  # every call makes its own outputs


@pytest.mark.parametrize("args", [
    ([(X3, X3 + 1), (X3 + 2, X3 + 3)], X3),  # lists and tuples: checked with flatten_up_to
    ({"w": X3, "b": (X3, None)}, X3),  # dicts: flattened in full
    (Point(X3, X3 + 1), X3),  # namedtuples: flattened in full
], ids=["lists", "dicts", "namedtuple"])
def test_pytree_arguments_through_the_plan(args):
  def fun(tree, x):
    return revax.tree_util.tree_map(lambda l: l * x, tree)
  f = revax.jit(fun)
  dargs = revax.device_put(args)
  expected = jax.tree_util.tree_map(np.asarray, jax.jit(fun)(*jax.device_put(args)))
  for _ in range(3):
    out = f(*dargs)
  assert _plan(f) is not None
  for r, j in zip(revax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(expected),
                  strict=True):
    np.testing.assert_array_equal(r, j)
  assert revax.tree_util.tree_structure(out) == revax.tree_util.tree_structure(
      revax.tree_util.tree_map(lambda l: 0, dargs[0]))


@pytest.mark.parametrize("name,make_other", [
    ("other shape", lambda: revax.device_put(np.arange(4, dtype=np.float32))),
    ("other dtype", lambda: revax.device_put(np.arange(3, dtype=np.int32))),
    ("weak type", lambda: revax.jit(lambda: 2.0)()),
    ("numpy array", lambda: X3 + 5),
    ("python scalar", lambda: 3.0),
    ("host-only Array", lambda: rnp.asarray(X3 + 7)),
    ("list instead of an array", lambda: [revax.device_put(X3)]),
    ("string", lambda: "abc"),
    ("None", lambda: None),
    ("leaked tracer", _leaked_tracer),
])
def test_other_arguments_after_a_plan_behave_as_on_a_cold_call(name, make_other):
  fun = lambda a: a * 2  # noqa: E731
  warm = revax.jit(fun)
  x = revax.device_put(X3)
  warm(x), warm(x)
  assert _plan(warm) is not None
  other = make_other()
  assert _outcome(warm, other) == _outcome(revax.jit(fun), other), name
  np.testing.assert_array_equal(warm(x), X3 * 2)  # the original signature still runs


def test_structure_changes_after_a_plan_retrace():
  f = revax.jit(lambda t: revax.tree_util.tree_map(lambda l: l + 1, t))
  a = revax.device_put(X3)
  f((a, a)), f((a, a))
  assert type(f([a, a])) is list
  assert type(f((a, a))) is tuple
  d = f({"x": a})
  od = f(collections.OrderedDict(x=a))
  assert type(d) is dict and type(od) is collections.OrderedDict
  assert type(f({"x": a})) is dict
  assert type(f(Point(a, a))) is Point
  assert f._cache_size() == 5


def test_closed_over_arrays_are_leading_operands_of_the_plan():
  w = revax.device_put(X3 + 10)
  f = revax.jit(lambda a: a * w)
  x = revax.device_put(X3)
  for _ in range(3):
    out = f(x)
  assert _plan(f) is not None and _plan(f).entry.consts
  np.testing.assert_array_equal(out, X3 * (X3 + 10))


def test_no_arguments_and_no_outputs():
  f = revax.jit(lambda: rnp.ones(2) * 3)
  g = revax.jit(lambda a: ())
  x = revax.device_put(X3)
  for _ in range(3):
    out, empty = f(), g(x)
  np.testing.assert_array_equal(out, [3.0, 3.0])
  assert empty == ()


def test_deleted_arrays_raise_like_jax():
  f, jf = revax.jit(lambda a: a * 2), jax.jit(lambda a: a * 2)
  x, jx = revax.device_put(X3), jax.device_put(X3)
  f(x), f(x), jf(jx)
  assert _plan(f) is not None
  x.delete()
  jx.delete()
  assert x.is_deleted() and jx.is_deleted()
  for call in (lambda a, f: f(a), lambda a, f: np.asarray(a), lambda a, f: a + 1,
               lambda a, f: (revax if f is not jf else jax).block_until_ready(a)):
    with pytest.raises(RuntimeError) as revax_error:
      call(x, f)
    assert "has been deleted with shape=float32[3]" in str(revax_error.value)
    with pytest.raises(RuntimeError):
      call(jx, jf)
  y = revax.device_put(X3)
  np.testing.assert_array_equal(f(y), X3 * 2)


def test_a_freed_buffer_under_a_live_array_is_an_error_not_a_crash():
  f = revax.jit(lambda a: a + 1)
  x = revax.device_put(X3)
  f(x), f(x)
  x._buf.delete()  # the runtime-level free, under an Array that does not know
  with pytest.raises(RuntimeError, match="deleted"):
    f(x)


def test_transformations_and_flags_still_see_the_function():
  calls = []

  def fun(a):
    calls.append(1)
    return rnp.sqrt(a)
  f = revax.jit(fun)
  x = revax.device_put(X3)
  f(x), f(x)
  traced = len(calls)
  with revax.disable_jit():
    f(x)
  assert len(calls) == traced + 1  # ran in Python
  np.testing.assert_allclose(revax.grad(lambda a: f(a).sum())(x + 1.0),
                             0.5 / np.sqrt(X3 + 1.0), rtol=1e-6)
  np.testing.assert_allclose(revax.vmap(f)(x), np.sqrt(X3), rtol=1e-6)
  with revax.debug_nans(True):
    with pytest.raises(FloatingPointError):
      f(revax.device_put(-X3 - 1))
  np.testing.assert_allclose(f(x), np.sqrt(X3), rtol=1e-6)


def test_errors_raised_while_running_keep_their_type_and_filtered_traceback():
  fail = {"now": False}

  def host(v):
    if fail["now"]:
      raise ValueError("host callback refused")
    return v

  def fun(a):
    return revax.pure_callback(host, revax.ShapeDtypeStruct(a.shape, a.dtype), a) + 1
  f = revax.jit(fun)
  x = revax.device_put(X3)
  f(x), f(x)
  assert _plan(f) is not None
  fail["now"] = True
  errors = []
  for g in (f, revax.jit(fun)):  # warm (the plan) and cold (the general path)
    try:
      g(x)
    except Exception as e:  # noqa: BLE001
      errors.append(e)
  warm_error, cold_error = errors
  assert type(warm_error) is type(cold_error)
  assert "host callback refused" in str(warm_error) + str(warm_error.__cause__)
  assert type(warm_error.__cause__) is type(cold_error.__cause__)

  def revax_frames(e):
    names, tb = [], e.__traceback__
    while tb is not None:
      names.append(tb.tb_frame.f_code.co_filename)
      tb = tb.tb_next
    return [n for n in names if "/revax/_src/" in n]
  # filtered alike: only the entry point's own frame is left of revax's
  assert len(revax_frames(warm_error)) == len(revax_frames(cold_error)) == 1


def test_concurrent_calls_through_one_plan():
  f = revax.jit(lambda a, b: a * b)
  inputs = [(revax.device_put(X3 + i), revax.device_put(X3 - i)) for i in range(4)]
  f(*inputs[0]), f(*inputs[0])
  failures = []

  def work(i):
    a, b = inputs[i]
    for _ in range(50):
      out = f(a, b)
      if not np.array_equal(np.asarray(out), (X3 + i) * (X3 - i)):
        failures.append(i)
  threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not failures


def test_block_until_ready_walks_any_tree():
  f = revax.jit(lambda a: {"p": Point(a, a + 1), "l": [a * 2, (a,)], "n": None})
  x = revax.device_put(X3)
  out = f(x)
  tree = (out, np.ones(2), 3.0, "text", rnp.asarray(X3))
  assert revax.block_until_ready(tree) is tree
  assert jax.block_until_ready(tree) is tree  # the same tree is fine for jax too
  out["l"][0].delete()
  with pytest.raises(RuntimeError, match="deleted"):
    revax.block_until_ready(out)
  gone = rnp.asarray(X3)
  gone.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    revax.block_until_ready([gone])


def test_runtime_buffers_of_execute_keep_their_api():
  from revax._src.runtime.client import Buffer, get_backend
  backend = get_backend()
  f = revax.jit(lambda a: (a + 1, a.astype(np.int32)))
  x = revax.device_put(X3)
  exe = f.lower(x).compile()._entry.program.executable
  outs = exe.execute([x._buf])
  assert [type(b) for b in outs] == [Buffer, Buffer]
  assert outs[0].shape == (3,) and outs[0].dtype == np.float32 and outs[1].dtype == np.int32
  assert outs[0].device == backend.devices[0] and outs[0].nbytes == 12
  np.testing.assert_array_equal(outs[1].block_until_ready().to_numpy(), [0, 1, 2])
  outs[0].delete()
  assert outs[0].is_deleted() and "deleted" in repr(outs[0])
  with pytest.raises(RuntimeError, match="deleted buffer"):
    exe.execute([outs[0]])
  with pytest.raises(TypeError, match="sequence of Buffers"):
    exe.execute([X3])


def test_compiled_calls_still_check_their_arguments():
  f = revax.jit(lambda a: a * 2)
  x = revax.device_put(X3)
  compiled = f.lower(x).compile()
  f(x), f(x)
  with pytest.raises(TypeError):
    compiled(revax.device_put(np.arange(4, dtype=np.float32)))
  with pytest.raises(TypeError):
    compiled(revax.device_put(np.arange(3, dtype=np.int32)))
  np.testing.assert_array_equal(compiled(x), X3 * 2)


def test_devices_after_a_plan():
  """With two devices: a plan made on one runs on the other, and mixed devices still fail."""
  out = run_python(textwrap.dedent("""
      import numpy as np, revax
      d0, d1 = revax.devices()
      f = revax.jit(lambda a, b: a + b)
      x = revax.device_put(np.ones(3, np.float32), d1)
      f(x, x), f(x, x)
      assert f._traces.plan is not None
      y = revax.device_put(np.arange(3, dtype=np.float32), d0)
      r = f(y, y)
      assert r.device == d0 and np.asarray(r).tolist() == [0.0, 2.0, 4.0], r
      r = f(x, x)
      assert r.device == d1 and np.asarray(r).tolist() == [2.0, 2.0, 2.0], r
      try:
        f(x, y)
      except Exception as e:
        assert "device" in str(e), e
        print("mixed devices:", type(e).__name__)
      else:
        raise AssertionError("mixed devices ran")
      """), REVAX_CPU_DEVICE_COUNT="2")
  assert out.returncode == 0, out.stderr
  assert "mixed devices:" in out.stdout
