"""Op records for dot_general: batch and contracting dimensions in any positions."""
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand


def _dg(dims, **kw):
  return lambda x, y: lax.dot_general(x, y, dims, **kw)


RECORDS = [
    OpRecord("dot_general_matmul_f32", "dot_general", _dg((((1,), (0,)), ((), ()))),
             args_of(rand((3, 4)), rand((4, 5))), lambda x, y: x @ y),
    OpRecord("dot_general_nonleading_batch_f32", "dot_general", _dg((((2,), (0,)), ((1,), (1,)))),
             args_of(rand((3, 2, 4)), rand((4, 2, 5))),
             lambda x, y: np.einsum("ibk,kbj->bij", x, y)),
    OpRecord("dot_general_trailing_batch_f32", "dot_general", _dg((((0,), (1,)), ((2,), (0,)))),
             args_of(rand((4, 3, 2)), rand((2, 4, 5))),
             lambda x, y: np.einsum("kib,bkj->bij", x, y)),
    OpRecord("dot_general_outer_f32", "dot_general", _dg((((), ()), ((), ()))),
             args_of(rand((3,)), rand((2,))), np.outer),
    OpRecord("dot_general_vecvec_f32", "dot_general", _dg((((0,), (0,)), ((), ()))),
             args_of(rand((6,)), rand((6,))), lambda x, y: np.asarray(x @ y)),
    OpRecord("dot_general_i32", "dot_general", _dg((((1,), (0,)), ((), ()))),
             args_of(rand((3, 4), np.int32), rand((4, 2), np.int32)), lambda x, y: x @ y),
    OpRecord("dot_general_bool", "dot_general", _dg((((1,), (0,)), ((), ()))),
             args_of(rand((3, 4), np.bool_), rand((4, 2), np.bool_)),
             lambda x, y: (x.astype(int) @ y.astype(int)) > 0),
    OpRecord("dot_general_zero_contraction_f32", "dot_general", _dg((((1,), (0,)), ((), ()))),
             args_of(rand((3, 0)), rand((0, 2))), lambda x, y: x @ y),
    OpRecord("dot_general_preferred_f32_from_i8", "dot_general",
             _dg((((1,), (0,)), ((), ())), preferred_element_type=np.int32),
             args_of(rand((3, 4), np.int8), rand((4, 2), np.int8)),
             lambda x, y: x.astype(np.int32) @ y.astype(np.int32)),
]
