"""revax.lax's key primitives (lax/prng_keys.py: random_seed, random_split, random_fold_in,
random_bits, random_wrap, random_unwrap, random_clone) against jax 0.10.2's: the jaxprs
make_jaxpr prints for the key functions of revax.random (typed and raw keys, under jit, vmap,
scan and grad), and bit-exact values of programs built on them for every implementation: keys as
jit arguments and results, in scan carries, under vmap (eager and jitted), with batched
fold_in messages and seeds; their types, jvp and errors."""
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

import revax
import revax.numpy as rnp
import revax.random as rr
from revax._src.core import dtypes
from revax._src.core.typecheck import check_jaxpr
from revax._src.lax import prng_keys
from tests import platform_tolerances
from tests.random.test_keys import assert_same

IMPLS = ["threefry2x32", "rbg", "unsafe_rbg"]
# where the bits drawn are compared with jax's on the CPU: on a TPU rbg keys draw the chip's
_ON_CHIP_BITS = platform_tolerances.skip_on_tpu(platform_tolerances.RNG_BIT_GENERATOR)
DRAWN = ["threefry2x32", pytest.param("rbg", marks=_ON_CHIP_BITS),
         pytest.param("unsafe_rbg", marks=_ON_CHIP_BITS)]


def _text(closed) -> str:
  return " ".join(str(closed).split())


# (name, function of (random module, numpy module, key argument), which key to pass)
JAXPRS = [
    ("seed", lambda r, n, s: r.key(s), "seed"),
    ("seed_const", lambda r, n: r.key(0), None),
    ("prng_key", lambda r, n, s: r.PRNGKey(s), "seed"),
    ("split", lambda r, n, k: r.split(k, 3), "typed"),
    ("split_shape", lambda r, n, k: r.split(k, (2, 3)), "typed"),
    ("split_raw", lambda r, n, k: r.split(k), "raw"),
    ("fold_in", lambda r, n, k: r.fold_in(k, 3), "typed"),
    ("fold_in_raw", lambda r, n, k: r.fold_in(k, 3), "raw"),
    ("bits", lambda r, n, k: r.bits(k, (2,)), "typed"),
    ("bits_u8", lambda r, n, k: r.bits(k, (5,), n.uint8), "typed"),
    ("bits_raw", lambda r, n, k: r.bits(k, (2,)), "raw"),
    ("wrap", lambda r, n, d: r.wrap_key_data(d), "raw"),
    ("unwrap", lambda r, n, k: r.key_data(k), "typed"),
    ("clone", lambda r, n, k: r.clone(k), "typed"),
    ("clone_raw", lambda r, n, k: r.clone(k), "raw"),
    ("fold_in_bits", lambda r, n, k: r.bits(r.fold_in(k, 1), (3,)), "typed"),
]


def _call(lib, fn, which):
  r = lib.random
  n = jnp if lib is jax else rnp
  if which is None:
    return lib.make_jaxpr(lambda: fn(r, n))()
  arg = {"seed": 7, "typed": r.key(7), "raw": r.PRNGKey(7)}[which]
  return lib.make_jaxpr(lambda a: fn(r, n, a))(arg)


@pytest.mark.parametrize("name, fn, which", JAXPRS, ids=[j[0] for j in JAXPRS])
def test_make_jaxpr_is_jax_s(name, fn, which):
  ours = _call(revax, fn, which)
  check_jaxpr(ours.jaxpr)
  assert _text(ours) == _text(_call(jax, fn, which))


NESTED = [
    ("jit", lambda lib: lib.jit(lambda k: lib.random.split(k)), lambda r: r.key(1)),
    ("jit_fold_in", lambda lib: lib.jit(lambda k: lib.random.fold_in(k, 5)), lambda r: r.key(1)),
    ("vmap_split", lambda lib: lib.vmap(lambda k: lib.random.split(k)),
     lambda r: r.split(r.key(1), 4)),
    ("vmap_bits", lambda lib: lib.vmap(lambda k: lib.random.bits(k, (2,))),
     lambda r: r.split(r.key(1), 4)),
    ("vmap_fold_in", lambda lib: lib.vmap(lambda k: lib.random.fold_in(k, 2)),
     lambda r: r.split(r.key(1), 3)),
    ("vmap_seed", lambda lib: lib.vmap(lambda s: lib.random.key(s)), lambda r: np.arange(3)),
    ("jit_vmap", lambda lib: lib.jit(lib.vmap(lambda k: lib.random.split(k, 3))),
     lambda r: r.split(r.key(1), 2)),
    ("rbg_split", lambda lib: lambda k: lib.random.split(k),
     lambda r: r.key(1, impl="rbg")),
    ("unsafe_rbg_bits", lambda lib: lambda k: lib.random.bits(k, (3,)),
     lambda r: r.key(1, impl="unsafe_rbg")),
]


