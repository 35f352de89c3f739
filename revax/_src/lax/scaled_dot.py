"""Block-scaled dots (jax.lax.scaled_dot): `(lhs * lhs_scale) @ (rhs * rhs_scale)`, where each
scale holds one factor per block ("subchannel") of the contracting dimensions of its operand,
as microscaling formats (mxfp8: float8 values, float8_e8m0fnu power-of-two scales) store them.

The primitive computes as JAX's decomposition does where no backend kernel replaces it: each
scale is repeated over its block, operands and scales are rounded to bfloat16 and multiplied,
and the products are contracted by dot_general in the preferred element type (bfloat16 by
default). It has no derivative (JAX gives it none either).

The primitive is one block: its public wrapper, then its rules, then their registration.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, binary, conversion, creation, shapes
from revax._src.lax.dot import dot_general

__all__ = ["scaled_dot", "scaled_dot_p"]


# --- scaled_dot ----------------------------------------------------------------------------------
def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
  """Computes a scaled dot product: `(lhs * lhs_scale) @ (rhs * rhs_scale)` in
  `preferred_element_type` precision, `@` being `dot_general`.

  Non-contracting dimensions of an operand and its scale have the same size; a contracting
  dimension of the operand is a whole multiple (at least 2) of its scale's (the block size).

  Args:
    lhs, rhs: the operands, of one rank.
    lhs_scale, rhs_scale: the scales (None: ones, one block per contracting dimension).
    dimension_numbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)); None:
      the last dimension of lhs with the one before last of rhs, leading dimensions batched.
    preferred_element_type: the result dtype (bfloat16 or float32; default bfloat16).

  Returns:
    The product, of dtype `preferred_element_type`.

  Raises:
    TypeError: operands of rank below 2 without dimension numbers, or shapes that do not
      agree (JAX's messages).

  Example:
    >>> lhs, rhs = jnp.ones((2, 8)), jnp.ones((8, 3))
    >>> lax.scaled_dot(lhs, rhs, lhs_scale=jnp.full((2, 2), 2.0), rhs_scale=jnp.ones((2, 3)))
    Array([[16, 16, 16],
           [16, 16, 16]], dtype=bfloat16)
  """
  lhs_aval = get_aval(lhs)
  if dimension_numbers is None:
    n = lhs_aval.ndim
    if n < 2:
      raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
    dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
  (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = dimension_numbers
  dimension_numbers = ((tuple(lhs_contracting), tuple(rhs_contracting)),
                       (tuple(lhs_batch), tuple(rhs_batch)))
  if lhs_scale is None:
    lhs_scale = _ones_scale(lhs_aval.shape, dimension_numbers[0][0])
  if rhs_scale is None:
    rhs_scale = _ones_scale(get_aval(rhs).shape, dimension_numbers[0][1])
  element_type = dtypes.bfloat16 if preferred_element_type is None else \
      dtypes.canonicalize_dtype(preferred_element_type)
  return scaled_dot_p.bind(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers=dimension_numbers,
                           preferred_element_type=np.dtype(element_type))


def _ones_scale(shape, contracting):
  """Scales of one block per contracting dimension, all 1 (float8_e8m0fnu, as JAX's)."""
  shape = tuple(1 if d in contracting else n for d, n in enumerate(shape))
  ones = creation.full(shape, 1, dtypes.bfloat16)
  return conversion.convert_element_type(ones, ml_dtypes.float8_e8m0fnu)


def _check_operand_scale(side, operand, scale, contracting):
  for i, size in enumerate(operand.shape):
    if i in contracting:
      if size % scale.shape[i] != 0:
        raise TypeError(f"{side} contracting dim {i} of size {size} must be divisible by its "
                        f"scale's dim size {scale.shape[i]}.")
      if size // scale.shape[i] < 2:
        raise TypeError(f"The ratio of {side} contracting dim {i} to its scale's dim size "
                        f"({size // scale.shape[i]}) must be at least 2.")
    elif scale.shape[i] != size:
      raise TypeError(f"{side} dim {i} of size {size} does not match scale dim size "
                      f"{scale.shape[i]}.")


def _scaled_dot_abstract_eval(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                              preferred_element_type):
  (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = dimension_numbers
  ranks = {lhs.ndim, rhs.ndim, lhs_scale.ndim, rhs_scale.ndim}
  if len(ranks) != 1:
    raise TypeError(f"All input tensors must have the same rank. Got lhs rank: {lhs.ndim} rhs "
                    f"rank: {rhs.ndim} lhs_scale rank: {lhs_scale.ndim} rhs_scale rank: "
                    f"{rhs_scale.ndim}.")
  if len(lhs_batch) != len(rhs_batch):
    raise TypeError(f"LHS and RHS must have the same number of batch dimensions, got "
                    f"{len(lhs_batch)} and {len(rhs_batch)}.")
  if len(lhs_contracting) != len(rhs_contracting):
    raise TypeError(f"LHS and RHS must have the same number of contracting dimensions, got "
                    f"{len(lhs_contracting)} and {len(rhs_contracting)}.")
  for i, j in zip(lhs_batch, rhs_batch, strict=True):
    if len({lhs.shape[i], rhs.shape[j], lhs_scale.shape[i], rhs_scale.shape[j]}) != 1:
      raise TypeError(f"All input tensors must have the same batch dimension size for batch "
                      f"dims ({i}, {j}).")
  for i, j in zip(lhs_contracting, rhs_contracting, strict=True):
    if lhs.shape[i] != rhs.shape[j]:
      raise TypeError(f"LHS contracting dim {i} of size {lhs.shape[i]} does not match RHS "
                      f"contracting dim {j} of size {rhs.shape[j]}.")
  _check_operand_scale("LHS", lhs, lhs_scale, lhs_contracting)
  _check_operand_scale("RHS", rhs, rhs_scale, rhs_contracting)
  lhs_kept = [d for d in range(lhs.ndim) if d not in lhs_contracting and d not in lhs_batch]
  rhs_kept = [d for d in range(rhs.ndim) if d not in rhs_contracting and d not in rhs_batch]
  shape = ([lhs.shape[d] for d in lhs_batch] + [lhs.shape[d] for d in lhs_kept]
           + [rhs.shape[d] for d in rhs_kept])
  return ShapedArray(shape, preferred_element_type)


def _repeat_over_blocks(scale, operand_shape, contracting):
  """The scale repeated over its blocks: one factor per element of the operand."""
  for d in contracting:
    shape = get_aval(scale).shape
    if shape[d] != operand_shape[d]:
      block = operand_shape[d] // shape[d]
      wide = shape[:d + 1] + (block,) + shape[d + 1:]
      dims = tuple(range(d + 1)) + tuple(range(d + 2, len(wide)))
      scale = shapes.broadcast_in_dim(scale, wide, dims)
      scale = shapes.reshape(scale, shape[:d] + (shape[d] * block,) + shape[d + 1:])
  return scale


def _scaled_dot_decomposition(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                              preferred_element_type):
  """JAX's decomposition: scales repeated over their blocks, everything rounded to bfloat16,
  the products contracted in the preferred element type."""
  (lhs_contracting, rhs_contracting), _ = dimension_numbers
  bf16 = dtypes.bfloat16
  sides = []
  for x, scale, contracting in ((lhs, lhs_scale, lhs_contracting),
                                (rhs, rhs_scale, rhs_contracting)):
    scale = _repeat_over_blocks(scale, get_aval(x).shape, contracting)
    sides.append(binary.mul(conversion.convert_element_type(x, bf16),
                            conversion.convert_element_type(scale, bf16)))
  return dot_general(sides[0], sides[1], dimension_numbers,
                     preferred_element_type=preferred_element_type)


def _scaled_dot_batch(vals, dims, *, dimension_numbers, preferred_element_type):
  """Every operand batched at the front; the new dimension a batch dimension of the dot."""
  size = next(get_aval(x).shape[d] for x, d in zip(vals, dims, strict=True) if d is not None)
  vals = [batch_util.bdim_to_front(x, d, size) for x, d in zip(vals, dims, strict=True)]
  (lc, rc), (lb, rb) = dimension_numbers
  shift = lambda ds: tuple(d + 1 for d in ds)
  dnums = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
  return scaled_dot_p.bind(*vals, dimension_numbers=dnums,
                           preferred_element_type=preferred_element_type), 0


scaled_dot_p = Primitive("scaled_dot")
scaled_dot_p.def_abstract_eval(_scaled_dot_abstract_eval)
mlir.register_lowering(scaled_dot_p,
                       mlir.lower_fun(_scaled_dot_decomposition, multiple_results=False))
ad.not_differentiable(scaled_dot_p, "jax defines no derivative of scaled_dot (its documentation: "
                      "not differentiable, no transpose rule)")
batching.primitive_batchers[scaled_dot_p] = _scaled_dot_batch
inv.not_invertible(scaled_dot_p, "many-to-one: a contraction")
