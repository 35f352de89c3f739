"""Typed PRNG key arrays as JAX 0.10.2 has them, against jax: pytree leaves for the tree
utilities (revax.tree_util / revax.tree), passed through jit, vmap, scan, fori_loop, while_loop,
cond, stop_gradient and grad (as non-differentiable arguments), and taken by the revax.numpy
and revax.lax functions jax allows on them (shape functions, where, take, concatenate, ...),
with jax's TypeError for arithmetic. Generated over every sampler of revax.random and every tree
utility."""
import inspect
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests import platform_tolerances
from tests.dtype_tables import records
from revax import random as rr

jr = jax.random


def _data(x, lib):
  """Keys -> their uint32 data, arrays -> NumPy, recursively over tuples/lists/dicts."""
  if isinstance(x, (tuple, list)):
    return type(x)(_data(v, lib) for v in x)
  if isinstance(x, dict):
    return {k: _data(v, lib) for k, v in x.items()}
  if lib is jax and isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
    return ("key", str(x.dtype), np.asarray(jr.key_data(x)))
  if lib is revax and isinstance(x, rr.PRNGKeyArray):
    return ("key", str(x.dtype), np.asarray(rr.key_data(x)))
  if isinstance(x, (str, type(None))):
    return x
  return np.asarray(x)


def _same(a, b):
  if isinstance(a, tuple) and a and isinstance(a[0], str):
    assert isinstance(b, tuple) and a[:2] == b[:2], (a, b)
    np.testing.assert_array_equal(a[2], b[2])
  elif isinstance(a, (tuple, list)):
    assert type(a) is type(b) and len(a) == len(b), (a, b)
    for x, y in zip(a, b, strict=True):
      _same(x, y)
  elif isinstance(a, dict):
    assert a.keys() == b.keys()
    for k in a:
      _same(a[k], b[k])
  elif isinstance(a, (str, type(None))):
    assert a == b, (a, b)
  else:
    assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
    if a.dtype != jax.dtypes.float0:
      rtol, atol = platform_tolerances.tolerance(2e-6, 2e-6)  # samplers' log/erf_inv on a TPU
      np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _outcome(fn, lib, rnd):
  try:
    return ("ok", _data(fn(lib, rnd), lib))
  except Exception as e:  # noqa: BLE001 (the exception type is compared)
    return ("raise", type(e))


def both(fn, recorded=None):
  """Run `fn(lib, random)` with jax and with revax and compare outcomes (values/exceptions);
  jax's outcome from the record under the key `recorded`, where it is given (see below)."""
  out = {revax: _outcome(fn, revax, rr)}
  if recorded is None:
    out[jax] = _outcome(fn, jax, jr)
  else:
    out[jax] = JAX_OUTCOMES.get(recorded, lambda: _outcome(fn, jax, jr))
  assert out[jax][0] == out[revax][0], out
  if out[jax][0] == "raise":
    assert issubclass(out[revax][1], out[jax][1]), out
  else:
    _same(out[jax][1], out[revax][1])


# --- leaves ------------------------------------------------------------------------------------
TREE_UTILS = {
    "tree_leaves": lambda t, k: t.tree_leaves({"k": k, "x": [k, 1.0]}),
    "tree_flatten": lambda t, k: t.tree_flatten((k, k))[0],
    "tree_structure_leaves": lambda t, k: t.tree_structure(k).num_leaves,
    "tree_map": lambda t, k: t.tree_map(lambda x: x, {"a": k, "b": (k,)}),
    "tree_map_two": lambda t, k: t.tree_map(lambda x, y: y, {"a": k}, {"a": 2.0}),
    "tree_leaves_with_path": lambda t, k: [x for _, x in t.tree_leaves_with_path({"a": k})],
    "tree_flatten_with_path": lambda t, k: [x for _, x in t.tree_flatten_with_path([k])[0]],
    "tree_map_with_path": lambda t, k: t.tree_map_with_path(lambda p, x: x, [k]),
    "tree_reduce": lambda t, k: t.tree_reduce(lambda a, b: a + 1, [k, k, k], 0),
    "tree_all": lambda t, k: t.tree_all([k]),
    "all_leaves": lambda t, k: t.all_leaves([k, k]),
    "tree_unflatten": lambda t, k: t.tree_unflatten(t.tree_structure((k, 1)), [k, k]),
    "tree_transpose": lambda t, k: t.tree_transpose(
        t.tree_structure([0, 0]), t.tree_structure((0, 0)), [(k, k), (k, k)]),
    "tree_broadcast": lambda t, k: t.tree_broadcast(1, {"a": k, "b": k}),
    "flatten_one_level": lambda t, k: _flatten_one(t, k),
    "is_tree_node": lambda t, k: t.is_tree_node(type(k)),
    "treedef_is_leaf": lambda t, k: t.treedef_is_leaf(t.tree_structure(k)),
}