@pytest.mark.parametrize("name, fn, arg", NESTED, ids=[n[0] for n in NESTED])
def test_nested_make_jaxpr_is_jax_s(name, fn, arg):
  """Keys cross jit and vmap inside make_jaxpr as key-typed values, as in JAX."""
  ours = revax.make_jaxpr(fn(revax))(arg(rr))
  check_jaxpr(ours.jaxpr)
  assert _text(ours) == _text(jax.make_jaxpr(fn(jax))(arg(jr)))


SHAPE_OPS = [
    ("index", lambda k: k[1]),
    ("slice", lambda k: k[1:3]),
    ("reshape", lambda k: k.reshape(2, 2)),
    ("transpose", lambda k: k.reshape(2, 2).T),
    ("iterate", lambda k: list(k)[3]),
]


@pytest.mark.parametrize("name, fn", SHAPE_OPS, ids=[s[0] for s in SHAPE_OPS])
def test_shape_operations_on_keys_make_jax_s_jaxprs(name, fn):
  """Indexing and reshaping key arrays stages slice, squeeze, reshape, transpose on key<fry>
  values, as JAX's key arrays do."""
  ours = revax.make_jaxpr(fn)(rr.split(rr.key(0), 4))
  theirs = jax.make_jaxpr(fn)(jr.split(jr.key(0), 4))
  check_jaxpr(ours.jaxpr)
  if name in ("index", "slice"):
    assert _text(ours) == _text(theirs)
  else:  # (jax's reshape prints a sharding=None param, its unused variables as `_`)
    assert _eqn_types(ours) == _eqn_types(theirs)


def _eqn_types(closed):
  return [(e.primitive.name, tuple(str(v.aval) for v in e.outvars)) for e in closed.jaxpr.eqns]


def test_grad_jaxpr_keeps_the_key_typed():
  """grad with a key argument: the key is a key<fry>[] input and random_bits reads it, as in
  JAX (the jaxprs differ only in how they name an unused variable: JAX prints `_`)."""
  def f(lib):
    return lib.grad(lambda x, k: x * lib.random.bits(k).astype(np.float32))
  ours = revax.make_jaxpr(f(revax))(1.0, rr.key(0))
  theirs = jax.make_jaxpr(f(jax))(1.0, jr.key(0))
  check_jaxpr(ours.jaxpr)
  assert [str(v.aval) for v in ours.jaxpr.invars] == [str(v.aval) for v in theirs.jaxpr.invars]
  mine = [e for e in ours.jaxpr.eqns if e.primitive.name.startswith("random_")]
  jaxs = [e for e in theirs.jaxpr.eqns if e.primitive.name.startswith("random_")]
  assert [(e.primitive.name, e.params) for e in mine] == [(e.primitive.name, e.params)
                                                           for e in jaxs]
  assert [str(e.invars[0].aval) for e in mine] == ["key<fry>[]"]


def test_scan_carries_keys_as_keys_in_make_jaxpr():
  closed = revax.make_jaxpr(lambda k: revax.lax.scan(
      lambda c, _: (rr.split(c)[0], rr.bits(c)), k, None, length=3))(rr.key(0))
  check_jaxpr(closed.jaxpr)
  (scan,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]
  body = scan.params["jaxpr"].jaxpr
  assert str(body.invars[0].aval) == "key<fry>[]" == str(body.outvars[0].aval)
  assert [e.primitive.name for e in body.eqns][0] == "random_split"
  assert [str(v.aval) for v in closed.jaxpr.outvars] == ["key<fry>[]", "uint32[3]"]
  theirs = jax.make_jaxpr(lambda k: jax.lax.scan(
      lambda c, _: (jr.split(c)[0], jr.bits(c)), k, None, length=3))(jr.key(0))
  (jscan,) = [e for e in theirs.jaxpr.eqns if e.primitive.name == "scan"]
  assert _eqn_types(scan.params["jaxpr"]) == _eqn_types(jscan.params["jaxpr"])


# --- values: bit for bit jax's, every implementation ---------------------------------------------
def _keys(lib, impl):
  return lib.random.key(11, impl=impl)


@pytest.mark.parametrize("impl", DRAWN)
def test_keys_as_jit_arguments_and_results(impl):
  def f(lib):
    def g(k):
      a, b = lib.random.split(k)
      return lib.random.fold_in(a, 9), lib.random.split(b, (2, 2)), lib.random.bits(b, (4,))
    return g
  ours = revax.jit(f(revax))(_keys(revax, impl))
  theirs = jax.jit(f(jax))(_keys(jax, impl))
  assert ours[0].dtype == rr.key_dtype(impl) and ours[1].shape == (2, 2)
  for o, t in zip(ours[:2], theirs[:2]):
    assert_same(rr.key_data(o), jr.key_data(t))
  assert_same(ours[2], theirs[2])


