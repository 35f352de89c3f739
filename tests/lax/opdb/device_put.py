"""Op records for the device_put primitive (revax/_src/lax/device_put.py): revax.device_put of
traced values binds it; its value is its operand's (linear, invertible)."""
import numpy as np

import revax
from tests.lax.op_db import OpRecord, args_of, rand

RECORDS = [
    OpRecord("device_put_f32", "device_put", lambda x: revax.device_put(x), args_of(rand((3, 4))),
             np.array, linear=True, invertible=True, rtol=0, atol=0),
    OpRecord("device_put_to_device_f32", "device_put",
             lambda x: revax.device_put(x, revax.devices()[0]), args_of(rand((2,))), np.array,
             linear=True, invertible=True, rtol=0, atol=0),
    OpRecord("device_put_i32", "device_put", lambda x: revax.device_put(x, may_alias=False),
             args_of(rand((2, 3), np.int32)), np.array, grad_order=0),
]