def _flatten_one(t, k):
  try:
    return t.flatten_one_level(k)
  except ValueError:
    return "leaf"


@pytest.mark.parametrize("name", sorted(TREE_UTILS))
@pytest.mark.parametrize("shape", [(), (3,)])
def test_tree_utilities_see_keys_as_leaves(name, shape):
  def run(lib, rnd):
    k = rnd.split(rnd.key(0), shape) if shape else rnd.key(0)
    return TREE_UTILS[name](lib.tree_util, k)
  both(run)


@pytest.mark.parametrize("name", ["leaves", "map", "structure", "flatten", "reduce", "all"])
def test_jax_tree_short_names_see_keys_as_leaves(name):
  calls = {"leaves": lambda t, k: t.leaves([k]), "map": lambda t, k: t.map(lambda x: x, [k]),
           "structure": lambda t, k: t.structure([k]).num_leaves,
           "flatten": lambda t, k: t.flatten({"a": k})[0],
           "reduce": lambda t, k: t.reduce(lambda a, b: a + 1, [k, k], 0),
           "all": lambda t, k: t.all([k])}
  both(lambda lib, rnd: calls[name](lib.tree, rnd.key(3)))


def test_key_is_one_leaf_with_key_shape_and_dtype():
  k = rr.split(rr.key(1), 5)
  (leaf,) = revax.tree_util.tree_leaves(k)
  assert leaf is k and k.shape == (5,) and str(k.dtype) == "key<fry>"
  assert rnp.issubdtype(k.dtype, revax.dtypes.prng_key)
  assert revax.tree_util.tree_structure({"a": k}) == revax.tree_util.tree_structure({"a": 0})
  assert rr.wrap_key_data(rr.key_data(k)).shape == (5,)


