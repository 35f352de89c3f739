"""lax is strict beyond the binary functions: every jax.lax function that takes two or more
arrays (ternary elementwise functions, select, padding and fill values, updates, concatenation,
contractions, reductions' init values, sorts of several operands, index operands) over
combinations of operand kinds, against the table generated from jax (`tables.py`).
"""
import numpy as np
import pytest

from tests.dtype_tables import tables

K = tables
# a smaller set of kinds for the three-operand products (13**3 cases each)
SMALL = ([K.array_kind(d) for d in (np.bool_, np.int32, np.uint8, K.BF16, np.float16,
                                     np.float32, np.complex64)]
         + [K.weak_kind(2), K.weak_kind(2.5)] + K.PYTHON[:3] + [K.NUMPY[3], K.ZERO_D[0]])
ARRAYS = K.STRONG + K.WEAK + K.NUMPY[:2]
FILLS = K.ALL_KINDS + K.BIG_INTS  # padding, fill, init and update values
INITS = FILLS + K.IDENTITIES
INDEX = ([K.array_kind(d, ()) for d in (np.int8, np.int16, np.int32, np.uint8, np.uint32,
                                         np.bool_, np.float32)]
         + [K.weak_kind(0, ()), K.PYTHON[0], K.PYTHON[1], K.PYTHON[2], K.NUMPY[4]])


def _scatter_dnums(lib):
  return lib.lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))


def _scatter(name):
  def fn(lib, operand, updates):
    idx = lib.numpy.asarray(np.array([[0], [1]], np.int32))
    return getattr(lib.lax, name)(operand, idx, updates, _scatter_dnums(lib))
  return fn


def _conv(lib, lhs, rhs):
  return lib.lax.conv_general_dilated(lhs, rhs, (1,), "VALID")


def _pair(name, fn, left, right, **options):
  return tables.Table(name, lambda: tables.product_cases(name, fn, [left, right]), 4, **options)


PAIRS = [
  _pair("pad", lambda lib, x, v: lib.lax.pad(x, v, [(1, 1, 0)]), ARRAYS, FILLS),
  _pair("full_like", lambda lib, x, v: lib.lax.full_like(x, v), ARRAYS, FILLS),
  _pair("full", lambda lib, _, v: lib.lax.full((2,), v), [K.STRONG[0]], FILLS),
  _pair("dynamic_update_slice", lambda lib, x, u: lib.lax.dynamic_update_slice(x, u, (0,)),
        ARRAYS, FILLS),
  _pair("dynamic_update_index_in_dim",
        lambda lib, x, u: lib.lax.dynamic_update_index_in_dim(x, u, 0, 0), ARRAYS, FILLS),
  _pair("concatenate", lambda lib, x, y: lib.lax.concatenate([x, y], 0), K.ALL_KINDS,
        K.ALL_KINDS),
  _pair("dot", lambda lib, x, y: lib.lax.dot(x, y), K.ALL_KINDS, K.ALL_KINDS),
  _pair("dot_general", lambda lib, x, y: lib.lax.dot_general(x, y, (((0,), (0,)), ((), ()))),
        K.ALL_KINDS, K.ALL_KINDS),
  _pair("conv_general_dilated", _conv,
        [K.array_kind(d, (1, 1, 2)) for d in K.STRONG_DTYPES],
        [K.array_kind(d, (1, 1, 1)) for d in K.STRONG_DTYPES]),
  _pair("reduce", lambda lib, x, i: lib.lax.reduce(x, i, lib.lax.add, (0,)), ARRAYS,
        INITS),
  _pair("reduce_max_init", lambda lib, x, i: lib.lax.reduce(x, i, lib.lax.max, (0,)), ARRAYS,
        INITS),
  _pair("reduce_window",
        lambda lib, x, i: lib.lax.reduce_window(x, i, lib.lax.add, (1,), (1,), "VALID"),
        # jax refuses a 0-d Array init only when tracing (it compares it with the identity)
        ARRAYS, INITS, eager_errors=True),
  _pair("scatter", _scatter("scatter"), ARRAYS, K.ALL_KINDS),
  _pair("scatter_add", _scatter("scatter_add"), ARRAYS, K.ALL_KINDS),
  _pair("scatter_max", _scatter("scatter_max"), ARRAYS, K.ALL_KINDS),
  _pair("scatter_min", _scatter("scatter_min"), ARRAYS, K.ALL_KINDS),
  _pair("scatter_mul", _scatter("scatter_mul"), ARRAYS, K.ALL_KINDS),
  _pair("scatter_sub", _scatter("scatter_sub"), ARRAYS, K.ALL_KINDS),
  _pair("sort", lambda lib, x, y: lib.lax.sort((x, y), num_keys=1), K.ALL_KINDS, K.ALL_KINDS),
  _pair("sort_key_val", lambda lib, x, y: lib.lax.sort_key_val(x, y), K.ALL_KINDS,
        K.ALL_KINDS),
  _pair("rng_uniform", lambda lib, a, b: lib.lax.rng_uniform(a, b, (2,)), K.ALL_KINDS,
        K.ALL_KINDS, values=False, known=tuple(
            (f"rng_uniform({k}, {k})", "jax accepts bool and complex bounds when tracing, and "
             "XLA:CPU then aborts the process compiling them; revax refuses them with a "
             "TypeError") for k in ("py_bool", "py_complex"))),
  _pair("dynamic_slice index", lambda lib, x, i: lib.lax.dynamic_slice(x, (i,), (1,)),
        [K.STRONG[9]], INDEX),
  _pair("dynamic_update_slice index",
        lambda lib, x, i: lib.lax.dynamic_update_slice(x, x[:1], (i,)), [K.STRONG[9]], INDEX),
  _pair("dynamic_index_in_dim", lambda lib, x, i: lib.lax.dynamic_index_in_dim(x, i),
        [K.STRONG[9]], INDEX),
]


TRIPLES = [
  ("clamp", lambda lib, lo, x, hi: lib.lax.clamp(lo, x, hi)),
  ("select_n", lambda lib, w, a, b: lib.lax.select_n(w, a, b)),
  ("select", lambda lib, p, a, b: lib.lax.select(p, a, b)),
  ("betainc", lambda lib, a, b, x: lib.lax.betainc(a, b, x)),
]



def _triple(name, fn):
  return tables.Table(name, lambda: tables.product_cases(name, fn, [SMALL, SMALL, SMALL]), 2)


def _mul_out_dtype_cases():
  kinds = [K.array_kind(d) for d in (np.int8, np.int32, np.uint8, K.BF16, np.float32)]
  cases = []
  for out in (np.int32, np.float32, np.int16):
    fn = lambda lib, x, y, out=out: lib.lax.mul(x, y, out_dtype=out)  # noqa: E731
    cases += tables.product_cases(f"mul[out_dtype={np.dtype(out).name}]", fn, [kinds, kinds])
  return cases


TABLES = (PAIRS + [_triple(n, f) for n, f in TRIPLES]
          + [tables.Table("mul out_dtype", _mul_out_dtype_cases)])


@pytest.mark.parametrize("table", tables.table_params(TABLES))
def test_lax_function_over_operand_kinds(table):
  table.check(__file__)
