"""Op records for the copy primitive (revax/_src/lax/copy.py): the identity on values, linear
and invertible, over float, integer, bool and 0-d operands."""
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand


def _copy(x):
  return lax.copy_p.bind(x)


RECORDS = [
    OpRecord("copy_f32", "copy", _copy, args_of(rand((3, 4))), np.array, linear=True,
             invertible=True, rtol=0, atol=0),
    OpRecord("copy_f32_0d", "copy", _copy, args_of(rand(())), np.array, linear=True,
             invertible=True, rtol=0, atol=0),
    OpRecord("copy_i32", "copy", _copy, args_of(rand((2, 3), np.int32)), np.array,
             grad_order=0),
    OpRecord("copy_bool_zero_size", "copy", _copy, args_of(rand((0, 2), np.bool_)), np.array,
             grad_order=0, vmap=False),
]
