"""jit: caching, static arguments, lowering, compiled objects and argument validation."""
import numpy as np
import pytest

import revax
import revax.lax as lax
import revax.numpy as rnp
from tests.platform_tolerances import allclose_tol

x3 = np.arange(3, dtype=np.float32)


def test_jit_computes_and_traces_once_per_signature():
  traces = []

  @revax.jit
  def f(x, y):
    traces.append(1)
    return rnp.exp(x) * y

  np.testing.assert_allclose(f(x3, 2.0), np.exp(x3) * 2, **allclose_tol(rtol=1e-6))
  f(x3 + 1, 3.0)
  assert len(traces) == 1
  f(np.ones(4, np.float32), 3.0)  # new shape: new trace
  f(x3, np.float32(3.0))  # strong instead of weak scalar: new signature
  assert len(traces) == 3


def test_array_arguments_share_the_cache_of_equal_signatures():
  """Calls whose arguments are all Arrays take a shortcut past pytree flattening; they must hit
  the same cache as other argument kinds and still distinguish signatures."""
  traces = []

  @revax.jit
  def f(x, y):
    traces.append(1)
    return x * y, {"sum": x + y}

  a, b = revax.device_put(x3), revax.device_put(x3 + 1)
  prod, rest = f(a, b)
  np.testing.assert_allclose(prod, x3 * (x3 + 1))
  np.testing.assert_allclose(rest["sum"], 2 * x3 + 1)
  f(x3, x3)  # NumPy arguments of the same avals: no new trace
  f(a, b)
  assert len(traces) == 1
  f(a, revax.device_put(np.ones(3, np.int32)))  # another dtype: a new trace, a new result type
  assert len(traces) == 2 and f(a, a)[0].dtype == np.float32
  with pytest.raises(TypeError):
    f(a)  # wrong number of arguments: Python's own error


def test_outputs_stay_on_device_and_convert_lazily():
  out = revax.jit(lambda x: x * 2)(x3)
  assert isinstance(out, revax.Array) and not out.is_on_host
  np.testing.assert_array_equal(np.asarray(out), x3 * 2)
  assert out.is_on_host  # read back once, then cached


def test_pytrees_in_and_out():
  @revax.jit
  def f(d):
    return {"sum": d["a"] + d["b"], "pair": (d["a"], 1.0)}

  out = f({"a": x3, "b": x3})
  np.testing.assert_array_equal(out["sum"], 2 * x3)
  assert out["pair"][1].shape == () and out["pair"][1].weak_type


def test_static_argnums_and_argnames():
  traces = []

  def f(x, n, *, scale):
    traces.append(n)
    return x * n * scale

  g = revax.jit(f, static_argnums=1, static_argnames="scale")
  np.testing.assert_array_equal(g(x3, 2, scale=3), x3 * 6)
  g(x3, 2, scale=3)
  g(x3, 4, scale=3)
  assert traces == [2, 4]


def test_unhashable_static_argument_is_a_value_error():
  g = revax.jit(lambda x, n: x, static_argnums=1)
  with pytest.raises(ValueError, match="Non-hashable static arguments"):
    g(x3, [1, 2])


def test_non_array_output_is_a_type_error():
  with pytest.raises(TypeError, match="returned a value of type str"):
    revax.jit(lambda x: "hello")(x3)


def test_closure_over_array_constant():
  c = np.full(3, 2.0, np.float32)
  np.testing.assert_array_equal(revax.jit(lambda x: x * c)(x3), x3 * 2)


def test_nested_jit_and_jit_of_function_returning_input():
  inner = revax.jit(lambda x: x + 1.0)
  outer = revax.jit(lambda x: (inner(x) * 2, x))
  a, b = outer(x3)
  np.testing.assert_array_equal(a, (x3 + 1) * 2)
  np.testing.assert_array_equal(b, x3)


