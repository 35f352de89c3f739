"""lax is strict: every binary elementwise function of jax.lax over every pair of operand kinds.

jax's lax functions take no implicit promotion: a Python scalar is a weakly typed value of its
own default dtype (int32, float32, complex64; bool is strong), and operands must have one dtype
(`lax.add(float16_array, 2.0)` is a TypeError, `lax.add(float32_array, 2.0)` is not). The table
of what jax accepts, with which result dtype and weak type, and what it refuses with which
exception type, is generated from jax itself (`tables.py`), never written by hand.
"""
import pytest

from tests.dtype_tables import tables

BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter",
          "complex", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
          "shift_right_logical", "shift_right_arithmetic", "eq", "ne", "lt", "le", "gt", "ge",
          "mulhi", "igamma", "igammac", "igamma_grad_a", "polygamma", "zeta",
          "random_gamma_grad"]
# values of these (slow to compile) are checked on two cases per result type
_SLOW = {"igamma", "igammac", "igamma_grad_a", "polygamma", "zeta", "random_gamma_grad"}


def _binary(name):
  return lambda lib, x, y: getattr(lib.lax, name)(x, y)


def _all_pairs(name):
  kinds = tables.ALL_KINDS
  return lambda: tables.product_cases(name, _binary(name), [kinds, kinds])


def _big_ints(name):
  kinds = tables.STRONG + tables.WEAK
  return lambda: (tables.product_cases(name, _binary(name), [kinds, tables.BIG_INTS])
                  + tables.product_cases(name, _binary(name), [tables.BIG_INTS, kinds]))


TABLES = ([tables.Table(n, _all_pairs(n), 2 if n in _SLOW else None) for n in BINARY]
          + [tables.Table(f"{n} big ints", _big_ints(n))
             for n in ("add", "mul", "max", "eq", "shift_left", "bitwise_and")])


@pytest.mark.parametrize("table", tables.table_params(TABLES))
def test_lax_binary_function_over_operand_kinds(table):
  table.check(__file__)
