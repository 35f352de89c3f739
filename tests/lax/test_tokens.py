"""XLA tokens as values (revax/_src/lax/tokens.py): lax.create_token, lax.after_all and their
primitives against jax 0.10.2: printed jaxprs, StableHLO, eager and jitted results (Tokens),
jit arguments and results, autodiff and vmap around tokens, and the errors for misuse."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax import lax as rl
from revax._src.core.typecheck import check_jaxpr

LIBS = {"jax": (jax, jnp, jax.lax), "revax": (revax, rnp, rl)}


def _programs(lib):
  """The same token programs for each library: [(name, fn, args builder)]."""
  j, np_, lax = LIBS[lib]
  return [
      ("create", lambda: lax.create_token(), lambda: ()),
      ("create ignores its argument", lambda x: lax.create_token(x), lambda: (np_.ones(3),)),
      ("after_all of none", lambda: lax.after_all(), lambda: ()),
      ("after_all of two", lambda t: lax.after_all(t, lax.create_token()),
       lambda: (lax.create_token(),)),
      ("after_all of one twice", lambda t: lax.after_all(t, t), lambda: (lax.create_token(),)),
      ("token beside arrays", lambda t, x: (lax.after_all(t), x * 2, lax.create_token()),
       lambda: (lax.create_token(), np_.arange(3.0))),
      ("create_token_p with an operand", lambda x: lax.create_token_p.bind(x),
       lambda: (np_.float32(1),)),
      ("after_all_p of none", lambda: lax.after_all_p.bind(), lambda: ()),
      ("identity", lambda t: t, lambda: (lax.create_token(),)),
  ]


def _kind(v):
  """A comparable account of a result: a token, or an array's dtype, weak type and values."""
  if type(v).__name__ == "Token":
    return "Token"
  if isinstance(v, (tuple, list)):
    return tuple(map(_kind, v))
  a = np.asarray(v)
  return (str(a.dtype), bool(getattr(v, "weak_type", False)), a.tolist())


def _each_program():
  return [p[0] for p in _programs("jax")]


@pytest.mark.parametrize("name", _each_program())
def test_jaxpr_prints_as_jax_s(name):
  (jf, jargs), (rf, rargs) = [next((f, a) for n, f, a in _programs(lib) if n == name)
                              for lib in ("jax", "revax")]
  want = str(jax.make_jaxpr(jf)(*jargs()))
  closed = revax.make_jaxpr(rf)(*rargs())
  check_jaxpr(closed)
  assert str(closed) == want


@pytest.mark.parametrize("name", _each_program())
@pytest.mark.parametrize("how", ["eager", "jit", "jit again"])
def test_results_are_jax_s(name, how):
  results = []
  for lib in ("jax", "revax"):
    f, args = next((f, a) for n, f, a in _programs(lib) if n == name)
    j = LIBS[lib][0]
    if how == "eager":
      out = f(*args())
    else:
      g = j.jit(f)
      out = g(*args())
      if how == "jit again":  # (the second call takes jit's fast path where it can)
        out = g(*args())
    results.append(_kind(out))
  assert results[0] == results[1]


def _ops(text):
  """The StableHLO ops of a module's text (generic or pretty form) and the main signature's
  token count."""
  ops = sorted(re.findall(r"stablehlo\.(create_token|after_all)", text))
  main = next(line for line in text.splitlines() if "@main" in line)
  return ops, main.count("!stablehlo.token")


@pytest.mark.parametrize("name", _each_program())
def test_lowering_has_jax_s_token_ops_and_signature(name):
  texts = []
  for lib in ("jax", "revax"):
    f, args = next((f, a) for n, f, a in _programs(lib) if n == name)
    texts.append(_ops(LIBS[lib][0].jit(f).lower(*args()).as_text()))
  assert texts[0] == texts[1]


def test_a_token_passes_through_jitted_functions_and_orders_nothing_else():
  f = revax.jit(lambda t, x: (rl.after_all(t, rl.create_token()), rnp.sin(x)))
  t = rl.create_token()
  for _ in range(3):
    t, y = f(t, rnp.float32(0.5))
    assert type(t).__name__ == "Token"
    assert t.block_until_ready() is None
    np.testing.assert_allclose(np.asarray(y), np.sin(np.float32(0.5)), rtol=1e-6)


def test_tokens_through_control_flow():
  """jax 0.10.2 fails with an AttributeError on a token in cond, scan and fori_loop (its
  AbstractToken has no `mat`); revax carries the token through them, and the arrays beside it
  are jax's (computed by jax without the token)."""
  t = rl.create_token()
  for f in (revax.jit, lambda g: g):
    out = f(lambda p, t: rl.cond(p, lambda t: rl.after_all(t), lambda t: t, t))(True, t)
    assert type(out).__name__ == "Token"
    tk, ys = f(lambda t, xs: rl.scan(lambda c, x: (rl.after_all(c), x * 2), t, xs))(
        t, rnp.arange(3.0))
    assert type(tk).__name__ == "Token"
    want = jax.lax.scan(lambda c, x: (c, x * 2), 0, jnp.arange(3.0))[1]
    np.testing.assert_array_equal(np.asarray(ys), np.asarray(want))
    tk = f(lambda t: rl.fori_loop(0, 3, lambda i, c: rl.after_all(c), t))(t)
    assert type(tk).__name__ == "Token"
  closed = revax.make_jaxpr(lambda t: rl.fori_loop(0, 3, lambda i, c: rl.after_all(c), t))(t)
  check_jaxpr(closed)


