"""Op record for composite: a named op whose decomposition (sin(x) * k, k an attribute) runs
eagerly and lowers as stablehlo.composite. No derivative rules (as in JAX); vmap runs the
batched decomposition."""
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

_scaled_sin = lax.composite(lambda x, *, k: lax.sin(x) * k, name="revax_test.scaled_sin")

RECORDS = [
    OpRecord("composite_scaled_sin", "composite", lambda x: _scaled_sin(x, k=2.0),
             args_of(rand((3, 4))), lambda x: np.sin(x) * np.float32(2), grad_order=0),
]
