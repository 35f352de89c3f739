"""jax.extend.{core,backend,random,...} and jax.interpreters.{batching,partial_eval,mlir,xla}
names revax adds (issue 35), each checked against live jax: library code written once against
the extension modules runs on both and gives the same values, jaxprs and answers."""
import functools

import numpy as np
import pytest

import jax
import jax.extend  # noqa: F401 (the submodules below)
import jax.numpy as jjnp
import revax
import revax.extend  # noqa: F401
import revax.numpy as rjnp
from tests.coverage.names import public_names


def _mods(lib):
  import importlib
  names = ["extend.core", "extend.core.primitives", "extend.random", "extend.backend",
           "interpreters.ad", "interpreters.batching", "interpreters.partial_eval",
           "interpreters.mlir", "interpreters.xla"]
  return {n.split(".")[-1]: importlib.import_module(f"{lib.__name__}.{n}") for n in names}


R, J = _mods(revax), _mods(jax)


# --- extend.core.primitives ----------------------------------------------------------------------
def test_primitives_are_the_objects_revax_binds():
  assert revax.make_jaxpr(rjnp.sin)(1.).eqns[0].primitive is R["primitives"].sin_p
  progs = {  # one program per primitive family; each equation's primitive is the exported one
      "add_p": lambda x: x + x, "reduce_sum_p": lambda x: x.sum(), "cumsum_p": lambda x:
      revax.lax.cumsum(x), "sort_p": lambda x: revax.lax.sort(x), "while_p": lambda x:
      revax.lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0), "cond_p": lambda x:
      revax.lax.cond(True, lambda: x, lambda: -x), "jit_p": revax.jit(lambda x: x * 2),
      "dot_general_p": lambda x: x @ x, "gather_p": lambda x: x[np.array([0, 1])],
      "random_bits_p": lambda x: revax.random.bits(revax.random.key(0)),
      "stop_gradient_p": revax.lax.stop_gradient, "remat_p": revax.checkpoint(rjnp.sin),
  }
  for name, fn in progs.items():
    eqns = revax.make_jaxpr(fn)(np.ones(3, np.float32)).eqns
    assert any(e.primitive is getattr(R["primitives"], name) for e in eqns), name


def test_primitive_names_are_jaxs():
  """Each exported primitive prints as jax's of that name (remat_p is revax's checkpoint)."""
  different = {n: (getattr(R["primitives"], n).name, getattr(J["primitives"], n).name)
               for n in public_names(J["primitives"]) if hasattr(R["primitives"], n)
               and getattr(R["primitives"], n).name != getattr(J["primitives"], n).name}
  assert different == {"remat_p": ("checkpoint", "remat2")}


# --- a library reduction primitive: defreducer, deflinear2, xla.apply_primitive, lower_fun -------
def _define_sum(lib, mods, ShapedArray, name):
  """`my_sum(x, axes, input_shape)`, written once against the extension modules."""
  ad, batching, mlir, xla = (mods[k] for k in ("ad", "batching", "mlir", "xla"))
  jnp = lib.numpy
  p = mods["core"].Primitive(name)
  p.def_impl(functools.partial(xla.apply_primitive, p))

  def abstract_eval(a, *, axes, input_shape):
    assert tuple(input_shape) == a.shape, (input_shape, a.shape)  # defreducer keeps it right
    return ShapedArray(tuple(d for i, d in enumerate(a.shape) if i not in axes), a.dtype)
  p.def_abstract_eval(abstract_eval)
  mlir.register_lowering(p, mlir.lower_fun(
      lambda x, *, axes, input_shape: jnp.sum(x, axis=axes), multiple_results=False))
  batching.defreducer(p)

  def transpose(ct, x, *, axes, input_shape):
    kept = tuple(i for i in range(len(input_shape)) if i not in axes)
    return [lib.lax.broadcast_in_dim(ct, tuple(input_shape), kept)]
  ad.deflinear2(p, transpose)
  return lambda x, axes: p.bind(x, axes=tuple(axes), input_shape=tuple(x.shape))


_n = [0]


@pytest.fixture
def sums():
  _n[0] += 1
  return (_define_sum(revax, R, revax.core.ShapedArray, f"my_sum_{_n[0]}"),
          _define_sum(jax, J, jax.core.ShapedArray, f"my_sum_{_n[0]}"))


