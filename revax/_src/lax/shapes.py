"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev, pad,
concatenate.

Each primitive is one block: wrapper, rules, registration.
"""
from __future__ import annotations

import numpy as np

from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import dispatch, mlir


__all__ = [
  "broadcast_in_dim",
  "broadcast_in_dim_p",
]

# --- broadcast_in_dim ----------------------------------------------------------------------------
def broadcast_in_dim(operand, shape, broadcast_dimensions):
  """Broadcast `operand` to `shape`; operand dim i becomes output dim broadcast_dimensions[i].

  Example:
    >>> broadcast_in_dim(x_of_shape_3, (2, 3), (1,))  # each row a copy of x
  """
  shape = tuple(int(d) for d in shape)
  broadcast_dimensions = tuple(int(d) for d in broadcast_dimensions)
  aval = get_aval(operand)
  if aval.shape == shape and broadcast_dimensions == tuple(range(len(shape))):
    return operand
  return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=broadcast_dimensions)


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
  if len(broadcast_dimensions) != x.ndim:
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must have one entry per operand "
                    f"dimension: operand shape {x.shape}, broadcast_dimensions {broadcast_dimensions}")
  if any(d < 0 for d in shape):
    raise TypeError(f"broadcast_in_dim shape must have non-negative sizes, got {shape}")
  if any(not 0 <= d < len(shape) for d in broadcast_dimensions) or \
      list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must be strictly increasing and in "
                    f"range for output rank {len(shape)}, got {broadcast_dimensions}")
  for i, d in enumerate(broadcast_dimensions):
    if x.shape[i] != 1 and x.shape[i] != shape[d]:
      raise TypeError(f"broadcast_in_dim operand dimension {i} has size {x.shape[i]}, which is "
                      f"not 1 and differs from output dimension {d} of size {shape[d]} "
                      f"(operand shape {x.shape}, shape {shape}, broadcast_dimensions "
                      f"{broadcast_dimensions})")
  return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_numpy(x, *, shape, broadcast_dimensions):
  expanded = [1] * len(shape)
  for i, d in enumerate(broadcast_dimensions):
    expanded[d] = x.shape[i]
  return np.broadcast_to(x.reshape(expanded), shape)


def _broadcast_in_dim_lower(ctx, x, *, shape, broadcast_dimensions):
  return ctx.op1("stablehlo.broadcast_in_dim", [x],
                 props={"broadcast_dimensions": mlir.i64_array(broadcast_dimensions)})


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_abstract_eval)
dispatch.def_numpy_impl(broadcast_in_dim_p, _broadcast_in_dim_numpy)
mlir.register_lowering(broadcast_in_dim_p, _broadcast_in_dim_lower)