# --- every sampler, given a key through jit, vmap and scan ---------------------------------------
SAMPLERS = {
    "bits": lambda r, k: r.bits(k, (2,)),
    "uniform": lambda r, k: r.uniform(k, (2,)),
    "normal": lambda r, k: r.normal(k, (2,)),
    "randint": lambda r, k: r.randint(k, (2,), 0, 10),
    "bernoulli": lambda r, k: r.bernoulli(k, 0.3, (2,)),
    "truncated_normal": lambda r, k: r.truncated_normal(k, -1.0, 1.0, (2,)),
    "exponential": lambda r, k: r.exponential(k, (2,)),
    "gamma": lambda r, k: r.gamma(k, 2.0, (2,)),
    "loggamma": lambda r, k: r.loggamma(k, 2.0, (2,)),
    "beta": lambda r, k: r.beta(k, 2.0, 3.0, (2,)),
    "dirichlet": lambda r, k: r.dirichlet(k, np.ones(3, np.float32)),
    "categorical": lambda r, k: r.categorical(k, np.zeros(4, np.float32), shape=(2,)),
    "choice": lambda r, k: r.choice(k, 5, (2,)),
    "permutation": lambda r, k: r.permutation(k, 5),
    "cauchy": lambda r, k: r.cauchy(k, (2,)),
    "laplace": lambda r, k: r.laplace(k, (2,)),
    "logistic": lambda r, k: r.logistic(k, (2,)),
    "gumbel": lambda r, k: r.gumbel(k, (2,)),
    "pareto": lambda r, k: r.pareto(k, 2.0, (2,)),
    "poisson": lambda r, k: r.poisson(k, 3.0, (2,)),
    "binomial": lambda r, k: r.binomial(k, 5.0, 0.3, (2,)),
    "geometric": lambda r, k: r.geometric(k, 0.3, (2,)),
    "chisquare": lambda r, k: r.chisquare(k, 3.0, (2,)),
    "f": lambda r, k: r.f(k, 3.0, 4.0, (2,)),
    "t": lambda r, k: r.t(k, 3.0, (2,)),
    "rayleigh": lambda r, k: r.rayleigh(k, 1.0, (2,)),
    "wald": lambda r, k: r.wald(k, 1.0, (2,)),
    "weibull_min": lambda r, k: r.weibull_min(k, 1.0, 2.0, (2,)),
    "maxwell": lambda r, k: r.maxwell(k, (2,)),
    "double_sided_maxwell": lambda r, k: r.double_sided_maxwell(k, 0.0, 1.0, (2,)),
    "generalized_normal": lambda r, k: r.generalized_normal(k, 2.0, (2,)),
    "lognormal": lambda r, k: r.lognormal(k, 1.0, (2,)),
    "triangular": lambda r, k: r.triangular(k, 0.0, 0.5, 1.0, (2,)),
    "rademacher": lambda r, k: r.rademacher(k, (2,)),
    "ball": lambda r, k: r.ball(k, 3),
    "orthogonal": lambda r, k: r.orthogonal(k, 3),
    "multivariate_normal": lambda r, k: r.multivariate_normal(
        k, np.zeros(2, np.float32), np.eye(2, dtype=np.float32)),
    "split": lambda r, k: r.split(k),
    "fold_in": lambda r, k: r.fold_in(k, 3),
    "clone": lambda r, k: r.clone(k),
}


def test_the_sampler_table_covers_revax_random():
  not_samplers = {"key", "PRNGKey", "key_data", "wrap_key_data", "key_impl", "key_dtype",
                  "PRNGKeyArray", "default_prng_impl", "resolve_prng_impl", "multinomial",
                  "shuffle", "unsafe_rbg_key", "threefry2x32_key", "rbg_key", "threefry_2x32",
                  "gamma_p", "bits_p"}
  public = {n for n, v in vars(rr).items() if callable(v) and not n.startswith("_")
            and not inspect.isclass(v)}
  missing = sorted(public - set(SAMPLERS) - not_samplers)
  assert not missing, missing


TRANSFORMS = {
    "jit": lambda lib, f, k: lib.jit(f)(k),
    "vmap": lambda lib, f, k: lib.vmap(f)(lib.random.split(k, 3)),
    "scan": lambda lib, f, k: lib.lax.scan(lambda c, x: (c, f(x)), 0, lib.random.split(k, 2))[1],
    "jit_closed_over": lambda lib, f, k: lib.jit(lambda: f(k))(),
}


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_every_sampler_takes_a_key_through_transforms(sampler, transform):
  both(_through(sampler, transform), recorded=f"{sampler} {transform}")


def _through(sampler, transform):
  return lambda lib, rnd: TRANSFORMS[transform](lib, lambda k: SAMPLERS[sampler](rnd, k),
                                                rnd.key(7))


