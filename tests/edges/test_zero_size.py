"""Class 1 of issue 33: every public function of revax.numpy on zero-size and 0-d inputs, against
jax.numpy 0.10.2 (values with NaN positions, dtype, weak type, shape, or the exception type).

The recipes are generated from jax's signatures: a function of one array gets (0,), (0, 3) and
0-d inputs (and axis=0/1 of the (0, 3) one where it takes `axis`); an element-wise function of
two arrays gets pairs of them and a zero-size array broadcast against a non-empty one.
Functions whose other arguments are not arrays (shapes, axes, indices, q, kth, callables) have
a recipe of their own in OVERRIDES; functions that take no array at all are in NOT_ARRAY_FUNCTIONS
with the reason. A test asserts that every public callable of jax.numpy is in one of those.

Where jax fails with an incidental internal error on an empty input (its median's gather of a
slice of an empty axis), NumPy's answer is the oracle instead (NUMPY_ORACLE).
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import revax.numpy as rnp
from tests.edges.harness import LIVE, Raised, difference, outcome, recorded

jax = pytest.importorskip("jax")
jnp = jax.numpy

f32, i32 = np.float32, np.int32
E = np.zeros((0,), f32)
E03 = np.zeros((0, 3), f32)
E30 = np.zeros((3, 0), f32)
S = np.array(1.5, f32)
V3 = np.array([1., 2., 3.], f32)
IE = np.zeros((0,), i32)
IE03 = np.zeros((0, 3), i32)
IS = np.array(2, i32)
IV3 = np.array([1, 2, 3], i32)
BE = np.zeros((0,), bool)
BE03 = np.zeros((0, 3), bool)

FLOAT_INPUTS = {"(0,)": E, "(0,3)": E03, "()": S}
INT_INPUTS = {"(0,)": IE, "(0,3)": IE03, "()": IS}

# Functions defined on integers (or booleans) only: their inputs are int32.
INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_count", "bitwise_invert",
            "bitwise_not", "invert", "bitwise_left_shift", "bitwise_right_shift", "left_shift",
            "right_shift", "gcd", "lcm", "bincount", "packbits", "unpackbits"}

# Functions that take no array (or no array that could be empty): why they are not run here.
NOT_ARRAY_FUNCTIONS = {
    "get_printoptions": "printing options, no array", "printoptions": "printing options",
    "set_printoptions": "printing options", "result_type": "dtype query",
    "promote_types": "dtype query", "can_cast": "dtype query", "isdtype": "dtype query",
    "issubdtype": "dtype query", "broadcast_shapes": "shape arithmetic, no array",
    "fromfile": "file I/O (jax refuses it)", "fromiter": "builds from a Python iterator",
    "frompyfunc": "builds a ufunc object from a Python function", "load": "file I/O",
    "save": "file I/O", "savez": "file I/O",
    "from_dlpack": "DLPack exchange (tests/test_dlpack.py)",
    "frombuffer": "bytes, not arrays", "fromstring": "text, not arrays",
    "array_repr": "printing (tests/core)", "array_str": "printing (tests/core)",
    "iterable": "Python predicate", "isscalar": "Python predicate",
    "vectorize": "returns a function (its calls are covered by mask_indices and OVERRIDES)",
    "mask_indices": "takes a size and a function",
}

_sq = lambda x: x * x  # noqa: E731

# name -> [(label, call(m))]: recipes for the functions whose arguments are not all arrays.
OVERRIDES = {
    "arange": [("0", lambda m: m.arange(0)), ("3,3", lambda m: m.arange(3, 3)),
               ("5,1", lambda m: m.arange(5., 1.))],
    "linspace": [("num=0", lambda m: m.linspace(0., 1., 0)),
                 ("num=1", lambda m: m.linspace(0, 1, 1))],
    "logspace": [("num=0", lambda m: m.logspace(0., 1., 0))],
    "geomspace": [("num=0", lambda m: m.geomspace(1., 2., 0))],
    "empty": [("0", lambda m: m.empty(0).shape), ("(0,3)", lambda m: m.empty((0, 3)).shape)],
    "zeros": [("(0,3)", lambda m: m.zeros((0, 3))), ("()", lambda m: m.zeros(()))],
    "ones": [("(0,3)", lambda m: m.ones((0, 3))), ("0-d size", lambda m: m.ones(IS))],
    "full": [("(0,3)", lambda m: m.full((0, 3), 2.)), ("()", lambda m: m.full((), S))],
    "full_like": [("(0,3)", lambda m: m.full_like(E03, 2.)), ("()", lambda m: m.full_like(S, 1))],
    "eye": [("0", lambda m: m.eye(0)), ("0,3", lambda m: m.eye(0, 3))],
    "identity": [("0", lambda m: m.identity(0))],
    "tri": [("0", lambda m: m.tri(0)), ("0,3", lambda m: m.tri(0, 3))],
    "indices": [("(0,3)", lambda m: m.indices((0, 3))), ("()", lambda m: m.indices(()))],
    "diag_indices": [("0", lambda m: m.diag_indices(0))],
    "tril_indices": [("0", lambda m: m.tril_indices(0))],
    "triu_indices": [("0", lambda m: m.triu_indices(0))],
    "tril_indices_from": [("(0,0)", lambda m: m.tril_indices_from(np.zeros((0, 0), f32)))],
    "triu_indices_from": [("(0,0)", lambda m: m.triu_indices_from(np.zeros((0, 0), f32)))],
    "diag_indices_from": [("(0,0)", lambda m: m.diag_indices_from(np.zeros((0, 0), f32)))],
    "bartlett": [("0", lambda m: m.bartlett(0)), ("1", lambda m: m.bartlett(1))],
    "blackman": [("0", lambda m: m.blackman(0))], "hamming": [("0", lambda m: m.hamming(0))],
    "hanning": [("0", lambda m: m.hanning(0))], "kaiser": [("0", lambda m: m.kaiser(0, 4.))],
    "atleast_1d": [(k, lambda m, x=x: m.atleast_1d(x)) for k, x in FLOAT_INPUTS.items()]
    + [("two", lambda m: m.atleast_1d(S, E))],
    "atleast_2d": [(k, lambda m, x=x: m.atleast_2d(x)) for k, x in FLOAT_INPUTS.items()],
    "atleast_3d": [(k, lambda m, x=x: m.atleast_3d(x)) for k, x in FLOAT_INPUTS.items()],
    "broadcast_arrays": [("(0,3),(3,)", lambda m: m.broadcast_arrays(E03, V3)),
                         ("(),(0,)", lambda m: m.broadcast_arrays(S, E))],
    "broadcast_to": [("(0,3)", lambda m: m.broadcast_to(V3, (0, 3))),
                     ("()->(0,)", lambda m: m.broadcast_to(S, (0,)))],
    "clip": [(k, lambda m, x=x: m.clip(x, 0., 1.)) for k, x in FLOAT_INPUTS.items()],
    "ix_": [("empty", lambda m: m.ix_(IE, IV3))],
    "meshgrid": [("(0,),(3,)", lambda m: m.meshgrid(E, V3)),
                 ("ij", lambda m: m.meshgrid(E, V3, indexing="ij"))],
    "apply_along_axis": [("(0,3),1", lambda m: m.apply_along_axis(m.sum, 1, E03))],
    "apply_over_axes": [("(0,3)", lambda m: m.apply_over_axes(m.sum, E03, [0]))],
    "insert": [("(0,),0", lambda m: m.insert(E, 0, 5.)),
               ("(0,3),axis1", lambda m: m.insert(E03, 1, 5., axis=1))],
    "interp": [("x empty", lambda m: m.interp(E, V3, V3)),
               ("x 0-d", lambda m: m.interp(S, V3, V3))],
    "moveaxis": [("(0,3)", lambda m: m.moveaxis(E03, 0, 1))],
    "swapaxes": [("(0,3)", lambda m: m.swapaxes(E03, 0, 1))],
    "piecewise": [("(0,)", lambda m: m.piecewise(E, [E > 0], [_sq, 0.]))],
    "place": [("(0,)", lambda m: m.place(E, E > 0, V3, inplace=False))],
    "polyfit": [("deg 0", lambda m: m.polyfit(V3, V3, 0))],
    "put": [("no indices", lambda m: m.put(V3, IE, E, inplace=False))],
    "put_along_axis": [("(0,3)", lambda m: m.put_along_axis(E03, IE03, 1., 0, inplace=False))],
    "append": [("(0,),(0,)", lambda m: m.append(E, E)), ("(0,3),axis0", lambda m: m.append(
        E03, E03, axis=0)), ("(),(0,)", lambda m: m.append(S, E))],
    "argpartition": [("(0,3) kth0", lambda m: m.argpartition(E03, 0, axis=0).shape),
                     ("(3,0)", lambda m: m.argpartition(E30, 1, axis=0))],
    "partition": [("(3,0)", lambda m: m.partition(E30, 1, axis=0))],
    "array_split": [("(0,),2", lambda m: m.array_split(E, 2)),
                    ("(0,3),3", lambda m: m.array_split(E03, 3, axis=1))],
    "split": [("(0,),1", lambda m: m.split(E, 1)), ("(0,3)", lambda m: m.split(E03, 3, axis=1))],
    "hsplit": [("(0,3)", lambda m: m.hsplit(E03, 3))],
    "vsplit": [("(0,3)", lambda m: m.vsplit(E03, [0]))],
    "dsplit": [("(0,3,2)", lambda m: m.dsplit(np.zeros((0, 3, 2), f32), 2))],
    "astype": [(k, lambda m, x=x: m.astype(x, m.int32)) for k, x in FLOAT_INPUTS.items()],
    "choose": [("(0,)", lambda m: m.choose(IE, [E, E])), ("()", lambda m: m.choose(0, [S, S]))],
    "compress": [("(0,)", lambda m: m.compress(BE, E)),
                 ("(0,3)", lambda m: m.compress(np.ones(3, bool), E03, axis=1))],
    "extract": [("(0,)", lambda m: m.extract(BE, E)), ("(0,3)", lambda m: m.extract(BE03, E03))],
    "delete": [("(0,) none", lambda m: m.delete(E, IE)),
               ("(0,3) axis1", lambda m: m.delete(E03, 1, axis=1))],
    "digitize": [("x empty", lambda m: m.digitize(E, V3)), ("bins empty", lambda m: m.digitize(
        V3, E)), ("0-d", lambda m: m.digitize(S, V3))],
    "expand_dims": [(k, lambda m, x=x: m.expand_dims(x, 0)) for k, x in FLOAT_INPUTS.items()],
    "fill_diagonal": [("(0,0)", lambda m: m.fill_diagonal(np.zeros((0, 0), f32), 1.,
                                                         inplace=False))],
    "fromfunction": [("(0,3)", lambda m: m.fromfunction(lambda i, j: i + j, (0, 3)))],
    "histogram2d": [("(0,)", lambda m: m.histogram2d(E, E, bins=2, range=[(0, 1), (0, 1)]))],
    "histogram": [("(0,) range", lambda m: m.histogram(E, 3, range=(0., 1.))),
                  ("(0,) empty", lambda m: m.histogram(E, 3))],
    "histogram_bin_edges": [("(0,) range", lambda m: m.histogram_bin_edges(E, 3, range=(0., 1.)))],
    "histogramdd": [("(0,2)", lambda m: m.histogramdd(np.zeros((0, 2), f32), bins=2,
                                                     range=[(0, 1), (0, 1)]))],
    "isin": [("(0,),(3,)", lambda m: m.isin(E, V3)), ("(3,),(0,)", lambda m: m.isin(V3, E)),
             ("(),(0,)", lambda m: m.isin(S, E))],
    "lexsort": [("one empty key", lambda m: m.lexsort([E])), ("(2,0)", lambda m: m.lexsort(
        np.zeros((2, 0), f32)))],
    "matvec": [("(0,3),(3,)", lambda m: m.matvec(E03, V3)), ("(3,0),(0,)", lambda m: m.matvec(
        E30, E))],
    "vecmat": [("(0,),(0,3)", lambda m: m.vecmat(E, E03))],
    "pad": [("(0,) const", lambda m: m.pad(E, 1)), ("() const", lambda m: m.pad(S, 0)),
            ("(0,3) edge axis1", lambda m: m.pad(E03, ((0, 0), (1, 1)), mode="edge")),
            ("(3,0) const", lambda m: m.pad(E30, ((1, 0), (0, 0))))],
    "percentile": [("(0,)", lambda m: m.percentile(E, 50.)), ("(0,3) ax1", lambda m: m.percentile(
        E03, 50., axis=1)), ("(3,0) ax0", lambda m: m.percentile(E30, 50., axis=0)),
                   ("()", lambda m: m.percentile(S, 50.))],
    "quantile": [("(0,)", lambda m: m.quantile(E, 0.5)), ("(0,3) ax0", lambda m: m.quantile(
        E03, m.asarray([0.2, 0.5]), axis=0)), ("(0,3) ax1", lambda m: m.quantile(E03, 0.5, axis=1)),
                 ("()", lambda m: m.quantile(S, 0.5)), ("q empty", lambda m: m.quantile(V3, E))],
    "nanpercentile": [("(0,)", lambda m: m.nanpercentile(E, 50.)),
                      ("(0,3) ax1", lambda m: m.nanpercentile(E03, 50., axis=1))],
    "nanquantile": [("(0,)", lambda m: m.nanquantile(E, 0.5)),
                    ("(0,3) ax1", lambda m: m.nanquantile(E03, 0.5, axis=1)),
                    ("()", lambda m: m.nanquantile(S, 0.5))],
    "ravel_multi_index": [("empty", lambda m: m.ravel_multi_index((IE, IE), (2, 3)))],
    "unravel_index": [("empty", lambda m: m.unravel_index(IE, (2, 3))),
                      ("0-d", lambda m: m.unravel_index(IS, (2, 3)))],
    "repeat": [("(0,),2", lambda m: m.repeat(E, 2)), ("(0,),[]", lambda m: m.repeat(E, IE)),
               ("(0,3) ax1", lambda m: m.repeat(E03, 2, axis=1)), ("()", lambda m: m.repeat(S, 3))],
    "reshape": [("(0,3)->(3,0)", lambda m: m.reshape(E03, (3, 0))),
                ("(0,3)->(-1,3)", lambda m: m.reshape(E03, (-1, 3))),
                ("()->(1,1)", lambda m: m.reshape(S, (1, 1)))],
    "resize": [("(0,)->3", lambda m: m.resize(E, 3)), ("(3,)->0", lambda m: m.resize(V3, 0))],
    "roll": [("(0,)", lambda m: m.roll(E, 2)), ("(0,3) ax1", lambda m: m.roll(E03, 1, axis=1)),
             ("()", lambda m: m.roll(S, 1))],
    "rollaxis": [("(0,3)", lambda m: m.rollaxis(E03, 1))],
    "permute_dims": [("(0,3)", lambda m: m.permute_dims(E03, (1, 0)))],
    "searchsorted": [("a empty", lambda m: m.searchsorted(E, V3)),
                     ("v empty", lambda m: m.searchsorted(V3, E)),
                     ("v 0-d", lambda m: m.searchsorted(V3, S))],
    "select": [("(0,)", lambda m: m.select([BE], [E], 0.)),
               ("(3,0)", lambda m: m.select([E30 > 0], [E30]))],
    "take": [("(0,) no idx", lambda m: m.take(E, IE)), ("(0,3) ax1", lambda m: m.take(
        E03, IV3 - 1, axis=1)), ("() 0-d idx", lambda m: m.take(V3, IS)),
             ("(0,3) empty ax0", lambda m: m.take(E03, IE, axis=0))],
    "take_along_axis": [("(0,3) ax0", lambda m: m.take_along_axis(E03, IE03, 0)),
                        ("(0,3) ax1", lambda m: m.take_along_axis(E03, IE03, 1))],
    "tile": [("(0,),2", lambda m: m.tile(E, 2)), ("(),0", lambda m: m.tile(S, 0)),
             ("(3,),(0,2)", lambda m: m.tile(V3, (0, 2)))],
    "tensordot": [("(0,3),(3,0)", lambda m: m.tensordot(E03, E30, 1)),
                  ("(3,0),(0,3)", lambda m: m.tensordot(E30, E03, 1))],
    "einsum": [("ij,jk", lambda m: m.einsum("ij,jk->ik", E03, E30)),
               ("ij->", lambda m: m.einsum("ij->", E03)), ("i,i", lambda m: m.einsum("i,i", E, E))],
    "einsum_path": [("ij,jk", lambda m: len(m.einsum_path("ij,jk->ik", E03, E30)[0]))],
    "trim_zeros": [("(0,)", lambda m: m.trim_zeros(E))],
    "unstack": [("(0,3) ax1", lambda m: m.unstack(E03, axis=1)), ("(0,3)", lambda m: m.unstack(
        E03))],
    "vander": [("(0,)", lambda m: m.vander(E)), ("N=0", lambda m: m.vander(V3, 0))],
    "where": [("1 arg (0,)", lambda m: m.where(E)), ("1 arg ()", lambda m: m.where(S)),
              ("3 args", lambda m: m.where(BE03, E03, S))],
    "nonzero": [(k, lambda m, x=x: m.nonzero(x)) for k, x in FLOAT_INPUTS.items()]
    + [("size", lambda m: m.nonzero(E03, size=2, fill_value=-1))],
    "argwhere": [(k, lambda m, x=x: m.argwhere(x)) for k, x in FLOAT_INPUTS.items()]
    + [("size", lambda m: m.argwhere(E, size=2))],
    "unique": [(k, lambda m, x=x: m.unique(x, return_index=True, return_inverse=True,
                                           return_counts=True)) for k, x in FLOAT_INPUTS.items()]
    + [("(0,3) axis0", lambda m: m.unique(E03, axis=0)),
       ("size", lambda m: m.unique(E, size=2, fill_value=0.))],
    "intersect1d": [("idx", lambda m: m.intersect1d(E, V3, return_indices=True)),
                    ("()", lambda m: m.intersect1d(S, E))],
    "union1d": [("(0,),(3,)", lambda m: m.union1d(E, V3)), ("()", lambda m: m.union1d(S, E))],
    "setdiff1d": [("(0,),(3,)", lambda m: m.setdiff1d(E, V3)),
                  ("(3,),(0,)", lambda m: m.setdiff1d(V3, E)), ("()", lambda m: m.setdiff1d(S, E))],
    "setxor1d": [("(0,),(3,)", lambda m: m.setxor1d(E, V3)),
                 ("(),(0,)", lambda m: m.setxor1d(S, E))],
    "bincount": [("(0,)", lambda m: m.bincount(IE)), ("(0,) minlength", lambda m: m.bincount(
        IE, minlength=3)), ("weights", lambda m: m.bincount(IE, weights=E, length=2))],
    "polyval": [("p empty", lambda m: m.polyval(E, V3)), ("x empty", lambda m: m.polyval(V3, E))],
    "convolve": [("(3,),(1,)", lambda m: m.convolve(V3, V3[:1]))],
    "correlate": [("(3,),(1,)", lambda m: m.correlate(V3, V3[:1]))],
    # polynomials are 1-D coefficient arrays: jax's errors on 2-D ones are incidental
    "polymul": [("(0,),(3,)", lambda m: m.polymul(E, V3)), ("(3,),(0,)", lambda m: m.polymul(
        V3, E))],
    "polyadd": [("(0,),(0,)", lambda m: m.polyadd(E, E)),
                ("(0,),(3,)", lambda m: m.polyadd(E, V3))],
    "polysub": [("(0,),(0,)", lambda m: m.polysub(E, E))],
    "polyder": [("(0,)", lambda m: m.polyder(E)), ("(1,) m=2", lambda m: m.polyder(V3[:1], 2))],
    "polyint": [("(0,)", lambda m: m.polyint(E))],
    "polydiv": [("(0,),(3,)", lambda m: m.polydiv(E, V3)), ("(3,),(0,)", lambda m: m.polydiv(
        V3, E))],
    "poly": [("(0,)", lambda m: m.poly(E)), ("()", lambda m: m.poly(S)), ("(0,0)", lambda m: m.poly(
        np.zeros((0, 0), f32)))],
    "block": [("[(0,3),(0,3)]", lambda m: m.block([E03, E03])), ("[[]]", lambda m: m.block(
        [[E03], [E03]]))],
    "concatenate": [("(0,3)x2", lambda m: m.concatenate([E03, E03])),
                    ("ax1", lambda m: m.concatenate([E30, E30], axis=1))],
    "concat": [("(0,3)x2", lambda m: m.concat([E03, E03]))],
    "stack": [("(0,3)x2", lambda m: m.stack([E03, E03], axis=1)),
              ("0-d", lambda m: m.stack([S, S]))],
    "hstack": [("(0,3)x2", lambda m: m.hstack([E03, E03])), ("0-d", lambda m: m.hstack([S, S]))],
    "vstack": [("(0,3)x2", lambda m: m.vstack([E03, E03])), ("0-d", lambda m: m.vstack([S, S]))],
    "dstack": [("(0,3)x2", lambda m: m.dstack([E03, E03])), ("0-d", lambda m: m.dstack([S, S]))],
    "column_stack": [("(0,)x2", lambda m: m.column_stack([E, E])),
                     ("0-d", lambda m: m.column_stack([S, S]))],
    "gradient": [("(0,)", lambda m: m.gradient(E)), ("(2,0) ax0", lambda m: m.gradient(
        np.zeros((2, 0), f32), axis=0))],
    "cross": [("(0,3)", lambda m: m.cross(E03, E03)), ("(0,3),(3,)", lambda m: m.cross(E03, V3))],
    "trapezoid": [("(2,0)", lambda m: m.trapezoid(np.zeros((2, 0), f32), axis=0)),
                  ("(0,3) ax0", lambda m: m.trapezoid(E03, axis=0))],
}


def _public_callables():
  return sorted(n for n in dir(jnp) if not n.startswith("_") and callable(getattr(jnp, n))
                and not inspect.isclass(getattr(jnp, n)))


def _required(fun):
  if isinstance(fun, jnp.ufunc):
    return fun.nin, set()
  params = inspect.signature(fun).parameters
  req = [p for p in params.values() if p.default is p.empty
         and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  return len(req), set(params)


def recipes(name):
  """[(label, call(m))] for one jax.numpy function name."""
  if name in OVERRIDES:
    return OVERRIDES[name]
  n, params = _required(getattr(jnp, name))
  inputs = INT_INPUTS if name in INT_ONLY else FLOAT_INPUTS
  fun = lambda m: getattr(m, name)  # noqa: E731
  out = []
  if n == 1:
    out = [(k, lambda m, x=x: fun(m)(x)) for k, x in inputs.items()]
    if "axis" in params:
      x = inputs["(0,3)"]
      out += [(f"(0,3) axis={a}", lambda m, a=a: fun(m)(x, axis=a)) for a in (0, 1)]
  elif n == 2:
    out = [(f"{k},{k}", lambda m, x=x: fun(m)(x, x)) for k, x in inputs.items()]
    v = IV3 if name in INT_ONLY else V3
    out += [("(0,3),(3,)", lambda m: fun(m)(inputs["(0,3)"], v)),
            ("(),(0,)", lambda m: fun(m)(inputs["()"], inputs["(0,)"]))]
  return out


# Functions where jax's answer for a recipe is an incidental internal error (a gather of a slice
# of an empty axis in its sorting-based median), checked against NumPy instead, with the reason.
NUMPY_ORACLE = {(name, label) for name in ("median", "nanmedian")
                for label in ("(0,)", "(0,3)", "(0,3) axis=0")} | {
    ("percentile", "(0,)"), ("quantile", "(0,)"), ("quantile", "(0,3) ax0"),
    ("nanpercentile", "(0,)"), ("nanquantile", "(0,)"),
    # jax fails broadcasting the empty polynomial; NumPy adds nothing
    ("polyadd", "(0,),(3,)"),
    # jax fails indexing the empty axis; NumPy integrates to zeros
    ("trapezoid", "(0,3) ax0")}

CASES = [(name, label, call) for name in _public_callables() if name not in NOT_ARRAY_FUNCTIONS
         for label, call in recipes(name)]


def _numpy_outcome(call):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    out = outcome(call, np)
  # NumPy computes in float64 where JAX computes in float32: compare the values as float32.
  if not isinstance(out, Raised):
    for leaf in out:
      if leaf.dtype == np.float64:
        leaf.dtype, leaf.value = np.dtype(f32), leaf.value.astype(f32)
  return out


def test_every_public_function_has_a_recipe():
  """A new jax.numpy function must get a recipe here, or a reason it takes no array."""
  missing = [n for n in _public_callables()
             if n not in NOT_ARRAY_FUNCTIONS and not recipes(n)]
  assert not missing, f"no zero-size recipe for {missing}"
  stale = [n for n in list(OVERRIDES) + list(NOT_ARRAY_FUNCTIONS) if not hasattr(jnp, n)]
  assert not stale, stale


def _key(name, label):
  return f"{name} [{label}]"


def _expected_thunk(name, label, call):
  if (name, label) in NUMPY_ORACLE:
    return lambda: _numpy_outcome(call)
  return lambda: outcome(call, jnp)


def oracle_cases():
  """(key, thunk computing the expected outcome) per case, for tests/edges/record.py."""
  return [(_key(n, lab), _expected_thunk(n, lab, call)) for n, lab, call in CASES]


def _differences(names):
  cases = [c for c in CASES if c[0] in names]
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    if LIVE:
      expected = {_key(n, lab): _expected_thunk(n, lab, call)() for n, lab, call in cases}
    else:
      expected = recorded(__file__)
    found = []
    for name, label, call in cases:
      actual = outcome(call, rnp)
      numpy_oracle = (name, label) in NUMPY_ORACLE
      d = difference(expected[_key(name, label)], actual, check_weak=not numpy_oracle)
      if d:
        found.append(f"{name} [{label}]: {d}")
  return found


NAMES = sorted({c[0] for c in CASES})
SHARDS = 8


@pytest.mark.parametrize("shard", range(SHARDS))
def test_zero_size_and_0d_inputs_match_jax(shard):
  diffs = _differences(set(NAMES[shard::SHARDS]))
  assert not diffs, "\n".join(diffs)
