"""Run in a subprocess with 4 CPU devices for both libraries (see test_donation_debug_nans.py):
donate_argnums and debug_nans/debug_infs on jit over a mesh, compared with jax."""
import warnings

import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import Mesh as JMesh
from jax.sharding import NamedSharding as JNS
from jax.sharding import PartitionSpec as JP

import revax
from tests.sharding.children import auto_mesh
import revax.numpy as rnp
from revax.sharding import NamedSharding as RNS
from revax.sharding import PartitionSpec as RP

assert len(jax.devices()) == 4 and revax.local_device_count() == 4
X = np.arange(32.0, dtype=np.float32).reshape(8, 4)


def libs():
  yield "jax", jax, jnp, lambda *s: JNS(JMesh(np.array(jax.devices()), ("x",)), JP(*s))
  yield "revax", revax, rnp, lambda *s: RNS(auto_mesh((4,), ("x",)), RP(*s))


def donation(lib, j, np_, S):
  """{case: (deleted?, value, warned?)}, and the errors for using a donated array."""
  out = {}

  def run(name, f, *args):
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter("always")
      y = f(*args)
    warned = any("donated buffers were not usable" in str(w.message) for w in caught)
    out[name] = ([a.is_deleted() for a in jax.tree_util.tree_leaves(args)],
                 [np.asarray(v) for v in jax.tree_util.tree_leaves(y)], warned)

  put = lambda s=S("x"): j.device_put(X, s)
  double = j.jit(lambda v: v * 2, donate_argnums=0)
  run("same_layout", double, put())
  run("same_layout_again", double, put())  # (revax: the cached call)
  run("other_out_sharding", j.jit(lambda v: v * 2, donate_argnums=0, out_shardings=S()), put())
  run("no_matching_output", j.jit(lambda v: v.sum(), donate_argnums=0), put())
  run("second_of_two", j.jit(lambda v, w: (v + w, w * 3), donate_argnums=1), put(), put())
  run("pytree", j.jit(lambda t: {"a": t["a"] * 2, "b": t["b"] + 1}, donate_argnums=0),
      {"a": put(), "b": put(S(None, "x"))})
  run("with_in_shardings", j.jit(lambda v: -v, in_shardings=S("x"), out_shardings=S("x"),
                                 donate_argnums=0), put())
  # a copy of a sharded array has storage of its own, sharded as the original: donating the
  # copy leaves the original alive (jnp.copy, jnp.array(copy=True), the method)
  for how, copy in [("jnp.copy", np_.copy), ("array", np_.array), ("method", lambda v: v.copy())]:
    original = put()
    copied = copy(original)
    assert copied.sharding == original.sharding, (how, copied.sharding)
    run(f"copy_{how}", double, copied)
    out[f"copy_{how}_original"] = ([original.is_deleted()], [np.asarray(original)], False)
  x = put()
  j.jit(lambda v: v * 2, donate_argnums=0)(x)
  errors = []
  for use in (lambda: x + 1, lambda: np.asarray(x), lambda: x.sum()):
    try:
      use()
      errors.append(None)
    except RuntimeError as e:
      errors.append(str(e))
  c = j.jit(lambda v: v * 2 + 1, donate_argnums=0).lower(put()).compile().memory_analysis()
  c0 = j.jit(lambda v: v * 2 + 1).lower(put()).compile().memory_analysis()
  return out, errors, (c.alias_size_in_bytes, c0.alias_size_in_bytes)


results = {name: donation(name, j, np_, S) for name, j, np_, S in libs()}
(jout, jerr, jmem), (rout, rerr, rmem) = results["jax"], results["revax"]
for case, (deleted, values, warned) in jout.items():
  r_deleted, r_values, r_warned = rout[case]
  assert r_deleted == deleted, (case, r_deleted, deleted)
  assert r_warned == warned, (case, r_warned, warned)
  for a, b in zip(r_values, values, strict=True):
    np.testing.assert_array_equal(a, b, err_msg=case)
assert rerr == jerr, (rerr, jerr)  # RuntimeError("Array has been deleted with shape=...")
assert rmem == jmem and rmem[0] > 0, (rmem, jmem)  # the buffers really alias (per device)

# f(donate(a), a): refused before any device runs (no partition left waiting), later calls work
S = lambda *s: RNS(auto_mesh((4,), ("x",)), RP(*s))
a = revax.device_put(X, S("x"))
try:
  revax.jit(lambda v, w: v * w, donate_argnums=0)(a, a)
  raise AssertionError("donating an argument also passed again did not raise")
except revax.errors.JaxRuntimeError as e:
  assert "donated in the same call" in str(e), e
assert not a.is_deleted()
np.testing.assert_array_equal(revax.jit(lambda v: v * 2, donate_argnums=0)(a), 2 * X)
assert a.is_deleted()

# debug_nans / debug_infs on the sharded path: FloatingPointError as on one device
for name, j, np_, S in libs():
  xs = j.device_put(X - 3, S("x"))
  cases = [("nan", "jax_debug_nans", lambda: j.jit(lambda v: np_.log(v))(xs)),
           ("nan", "jax_debug_nans", lambda: j.jit(lambda v: np_.sqrt(v), out_shardings=S())(X - 3)),
           ("inf", "jax_debug_infs", lambda: j.jit(lambda v: 1 / v, in_shardings=S("x"))(X - 3))]
  for kind, flag, call in cases:
    j.config.update(flag, True)
    try:
      call()
      raise AssertionError(f"{name}: no FloatingPointError for {kind}")
    except FloatingPointError as e:
      assert kind in str(e), (name, e)
    finally:
      j.config.update(flag, False)
  j.config.update("jax_debug_nans", True)
  try:
    clean = j.jit(lambda v: np_.exp(v) * 2)(xs)  # no NaN: no error, still sharded
    assert clean.sharding.spec == type(clean.sharding.spec)("x"), clean.sharding
  finally:
    j.config.update("jax_debug_nans", False)
print("DONATION_OK")