def _sum_programs(lib, s):
  return {
      "eager": lambda x: s(x, (1,)),
      "jit": lambda x: lib.jit(lambda y: s(y, (0, 2)))(x),
      "vmap0": lambda x: lib.vmap(lambda y: s(y, (1,)))(x),
      "vmap2": lambda x: lib.vmap(lambda y: s(y, (0,)), in_axes=2)(x),
      "vmap_vmap": lambda x: lib.vmap(lib.vmap(lambda y: s(y, (0,))), in_axes=1)(x),
      "grad": lambda x: lib.grad(lambda y: (s(y, (0, 1)) ** 2).sum())(x),
      "jit_vmap_grad": lambda x: lib.jit(lib.vmap(lib.grad(lambda y: s(y * y, (1,)).sum())))(x),
  }


@pytest.mark.parametrize("prog", ["eager", "jit", "vmap0", "vmap2", "vmap_vmap", "grad",
                                  "jit_vmap_grad"])
def test_library_reduction_matches_jax(sums, prog):
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
  got = _sum_programs(revax, sums[0])[prog](rjnp.asarray(x))
  want = _sum_programs(jax, sums[1])[prog](jjnp.asarray(x))
  assert got.shape == want.shape and got.dtype == want.dtype
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_apply_primitive_compiles_a_builtin_primitive_like_jax():
  x = np.linspace(-1, 1, 5, dtype=np.float32)
  for name, args in (("neg_p", (x,)), ("floor_p", (x * 3,)), ("max_p", (x, x[::-1])),
                     ("atan2_p", (x, x + 2))):
    got = R["xla"].apply_primitive(getattr(R["primitives"], name), *args)
    want = J["xla"].apply_primitive(getattr(J["primitives"], name), *args)
    assert isinstance(got, revax.Array) and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
  assert isinstance(revax.extend.backend.get_backend(), R["xla"].Backend)


# --- partial_eval: dce_jaxpr, dce_jaxpr_consts, dce_rules with the call rules -------------------
def _dce_views(lib, pe):
  jnp = lib.numpy
  j = lib.make_jaxpr(lambda x, y, z: (jnp.sin(x), y * 2, jnp.cos(x) * y))(1., 2., 3.).jaxpr
  const = np.arange(3.0, dtype=np.float32) + 5  # a closed-over array: a constvar of make_jaxpr
  c = lib.make_jaxpr(lambda x, y: (x + const, y * 2))(np.ones(3, np.float32), 1.).jaxpr
  out = []
  for used, inst in (([True, False, False], False), ([False, False, True], [False, False, True]),
                     ([False, True, False], True), ([False, False, False], False)):
    new, used_in = pe.dce_jaxpr(j, used, instantiate=inst)
    out.append((len(new.invars), [e.primitive.name for e in new.eqns], used_in))
  for used in (True, False):  # one bool for every output
    new, used_in = pe.dce_jaxpr(j, used)
    out.append((len(new.invars), [e.primitive.name for e in new.eqns], used_in))
  for used in ([True, False], [False, True]):
    new, used_consts, used_in = pe.dce_jaxpr_consts(c, used)
    out.append((len(new.constvars), len(new.invars), used_consts, used_in))
  return out


def test_dce_jaxpr_forms_match_jax():
  assert _dce_views(revax, R["partial_eval"]) == _dce_views(jax, J["partial_eval"])


def _define_call(lib, mods, name):
  """`my_call(*args, call_jaxpr)`: a library call primitive with jax's closed-call DCE rule."""
  core, mlir, pe = mods["core"], mods["mlir"], mods["partial_eval"]
  p = core.Primitive(name)
  p.multiple_results = True
  p.def_impl(lambda *args, call_jaxpr: core.jaxpr_as_fun(call_jaxpr)(*args))
  p.def_abstract_eval(lambda *avals, call_jaxpr: [v.aval for v in call_jaxpr.jaxpr.outvars])
  mlir.register_lowering(p, mlir.lower_fun(
      lambda *args, call_jaxpr: core.jaxpr_as_fun(call_jaxpr)(*args), multiple_results=True))
  pe.dce_rules[p] = pe.dce_jaxpr_closed_call_rule
  return p