def _grads(lib):
  j, np_, lax = LIBS[lib]
  tok = lax.create_token()
  return [
      j.grad(lambda x: (lax.create_token(x), x * 2)[1])(1.0),
      j.grad(lambda x, t: (lax.after_all(t), x * x)[1])(3.0, tok),
      j.grad(j.checkpoint(lambda x: (lax.after_all(lax.create_token(x)), x * 2)[1]))(1.0),
      j.grad(j.jit(lambda x, t: (lax.after_all(t), x * x)[1]))(2.0, tok),
      j.value_and_grad(lambda x: (x * x, lax.create_token()), has_aux=True)(2.0)[0],
      j.vmap(lambda x: (lax.create_token(x), x * 2)[1])(np_.arange(3.0)),
      j.vmap(lambda x: (lax.create_token(x), x), out_axes=(None, 0))(np_.arange(3.0))[1],
      j.vmap(lambda x, t: (lax.after_all(t), x * 2), in_axes=(0, None), out_axes=(None, 0))(
          np_.arange(3.0), tok)[1],
  ]


def test_autodiff_and_vmap_around_tokens_as_jax():
  want, got = _grads("jax"), _grads("revax")
  assert [_kind(g) for g in got] == [_kind(w) for w in want]


def test_has_aux_and_vmap_return_the_token():
  (_, aux), _ = revax.value_and_grad(lambda x: (x * x, rl.create_token()), has_aux=True)(2.0)
  assert type(aux).__name__ == "Token"
  tok, _ = revax.vmap(lambda x: (rl.create_token(x), x), out_axes=(None, 0))(rnp.arange(3.0))
  assert type(tok).__name__ == "Token"


def test_types_of_tokens_are_jax_s():
  for lib in ("jax", "revax"):
    j, _, lax = LIBS[lib]
    assert repr(j.typeof(lax.create_token())) == "AbstractToken()"
    assert repr(j.eval_shape(lambda: lax.create_token())) == "AbstractToken()"
    assert j.tree.leaves(lax.create_token())[0].__class__.__name__ == "Token"
    assert lax.create_token_p.name == "create_token" and lax.after_all_p.name == "after_all"
    assert not lax.create_token_p.multiple_results and not lax.after_all_p.multiple_results


@pytest.mark.parametrize("case", ["array operand", "array operand under jit",
                                  "array operand under vmap", "token plus one",
                                  "array of a token"])
def test_misuse_raises_jax_s_errors(case):
  errors = []
  for lib in ("jax", "revax"):
    j, np_, lax = LIBS[lib]
    call = {
        "array operand": lambda: lax.after_all(np_.ones(3)),
        "array operand under jit": lambda: j.jit(
            lambda x: lax.after_all(lax.create_token(), x))(np_.ones(3)),
        # (jax raises NotImplementedError here, for want of a batching rule, before it type
        # checks the operands; revax's batching rule binds them and the type check speaks)
        "array operand under vmap": lambda: j.vmap(
            lambda x: lax.after_all(lax.create_token(), x))(np_.ones(3)),
        "token plus one": lambda: lax.create_token() + 1,
        "array of a token": lambda: np_.asarray(lax.create_token()),
    }[case]
    with pytest.raises(Exception) as info:
      call()
    errors.append(info.value)
  if case == "array operand under vmap":
    assert type(errors[0]) is NotImplementedError
    assert type(errors[1]) is TypeError
    assert str(errors[1]) == "Arguments to after_all must be tokens"
    return
  assert type(errors[1]) is type(errors[0])
  if case.startswith("array operand"):
    assert str(errors[1]) == str(errors[0]) == "Arguments to after_all must be tokens"


def test_tokens_have_no_tangents():
  """jax fails with a KeyError (no zeros for AbstractToken) on the tangent of a token output
  and with NotImplementedError on after_all of a differentiated operand; revax says why."""
  with pytest.raises(TypeError, match="token has no tangent"):
    revax.jvp(lambda x: (rl.create_token(x), x * 2), (1.0,), (1.0,))
  with pytest.raises(TypeError, match="after_all"):
    revax.grad(lambda x: (rl.after_all(rl.create_token(), x), x * 2)[1])(1.0)
  with pytest.raises(TypeError, match="out_axes=None"):
    revax.vmap(lambda x: rl.create_token(x))(rnp.ones(3))


def test_a_token_beside_a_float0_result_of_jit():
  """A program returning a token and an integer's float0 tangent: the tangent leaves as NumPy
  float0 zeros, as jax's."""
  got = []
  for lib in ("jax", "revax"):
    j, _, lax = LIBS[lib]
    f = j.jit(lambda t, x: (lax.after_all(t), j.grad(lambda a, b: a * b, argnums=1,
                                                     allow_int=True)(1.0, x)))
    tok, ct = f(lax.create_token(), np.int32(3))
    got.append((type(tok).__name__, isinstance(ct, np.ndarray), np.asarray(ct).dtype.name,
                np.shape(ct)))  # (jax's is a subclass of ndarray)
  assert got[0] == got[1]
