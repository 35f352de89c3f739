"""Op records for with_sharding_constraint (revax/_src/lax/sharding_constraint.py): the identity
on values (reference: the input), linear and its own inverse. The suites run on one device, so
the sharding is over a 1-device mesh (the multi-device layout is tested in tests/sharding/)."""
import functools

import numpy as np

import revax
import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand


@functools.cache
def _sharding(spec):
  # made on first use, not at import: creating a mesh starts the backend
  mesh = revax.make_mesh((1,), ("x",))
  return revax.sharding.NamedSharding(mesh, revax.sharding.PartitionSpec(*spec))


def _constrain(spec):
  return lambda x: lax.with_sharding_constraint(x, _sharding(spec))


RECORDS = [
    OpRecord("sharding_constraint_f32", "sharding_constraint", _constrain(("x",)),
             args_of(rand((4, 3), np.float32)), lambda x: x, linear=True, invertible=True),
    OpRecord("sharding_constraint_f32_cols", "sharding_constraint", _constrain((None, "x")),
             args_of(rand((2, 5), np.float32)), lambda x: x, linear=True, invertible=True),
    OpRecord("sharding_constraint_i32_0d", "sharding_constraint", _constrain(()),
             args_of(rand((), np.int32, -5, 5)), lambda x: x, grad_order=0),
]
