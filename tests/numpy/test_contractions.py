"""revax.numpy einsum and matmul: values against NumPy (float32, int32, bool; eager and jitted),
dtypes against jax.numpy, the contraction order of opt_einsum, and the structure of the programs
(each pairwise contraction one dot_general on the operands as they are: no transpose or
broadcast before a dot)."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax.test_util import check_vmap
from tests.gradcheck import check_grads
from tests.numpy.helpers import jax, jnp

# (subscripts, operand shapes)
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ibj,jkb->bik", [(3, 2, 4), (4, 5, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cd,bde->ae", [(2, 3, 4), (4, 5), (3, 5, 6)]),
    ("ij,jk,kl,lm->mi", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("iji->j", [(3, 2, 3)]), ("ij->ji", [(2, 3)]),
    ("ijk->", [(2, 3, 4)]), ("ijk->kj", [(2, 3, 4)]),
    ("i,i", [(4,), (4,)]), ("i,j->ij", [(2,), (3,)]), ("ij,ij->", [(2, 3), (2, 3)]),
    ("ij,kj->", [(2, 3), (4, 3)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("iij,jk->ik", [(3, 3, 4), (4, 2)]), ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("i...->...", [(3, 2, 2)]),
    ("ij,j", [(3, 4), (4,)]), ("ji,jk", [(4, 3), (4, 5)]), ("ij,kj->i", [(3, 4), (1, 4)]),
    ("bij,bjk->bik", [(1, 3, 4), (2, 4, 5)]),  # a size-1 dim against a larger one broadcasts
]
DTYPES = {"f32": np.float32, "i32": np.int32, "bool": np.bool_}


def _operands(shapes, dtype, seed=0):
  rng = np.random.default_rng(seed)
  if dtype == np.bool_:
    return [rng.random(s) < 0.5 for s in shapes]
  if dtype == np.int32:
    return [rng.integers(-3, 4, s).astype(np.int32) for s in shapes]
  return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _numpy_einsum(spec, ops):
  if ops[0].dtype == np.bool_:
    return np.einsum(spec, *[o.astype(np.int64) for o in ops]) > 0
  return np.asarray(np.einsum(spec, *ops)).astype(ops[0].dtype)


@pytest.mark.parametrize("short", DTYPES)
def test_einsum_against_numpy_eager_and_jitted(short):
  dtype = DTYPES[short]
  cases = [(spec, _operands(shapes, dtype, k)) for k, (spec, shapes) in enumerate(EINSUM_CASES)]
  jitted = revax.jit(lambda all_ops: [rnp.einsum(spec, *ops)
                                      for (spec, _), ops in zip(cases, all_ops, strict=True)])(
      [ops for _, ops in cases])
  for (spec, ops), got_jit in zip(cases, jitted, strict=True):
    expected = _numpy_einsum(spec, ops)
    for got in (rnp.einsum(spec, *ops), got_jit):
      assert got.dtype == expected.dtype, spec
      np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5, err_msg=spec)


@pytest.mark.parametrize("args,kwargs", [
    (("ij,jk", np.float32, np.int32), {}),
    (("ij,jk", np.int8, np.uint8), {}),
    (("ij,jk", np.bool_, np.int32), {}),
    (("ij,jk", np.int8, np.int8), {"preferred_element_type": np.int32}),
    (("ij,jk", np.float32, np.float32), {"preferred_element_type": np.float32}),
    (("ii->i", np.int8), {"preferred_element_type": np.int32}),
    (("ij,jk,kl", np.bool_, np.bool_, np.bool_), {}),
])
def test_einsum_dtypes_match_jax(args, kwargs):
  spec, *dts = args
  shapes = {"ij,jk": [(2, 3), (3, 4)], "ii->i": [(3, 3)],
            "ij,jk,kl": [(2, 3), (3, 4), (4, 5)]}[spec]
  ops = [np.ones(s, d) for s, d in zip(shapes, dts, strict=True)]
  want = jax.eval_shape(lambda *o: jnp.einsum(spec, *o, **kwargs), *ops)
  got = rnp.einsum(spec, *ops, **kwargs)
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_array_equal(np.asarray(got), np.asarray(jnp.einsum(spec, *ops, **kwargs)))


def test_einsum_of_python_scalars_is_weakly_typed_as_in_jax():
  got = rnp.einsum(",->", 2.0, 3.0)
  assert got.aval.weak_type and float(got) == 6.0
  assert rnp.einsum("i,->i", np.ones(3, np.float16), 2.0).dtype == np.float16


def _names(closed):
  return [e.primitive.name for e in closed.jaxpr.eqns]


@pytest.mark.parametrize("spec,shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ibj,jkb->bik", [(3, 2, 4), (4, 5, 2)]),  # the batch dim in odd positions
    ("ijb,jbk->bik", [(3, 4, 2), (4, 2, 5)]),
    ("jib,kbj->bik", [(4, 3, 2), (5, 2, 4)]),
])
def test_batched_einsum_is_one_dot_general_and_no_transpose(spec, shapes):
  ops = _operands(shapes, np.float32)
  closed = revax.make_jaxpr(lambda a, b: rnp.einsum(spec, a, b))(*ops)
  assert _names(closed) == ["dot_general"], _names(closed)
  text = revax.jit(lambda a, b: rnp.einsum(spec, a, b)).lower(*ops).as_text()
  assert text.count("stablehlo.dot_general") == 1 and "stablehlo.transpose" not in text
  np.testing.assert_allclose(rnp.einsum(spec, *ops), np.einsum(spec, *ops), rtol=1e-5)


@pytest.mark.parametrize("spec,shapes", [c for c in EINSUM_CASES if "," in c[0]])
def test_each_pairwise_contraction_is_one_dot_with_nothing_moved_before_it(spec, shapes):
  """n operands take n - 1 dot_generals, each on operands as they are: only the final result may
  be transposed (a diagonal or a sum over an index of one operand alone reduces it first)."""
  ops = _operands(shapes, np.float32)
  names = _names(revax.make_jaxpr(lambda *o: rnp.einsum(spec, *o))(*ops))
  assert names.count("dot_general") == len(shapes) - 1, names
  assert names.count("transpose") <= 1, names
  if "transpose" in names:
    assert names[-1] == "transpose", names
  inputs = spec.split("->")[0].split(",")
  if all(len(set(part)) == len(part) for part in inputs):  # no diagonals: nothing broadcast
    assert "broadcast_in_dim" not in names, names


def test_contraction_order_is_opt_einsums():
  a, b, c = np.ones((2, 3)), np.ones((3, 100)), np.ones((100, 5))
  path, _ = rnp.einsum_path("ij,jk,kl", a, b, c, optimize="optimal")
  assert path == jnp.einsum_path("ij,jk,kl", a, b, c, optimize="optimal")[0] == [(1, 2), (0, 1)]
  closed = revax.make_jaxpr(lambda *o: rnp.einsum("ij,jk,kl", *o))(a, b, c)
  first = closed.jaxpr.eqns[0]
  assert first.primitive.name == "dot_general"
  assert {tuple(v.aval.shape) for v in first.invars} == {(3, 100), (100, 5)}  # b and c first
  # optimize=False contracts left to right; a given path is followed
  for opt, pair in ((False, {(2, 3), (3, 100)}), ([(0, 2), (0, 1)], {(2, 3), (100, 5)})):
    eqn = revax.make_jaxpr(lambda *o: rnp.einsum("ij,jk,kl", *o, optimize=opt))(a, b, c).eqns[0]
    assert {tuple(v.aval.shape) for v in eqn.invars} == pair
    np.testing.assert_allclose(rnp.einsum("ij,jk,kl", a, b, c, optimize=opt),
                               np.einsum("ij,jk,kl", a, b, c), rtol=1e-6)


def test_interleaved_and_ellipsis_forms():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  y = np.arange(12, dtype=np.float32).reshape(3, 4)
  np.testing.assert_allclose(rnp.einsum(x, [0, 1], y, [1, 2], [0, 2]), x @ y)
  np.testing.assert_allclose(rnp.einsum(x, [0, 1], y, [1, 2]), x @ y)
  np.testing.assert_allclose(rnp.einsum(x, [Ellipsis, 1], [Ellipsis]), x.sum(1))
  np.testing.assert_allclose(rnp.einsum("...j->...", x), x.sum(-1))


def test_precision_and_preferred_type_reach_every_dot():
  ops = _operands([(2, 3), (3, 4), (4, 5)], np.float32)
  closed = revax.make_jaxpr(lambda *o: rnp.einsum("ij,jk,kl->il", *o, precision="highest",
                                                  preferred_element_type=np.float32))(*ops)
  dots = [e for e in closed.jaxpr.eqns if e.primitive.name == "dot_general"]
  assert len(dots) == 2
  for e in dots:
    assert e.params["precision"] == ("HIGHEST", "HIGHEST")
    assert e.params["preferred_element_type"] == np.float32


def test_einsum_errors():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(NotImplementedError, match="'out' argument"):
    rnp.einsum("ij->ij", x, out=x)
  with pytest.raises(ValueError, match=r"dimension 'j' has sizes 3 and 4"):
    rnp.einsum("ij,jk->ik", x, np.ones((4, 5), np.float32))
  with pytest.raises(ValueError, match=r"subscripts 'ijk' name 3 dimensions for an operand of "
                     r"shape \(2, 3\)"):
    rnp.einsum("ijk->i", x)
  with pytest.raises(ValueError, match="einsum"):
    rnp.einsum("ij,jk->ik", x)  # one operand too few
  with pytest.raises(TypeError, match="einsum requires ndarray or scalar arguments"):
    rnp.einsum("i->i", [1.0, 2.0])


@pytest.mark.parametrize("spec,shapes", [
    ("ibj,jkb->bik", [(3, 2, 4), (4, 5, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
])
def test_einsum_grads(spec, shapes):
  check_grads(lambda *o: rnp.einsum(spec, *o), tuple(_operands(shapes, np.float32)), order=2,
              modes=("fwd", "rev"))


def test_einsum_under_vmap_is_one_dot_before_anything_moves():
  a, b = _operands([(3, 2, 4), (4, 5, 2)], np.float32)
  f = lambda p, q: rnp.einsum("ibj,jkb->bik", p, q)
  batched = np.stack([a, a + 1, a - 1], axis=1)
  for in_axes, args in (((1, None), (batched, b)), ((1, 2), (batched, np.stack([b, b, b], 2)))):
    names = _names(revax.make_jaxpr(revax.vmap(f, in_axes=in_axes))(*args))
    assert names[0] == "dot_general" and names.count("dot_general") == 1, names
    assert set(names[1:]) <= {"transpose"}, names
    check_vmap(f, args, in_axes=in_axes)


# --- matmul ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb", [
    ((5, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4)), ((2, 2, 3), (3,)), ((1, 2, 3), (5, 3, 1)),
    ((2, 3), (4, 3, 5)), ((4, 2, 3), (3, 5)), ((3,), (3,)), ((1, 1, 2, 3), (1, 3, 4)),
    ((6, 1, 2, 3), (1, 5, 3, 4)),
])
def test_matmul_is_one_dot_without_broadcasts(sa, sb):
  a = np.arange(np.prod(sa), dtype=np.float32).reshape(sa) / 10
  b = np.arange(np.prod(sb), dtype=np.float32).reshape(sb) / 10
  names = _names(revax.make_jaxpr(rnp.matmul)(a, b))
  assert names.count("dot_general") == 1 and "broadcast_in_dim" not in names, names
  assert set(names[names.index("dot_general") + 1:]) <= {"transpose"}, names
  np.testing.assert_allclose(rnp.matmul(a, b), np.matmul(a, b), rtol=1e-5)
  np.testing.assert_allclose(revax.jit(rnp.matmul)(a, b), np.matmul(a, b), rtol=1e-5)
  assert rnp.matmul(a, b).shape == jax.eval_shape(jnp.matmul, a, b).shape


# --- weak types of operands and their gradients (every contraction, every weak/strong mix) ------
_CONTRACTIONS = {
    "matmul": lambda m, a, b: m.matmul(a, b), "dot": lambda m, a, b: m.dot(a, b),
    "inner": lambda m, a, b: m.inner(a, b), "vdot": lambda m, a, b: m.vdot(a, b),
    "tensordot": lambda m, a, b: m.tensordot(a, b, 1),
    "einsum": lambda m, a, b: m.einsum("ij,jk->ik", a, b),
}


def _operand(m, weak, dtype, shape):
  # jnp.full of a Python float is weakly typed in both libraries; m.ones(..., dtype) is not
  return m.full(shape, 0.5) if weak and dtype is None else m.full(shape, 0.5, dtype)


@pytest.mark.parametrize("name", sorted(_CONTRACTIONS))
def test_contraction_weak_types_of_results_and_gradients_match_jax(name):
  """A weakly typed operand (an array built from a Python scalar) keeps JAX's weak flags: the
  result is weak only when both operands are, and the operand's gradient is strong when the
  other operand is (revax once converted the weak operand first, so its gradient came back
  weak through the conversion's transpose)."""
  f = _CONTRACTIONS[name]
  for wa, wb in ((True, False), (False, True), (True, True), (False, False)):
    got, want = [], []
    for m, grad, out in ((rnp, revax.grad, got), (jnp, jax.grad, want)):
      a = _operand(m, wa, None if wa else np.float32, (2, 2))
      b = _operand(m, wb, None if wb else np.float32, (2, 2))
      res = f(m, a, b)
      ga, gb = grad(lambda a, b: f(m, a, b).sum(), argnums=(0, 1))(a, b)
      out.append([(x.dtype, x.aval.weak_type if m is rnp else x.weak_type)
                  for x in (res, ga, gb)])
      out.append([np.asarray(x) for x in (res, ga, gb)])
    assert got[0] == want[0], (name, wa, wb, got[0], want[0])
    for g, w in zip(got[1], want[1], strict=True):
      np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("spec,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_einsum_private_dot_general_is_called_as_jax_calls_it(spec, shapes, dtype):
  # flax's attention passes `jnp.einsum(..., _dot_general=...)` (its quantizing dots): each
  # pairwise contraction calls it as jax does (operands, dimension numbers, precision
  # positionally; preferred_element_type by keyword), and its results are what einsum combines
  ops = _operands(shapes, DTYPES[dtype], seed=3)

  def spy(lib, calls):
    def dot_general(a, b, dims, precision, preferred_element_type=None, **kw):
      calls.append((a.shape, b.shape, dims, precision, np.dtype(preferred_element_type), kw))
      out = lib.lax.dot_general(a, b, dims, precision,
                                preferred_element_type=preferred_element_type)
      return out * 2 + 1  # so that using its result (and not lax's) shows in the values
    return dot_general

  got_calls, want_calls = [], []
  pref = None if dtype == "f32" else np.int32
  got = rnp.einsum(spec, *ops, _dot_general=spy(revax, got_calls), preferred_element_type=pref)
  want = jnp.einsum(spec, *ops, _dot_general=spy(jax, want_calls), preferred_element_type=pref)
  assert got_calls == want_calls
  assert got.dtype == want.dtype
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
  jitted = revax.jit(lambda *a: rnp.einsum(spec, *a, _dot_general=spy(revax, [])))(*ops)
  np.testing.assert_allclose(np.asarray(jitted), np.asarray(
      jnp.einsum(spec, *ops, _dot_general=spy(jax, []))), rtol=1e-5, atol=1e-5)
