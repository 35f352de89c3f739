"""Op records for stage (the identity lifting a value into the trace: linear, its own inverse)
and dce_sink (an output-less equation kept by dead-code elimination; the record returns a value
computed beside it)."""
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand


def _sink_then_scale(x):
  lax.dce_sink(lax.sin(x))
  return lax.mul(x, np.float32(3))


RECORDS = [
    OpRecord("stage_f32", "stage", lambda x: lax.stage(x), args_of(rand((2, 3))), lambda x: x,
             linear=True, invertible=True),
    OpRecord("dce_sink_beside_scale", "dce_sink", _sink_then_scale, args_of(rand((4,))),
             lambda x: x * np.float32(3)),
]
