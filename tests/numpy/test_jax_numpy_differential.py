"""Differential test of the jax.numpy functions revax.numpy gained for issue 15, against jax 0.10.2.

One table row per case: a function of the namespace (`m` is jax.numpy or revax.numpy) and its
arguments. NumPy arrays among the arguments are the traced operands; `S(value)` marks a static
argument passed as is. Per group, every jit-able case runs in one `jax.jit` (the oracle), in one
`revax.jit`, and eagerly in revax; cases whose result shape depends on values (`jit=False`) run
eagerly in both. Outputs must agree in tree structure, dtype, shape and value. A representative
differentiable subset is checked under grad and vmap the same way.

jax's outputs (each output leaf's dtype, shape and every value) are recorded in
`expected/test_jax_numpy_differential.json.xz` under jax's version and this file's SHA-256, and
the tests compare revax with the record; re-record with
`python -m tests.numpy.test_jax_numpy_differential`. With REVAX_LIVE_ORACLE=1 jax runs live and
the record is checked against it.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
from typing import Callable

import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests import platform_tolerances
from tests.dtype_tables import records

jax = pytest.importorskip("jax")
jnp = jax.numpy


class S:
  """A static argument: given to the function as is, never traced."""

  def __init__(self, value):
    self.value = value


@dataclasses.dataclass(frozen=True)
class Case:
  name: str
  fn: Callable
  args: tuple
  jit: bool = True
  tol: float = 1e-5


def C(name, fn, *args, jit=True, tol=1e-5):
  return Case(name, fn, args, jit, tol)


_rng = np.random.RandomState(0)
A = np.arange(12, dtype=np.float32).reshape(3, 4)
R = _rng.randn(4, 5).astype(np.float32)
R1 = _rng.randn(40).astype(np.float32)
V = np.array([1., 2., 3.], np.float32)
N = A.copy()
N[1, 2] = np.nan
N[0, :] = np.nan
I6 = np.array([3, 1, 3, 2, 1, 5], np.int32)
I3 = np.array([5, 3, 7], np.int32)
XP = np.array([1., 2., 3.], np.float32)
FP = np.array([4., 5., 7.], np.float32)
XQ = np.array([0., 1.5, 2., 2.5, 5.], np.float32)
XS = np.linspace(-1, 2, 12).astype(np.float32)
YS = (3 * XS ** 3 - XS + 0.5 + 0.1 * np.sin(7 * XS)).astype(np.float32)
F8 = np.array([0., 1., 3., -2.5, 1e-3, 1e30, -np.inf, np.nan], np.float32)
U8 = np.array([3, 255, 128], np.uint8)
BITS = np.array([1, 0, 1, 1, 0, 0, 0, 1, 1, 1], np.int32)
ufn = lambda m: m.frompyfunc(lambda x, y: x * y + x + y, 2, 1, identity=0)

GROUPS = {
    "matrices": [
        C("diagonal", lambda m, a: m.diagonal(a.reshape(2, 3, 2), -1, 2, 1), A),
        C("diag", lambda m, a: (m.diag(a, -1), m.diag(m.diag(a, 2), 2)), V),
        C("diagflat", lambda m, a: m.diagflat(a[:2, :2], 1), A),
        C("tri", lambda m: m.tri(3, 4, 1)),
        C("tril_triu", lambda m, a: (m.tril(a, -1), m.triu(a, 1)), A),
        C("tril_indices", lambda m: (m.tril_indices(3, 1, 4), m.triu_indices(4, -1))),
        C("indices_from", lambda m, a: (m.tril_indices_from(a, 1), m.triu_indices_from(a)), A),
        C("diag_indices", lambda m, a: (m.diag_indices(3, 3), m.diag_indices_from(a[:3, :3])), A),
        C("fill_diagonal", lambda m, a, v: m.fill_diagonal(a, v, inplace=False), A, V[:2]),
        C("mask_indices", lambda m: m.mask_indices(3, m.triu, 1), jit=False),
        C("trace", lambda m, a: m.trace(a, 1), A),
        C("vander", lambda m, a: (m.vander(a, 4), m.vander(a.astype(int), increasing=True)), V),
        C("kron", lambda m, a, b: m.kron(a, b), A[:2, :2], V),
        C("cross", lambda m, a, b: (m.cross(a, b), m.cross(a[:, :2], b[:2]), m.cross(a[:, :2], b)),
          A[:, :3], V),
    ],
    "rearrange": [
        C("roll", lambda m, a: (m.roll(a, 2), m.roll(a, (1, -1), (0, 1))), A),
        C("roll_traced", lambda m, a, s: m.roll(a, s, 1), A, np.int32(5)),
        C("rollaxis", lambda m, a: m.rollaxis(a.reshape(2, 3, 2), 2, 0), A),
        C("rot90", lambda m, a: tuple(m.rot90(a, k) for k in range(-1, 4)), A),
        C("resize", lambda m, a: m.resize(a, (5, 3)), V),
        C("delete", lambda m, a: (m.delete(a, 1, axis=1), m.delete(a, np.array([0, 5, -1])),
                                  m.delete(a, slice(0, 3, 2), axis=1)), A),
        C("insert", lambda m, a, v: (m.insert(a, 1, 5., axis=1), m.insert(a, 2, v, axis=0),
                                     m.insert(a[0], np.array([0, 2, 2]), v[:3])), A,
          np.ones(4, np.float32)),
        C("append", lambda m, a: (m.append(a, a), m.append(a, a, axis=1)), A),
        C("unstack", lambda m, a: m.unstack(a, axis=1), A),
        C("dsplit", lambda m, a: m.dsplit(a.reshape(1, 3, 4), 2), A),
        C("block", lambda m, a, b: (m.block([[a, a], [a, a]]), m.block([b, b])), A, V),
        C("trim_zeros", lambda m, a: (m.trim_zeros(a), m.trim_zeros(a, "f")),
          np.array([0, 0, 1., 2, 0], np.float32), jit=False),
        C("compress", lambda m, a: m.compress(m.asarray([True, False, True]), a, axis=0), A,
          jit=False),
        C("compress_size", lambda m, a, c: m.compress(c, a, axis=1, size=3, fill_value=-1), A,
          np.array([True, False, True, True])),
        C("extract", lambda m, a: m.extract(a > 4, a), A, jit=False),
        C("extract_size", lambda m, a: m.extract(a > 4, a, size=9), A),
        C("choose", lambda m, i, a: (m.choose(i, [a[0], a[1], a[2]], mode="wrap"),
                                     m.choose(i, [a[0], a[1], a[2]], mode="clip")),
          np.array([0, 4, -2, 1], np.int32), A),
        C("choose_raise", lambda m, a: m.choose(m.asarray([0, 1, 2, 1]), [a[0], a[1], a[2]]), A,
          jit=False),
        C("select", lambda m, a: m.select([a > 5, a < 2], [a, -a], 7.), A),
        C("piecewise", lambda m, a: (m.piecewise(a, [a < 3, a > 8], [lambda x: x * 2, lambda x: -x,
                                                                    1.]),
                                     m.piecewise(a, [a < 3, a > 1], [lambda x: x * 2, 5.])), A),
        C("place", lambda m, a, v: m.place(a, a > 4, v, inplace=False), A, V[:2]),
        C("put", lambda m, a, i, v: (m.put(a, i, v, inplace=False),
                                     m.put(a, i, 9., mode="clip", inplace=False),
                                     m.put(a, i, v[:2], mode="wrap", inplace=False)),
          A, np.array([0, 3, 20, -1], np.int32), np.array([10., 20., 30., 40.], np.float32)),
        C("put_along_axis", lambda m, a, i: m.put_along_axis(a, i, 99., axis=1, inplace=False), A,
          np.array([[0], [2], [1]], np.int32)),
    ],
    "padding": [
        C(f"pad_{mode}", lambda m, a, mode=mode: (m.pad(a, ((0, 5), (2, 1)), mode=mode),
                                                  m.pad(a.astype(int), 2, mode=mode)), A)
        for mode in ["constant", "edge", "wrap", "reflect", "symmetric", "linear_ramp", "maximum",
                     "minimum", "mean", "median", "empty"]
    ] + [
        C("pad_options", lambda m, a, v: (
            m.pad(a, 2, constant_values=((1, 2), (3, 4))),
            m.pad(v, 7, mode="reflect", reflect_type="odd"),
            m.pad(v, 7, mode="symmetric", reflect_type="odd"),
            m.pad(v, (2, 3), mode="linear_ramp", end_values=(5, -4)),
            m.pad(a, (2, 3), mode="mean", stat_length=2)), A, V),
        C("pad_callable", lambda m, v: m.pad(v, 2, mode=lambda vec, w, ax, kw: vec.at[:w[0]].set(
            -1.).at[vec.shape[0] - w[1]:].set(7.)), V),
    ],
    "searching": [
        C("searchsorted", lambda m, a, q: tuple(m.searchsorted(a, q, side=s, method=meth)
                                                for s in ("left", "right")
                                                for meth in ("scan", "compare_all", "sort")),
          np.array([1., 2, 2, 3, 5, np.nan], np.float32),
          np.array([[0., 2, 2.5], [5, 6, np.nan]], np.float32)),
        C("searchsorted_sorter", lambda m, a, q: m.searchsorted(a, q, sorter=m.argsort(a)),
          np.array([3., 1, 2], np.float32), V),
        C("lexsort", lambda m, a, b: (m.lexsort((a, b)), m.lexsort(m.stack([a, b]), axis=0)),
          np.array([1, 5, 1, 4, 3], np.int32), np.array([9, 4, 0, 4, 0], np.int32)),
        C("partition", lambda m, a: (m.partition(a, 3)[3], m.sort(m.partition(a, 3)[:3]),
                                     m.sort(a[m.argpartition(a, 3)[4:]])),
          np.array([3., 1, 4, 1, 5, 9, 2, 6], np.float32)),
        C("sort_complex", lambda m, a: m.sort_complex(a), np.array([3., 1, 2], np.float32)),
    ],
    "statistics": [
        C(f"quantile_{meth}", lambda m, a, n, meth=meth: (
            m.quantile(a, m.asarray([0., 0.3, 0.5, 1.]), axis=1, method=meth),
            m.nanquantile(n, 0.4, axis=0, method=meth)), R, N)
        for meth in ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")
    ] + [
        C("quantile_axes", lambda m, a: (
            m.quantile(a.reshape(2, 2, 5), m.asarray([0.2, 0.7]), axis=(0, 2), keepdims=True),
            m.quantile(a, 0.2, keepdims=True), m.quantile(a.astype(int), 0.5)), R),
        C("quantile_weights", lambda m, a: m.quantile(
            a, 0.3, axis=1, weights=m.asarray([1., 3, 2, 1, 1]), method="inverted_cdf"), R),
        C("percentile", lambda m, a, n: (m.percentile(a, m.asarray([10., 90.]), axis=0),
                                         m.nanpercentile(n, 50)), R, N),
        C("median", lambda m, a, n: (m.median(a, axis=1), m.median(a), m.nanmedian(n, axis=1),
                                     m.quantile(n, 0.5, axis=1)), R, N),
        C("average", lambda m, a: (m.average(a, axis=1),
                                   m.average(a, axis=1, weights=m.asarray([1., 2, 3, 4, 5]),
                                             returned=True),
                                   m.average(a, weights=a * a, keepdims=True)), R),
        C("cov", lambda m, a: (m.cov(a), m.cov(a[0], a[1], bias=True), m.cov(a, rowvar=False,
                                                                             ddof=0),
                               m.cov(a, fweights=m.asarray([1, 2, 1, 1, 3]),
                                     aweights=m.asarray([.5, 1., 2., 1., 1.]))), R),
        C("corrcoef", lambda m, a: (m.corrcoef(a), m.corrcoef(a[0], a[2])), R),
    ],
    "nanreductions": [
        C(name, lambda m, a, b, name=name: (getattr(m, name)(a), getattr(m, name)(a, axis=1),
                                            getattr(m, name)(b, axis=0)), N, A.astype(np.int32))
        for name in ("nansum", "nanprod", "nanmax", "nanmin", "nanargmax", "nanargmin",
                     "nanmean", "nanvar", "nanstd", "nancumsum", "nancumprod")
    ] + [
        C("nan_options", lambda m, a: (m.nanvar(a, axis=1, ddof=1), m.nanmax(a, axis=1,
                                                                           initial=3.),
                                       m.nansum(a, axis=1, where=a > 5),
                                       m.nanmean(a, axis=0, keepdims=True)), N),
    ],
    "histograms": [
        C("bincount", lambda m, a: m.bincount(a, weights=m.asarray([1., 2, 3, 4, 5]),
                                              minlength=10), np.array([1, 3, 3, 0, 7], np.int32),
          jit=False),
        C("bincount_length", lambda m, a: m.bincount(a, length=5),
          np.array([1, 3, -3, 0, 7], np.int32)),
        C("digitize", lambda m, a: (m.digitize(a, m.asarray([-1., 0, 1])),
                                    m.digitize(a, m.asarray([1., 0, -1]), right=True)), R1),
        C("histogram_bin_edges", lambda m, a: (m.histogram_bin_edges(a, 7),
                                               m.histogram_bin_edges(a, 4, range=(-1, 2))), R1),
        C("histogram", lambda m, a: (m.histogram(a, 7), m.histogram(a, m.asarray([-2., -0.5, 0, 3]),
                                                                    density=True),
                                     m.histogram(a, 5, range=(-1, 1), weights=a * a)), R1),
        C("histogram2d", lambda m, a: (m.histogram2d(a[:20], a[20:], bins=(3, 4)),
                                       m.histogram2d(a[:20], a[20:], bins=3, density=True,
                                                     range=[(-1, 1), (-2, 2)])), R1),
        C("histogramdd", lambda m, a: m.histogramdd(a.reshape(10, 4)[:, :3], bins=(2, 3, 4)), R1),
    ],
    "setops": [
        C("unique", lambda m, a: m.unique(a.reshape(2, 3), True, True, True), I6, jit=False),
        C("unique_size", lambda m, a: (m.unique(a, size=6, fill_value=-1),
                                       m.unique(a, True, True, True, size=6)), I6),
        C("unique_axis", lambda m, a: m.unique(a, axis=0, return_index=True, return_inverse=True,
                                               return_counts=True, size=4),
          np.array([[1, 2], [0, 1], [1, 2]], np.int32)),
        C("unique_nan", lambda m, a: m.unique(a, equal_nan=False),
          np.array([1., np.nan, np.nan], np.float32), jit=False),
        C("unique_array_api", lambda m, a: tuple(m.unique_all(a)), I6, jit=False),
        C("unique_array_api_sizes", lambda m, a: (tuple(m.unique_inverse(a, size=5)),
                                                  m.unique_values(a, size=5),
                                                  m.unique(a, size=5, equal_nan=False)), I6),
        C("unique_array_api_size", lambda m, a: tuple(m.unique_counts(a, size=5)), I6),
        C("isin", lambda m, a, b: (m.isin(a, b), m.isin(a.reshape(2, 3), b, invert=True,
                                                          method="sort")), I6, I3),
        C("intersect1d", lambda m, a, b: m.intersect1d(a, b, return_indices=True), I6, I3,
          jit=False),
        C("intersect1d_size", lambda m, a, b: m.intersect1d(a, b, return_indices=True, size=3),
          I6, I3),
        C("union_diff_xor", lambda m, a, b: (m.union1d(a, b, size=7), m.setdiff1d(a, b, size=4),
                                             m.setxor1d(a, b, size=4)), I6, I3),
        C("setdiff1d_eager", lambda m, a, b: m.setdiff1d(a, b), I6, I3, jit=False),
    ],
    "numeric": [
        C("allclose", lambda m, a: (m.allclose(a, a + 1e-6), m.allclose(a, a + 1e-3),
                                    m.array_equal(a, a), m.array_equal(a, a[0]),
                                    m.array_equal(a * np.nan, a * np.nan, equal_nan=True),
                                    m.array_equiv(a[:1], a[:1] + 0 * a)), R),
    ] + [
        C(f"convolve_{mode}", lambda m, a, b, mode=mode: tuple(
            f(p, q, mode) for f in (m.convolve, m.correlate)
            for p, q in ((a, b[:3]), (a[:2], b), (a[:4], b[:4]), (a[:4], b[:3]))), R[0], R[1],
          tol=1e-4)
        for mode in ("full", "same", "valid")
    ] + [
        C("correlate_complex", lambda m, a, b: m.correlate(a, b, "full"),
          np.array([1 + 1j, 2, 3], np.complex64), np.array([1j, 1], np.complex64)),
        C("interp", lambda m, x, xp, fp: (
            m.interp(x, xp, fp), m.interp(x, xp, fp, left=-1, right=9.),
            m.interp(x, xp, fp, left="extrapolate", right="extrapolate"),
            m.interp(x, m.asarray([2.5, 0.5, 1.]), fp, period=3.)), XQ, XP, FP),
        C("diff", lambda m, a: (m.diff(a), m.diff(a, n=2, axis=0, prepend=0., append=a[:1]),
                                m.diff(a > 0), m.ediff1d(a, to_end=m.asarray([1., 2]),
                                                         to_begin=-1.)), R),
        C("gradient", lambda m, a: (m.gradient(a), m.gradient(a, 2.0, m.asarray([0., 1, 3, 4, 7])),
                                    m.gradient(a, axis=1), m.gradient(a[0], 0.5)), R),
        C("trapezoid", lambda m, a: (m.trapezoid(a), m.trapezoid(a, m.asarray([0., 1, 3, 4, 7])),
                                     m.trapezoid(a, dx=0.5, axis=0)), R),
        C("unwrap", lambda m, a: (m.unwrap(a * 5), m.unwrap(a * 5, period=4., axis=0)), R),
        C("meshgrid", lambda m, a, b: (m.meshgrid(a, b), m.meshgrid(a, b, a[:2], indexing="ij",
                                                                     sparse=True),
                                       m.meshgrid(a, b, a[:2])), V, R[0]),
        C("indices", lambda m: (m.indices((2, 3)), m.indices((2, 3), sparse=True))),
        C("ix_", lambda m, a, b: m.ix_(a, b), np.array([0, 2], np.int32),
          np.array([1, 3, 4], np.int32)),
        C("logspace", lambda m: (m.logspace(0, 2, 5), m.logspace(0., 3., 4, base=2.,
                                                                  endpoint=False),
                                 m.geomspace(1, 1000, 4), m.geomspace(-1, -100, 3,
                                                                      endpoint=False)),
          tol=1e-4),
        C("matvec", lambda m, a, b: (m.matvec(a, b[0]), m.vecmat(b[:, 0], b), m.vecdot(a, b),
                                     m.vecdot(a, b[:, 1:2], axis=0)), R, R),
    ],
    "elementwise": [
        C("frexp", lambda m, a, b: (m.frexp(a), m.frexp(b), m.frexp(a[:5].astype(m.float16))),
          F8, np.array([1, 2, 7], np.int32)),
        C("ldexp", lambda m, a, b: m.ldexp(a, b), np.array([1., 3., 5e-30, 2.], np.float32),
          np.array([200, -2, 150, 3], np.int32)),
        C("modf_spacing", lambda m, a: (m.modf(a), m.spacing(a)),
          np.array([1.5, -2.25, 3., 1000.], np.float32)),
        C("nan_to_num", lambda m, a, c: (m.nan_to_num(a), m.nan_to_num(a, nan=-1., posinf=9.),
                                         m.nan_to_num(c)), F8,
          np.array([complex(np.nan, np.inf), 1 + 2j], np.complex64)),
        C("logaddexp2", lambda m, a, b: m.logaddexp2(a, b), np.array([1., 100., -3.], np.float32),
          np.array([2., 100., 50.], np.float32)),
        C("i0", lambda m, a: m.i0(a), np.array([0., 0.5, -3., 10., 14.9, 15., 20., 50., 80.],
                                               np.float32), tol=3e-6),
        C("gcd_lcm", lambda m, a, b: (m.gcd(a, b), m.lcm(a, b)),
          np.array([12, -18, 0, 7, 0, 4], np.int32), np.array([8, 12, 5, 13, 0, -6], np.int32)),
        C("bitwise_count", lambda m, a, b: (m.bitwise_count(a), m.bitwise_count(b),
                                            m.bitwise_count(a.astype(m.int16))),
          np.array([-1, 7, 0, 2 ** 31 - 1], np.int32), U8),
        C("packbits", lambda m, a, b: (m.packbits(a), m.packbits(b > 4, axis=1, bitorder="little")),
          BITS, A),
        C("unpackbits", lambda m, a: (m.unpackbits(a), m.unpackbits(a[:2].reshape(1, 2), axis=1,
                                                                     count=-3, bitorder="little"),
                                      m.unpackbits(a[:2], count=20)), U8),
        C("iscomplex_isreal", lambda m, c, f: (m.iscomplex(c), m.isreal(c), m.isreal(f)),
          np.array([1 + 0j, 1j], np.complex64), F8),
        C("pow", lambda m, a: m.pow(a, 2), V),
    ],
    "polynomial": [
        C("windows", lambda m: tuple(getattr(m, f)(M) for f in ("bartlett", "blackman", "hamming",
                                                              "hanning") for M in (0, 1, 5, 8))
          + (m.kaiser(7, 4.0), m.kaiser(1, 4.0))),
        C("poly", lambda m, a: m.poly(a), np.array([1., 2., -3.], np.float32)),
        C("polyadd_sub", lambda m, a, b, c: (m.polyadd(a, b), m.polysub(b, a), m.polyadd(c, c[:2])),
          V, np.array([2., -1], np.float32), np.array([1, 2, 3], np.int32)),
        C("polymul", lambda m, a, b: m.polymul(a, b), V, np.array([2., -1], np.float32)),
        C("polymul_trim", lambda m: m.polymul(m.asarray([0., 1]), m.asarray([0., 3, 4]),
                                              trim_leading_zeros=True), jit=False),
        C("polydiv", lambda m, a, b: (m.polydiv(a, b), m.polydiv(a.astype(int), b.astype(int))),
          np.array([1., 2, 3, 4], np.float32), np.array([2., 1], np.float32)),
        C("polyder_int", lambda m, a: (m.polyder(a, 2), m.polyder(a.astype(int)),
                                       m.polyint(a, 2, k=m.asarray([1., 2.])),
                                       m.polyint(a.astype(int))), np.array([1., 2, 3, 4],
                                                                            np.float32)),
        C("polyval", lambda m, p, x: (m.polyval(p, x), m.polyval(p.astype(int), x.astype(int))),
          V, np.array([[0.5, 2.], [3., -1.]], np.float32)),
        C("polyval_nd", lambda m, p, x: (m.polyval(p, x), m.polyval(p[:, None, :], x[:, :1])),
          np.array([[1., 2], [-3, 0.5], [2, 1]], np.float32),
          np.array([[0.5, 2.], [3., -1.]], np.float32)),
        C("polyfit", lambda m, x, y: (m.polyfit(x, m.stack([y, y * 2], axis=1), 3, w=m.abs(x) + 1),
                                      m.polyfit(x, y, 2, cov=True)), XS, YS, tol=2e-4),
        # full=True: (c, residuals, rank, singular values, rcond) of an SVD least squares
        C("polyfit_full", lambda m, x, y: (m.polyfit(x, y, 2, full=True),
                                           m.polyfit(x, m.stack([y, y * 2], axis=1), 3,
                                                     full=True, w=m.abs(x) + 1, rcond=1e-4)),
          XS, YS, tol=2e-4),
        C("roots", lambda m, a, b: m.sort_complex(m.roots(a)),
          np.array([1., -3, 2, 0], np.float32), np.array([2., -1, 3, 5, -7, 1], np.float32),
          jit=False, tol=1e-4),
        C("roots_traced", lambda m, a: m.sort_complex(m.roots(a, strip_zeros=False)),
          np.array([1., 2, -5, -6], np.float32), tol=1e-4),
    ],
    "functional": [
        C("vectorize", lambda m, a, b: (m.vectorize(lambda x, y: x * 2 + y)(a, b[0]),
                                        m.vectorize(m.dot, signature="(n),(n)->()")(a, b[1]),
                                        m.vectorize(lambda x: (x.sum(), x * 2),
                                                    signature="(n)->(),(n)")(a),
                                        m.vectorize(lambda x, p: x ** p, excluded={1})(a, 2)),
          R, R),
        C("apply_along_axis", lambda m, a: (
            m.apply_along_axis(lambda x: x[::-1] * x.sum(), 1, a), m.apply_along_axis(m.sum, 0, a),
            m.apply_along_axis(lambda x: m.outer(x, x), 1, a[:, :4].reshape(4, 2, 2)),
            m.apply_over_axes(m.sum, a[:, :4].reshape(4, 2, 2), [0, 2])), R),
        C("fromfunction", lambda m: (m.fromfunction(lambda i, j: i * 10 + j, (3, 4)),
                                     m.fromfunction(lambda i, j: i - j, (3, 2), dtype=int))),
        C("ufunc", lambda m, a: (ufn(m)(a, a[0]), ufn(m).outer(a[0], a[1, :2]),
                                 ufn(m).reduce(a, axis=1), ufn(m).reduce(a, axis=None,
                                                                        keepdims=True),
                                 ufn(m).reduce(a, axis=0, initial=2.), ufn(m).accumulate(a, axis=1),
                                 ufn(m).at(a, m.asarray([0, 2, 0]), a[:3, :1], inplace=False),
                                 ufn(m).reduceat(a, np.array([0, 2, 1]), axis=1)), R,
          tol=1e-4),
    ],
    "index_tricks": [
        C("unravel_index", lambda m, a: m.unravel_index(a, (3, 4)),
          np.array([-1, -20, 20, 5], np.int32)),
        C("ravel_multi_index", lambda m, a, b: (m.ravel_multi_index((a, b), (3, 4), mode="clip"),
                                                m.ravel_multi_index((a, b), (3, 4), mode="wrap",
                                                                    order="F")),
          np.array([1, 5], np.int32), np.array([2, -1], np.int32)),
        C("ravel_multi_index_raise", lambda m, a, b: m.ravel_multi_index((a, b), (3, 4)),
          np.array([1, 2], np.int32), np.array([2, 3], np.int32), jit=False),
        C("r_c_", lambda m, a, b: (m.r_[a, 0, a[:1]], m.r_[-1:1:5j], m.r_[0:6:2, 7], m.c_[a, a * 2],
                                   m.c_[b, b], m.r_["0,2", a], m.r_["-1", b, b],
                                   m.r_["0,2,0", a, a]), np.array([1, 2], np.int32), A),
        C("grids", lambda m: (m.mgrid[0:2, 0:3], m.mgrid[0:1:3j], m.ogrid[0:2, 0:3],
                              m.mgrid[0:1:3j, 0:4:2])),
        C("host_io", lambda m: (m.frombuffer(b"\x01\x02\x03\x04", dtype=m.uint8),
                                m.fromstring("1 2", sep=" "), m.copy(m.ones(2))), jit=False),
    ],
    "nonzero_size": [
        C("nonzero", lambda m, a: (m.nonzero(a, size=5, fill_value=-1), m.nonzero(a, size=2),
                                   m.argwhere(a, size=4), m.flatnonzero(a, size=4, fill_value=7),
                                   m.where(a, size=4, fill_value=(1, 2))),
          np.array([[0, 1, 0], [2, 0, 3]], np.float32)),
    ],
    "array_methods": [
        C("methods", lambda m, a, x: (x.view(m.float32), x.view(m.int16), x.view(m.uint8),
                                      x.astype(m.int16).view(m.int32),
                                      x.compress(m.asarray([True, False, True]), size=2),
                                      a.diagonal(1), a.trace(),
                                      x.searchsorted(m.asarray([1.5, 3])),
                                      m.asarray([0, 1, 0]).choose([a[0, :3], a[1, :3]],
                                                                  mode="clip")), A,
          np.arange(4, dtype=np.int32)),
    ],
}


def _call(case, m, dynamic):
  it = iter(dynamic)
  args = [a.value if isinstance(a, S) else next(it) if isinstance(a, (np.ndarray, np.generic))
          else a for a in case.args]
  return case.fn(m, *args)


def _dynamic(case, m):
  return [m.asarray(a) for a in case.args if isinstance(a, (np.ndarray, np.generic))]


# The oracle's values do not depend on XLA's optimizations; skipping them halves its compile time.
_FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def _jax_jit(fun, *args):
  return jax.jit(fun).lower(*args).compile(compiler_options=_FAST_COMPILE)(*args)


def _leaves(tree):
  return jax.tree_util.tree_leaves(tree, is_leaf=lambda x: isinstance(x, revax.Array))


# (case, output) pairs the chip computes otherwise under jit (tests/platform_tolerances.py): the
# int16 narrowing of int32 2**31 - 1 before bitwise_count (INT_NARROWING)
TPU_JIT_DIFFERENCES = {("bitwise_count", 2): platform_tolerances.INT_NARROWING}


def _compare(case, expected, actual, how):
  exp, act = _leaves(expected), _leaves(actual)
  assert len(exp) == len(act), f"{case.name} ({how}): {len(act)} outputs, JAX has {len(exp)}"
  for i, (e, a) in enumerate(zip(exp, act, strict=True)):
    e, a = np.asarray(e), np.asarray(a)
    where = f"{case.name} ({how}) output {i}"
    assert a.dtype == e.dtype, f"{where}: dtype {a.dtype}, JAX {e.dtype}"
    assert a.shape == e.shape, f"{where}: shape {a.shape}, JAX {e.shape}"
    rtol = atol = case.tol
    if how == "revax.jit" and platform_tolerances.ON_TPU:  # the chip's transcendental functions
      rtol, atol = platform_tolerances.tolerance(rtol, atol)
      if (case.name, i) in TPU_JIT_DIFFERENCES:
        continue
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=where)


def _jax_group(group):
  """jax's output leaves (NumPy arrays) per case of a group: jit-able cases from one jax.jit,
  the others eagerly."""
  cases = GROUPS[group]
  jitted = [c for c in cases if c.jit]
  out = {}
  if jitted:
    expected = _jax_jit(lambda d: [_call(c, jnp, x) for c, x in zip(jitted, d, strict=True)],
                        [_dynamic(c, jnp) for c in jitted])
    out.update((c.name, e) for c, e in zip(jitted, expected, strict=True))
  for c in cases:
    if not c.jit:
      out[c.name] = _call(c, jnp, _dynamic(c, jnp))
  return {name: [np.asarray(leaf) for leaf in _leaves(tree)] for name, tree in out.items()}


@pytest.mark.parametrize("group", list(GROUPS))
def test_matches_jax(group):
  """Each case against JAX: eagerly, and (jit-able cases) under revax.jit."""
  cases = GROUPS[group]
  jitted = [c for c in cases if c.jit]
  want = _oracle(f"group {group}", lambda: _jax_group(group))
  if jitted:
    actual_jit = revax.jit(lambda d: [_call(c, rnp, x) for c, x in zip(jitted, d, strict=True)])(
        [_dynamic(c, rnp) for c in jitted])
    for c, a in zip(jitted, actual_jit, strict=True):
      _compare(c, want[c.name], a, "revax.jit")
  for c in cases:
    _compare(c, want[c.name], _call(c, rnp, _dynamic(c, rnp)), "eager")


# --- derivatives and batching of a differentiable subset ---------------------------------------
DIFFERENTIABLE = [
    ("diag_trace", lambda m, x: (m.diag(x[0, :3]) * m.tril(x[:3, :3])).sum() + m.trace(x, 1)),
    ("kron_cross", lambda m, x: m.kron(x[:2, :2], x[2, :2]).sum()
     + m.cross(x[:, :3], x[0, :3]).sum()),
    ("roll_rot90", lambda m, x: (m.roll(x, 2) * m.rot90(x, 2)).sum()),
    ("pad_reflect", lambda m, x: (m.pad(x, 2, mode="reflect") ** 2).sum()
     + m.pad(x, 1, mode="mean").sum()),
    ("quantile", lambda m, x: m.quantile(x, 0.3) + m.median(x, axis=0).sum()
     + m.nanpercentile(x, 70.)),
    ("nan_reductions", lambda m, x: m.nansum(x ** 2) + m.nanmean(x, axis=0).sum()
     + m.nanstd(x) + m.nanmax(x, axis=1).sum()),
    ("cov_average", lambda m, x: m.cov(x).sum() + m.average(x, axis=1,
                                                            weights=m.arange(1., 6.)).sum()),
    ("interp_convolve", lambda m, x: m.interp(x[0], m.asarray([-1., 0., 1.]), x[1, :3]).sum()
     + m.convolve(x[0], x[1, :3]).sum()),
    ("gradient_trapezoid", lambda m, x: (m.gradient(x, axis=1) ** 2).sum() + m.trapezoid(x).sum()),
    ("polyval_polyfit", lambda m, x: m.polyval(x[0], x[1]).sum()
     + m.polyfit(m.arange(5.), x[2], 2).sum()),
    ("i0_vectorize", lambda m, x: m.i0(x).sum() + m.vectorize(lambda a, b: a * b)(x, x[0]).sum()),
    ("piecewise_select", lambda m, x: m.piecewise(x, [x < 0], [lambda v: v ** 2, lambda v: v]).sum()
     + m.select([x > 0.5], [x ** 3], 0.).sum()),
]
X = _rng.randn(4, 5).astype(np.float32)
XB = _rng.randn(3, 4, 5).astype(np.float32)


def _jax_grad_and_vmap():
  """jax's grad and vmap of the subset: {"grad": [array per function], "vmap": [...]}."""
  funs = [f for _, f in DIFFERENTIABLE]
  grads, vmaps = _jax_jit(lambda x, xb: ([jax.grad(lambda v, f=f: f(jnp, v))(x) for f in funs],
                                         [jax.vmap(lambda v, f=f: f(jnp, v))(xb) for f in funs]),
                          X, XB)
  return {"grad": [np.asarray(g) for g in grads], "vmap": [np.asarray(v) for v in vmaps]}