@pytest.mark.parametrize("used", [[True, False], [False, True], [False, False]])
def test_dce_rules_prune_a_library_call_like_jax(used):
  def view(lib, mods):
    p = _define_call(lib, mods, f"my_call_{used}")
    jnp = lib.numpy
    inner = lib.make_jaxpr(lambda x, y: (jnp.sin(x), jnp.exp(y)))(1., 2.)
    outer = lib.make_jaxpr(lambda x, y: p.bind(x, y, call_jaxpr=inner))(1., 2.)
    assert mods["partial_eval"].dce_rules[p] is mods["partial_eval"].dce_jaxpr_closed_call_rule
    new, used_in = mods["partial_eval"].dce_jaxpr(outer.jaxpr, used)
    calls = [e for e in new.eqns if e.primitive is p]
    body = [[q.primitive.name for q in e.params["call_jaxpr"].jaxpr.eqns] for e in calls]
    ran = lib.jit(lambda x, y: p.bind(x, y, call_jaxpr=inner))(0.5, 1.5)
    return used_in, body, [float(v) for v in ran]
  assert view(revax, R) == view(jax, J)


def test_dynamic_jaxpr_tracer_is_jits_tracer():
  seen = []
  revax.jit(lambda x: seen.append(isinstance(x, R["partial_eval"].DynamicJaxprTracer)) or x)(1.)
  revax.vmap(lambda x: seen.append(isinstance(x, R["partial_eval"].DynamicJaxprTracer)) or x)(
      np.ones(2))
  assert seen == [True, False]


# --- extend.core: trace queries ------------------------------------------------------------------
def _answers(lib, core):
  out = []

  def probe(x):
    out.append((core.unsafe_am_i_under_a_jit_DO_NOT_USE(),
                core.unsafe_am_i_under_a_vmap_DO_NOT_USE(),
                list(core.unsafe_get_axis_names_DO_NOT_USE()),
                core.nonempty_axis_env_DO_NOT_USE()))
    return x
  x = np.ones(2, np.float32)
  probe(x)
  lib.jit(probe)(x)
  lib.vmap(probe)(x)
  lib.vmap(probe, axis_name="i")(x)
  lib.jit(lib.vmap(probe, axis_name="i"))(x)
  lib.vmap(lib.jit(probe), axis_name="i")(x)
  lib.grad(lambda y: probe(y).sum())(x)
  lib.jvp(probe, (x,), (x,))
  lib.vmap(lib.vmap(probe, axis_name="a"), axis_name="b")(np.ones((2, 2), np.float32))
  return out


def test_trace_queries_agree_with_jax():
  assert _answers(revax, R["core"]) == _answers(jax, J["core"])


def test_take_current_trace_hands_over_the_trace():
  core = R["core"]
  seen = []

  def f(x):
    with core.take_current_trace() as t:
      seen.append((type(t).__name__, type(revax._src.core.trace.current_trace()).__name__))
    return x
  revax.jit(f)(1.)
  f(1.)
  assert seen == [("DynamicJaxprTrace", "EvalTrace"), ("EvalTrace", "EvalTrace")]


def test_concrete_or_error_and_gensym():
  core = R["core"]
  assert core.concrete_or_error(int, np.int32(3), "the size") == 3
  assert core.concrete_or_error(None, 2.5) == 2.5
  with pytest.raises(revax.errors.ConcretizationTypeError, match="the size"):
    revax.jit(lambda x: core.concrete_or_error(int, x, "the size"))(3)
  with pytest.raises(jax.errors.ConcretizationTypeError, match="the size"):  # (the oracle too)
    jax.jit(lambda x: J["core"].concrete_or_error(int, x, "the size"))(3)
  var = core.gensym()(revax.core.ShapedArray((2,), np.float32))
  assert isinstance(var, core.Var) and var.aval.shape == (2,)


def test_array_types_are_numpys_as_jax_lists_them():
  got = {t.__name__ for t in R["core"].array_types}
  # (TypedNdArray: jax's unexported wrapper of NumPy literals, which revax does not have)
  assert got == {t.__name__ for t in J["core"].array_types} - {"TypedNdArray"}


def test_tokens_and_debug_info():
  core = R["core"]
  tok = revax.lax.create_token()
  assert isinstance(tok, core.Token)
  jaxpr = revax.make_jaxpr(lambda: revax.lax.create_token())()
  assert isinstance(jaxpr.out_avals[0], core.AbstractToken)
  assert core.DebugInfo("jit", "f").traced_for == "jit"


