"""jax.numpy's functions of one array over every operand kind, against jax: the result dtype and
weak type (jax's implementations mix their operand with constants of their own -- `lax._const`,
strong unless the operand is a weak scalar, or NumPy constants, always strong -- which decide
whether a weakly typed operand gives a weak result), the exceptions where jax refuses, and the
values. Every strong dtype, weak arrays and weak 0-d arrays of each kind, Python scalars and
NumPy scalars and arrays.
"""
import pytest

from tests.dtype_tables import tables

K = tables
UNARY = [
    "abs", "absolute", "fabs", "negative", "positive", "sign", "square", "sqrt", "cbrt",
    "reciprocal", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
    "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
    "deg2rad", "rad2deg", "degrees", "radians", "sinc", "floor", "ceil", "trunc", "rint",
    "round", "around", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit",
    "logical_not", "invert", "bitwise_not", "bitwise_count", "real", "imag", "conj",
    "conjugate", "angle", "i0", "nan_to_num", "spacing", "frexp", "modf", "iscomplex",
    "isreal", "unwrap", "gradient", "sort_complex", "clip", "copy", "asarray", "array",
    "zeros_like", "ones_like", "atleast_1d", "ravel", "flip", "diff", "ediff1d", "cumsum",
    "cumprod", "sum", "prod", "mean", "var", "std", "median", "max", "min", "ptp", "all",
    "any", "argmax", "count_nonzero", "average", "nansum", "nanmean", "nanmax", "nanvar",
    "nancumsum", "trapezoid", "cov", "corrcoef", "sort",
]
KINDS = (K.STRONG + K.WEAK + K.PYTHON
         + [K.weak_kind(2, ()), K.weak_kind(2.5, ()), K.weak_kind(2.5 + 1j, ())]
         + K.NUMPY[:3])


def _unary(name):
  return lambda lib, x: getattr(lib.numpy, name)(x)


TABLES = [tables.Table(n, (lambda n=n: tables.product_cases(n, _unary(n), [KINDS])))
          for n in UNARY]


@pytest.mark.parametrize("table", tables.table_params(TABLES))
def test_numpy_unary_function_over_operand_kinds(table):
  table.check(__file__)