@pytest.mark.parametrize("impl", DRAWN)
def test_keys_in_scan_carries(impl):
  def f(lib):
    def body(k, _):
      k, sub = lib.random.split(k)
      return k, lib.random.bits(sub, (2,))
    return lambda k: lib.lax.scan(body, k, None, length=4)
  for wrap in (lambda g: g, revax.jit):
    k, draws = wrap(f(revax))(_keys(revax, impl))
    jk, jdraws = jax.jit(f(jax))(_keys(jax, impl))
    assert_same(rr.key_data(k), jr.key_data(jk))
    assert_same(draws, jdraws)


@pytest.mark.parametrize("impl", DRAWN)
def test_vmap_eager_and_jitted(impl):
  """Eagerly the batching rules bind the primitives on concrete keys (prng_keys.EagerKeys)."""
  msgs = np.arange(5, dtype=np.uint32)
  def f(lib):
    return lambda k, m: lib.random.key_data(lib.random.fold_in(lib.random.split(k)[1], m))
  keys = rr.split(_keys(revax, impl), 5)
  jkeys = jr.split(_keys(jax, impl), 5)
  expected = jax.vmap(f(jax))(jkeys, msgs)
  assert_same(revax.vmap(f(revax))(keys, msgs), expected)
  assert_same(revax.jit(revax.vmap(f(revax)))(keys, msgs), expected)
  # one key, batched messages; batched keys, one message
  one = lambda lib: lambda m: lib.random.key_data(lib.random.fold_in(_keys(lib, impl), m))
  assert_same(revax.vmap(one(revax))(msgs), jax.vmap(one(jax))(msgs))
  assert_same(revax.vmap(lambda k: rr.key_data(rr.fold_in(k, 3)))(keys),
              jax.vmap(lambda k: jr.key_data(jr.fold_in(k, 3)))(jkeys))
  seeds = np.arange(4)
  assert_same(rr.key_data(revax.jit(revax.vmap(lambda s: rr.key(s, impl=impl)))(seeds)),
              jr.key_data(jax.vmap(lambda s: jr.key(s, impl=impl))(jnp.arange(4))))


@pytest.mark.parametrize("impl", DRAWN)
def test_samplers_under_make_jaxpr_staged_keys_evaluate_like_jax(impl):
  """A function traced by make_jaxpr (keys typed as keys) and jitted (keys as data) computes
  the same bits: the jaxpr's primitives lower through the implementation's functions."""
  def f(lib):
    return lambda k: (lib.random.normal(lib.random.split(k)[0], (3,)),
                      lib.random.bits(lib.random.fold_in(k, 2), (2,), np.uint8))
  closed = revax.make_jaxpr(f(revax))(_keys(revax, impl))
  check_jaxpr(closed.jaxpr)
  ours = revax.jit(f(revax))(_keys(revax, impl))
  theirs = jax.jit(f(jax))(_keys(jax, impl))
  for o, t in zip(ours, theirs):
    assert_same(o, t)


# (name, op on key-typed values, the same op on key data with the key-word axis last)
KEY_OPS = [
    ("slice", lambda k: revax.lax.slice(k, (1,), (3,)), lambda d: d[1:3]),
    ("squeeze", lambda k: revax.lax.squeeze(revax.lax.slice(k, (2,), (3,)), (0,)),
     lambda d: d[2]),
    ("reshape", lambda k: revax.lax.reshape(k, (2, 3)), lambda d: d.reshape(2, 3, -1)),
    ("transpose", lambda k: revax.lax.transpose(revax.lax.reshape(k, (2, 3)), (1, 0)),
     lambda d: d.reshape(2, 3, -1).transpose(1, 0, 2)),
    ("broadcast", lambda k: revax.lax.broadcast_in_dim(k, (2, 6), (1,)),
     lambda d: np.broadcast_to(d, (2,) + d.shape)),
    ("concatenate", lambda k: revax.lax.concatenate([k, k], 0),
     lambda d: np.concatenate([d, d], 0)),
    ("select_n", lambda k: revax.lax.select_n(np.arange(6) % 2 == 0,
                                              k, revax.lax.rev(k, (0,))),
     lambda d: np.where((np.arange(6) % 2 == 0)[:, None], d[::-1], d)),
    ("dynamic_slice", lambda k: revax.lax.dynamic_slice(k, (np.int32(2),), (3,)),
     lambda d: d[2:5]),
    ("dynamic_update_slice", lambda k: revax.lax.dynamic_update_slice(
        k, revax.lax.slice(k, (0,), (2,)), (np.int32(3),)),
     lambda d: np.concatenate([d[:3], d[:2], d[5:]], 0)),
]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name, op, on_data", KEY_OPS, ids=[k[0] for k in KEY_OPS])
def test_shape_operations_on_key_values_compile(impl, name, op, on_data):
  """Compiled, an operation on key-typed values acts on their data with the key-word axis
  carried along (mlir.extended_lowering)."""
  impl_obj = rr.key(0, impl=impl)._impl
  data = rr.key_data(rr.split(rr.key(5, impl=impl), 6))

  def f(d):
    return prng_keys.random_unwrap(op(prng_keys.random_wrap(d, impl=impl_obj)))
  assert_same(revax.jit(f)(data), on_data(np.asarray(data)))


