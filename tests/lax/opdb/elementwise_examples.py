"""Op records for the first elementwise primitives (the families add their own files)."""
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

RECORDS = [
    OpRecord("neg_f32", "neg", lax.neg, args_of(rand((3, 4))), np.negative),
    OpRecord("neg_i32", "neg", lax.neg, args_of(rand((5,), np.int32)), np.negative),
    OpRecord("exp_f32", "exp", lax.exp, args_of(rand((3, 4))), np.exp),
    OpRecord("add_f32", "add", lax.add, args_of(rand((3, 4)), rand((3, 4))), np.add),
    OpRecord("add_broadcast_f32", "add", lax.add, args_of(rand((3, 4)), rand((4,))), np.add),
    OpRecord("mul_i32", "mul", lax.mul, args_of(rand((2, 3), np.int32), rand((2, 3), np.int32)),
             np.multiply),
    OpRecord("convert_f32_i32", "convert_element_type",
             lambda x: lax.convert_element_type(x, np.int32), args_of(rand((7,), low=-100, high=100)),
             lambda x: np.trunc(x).astype(np.int32)),
    OpRecord("broadcast_in_dim_f32", "broadcast_in_dim",
             lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), args_of(rand((3, 1))),
             lambda x: np.broadcast_to(x, (2, 3, 4))),
]