def test_grad_and_vmap_match_jax():
  """grad and vmap of the subset (revax eagerly) against one jax.jit."""
  names = [n for n, _ in DIFFERENTIABLE]
  funs = [f for _, f in DIFFERENTIABLE]
  expected = _oracle("grad_and_vmap", _jax_grad_and_vmap)
  for name, f, e in zip(names, funs, expected["grad"], strict=True):
    g = revax.grad(lambda v, f=f: f(rnp, v))(rnp.asarray(X))
    np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=2e-4, atol=2e-4,
                               err_msg=f"grad {name}")
  vm = [revax.vmap(lambda v, f=f: f(rnp, v))(rnp.asarray(XB)) for f in funs]
  for name, a, e in zip(names, vm, expected["vmap"], strict=True):
    np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=2e-4, atol=2e-4,
                               err_msg=f"vmap {name}")


# --- the recorded oracle -------------------------------------------------------------------------
RECORD = pathlib.Path(__file__).parent / "expected" / "test_jax_numpy_differential.json.xz"
_HINT = "re-record with: python -m tests.numpy.test_jax_numpy_differential"


def _encode(arrays_by_name):
  return {k: [records.encode_array(a) for a in v] for k, v in arrays_by_name.items()}


def _all_outputs():
  """Every recorded key and jax's live outputs under it."""
  return ({f"group {g}": _jax_group(g) for g in GROUPS}
          | {"grad_and_vmap": _jax_grad_and_vmap()})