# --- extend.random -------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", ["threefry_prng_impl", "rbg_prng_impl", "unsafe_rbg_prng_impl"])
@pytest.mark.parametrize("where", ["eager", "jit"])
def test_seed_with_impl_matches_jax(impl, where):
  def keys(lib, rnd):
    make = lambda s: lib.random.key_data(rnd.seed_with_impl(getattr(rnd, impl), s))
    return np.asarray(make(7) if where == "eager" else lib.jit(make)(7))
  np.testing.assert_array_equal(keys(revax, R["random"]), keys(jax, J["random"]))
  assert (str(R["random"].seed_with_impl(getattr(R["random"], impl), 1).dtype)
          == str(J["random"].seed_with_impl(getattr(J["random"], impl), 1).dtype))


@pytest.mark.parametrize("shape", [(4,), (5,), (2, 3), (1,), ()])
def test_threefry_2x32_matches_jax(shape):
  count = (np.arange(int(np.prod(shape)), dtype=np.uint32) * 2654435761).reshape(shape)
  key = (np.uint32(3), np.uint32(0xDEADBEEF))
  got = R["random"].threefry_2x32(key, count)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(J["random"].threefry_2x32(key, count)))
  np.testing.assert_array_equal(np.asarray(revax.jit(R["random"].threefry_2x32)(key, count)), got)
  with pytest.raises(TypeError, match="uint32"):
    R["random"].threefry_2x32(key, count.astype(np.int32))
  assert R["random"].threefry2x32_p is R["primitives"].threefry2x32_p


def _library_prng(lib, rnd):
  """A library's PRNG: threefry keys whose bits are threefry's, byte-reversed (the same Python
  code on both libraries), drawn through the public random API."""
  t = rnd.threefry_prng_impl

  def bits(key, bit_width, shape):
    b = t.random_bits(key, bit_width, shape)
    return lib.lax.bitwise_not(b)
  spec = rnd.define_prng_impl(key_shape=(2,), seed=t.seed, split=t.split, random_bits=bits,
                              fold_in=t.fold_in, name="inverted", tag="inv")
  k = lib.random.key(11, impl=spec)
  k1, k2 = lib.random.split(k)
  return [str(k.dtype), lib.random.uniform(k1, (4,)), lib.random.normal(k2, (3,)),
          lib.jit(lambda k: lib.random.randint(k, (5,), 0, 100))(lib.random.fold_in(k, 3))]


def test_define_prng_impl_draws_like_jax():
  got, want = _library_prng(revax, R["random"]), _library_prng(jax, J["random"])
  assert got[0] == want[0] == "key<inv>"
  for g, w in zip(got[1:], want[1:]):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


# --- extend.backend, mlir constants --------------------------------------------------------------
def test_backend_queries():
  b = R["backend"]
  assert b.get_backend().platform == J["backend"].get_backend().platform
  assert set(b.backends()) == set(J["backend"].backends())
  assert all(v is b.get_backend(k) for k, v in b.backends().items())
  assert b.get_default_device() is revax.devices()[0]
  assert b.get_default_device().id == J["backend"].get_default_device().id
  assert isinstance(b.backend_xla_version(), int)  # every revax backend is a PJRT plugin


def test_registered_backend_caches_are_cleared():
  calls = []

  @functools.lru_cache
  def compiled(n):
    calls.append(n)
    return n
  R["backend"].register_backend_cache(compiled, "a library's compiled programs")
  compiled(1), compiled(1)
  revax.clear_caches()
  compiled(1)
  R["backend"].clear_in_memory_compilation_cache()
  compiled(1)
  assert calls == [1, 1, 1]
  with pytest.raises(TypeError, match="cache_clear"):
    R["backend"].register_backend_cache({}, "not a cache")


def test_channel_types_are_stablehlos():
  for n in ("DEVICE_TO_DEVICE_TYPE", "SEND_TO_HOST_TYPE", "RECV_FROM_HOST_TYPE"):
    assert getattr(R["mlir"], n) == getattr(J["mlir"], n)
  assert R["mlir"].Mesh is revax.sharding.Mesh
  assert issubclass(revax.extend.sharding.GSPMDSharding, revax.sharding.Sharding)
  assert revax.extend.lowering.LoweringRuleContext is R["mlir"].LoweringRuleContext