def test_lower_as_text_is_stablehlo_that_compiles():
  f = revax.jit(lambda x, w: rnp.exp(lax.dot_general(x, w, (((1,), (0,)), ((), ())))))
  x, w = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
  lowered = f.lower(x, w)
  text = lowered.as_text()
  assert text.startswith("module @jit_")
  assert "func.func public @main(%0: tensor<2x3xf32>, %1: tensor<3x4xf32>) -> (tensor<2x4xf32>)" in text
  assert '"stablehlo.dot_general"' in text and '"stablehlo.exponential"' in text
  compiled = lowered.compile()
  np.testing.assert_allclose(compiled(x, w), np.exp(x @ w), **allclose_tol(rtol=1e-6))


def test_memory_analysis_reports_sizes():
  f = revax.jit(lambda x: rnp.exp(rnp.exp(x)) * x)
  x = np.ones((256, 256), np.float32)
  stats = f.lower(x).compile().memory_analysis()
  assert stats.argument_size_in_bytes == 256 * 256 * 4
  assert stats.output_size_in_bytes == 256 * 256 * 4
  assert stats.temp_size_in_bytes >= 0


@pytest.mark.parametrize("bad,expected", [
    (np.ones((3, 2), np.float32), r"compiled for argument types \(f32\[2,3\]\) but received \(f32\[3,2\]\)"),
    (np.ones((2, 3), np.int32), r"compiled for argument types \(f32\[2,3\]\) but received \(i32\[2,3\]\)"),
])
def test_compiled_rejects_wrong_avals_before_the_runtime(bad, expected):
  compiled = revax.jit(lambda x: x * 2).lower(np.ones((2, 3), np.float32)).compile()
  with pytest.raises(TypeError, match=expected):
    compiled(bad)


def test_compiled_rejects_wrong_structure():
  compiled = revax.jit(lambda x, y: x + y).lower(x3, x3).compile()
  with pytest.raises(TypeError, match="compiled for arguments of structure"):
    compiled(x3)


def test_jit_of_non_callable():
  with pytest.raises(TypeError, match="jit expects a callable"):
    revax.jit(3)


def test_jit_as_decorator_with_options():
  @revax.jit(static_argnums=(1,))
  def f(x, n):
    return x * n
  np.testing.assert_array_equal(f(x3, 3), x3 * 3)


def test_weak_type_of_python_scalar_output():
  out = revax.jit(lambda: 1.0)()
  assert out.dtype == np.float32 and out.weak_type


def test_make_jaxpr_of_jitted_function_shows_a_jit_equation():
  closed = revax.make_jaxpr(revax.jit(lambda x: x * 2))(x3)
  assert [e.primitive.name for e in closed.eqns] == ["jit"]


def test_float0_values_cross_a_compiled_call():
  """Tangents of integers (float0) have no PJRT type: jit takes them as arguments and returns
  them as NumPy float0 zeros, as eager evaluation does (found by tests/fuzz: jit of the jvp of
  top_k, whose index output has a float0 tangent)."""
  x = np.arange(3, dtype=np.float32)
  f = lambda x: revax.jvp(lambda x: lax.top_k(x, 2), (x,), (x,))  # noqa: E731
  (_, idx), (_, idx_dot) = revax.jit(f)(x)
  np.testing.assert_array_equal(idx, [2, 1])
  assert isinstance(idx_dot, np.ndarray) and idx_dot.dtype == revax.dtypes.float0
  assert idx_dot.shape == (2,)
  zeros = np.zeros(2, revax.dtypes.float0)
  out, t = revax.jit(lambda i, t: (i * 2, t))(np.ones(2, np.int32), zeros)
  np.testing.assert_array_equal(out, [2, 2])
  assert t.dtype == revax.dtypes.float0 and t.shape == (2,)