_DOC = {}


def _record_doc():
  if not _DOC:
    assert RECORD.exists(), f"no record of jax's outputs: {_HINT}"
    doc = records.read_doc(RECORD)
    assert doc["sha256"] == records.digest_files([__file__]), (
        f"the record of jax's outputs is stale (this file changed since it was made with jax "
        f"{doc['jax']}): {_HINT}")
    _DOC.update(doc)
  return _DOC


def _oracle(key, live):
  """jax's outputs under `key`: recorded, or with REVAX_LIVE_ORACLE=1 computed by `live()`,
  failing where the record differs from them."""
  if not records.LIVE:
    return {k: [records.decode_array(a) for a in v]
            for k, v in _record_doc()["outputs"][key].items()}
  outputs = live()
  doc = _record_doc()
  assert doc["jax"] == jax.__version__, \
      f"the record was made with jax {doc['jax']}, jax {jax.__version__} is installed: {_HINT}"
  now = json.loads(json.dumps(_encode(outputs)))  # through JSON, as the file holds it
  was = doc["outputs"].get(key, {})
  stale = sorted(k for k in set(now) | set(was) if was.get(k) != now.get(k))
  assert not stale, f"the record of {key} differs from live jax in {stale}: {_HINT}"
  return outputs


def record():
  """Writes jax's outputs of every group and of the grad/vmap subset to RECORD."""
  outputs = {key: _encode(out) for key, out in _all_outputs().items()}
  records.write_doc(RECORD, {"jax": jax.__version__, "sha256": records.digest_files([__file__]),
                             "outputs": outputs})
  print(f"recorded {sum(len(v) for v in outputs.values())} cases in {RECORD} "
        f"({RECORD.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
  sys.exit(record())