# --- keys as carries, outputs and non-differentiable arguments ----------------------------------
PROGRAMS = {
    "jit_identity": lambda lib, r, k: lib.jit(lambda k: k)(r.split(k, 3)),
    "jit_split": lambda lib, r, k: lib.jit(lambda k: r.split(k, 4))(k),
    "vmap_split": lambda lib, r, k: lib.vmap(r.split)(r.split(k, 3)),
    "vmap_normal": lambda lib, r, k: lib.vmap(lambda k: r.normal(k, ()))(r.split(k, 3)),
    "vmap_in_axes_neg": lambda lib, r, k: lib.vmap(lambda k: k, in_axes=-1, out_axes=0)(
        r.split(k, 6).reshape(2, 3)),
    "vmap_out_axes_neg": lambda lib, r, k: lib.vmap(r.split, out_axes=-1)(r.split(k, 3)),
    "vmap_dict": lambda lib, r, k: lib.vmap(lambda d: r.uniform(d["k"]), in_axes=({"k": 0},))(
        {"k": r.split(k, 2)}),
    "scan_carry": lambda lib, r, k: lib.lax.scan(
        lambda c, _: (r.split(c)[0], r.normal(c)), k, None, length=3),
    "fori_loop": lambda lib, r, k: lib.lax.fori_loop(0, 3, lambda i, c: r.fold_in(c, i), k),
    "while_loop": lambda lib, r, k: lib.lax.while_loop(
        lambda c: c[1] < 3, lambda c: (r.split(c[0])[1], c[1] + 1), (k, 0)),
    "cond": lambda lib, r, k: lib.lax.cond(True, lambda k: r.split(k)[0], lambda k: k, k),
    "switch": lambda lib, r, k: lib.lax.switch(1, [lambda k: k, lambda k: r.fold_in(k, 1)], k),
    "stop_gradient": lambda lib, r, k: lib.lax.stop_gradient({"k": r.split(k, 2),
                                                            "x": lib.numpy.ones(2)}),
    "grad_key_arg": lambda lib, r, k: lib.grad(lambda x, k: x * r.normal(k))(2.0, k),
    "grad_wrt_key": lambda lib, r, k: lib.grad(lambda k, x: x)(k, 1.0),
    "grad_allow_int": lambda lib, r, k: lib.grad(lambda k, x: x * r.normal(k[0]), argnums=(0, 1),
                                                 allow_int=True)(r.split(k, 3), 1.0),
    "vjp_key_primal": lambda lib, r, k: lib.vjp(lambda k, x: x * r.uniform(k), k, 2.0)[1](1.0),
    "value_and_grad": lambda lib, r, k: lib.value_and_grad(
        lambda p, k: (p * r.normal(k, (2,))).sum())(1.5, k),
    "jit_grad": lambda lib, r, k: lib.jit(lib.grad(lambda x, k: x * r.uniform(k)))(2.0, k),
    "tree_map_dict": lambda lib, r, k: lib.tree_util.tree_map(
        lambda x: x, {"a": k, "b": r.split(k, 2)}),
    "checkpoint": lambda lib, r, k: lib.grad(lib.checkpoint(
        lambda x, k: x * r.normal(k)))(1.0, k),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("impl", ["threefry2x32", pytest.param("rbg", marks=(
    platform_tolerances.skip_on_tpu(platform_tolerances.RNG_BIT_GENERATOR)))])
def test_keys_pass_through_transformations(name, impl):
  both(lambda lib, r: PROGRAMS[name](lib, r, r.key(11, impl=impl)))


# --- the array functions jax allows on keys, and the errors --------------------------------------
def _ks(r):
  return r.split(r.key(0), 4)


ARRAY_FNS = {
    "reshape": lambda np_, lax, r: np_.reshape(_ks(r), (2, 2)),
    "reshape_rbg": lambda np_, lax, r: np_.reshape(r.split(r.key(0, impl="rbg"), 4), (2, 2)),
    "method_reshape_rbg": lambda np_, lax, r: r.split(r.key(0, impl="rbg"), 4).reshape(2, 2),
    "method_transpose_rbg": lambda np_, lax, r: r.split(r.key(0, impl="rbg"), 4).reshape(
        2, 2).T,
    "method_copy_rbg": lambda np_, lax, r: r.key(0, impl="rbg").copy(),
    "broadcast_to": lambda np_, lax, r: np_.broadcast_to(r.key(1), (3,)),
    "expand_dims": lambda np_, lax, r: np_.expand_dims(_ks(r), 0),
    "squeeze": lambda np_, lax, r: np_.squeeze(_ks(r)[None]),
    "transpose": lambda np_, lax, r: np_.transpose(_ks(r).reshape(2, 2)),
    "swapaxes": lambda np_, lax, r: np_.swapaxes(_ks(r).reshape(2, 2), 0, 1),
    "moveaxis": lambda np_, lax, r: np_.moveaxis(_ks(r).reshape(2, 2), 0, 1),
    "ravel": lambda np_, lax, r: np_.ravel(_ks(r).reshape(2, 2)),
    "flip": lambda np_, lax, r: np_.flip(_ks(r)),
    "roll": lambda np_, lax, r: np_.roll(_ks(r), 1),
    "tile": lambda np_, lax, r: np_.tile(_ks(r), 2),
    "repeat": lambda np_, lax, r: np_.repeat(_ks(r), 2),
    "take": lambda np_, lax, r: np_.take(_ks(r), np_.array([3, 0])),
    "atleast_1d": lambda np_, lax, r: np_.atleast_1d(r.key(0)),
    "atleast_2d": lambda np_, lax, r: np_.atleast_2d(r.key(0)),
    "split": lambda np_, lax, r: np_.split(_ks(r), 2),
    "array_split": lambda np_, lax, r: np_.array_split(_ks(r), 3),
    "unstack": lambda np_, lax, r: np_.unstack(_ks(r)),
    "concatenate": lambda np_, lax, r: np_.concatenate([_ks(r), _ks(r)]),
    "stack": lambda np_, lax, r: np_.stack([r.key(0), r.key(1)]),
    "hstack": lambda np_, lax, r: np_.hstack([_ks(r), _ks(r)]),
    "vstack": lambda np_, lax, r: np_.vstack([_ks(r), _ks(r)]),
    "where": lambda np_, lax, r: np_.where(np_.array([True, False, True, False]), _ks(r),
                                           _ks(r)[::-1]),
    "select": lambda np_, lax, r: np_.select([np_.array([True, False] * 2)], [_ks(r)],
                                             _ks(r)[::-1]),
    "broadcast_arrays": lambda np_, lax, r: np_.broadcast_arrays(r.key(0), _ks(r)),
    "copy": lambda np_, lax, r: np_.copy(_ks(r)),
    "method_copy": lambda np_, lax, r: _ks(r).copy(),
    "asarray": lambda np_, lax, r: np_.asarray(_ks(r)),
    "array": lambda np_, lax, r: np_.array(_ks(r)),
    "asarray_dtype": lambda np_, lax, r: np_.asarray(_ks(r), dtype=np_.uint32),
    "zeros_like": lambda np_, lax, r: np_.zeros_like(_ks(r)),
    "ones_like": lambda np_, lax, r: np_.ones_like(_ks(r)),
    "full_like": lambda np_, lax, r: np_.full_like(_ks(r), 0),
    "array_equal": lambda np_, lax, r: np_.array_equal(_ks(r), _ks(r)),
    "array_equal_other_keys": lambda np_, lax, r: np_.array_equal(_ks(r), _ks(r)[::-1]),
    "array_equal_shapes": lambda np_, lax, r: np_.array_equal(_ks(r), r.key(0)),
    "array_equal_int": lambda np_, lax, r: np_.array_equal(_ks(r), 1),
    "allclose": lambda np_, lax, r: np_.allclose(_ks(r), _ks(r)),
    "eq": lambda np_, lax, r: _ks(r) == _ks(r)[::-1],
    "ne": lambda np_, lax, r: _ks(r) != _ks(r),
    "jnp_equal": lambda np_, lax, r: np_.equal(_ks(r), _ks(r)[::-1]),
    "jnp_not_equal": lambda np_, lax, r: np_.not_equal(_ks(r), _ks(r)[0]),
    "jnp_equal_int": lambda np_, lax, r: np_.equal(_ks(r), 1),
    "len": lambda np_, lax, r: np.asarray(len(_ks(r))),
    "iter": lambda np_, lax, r: list(_ks(r)),
    "index_slice": lambda np_, lax, r: _ks(r)[1:3],
    "index_array": lambda np_, lax, r: _ks(r)[np_.array([0, 2])],
    "index_none": lambda np_, lax, r: _ks(r)[None],
    "at_set": lambda np_, lax, r: _ks(r).at[1].set(r.key(5)),
    "at_set_slice": lambda np_, lax, r: _ks(r).at[1:3].set(_ks(r)[:2]),
    "at_set_array_index": lambda np_, lax, r: _ks(r).at[np_.array([0, 3])].set(_ks(r)[1:3]),
    "at_get": lambda np_, lax, r: _ks(r).at[2].get(),
    "at_set_int": lambda np_, lax, r: _ks(r).at[1].set(3),
    "shape": lambda np_, lax, r: np.asarray(np_.shape(_ks(r))),
    "lax_reshape": lambda np_, lax, r: lax.reshape(_ks(r), (2, 2)),
    "lax_broadcast": lambda np_, lax, r: lax.broadcast(r.key(0), (3,)),
    "lax_broadcast_in_dim": lambda np_, lax, r: lax.broadcast_in_dim(r.key(0), (3,), ()),
    "lax_concatenate": lambda np_, lax, r: lax.concatenate([_ks(r), _ks(r)], 0),
    "lax_slice": lambda np_, lax, r: lax.slice(_ks(r), (1,), (3,)),
    "lax_dynamic_slice": lambda np_, lax, r: lax.dynamic_slice(_ks(r), (1,), (2,)),
    "lax_dynamic_update_slice": lambda np_, lax, r: lax.dynamic_update_slice(
        _ks(r), _ks(r)[:2], (1,)),
    "lax_squeeze": lambda np_, lax, r: lax.squeeze(_ks(r)[None], (0,)),
    "lax_expand_dims": lambda np_, lax, r: lax.expand_dims(_ks(r), (0,)),
    "lax_transpose": lambda np_, lax, r: lax.transpose(_ks(r).reshape(2, 2), (1, 0)),
    "lax_rev": lambda np_, lax, r: lax.rev(_ks(r), (0,)),
    "lax_select": lambda np_, lax, r: lax.select(np_.array([True, False] * 2), _ks(r),
                                                 _ks(r)[::-1]),
    "lax_select_n": lambda np_, lax, r: lax.select_n(np_.array([True, False] * 2), _ks(r),
                                                     _ks(r)[::-1]),
    "lax_index_in_dim": lambda np_, lax, r: lax.index_in_dim(_ks(r), 1, keepdims=False),
    "lax_dynamic_index_in_dim": lambda np_, lax, r: lax.dynamic_index_in_dim(_ks(r), 2),
    # errors: arithmetic and ordering are not defined on keys (TypeError), nor NumPy conversion
    "add_int": lambda np_, lax, r: _ks(r) + 1,
    "radd_int": lambda np_, lax, r: 1 + _ks(r),
    "sub_keys": lambda np_, lax, r: _ks(r) - _ks(r),
    "mul": lambda np_, lax, r: _ks(r) * 2,
    "neg": lambda np_, lax, r: -_ks(r),
    "invert": lambda np_, lax, r: ~_ks(r),
    "abs": lambda np_, lax, r: abs(_ks(r)),
    "lt": lambda np_, lax, r: _ks(r) < _ks(r),
    "eq_int": lambda np_, lax, r: _ks(r) == 1,
    "jnp_add": lambda np_, lax, r: np_.add(_ks(r), _ks(r)),
    "jnp_sum": lambda np_, lax, r: np_.sum(_ks(r)),
    "jnp_sort": lambda np_, lax, r: np_.sort(_ks(r)),
    "np_asarray": lambda np_, lax, r: np.asarray(_ks(r)),
    "float": lambda np_, lax, r: float(r.key(0)),
    "bool": lambda np_, lax, r: bool(r.key(0)),
    "where_mixed": lambda np_, lax, r: np_.where(True, _ks(r), 0),
    "stack_two_impls": lambda np_, lax, r: np_.stack([r.key(0), r.key(0, impl="rbg")]),
    "where_key_condition": lambda np_, lax, r: np_.where(r.key(0), 1, 2),
    "concatenate_mixed": lambda np_, lax, r: np_.concatenate(
        [_ks(r), np_.zeros((4, 2), np_.uint32)]),
}


@pytest.mark.parametrize("name", sorted(ARRAY_FNS))
def test_array_functions_on_keys(name):
  both(lambda lib, r: ARRAY_FNS[name](lib.numpy, lib.lax, r))


@pytest.mark.parametrize("name", ["reshape", "where", "concatenate", "take", "broadcast_to",
                                  "lax_dynamic_slice", "array_equal", "eq"])
def test_array_functions_on_keys_under_jit(name):
  def run(lib, r):
    ks = _ks(r)
    # the function is given the keys as an argument of a jitted function (traced keys)
    return lib.jit(lambda k: ARRAY_FNS[name](lib.numpy, lib.lax, _Fixed(r, k)))(ks)
  both(run)


class _Fixed:
  """A random module whose split() gives fixed (possibly traced) keys, for the jit test."""

  def __init__(self, r, ks):
    self._r, self._ks = r, ks

  def split(self, key, num=2):
    return self._ks

  def key(self, seed):
    return self._ks[seed]


# --- __jax_array__ -------------------------------------------------------------------------------
class _HasJaxArray:
  """An object with `__jax_array__` (not a pytree)."""

  def __init__(self, v):
    self.v = v

  def __jax_array__(self):
    return self.v


class _TreeWithJaxArray(_HasJaxArray):
  """The same, registered as a pytree with jax and revax (as flax's nnx Variables are)."""


for _tu in (jax.tree_util, revax.tree_util):
  _tu.register_pytree_node(_TreeWithJaxArray, lambda o: ((o.v,), None),
                           lambda _, c: _TreeWithJaxArray(c[0]))

JAX_ARRAY_CALLS = {
    "asarray": lambda lib, v: lib.numpy.asarray(v),
    "array": lambda lib, v: lib.numpy.array(v),
    "array_dtype": lambda lib, v: lib.numpy.array(v, dtype=lib.numpy.int32),
    "reshape": lambda lib, v: lib.numpy.reshape(v, (3, 1)),
    "concatenate": lambda lib, v: lib.numpy.concatenate([v, v]),
    "zeros_like": lambda lib, v: lib.numpy.zeros_like(v),
    "dot": lambda lib, v: lib.numpy.dot(lib.numpy.ones(3), v),
    "matmul": lambda lib, v: lib.numpy.matmul(v, lib.numpy.ones(3)),
    "sin": lambda lib, v: lib.numpy.sin(v),
    "add": lambda lib, v: lib.numpy.add(v, 1.0),
    "sum": lambda lib, v: lib.numpy.sum(v),
    "where": lambda lib, v: lib.numpy.where(True, v, v),
    "lax_sin": lambda lib, v: lib.lax.sin(v),
    "lax_add": lambda lib, v: lib.lax.add(v, v),
    "operator_add": lambda lib, v: lib.numpy.ones(3) + v,
    "operator_mul": lambda lib, v: lib.numpy.ones(3) * v,
    "shape": lambda lib, v: np.asarray(lib.numpy.shape(v)),
    "ndim": lambda lib, v: np.asarray(lib.numpy.ndim(v)),
    "jit": lambda lib, v: lib.jit(lambda x: x)(v),
}


@pytest.mark.parametrize("kind", [_HasJaxArray, _TreeWithJaxArray])
@pytest.mark.parametrize("name", sorted(JAX_ARRAY_CALLS))
def test_jax_array_protocol(name, kind):
  def run(lib, r):
    out = JAX_ARRAY_CALLS[name](lib, kind(lib.numpy.arange(3.0)))
    return out.v if isinstance(out, _HasJaxArray) else out
  both(run)


# --- eval_shape ----------------------------------------------------------------------------------
EVAL_SHAPE = {
    "key_argument": lambda lib, r: lib.eval_shape(
        lambda k: (k, r.split(k, 3), r.normal(k, (2,))), r.key(0)),
    "key_struct_argument": lambda lib, r: lib.eval_shape(
        lambda k: {"k": r.fold_in(k, 1), "x": r.uniform(k)},
        lib.ShapeDtypeStruct((), r.key(0).dtype)),
    "batched_key_struct": lambda lib, r: lib.eval_shape(
        lambda ks: lib.vmap(r.split)(ks), lib.ShapeDtypeStruct((4,), r.key(0, impl="rbg").dtype)),
}


@pytest.mark.parametrize("name", sorted(EVAL_SHAPE))
def test_eval_shape_gives_key_structs(name):
  def shapes(lib, r):
    out = EVAL_SHAPE[name](lib, r)
    return lib.tree_util.tree_map(lambda s: (s.shape, str(s.dtype)), out,
                                  is_leaf=lambda s: isinstance(s, lib.ShapeDtypeStruct))
  j, v = shapes(jax, jr), shapes(revax, rr)
  assert j == v


# --- the recorded oracle -------------------------------------------------------------------------
# jax's outcomes of the sampler x transform table (160 jax compilations: ~95% of its time) are
# recorded in expected/test_key_leaves.json.xz under this file's SHA-256; re-record with
# `python -m tests.random.test_key_leaves`, run jax live with REVAX_LIVE_ORACLE=1 (which also
# checks the record). Exception types are recorded by module and name, so the subclass check
# against jax's own class is unchanged.
def _encode_data(x):
  if isinstance(x, tuple) and x and isinstance(x[0], str):
    return {"key": x[1], "data": records.encode_array(x[2])}
  if isinstance(x, (tuple, list)):
    return {type(x).__name__: [_encode_data(v) for v in x]}
  if isinstance(x, dict):
    return {"dict": [[k, _encode_data(v)] for k, v in x.items()]}
  if isinstance(x, str) or x is None:
    return {"scalar": x}
  return {"array": records.encode_array(x)}


def _decode_data(d):
  (kind, v), = d.items() if "key" not in d else [("key", d)]
  if kind == "key":
    return ("key", v["key"], records.decode_array(v["data"]))
  if kind in ("tuple", "list"):
    return {"tuple": tuple, "list": list}[kind](_decode_data(e) for e in v)
  if kind == "dict":
    return {k: _decode_data(e) for k, e in v}
  if kind == "scalar":
    return v
  return records.decode_array(v)


def _encode_outcome(o):
  if o[0] == "raise":
    return {"raise": [o[1].__module__, o[1].__qualname__]}
  return {"ok": _encode_data(o[1])}


def _decode_outcome(d):
  if "raise" in d:
    import importlib
    module, name = d["raise"]
    kind = importlib.import_module(module)
    for part in name.split("."):
      kind = getattr(kind, part)
    return ("raise", kind)
  return ("ok", _decode_data(d["ok"]))


class _Outcomes:
  path = __import__("pathlib").Path(__file__).parent / "expected" / "test_key_leaves.json.xz"
  hint = "re-record with: python -m tests.random.test_key_leaves"

  def __init__(self):
    self._doc = None

  def _load(self):
    if self._doc is None:
      assert self.path.exists(), f"no record of jax's outcomes: {self.hint}"
      doc = records.read_doc(self.path)
      assert doc["sha256"] == records.digest_files([__file__]), (
          f"the record of jax's outcomes is stale (this file changed since it was made with "
          f"jax {doc['jax']}): {self.hint}")
      self._doc = doc
    return self._doc

  def get(self, key, thunk):
    if not records.LIVE:
      outcomes = self._load()["outcomes"]
      assert key in outcomes, f"no record of {key!r}: {self.hint}"
      return _decode_outcome(outcomes[key])
    live = thunk()
    doc = self._load()
    assert doc["jax"] == jax.__version__, \
        f"the record was made with jax {doc['jax']}, jax {jax.__version__} is installed"
    now = json.loads(json.dumps(_encode_outcome(live)))  # through JSON, as the file holds it
    assert doc["outcomes"].get(key) == now, f"the record of {key!r} differs from live jax: " \
                                            f"{self.hint}"
    return live

  def record(self):
    outcomes = {f"{s} {t}": _encode_outcome(_outcome(_through(s, t), jax, jr))
                for s in sorted(SAMPLERS) for t in sorted(TRANSFORMS)}
    records.write_doc(self.path, {"jax": jax.__version__,
                                  "sha256": records.digest_files([__file__]),
                                  "outcomes": outcomes})
    return len(outcomes)


JAX_OUTCOMES = _Outcomes()

if __name__ == "__main__":
  print(f"recorded {JAX_OUTCOMES.record()} outcomes in {JAX_OUTCOMES.path}")
