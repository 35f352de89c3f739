"""jax.numpy functions of three or more arrays over a reduced set of operand kinds, against jax
(the binary tables' method, tables.py): the result's dtype, weak type and shape, the exception
type where jax refuses, and the values, eagerly and traced. The kinds (6) are the ones where
promotion and weak types part ways -- bool, int8 and float16 Arrays, complex64, a weak float
Array, a Python int -- so the 216 triples of a function stay cheap (jax's side is abstract
evaluation plus one jit per function).
"""
import pytest

from tests.dtype_tables import tables as T

KINDS = [T.array_kind(d) for d in ("bool", "int8", "float16", "complex64")] + [
    T.weak_kind(2.5), T.PYTHON[1]]
CONDS = [T.array_kind("bool"), T.array_kind("int8"), T.PYTHON[0], T.weak_kind(2.5)]


def _np(lib):
  return lib.numpy


FUNCTIONS = {
    "where": (lambda lib, c, x, y: _np(lib).where(c, x, y), [CONDS, KINDS, KINDS]),
    "clip": (lambda lib, x, lo, hi: _np(lib).clip(x, lo, hi), [KINDS] * 3),
    "select": (lambda lib, x, y, d: _np(lib).select(
        [_np(lib).asarray([True, False]), _np(lib).asarray([False, True])], [x, y], d),
        [KINDS] * 3),
    "select conditions": (lambda lib, c1, c2, x: _np(lib).select([c1, c2], [x, x]),
                          [CONDS, CONDS, KINDS]),
    "piecewise": (lambda lib, x, a, b: _np(lib).piecewise(
        x, [_np(lib).asarray([True, False])], [a, b]), [KINDS] * 3),
    "interp": (lambda lib, x, xp, fp: _np(lib).interp(x, _np(lib).sort(xp), fp), [KINDS] * 3),
    "interp left right": (lambda lib, fp, left, right: _np(lib).interp(
        _np(lib).asarray([0., 1.5, 9.]), _np(lib).asarray([1., 2.]), fp, left, right),
        [KINDS] * 3),
    "einsum 3": (lambda lib, a, b, c: _np(lib).einsum("i,i,i->i", a, b, c), [KINDS] * 3),
    "concatenate 3": (lambda lib, a, b, c: _np(lib).concatenate([a, b, c]), [KINDS] * 3),
    "stack 3": (lambda lib, a, b, c: _np(lib).stack([a, b, c]), [KINDS] * 3),
    "vstack 3": (lambda lib, a, b, c: _np(lib).vstack([a, b, c]), [KINDS] * 3),
    "block 3": (lambda lib, a, b, c: _np(lib).block([a, b, c]), [KINDS] * 3),
    "put": (lambda lib, a, v, _: _np(lib).put(_np(lib).atleast_1d(a), _np(lib).asarray([0]), v,
                                               inplace=False), [KINDS, KINDS, KINDS[:1]]),
    "place": (lambda lib, a, m, v: _np(lib).place(_np(lib).atleast_1d(a), m, v, inplace=False),
              [KINDS, CONDS[:2], KINDS]),
    "polyval 3": (lambda lib, a, b, x: _np(lib).polyval(_np(lib).stack([a, b]), x), [KINDS] * 3),
    "broadcast_arrays 3": (lambda lib, a, b, c: _np(lib).broadcast_arrays(a, b, c), [KINDS] * 3),
    "meshgrid 3": (lambda lib, a, b, c: _np(lib).meshgrid(a, b, c), [KINDS] * 3),
    "isclose tolerances": (lambda lib, a, rtol, atol: _np(lib).isclose(a, 2.5, rtol, atol),
                           [KINDS] * 3),
    "lexsort 3": (lambda lib, a, b, c: _np(lib).lexsort([a, b, c]), [KINDS] * 3),
    "linalg.multi_dot": (lambda lib, a, b, c: _np(lib).linalg.multi_dot([a, b, c]),
                         [KINDS] * 3),
    "nan_to_num": (lambda lib, x, p, n: _np(lib).nan_to_num(x, nan=0, posinf=p, neginf=n),
                   [KINDS, KINDS[4:], KINDS[4:]]),
}

TABLES = [T.Table(name, (lambda name=name, f=f, k=k: T.product_cases(name, f, k)), 4)
          for name, (f, k) in FUNCTIONS.items()]


@pytest.mark.parametrize("table", T.table_params(TABLES))
def test_numpy_function_of_three_arrays_over_operand_kinds(table):
  table.check(__file__)