def test_an_operation_from_keys_to_non_keys_does_not_compile():
  impl = rr.key(0)._impl
  f = lambda d: revax.lax.eq(prng_keys.random_wrap(d, impl=impl),
                             prng_keys.random_wrap(d, impl=impl))
  with pytest.raises(Exception):
    revax.jit(f).lower(np.zeros((3, 2), np.uint32))


def test_lowered_program_holds_key_data():
  """Compiled programs see keys as their data: key<fry>[2] is tensor<2x2xui32>."""
  text = revax.jit(lambda d: prng_keys.random_unwrap(prng_keys.random_split(
      prng_keys.random_wrap(d, impl=rr.key(0)._impl), (2,)))).lower(rr.PRNGKey(0)).as_text()
  assert "tensor<2x2xui32>" in text and "key<" not in text


# --- types, jvp, errors --------------------------------------------------------------------------
def test_avals():
  impl = rr.key(0)._impl
  closed = revax.make_jaxpr(lambda d: prng_keys.random_bits(
      prng_keys.random_split(prng_keys.random_wrap(d, impl=impl), (3,)), 16, (2,)))(
          np.zeros((4, 2), np.uint32))
  avals = [str(e.outvars[0].aval) for e in closed.jaxpr.eqns]
  assert avals == ["key<fry>[4]", "key<fry>[4,3]", "uint16[4,3,2]"]
  assert str(revax.make_jaxpr(prng_keys.random_clone)(rr.key(0))) == (
      "{ lambda ; a:key<fry>[]. let b:key<fry>[] = random_clone a in (b,) }")


def test_jvp_of_key_functions_is_a_float0_zero():
  data = np.array([0, 7], np.uint32)
  f = lambda lib: lambda d: lib.random.key_data(lib.random.split(lib.random.wrap_key_data(d)))
  t = np.zeros((2,), dtypes.float0)
  out, tan = revax.jvp(f(revax), (data,), (t,))
  jout, jtan = jax.jvp(f(jax), (data,), (t,))
  assert_same(out, jout)
  assert tan.dtype == jtan.dtype == dtypes.float0 and tan.shape == jtan.shape


def test_grad_through_a_key_argument_is_jax_s():
  f = lambda lib: lib.grad(lambda x, k: (x * lib.random.normal(k, (3,))).sum())
  assert_same(revax.jit(f(revax))(1.5, rr.key(3)), jax.jit(f(jax))(1.5, jr.key(3)))


def test_errors():
  impl = rr.key(0)._impl
  with pytest.raises(TypeError, match="random_split takes a key array"):
    revax.make_jaxpr(lambda d: prng_keys.random_split(d, (2,)))(np.zeros(2, np.uint32))
  with pytest.raises(TypeError, match="ends with"):
    revax.make_jaxpr(lambda d: prng_keys.random_wrap(d, impl=impl))(np.zeros(3, np.uint32))
  with pytest.raises(TypeError, match="uint32"):
    revax.make_jaxpr(lambda k: prng_keys.random_fold_in(k, np.float32(1)))(rr.key(0))
  with pytest.raises(TypeError, match="bit field width|field width"):
    revax.make_jaxpr(lambda k: prng_keys.random_bits(k, 12, ()))(rr.key(0))


@pytest.mark.parametrize("impl", DRAWN)
def test_shape_polymorphic_export_serializes_key_types(impl):
  """A shape-polymorphic export keeps its jaxpr: key types and the key primitives' `impl` are
  serialized by the implementation's name. (The draw has a static shape: rbg's bits of a
  symbolic shape are not supported, before this change as after.)"""
  import revax.export as rex

  def f(x):
    k = rr.fold_in(rr.split(rr.key(3, impl=impl))[1], 2)
    return x + rr.uniform(k, (1,))
  exp = rex.export(revax.jit(f))(*rex.symbolic_args_specs((np.zeros(3, np.float32),), "n"))
  loaded = rex.deserialize(exp.serialize())
  x = np.arange(5, dtype=np.float32)
  assert_same(loaded.call(x), exp.call(x))
  assert_same(exp.call(x), jax.jit(lambda x: x + jr.uniform(
      jr.fold_in(jr.split(jr.key(3, impl=impl))[1], 2), (1,)))(x))