def test_device_put_leaves_float0_values_on_the_host():
  zeros = np.zeros(3, revax.dtypes.float0)
  out = revax.device_put({"t": zeros, "x": x3})
  assert out["t"].dtype == revax.dtypes.float0 and out["t"].shape == (3,)
  assert isinstance(out["x"], revax.Array)


STATIC_NUMS = [None, (), 0, 1, (1, 2)]
STATIC_NAMES = [None, (), "n", ("n", "m")]


@pytest.mark.parametrize("nums", STATIC_NUMS, ids=repr)
@pytest.mark.parametrize("names", STATIC_NAMES, ids=repr)
def test_static_positions_and_names_are_inferred_as_jax_infers_them(nums, names):
  # jax infers the positions of static names only when no static_argnums are given, and the
  # names of static positions only when no static_argnames are (flax's lifted jit passes both,
  # static_argnums=(0,) for its fingerprint and the user's static_argnames)
  jax = pytest.importorskip("jax")

  def outcome(lib):
    seen = []

    def f(x, n, m=1):
      seen.append(tuple("static" if isinstance(v, (int, float)) else "traced" for v in (x, n, m)))
      return x * 2

    g = lib.jit(f, static_argnums=nums, static_argnames=names)
    results = []
    for args, kwargs in (((2, 3), {}), ((2,), {"m": 3}), ((), {"n": 2, "m": 3})):
      seen.clear()
      try:
        g(1.0, *args, **kwargs)
        results.append(seen[0] if seen else "cached")
      except Exception as e:  # noqa: BLE001 (the exception's type is the outcome)
        results.append(type(e).__name__)
    return results

  assert outcome(revax) == outcome(jax)


SHARDING_PREFIXES = {  # name -> (in_shardings, out_shardings), given the one-device sharding
    "lists": lambda one: (([None, None],), [None, None]),
    "lists of shardings": lambda one: (([one, None],), [None, one]),
    "list prefix": lambda one: ([None], [one, None]),
    "nested": lambda one: (([None, [None]],), [[None], None]),
    "dict": lambda one: (({"a": None, "b": [one]},), {"a": one, "b": None}),
    "empty list": lambda one: (([], ), ([], None)),
}
SHARDING_ARGS = {
    "lists": lambda np_: ([np_.ones(2), np_.ones(3)],),
    "lists of shardings": lambda np_: ([np_.ones(2), np_.ones(3)],),
    "list prefix": lambda np_: ([np_.ones(2), np_.ones(3)],),
    "nested": lambda np_: ([np_.ones(2), [np_.ones(3)]],),
    "dict": lambda np_: ({"a": np_.ones(2), "b": [np_.ones(3)]},),
    "empty list": lambda np_: ([],),
}


@pytest.mark.parametrize("name", list(SHARDING_PREFIXES))
def test_sharding_prefixes_with_lists_match_jax(name):
  # flax's nnx.jit passes out_shardings=(out, [per-update shardings]): lists in a sharding
  # prefix are tree nodes, as in jax
  jax = pytest.importorskip("jax")

  def fun(x):
    leaves = revax.tree_util.tree_leaves(x) if isinstance(x, (list, dict)) else [x]
    if name == "empty list":
      return [], np.float32(1.0)
    if name == "dict":
      return {"a": x["a"] * 2, "b": x["b"][0] + 1}
    if name == "nested":
      return [[x[1][0] * 2], x[0] + 1]
    return [leaves[0] * 2, leaves[1] + 1]

  def run(lib):
    one = lib.sharding.SingleDeviceSharding(lib.devices()[0])
    ins, outs = SHARDING_PREFIXES[name](one)
    try:
      out = lib.jit(fun, in_shardings=ins, out_shardings=outs)(*SHARDING_ARGS[name](lib.numpy))
    except Exception as e:  # noqa: BLE001 (the exception's type is the outcome)
      return type(e).__name__
    return [np.asarray(v).tolist() for v in lib.tree_util.tree_leaves(out)]

  assert run(revax) == run(jax)
