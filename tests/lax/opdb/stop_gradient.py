"""Op records for stop_gradient: the identity (its zero derivative is checked in test_stop_gradient)."""
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

RECORDS = [
    OpRecord("stop_gradient_f32", "stop_gradient", lax.stop_gradient, args_of(rand((3, 4))),
             lambda x: x, grad_order=0),
    OpRecord("stop_gradient_bf16_0d", "stop_gradient", lax.stop_gradient,
             args_of(rand((), np.float32)), lambda x: x, grad_order=0),
    OpRecord("stop_gradient_zero_size", "stop_gradient", lax.stop_gradient,
             args_of(rand((0, 2))), lambda x: x, grad_order=0),
]
