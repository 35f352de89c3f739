"""The deprecated jax.experimental.pjit.pjit and jax.experimental.shard_map.shard_map: present
only as deprecated attributes (a DeprecationWarning on access, absent from dir(), as in jax),
and working as jit / shard_map with their older signatures."""
import inspect
import warnings

import jax
import jax.experimental.pjit as jpjit_mod
import jax.experimental.shard_map as jshmap_mod
import numpy as np
import pytest

import revax
import revax.experimental.pjit as pjit_mod
import revax.experimental.shard_map as shmap_mod
import revax.numpy as jnp
from revax.sharding import Mesh, NamedSharding, PartitionSpec as P


def _quietly(mod, name):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    return getattr(mod, name)


@pytest.mark.parametrize("mod,jmod,name", [(pjit_mod, jpjit_mod, "pjit"),
                                           (shmap_mod, jshmap_mod, "shard_map")])
def test_deprecated_attribute_warns_like_jax(mod, jmod, name):
  mod.__getattr__.cache_clear()  # both warn on the first access only (a cached __getattr__)
  jmod.__getattr__.cache_clear()
  with pytest.warns(DeprecationWarning) as rec:
    fn = getattr(mod, name)
  with pytest.warns(DeprecationWarning) as jrec:
    jfn = getattr(jmod, name)
  assert str(rec[0].message) == str(jrec[0].message)
  assert name not in dir(mod) and name not in dir(jmod)
  assert list(inspect.signature(fn).parameters) == list(inspect.signature(jfn).parameters)
  with pytest.raises(AttributeError):
    mod.nothing_here  # noqa: B018


def test_pjit_is_jit_with_its_older_signature():
  pjit = _quietly(pjit_mod, "pjit")
  mesh = Mesh(np.array(revax.devices()[:1]), ("x",))
  s = NamedSharding(mesh, P("x"))
  f = pjit(lambda x, n: x * n, s, NamedSharding(mesh, P()), static_argnums=1)
  y = f(jnp.arange(4.), 3)
  np.testing.assert_array_equal(y, 3 * np.arange(4.))
  assert y.sharding == NamedSharding(mesh, P())
  g = pjit(lambda a, b: a + b, donate_argnames="a")
  np.testing.assert_array_equal(g(jnp.ones(2), jnp.ones(2)), 2 * np.ones(2))
  with revax.set_mesh(mesh):
    h = pjit(lambda x: x * 2, in_shardings=P("x"))
    np.testing.assert_array_equal(h(jnp.arange(2.)), [0., 2.])
  with pytest.raises(NotImplementedError, match="device"):
    pjit(lambda x: x, device=revax.devices()[0])
  # XLA options go to jit, as in jax (an unknown one is XLA's error at the call)
  jpjit = _quietly(jpjit_mod, "pjit")
  for p, lib in ((pjit, revax), (jpjit, jax)):
    with pytest.raises(lib.errors.JaxRuntimeError, match="No such compile option"):
      p(lambda x: x * 2, compiler_options={"xla_nope": True})(np.ones(2, np.float32))


def test_shard_map_with_check_rep_matches_jax():
  shard_map = _quietly(shmap_mod, "shard_map")
  jshard_map = _quietly(jshmap_mod, "shard_map")
  mesh = Mesh(np.array(revax.devices()[:1]), ("x",))
  jmesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
  f = shard_map(lambda x: x.sum(keepdims=True), mesh, P("x"), P("x"), check_rep=False)
  jf = jshard_map(lambda x: x.sum(keepdims=True), jmesh, jax.P("x"), jax.P("x"),
                  check_rep=False)
  x = np.arange(6.).reshape(3, 2)
  np.testing.assert_array_equal(f(jnp.asarray(x)), jf(x))
