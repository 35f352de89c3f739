"""Varying manual axes in this process, on a one-device mesh (shard_map's vmap form: the body is
traced typed, then run as vmaps): types against jax, the type checker on typed jaxprs and on
their transformations, the untyped copy of a body, ManualAxisType, and pcast's refusals.
The 4-device differential suite is test_vma.py."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax._src.core.typecheck import check_jaxpr
from revax._src.core.vma import ManualAxisType as RevaxMAT
from revax._src.core.vma_jaxpr import untyped_jaxpr

X = np.arange(8, dtype=np.float32).reshape(4, 2)


def _mesh(lib):
  auto = lib.sharding.AxisType.Auto
  return lib.make_mesh((1,), ("x",), (auto,))


BODIES = {
    "identity": lambda lib, np_, a, b: a,
    "implicit pvary": lambda lib, np_, a, b: a * b,
    "psum": lambda lib, np_, a, b: lib.lax.psum(a, "x"),
    "psum of invariant": lambda lib, np_, a, b: lib.lax.psum(b, "x"),
    "pcast": lambda lib, np_, a, b: lib.lax.pcast(b, "x", to="varying"),
    "all_gather": lambda lib, np_, a, b: lib.lax.all_gather(b, "x"),
    "zeros_like": lambda lib, np_, a, b: np_.zeros_like(a),
    "scan": lambda lib, np_, a, b: lib.lax.scan(lambda c, r: (c + r * b[0], c), a[0], a)[0],
    "scan carry error": lambda lib, np_, a, b: lib.lax.scan(lambda c, r: (c + r, c), b[0],
                                                            a)[0],
    "cond": lambda lib, np_, a, b: lib.lax.cond(True, lambda: a, lambda: b),
    "grad": lambda lib, np_, a, b: lib.grad(lambda w: (a * w).sum())(b),
}


def _typeof_inside(lib, np_, body):
  seen = []

  def f(a, b):
    try:
      seen.append(str(lib.typeof(body(lib, np_, a, b))))
    except Exception as e:  # noqa: BLE001
      seen.append(type(e).__name__)
    return a
  P = lib.sharding.PartitionSpec
  lib.shard_map(f, mesh=_mesh(lib), in_specs=(P("x"), P()), out_specs=P("x"))(X, X)
  return seen[0]


@pytest.mark.parametrize("name", sorted(BODIES))
def test_types_inside_match_jax(name):
  assert (_typeof_inside(revax, rnp, BODIES[name])
          == _typeof_inside(jax, jnp, BODIES[name]))


def _typed_fun(name):
  P = revax.sharding.PartitionSpec
  body = lambda a, b: BODIES[name](revax, rnp, a, b)
  return revax.shard_map(lambda a, b: revax.lax.psum((body(a, b) * a).sum(), "x"),
                         mesh=_mesh(revax), in_specs=(P("x"), P()), out_specs=P())


@pytest.mark.parametrize("name", sorted(set(BODIES) - {"cond", "scan carry error"}))
def test_typed_jaxprs_typecheck_under_transformations(name):
  f = _typed_fun(name)
  for g, args in ((f, (X, X)), (revax.grad(f, argnums=1), (X, X)), (revax.jit(f), (X, X)),
                  (revax.vmap(f, in_axes=(None, 0)), (X, np.stack([X, X + 1])))):
    check_jaxpr(revax.make_jaxpr(g)(*args))
  want = jax.grad(lambda a, b: jax.shard_map(
      lambda a, b: jax.lax.psum((BODIES[name](jax, jnp, a, b) * a).sum(), "x"),
      mesh=_mesh(jax), in_specs=(jax.P("x"), jax.P()), out_specs=jax.P())(a, b),
      argnums=1)(X, X)
  np.testing.assert_allclose(revax.grad(f, argnums=1)(X, X), want, rtol=1e-6)


def test_untyped_copy_of_a_body_has_no_manual_axes():
  P = revax.sharding.PartitionSpec
  seen = []

  def body(a, b):  # (the jaxpr of a typed function, made inside the body)
    seen.append(revax.make_jaxpr(
        lambda a, b: revax.lax.scan(lambda c, r: (c * r + b[0], c), a[0], a)[0])(a, b))
    return a
  revax.shard_map(body, mesh=_mesh(revax), in_specs=(P("x"), P()), out_specs=P("x"))(X, X)
  typed = seen[0].jaxpr
  assert "{V:x}" in str(typed) and "pvary" in str(typed)
  check_jaxpr(seen[0])
  plain = untyped_jaxpr(typed)
  assert "{V:" not in str(plain) and str(plain).count("scan") == str(typed).count("scan")
  check_jaxpr(plain)
  assert untyped_jaxpr(plain) is plain  # (nothing typed: itself)


def test_manual_axis_type_matches_jax():
  for kw in ({"varying": {"i"}}, {"varying": {"i", "j"}, "reduced": {"k"}}, {}):
    ours, theirs = RevaxMAT(**kw), jax.sharding.ManualAxisType(**kw)
    assert (ours.varying, ours.unreduced, ours.reduced) == (
        theirs.varying, theirs.unreduced, theirs.reduced)
    assert ours.empty == theirs.empty and ours.vur == theirs.vur
    assert repr(ours) == repr(theirs)
    assert ours.update(varying={"z"}).varying == theirs.update(varying={"z"}).varying
  for lib_mat in (RevaxMAT, jax.sharding.ManualAxisType):
    with pytest.raises(ValueError, match="varying and reduced cannot have common mesh axes"):
      lib_mat(varying={"i"}, reduced={"i"})
  assert revax.sharding.ManualAxisType is RevaxMAT


def test_pcast_refusals():
  P = revax.sharding.PartitionSpec
  with pytest.raises(ValueError, match="outside of any shard_map"):
    revax.lax.pcast(rnp.ones(2), "x", to="varying")
  f = revax.shard_map(lambda b: revax.lax.pcast(b, "x", to="reduced"), mesh=_mesh(revax),
                      in_specs=P(), out_specs=P())
  with pytest.raises(NotImplementedError, match="reduced"):
    f(X)
  with pytest.raises(NotImplementedError, match="reduced"):
    revax.shard_map(lambda b: revax.lax.all_gather(b, "x", to="reduced"), mesh=_mesh(revax),
                    in_specs=P(), out_specs=P())(X)
  # with check_vma=False nothing is typed: pcast is the identity
  g = revax.shard_map(lambda b: revax.lax.pcast(b, "x", to="varying"), mesh=_mesh(revax),
                      in_specs=P(), out_specs=P(), check_vma=False)
  np.testing.assert_array_equal(g(X), X)
