"""Op records for split, unstack, stack and tile (revax/_src/lax/stacking.py): linear and
invertible structural primitives over float, integer and bool operands (references: NumPy's
split, moveaxis, stack and tile)."""
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand


def _rec(name, primitive, fun, makers, ref, dtype=np.float32, **kw):
  exact = np.dtype(dtype) in (np.dtype(np.int32), np.dtype(np.bool_))
  kw.setdefault("linear", not exact)
  kw.setdefault("invertible", True)
  if exact:
    kw.setdefault("grad_order", 0)
  return OpRecord(name, primitive, fun, args_of(*makers), ref, rtol=0, atol=0, **kw)


def _np_split(sizes, axis):
  return lambda x: np.split(x, np.cumsum(sizes[:-1]), axis=axis)


RECORDS = [
    _rec("split_f32_axis1_piece1", "split", lambda x: lax.split(x, (1, 3, 0), 1)[1],
         [rand((3, 4))], lambda x: _np_split((1, 3, 0), 1)(x)[1]),
    _rec("split_f32_axis1_piece0", "split", lambda x: lax.split(x, (1, 3, 0), 1)[0],
         [rand((3, 4))], lambda x: _np_split((1, 3, 0), 1)(x)[0]),
    _rec("split_f32_neg_axis", "split", lambda x: lax.split(x, (2, 2), -2)[1],
         [rand((2, 4, 3))], lambda x: _np_split((2, 2), 1)(x)[1]),
    _rec("split_i32_one_piece", "split", lambda x: lax.split(x, (5,), 0)[0],
         [rand((5,), np.int32)], lambda x: x, dtype=np.int32),
    _rec("unstack_f32_axis0", "unstack", lambda x: lax.unstack(x, 0)[2], [rand((3, 4))],
         lambda x: x[2]),
    _rec("unstack_f32_axis_last", "unstack", lambda x: lax.unstack(x, -1)[0],
         [rand((2, 3, 2))], lambda x: x[..., 0]),
    _rec("unstack_bool", "unstack", lambda x: lax.unstack(x, 1)[1], [rand((2, 3), np.bool_)],
         lambda x: x[:, 1], dtype=np.bool_),
    _rec("stack_f32_axis0", "stack", lambda x, y: lax.stack([x, y], 0),
         [rand((3, 4)), rand((3, 4))], lambda x, y: np.stack([x, y], 0), linear=False),
    _rec("stack_f32_self", "stack", lambda x: lax.stack([x, x, x], 1), [rand((3, 2))],
         lambda x: np.stack([x, x, x], 1), invertible=False),
    _rec("stack_f32_axis_last", "stack", lambda x, y, z: lax.stack([x, y, z], -1),
         [rand((2, 3)), rand((2, 3)), rand((2, 3))], lambda x, y, z: np.stack([x, y, z], -1),
         linear=False),
    _rec("stack_f32_one_0d", "stack", lambda x: lax.stack([x]), [rand(())],
         lambda x: np.stack([x])),
    _rec("stack_i32", "stack", lambda x, y: lax.stack([x, y], 1),
         [rand((2, 3), np.int32), rand((2, 3), np.int32)], lambda x, y: np.stack([x, y], 1),
         dtype=np.int32),
    _rec("tile_f32", "tile", lambda x: lax.tile(x, (2, 3)), [rand((3, 2))],
         lambda x: np.tile(x, (2, 3))),
    _rec("tile_f32_ones", "tile", lambda x: lax.tile(x, (1, 1, 2)), [rand((2, 1, 3))],
         lambda x: np.tile(x, (1, 1, 2))),
    _rec("tile_i32_0d", "tile", lambda x: lax.tile(x, ()), [rand((), np.int32)],
         lambda x: np.tile(x, ()), dtype=np.int32),
    _rec("tile_f32_zero_reps", "tile", lambda x: lax.tile(x, (0, 2)), [rand((2, 3))],
         lambda x: np.tile(x, (0, 2)), invertible=False, vmap=False),
]
