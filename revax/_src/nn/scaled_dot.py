"""Block-scaled (microscaling: mxfp8, nvfp4) dots, as jax.nn: `scaled_matmul`,
`scaled_dot_general` and `get_scaled_dot_general_config`.

JAX computes scaled dots only on GPUs (a cuDNN custom call on CUDA, XLA's scaled dot on ROCm);
on CPU and TPU its `scaled_matmul` primitive has no lowering, so a call fails with
NotImplementedError when it is compiled (its shapes and dtypes still evaluate: eval_shape and
make_jaxpr work). revax runs on CPU and TPU only, so it checks the
arguments as JAX does and raises that NotImplementedError at the call. `scaled_dot_general`
without configs is `lax.dot_general`; with configs it raises the same NotImplementedError.
"""
from __future__ import annotations

import dataclasses
import warnings

import ml_dtypes
import numpy as np

from revax._src.lax.dot import dot_general
from revax._src.numpy import creation
from revax._src.numpy.util import canonical_dtype_arg

_UNAVAILABLE = ("MLIR translation rule for primitive 'scaled_matmul' not found for this platform: "
                "block-scaled dots run on GPUs only (as in JAX, whose CPU and TPU backends have "
                "no lowering for them)")

__all__ = ["BlockScaleConfig", "get_scaled_dot_general_config", "scaled_dot_general",
           "scaled_matmul"]


@dataclasses.dataclass(slots=True)
class BlockScaleConfig:
  """How one operand of a block-scaled dot is quantized (jax.nn's BlockScaleConfig)."""
  mode: str
  block_size: int
  data_type: object
  scale_type: object
  global_scale: object
  infer_only: bool


def get_scaled_dot_general_config(mode, global_scale=None):
  """The quantization config of `scaled_dot_general` for `mode` 'mxfp8' or 'nvfp4'.

  Args:
    mode: 'mxfp8' (float8_e4m3fn data, float8_e8m0fnu scales per 32 values) or 'nvfp4'
      (float4_e2m1fn data, float8_e4m3fn scales per 16 values, and a global scale).
    global_scale: nvfp4's global scale (default: ones((1,), float32)).

  Returns:
    A `BlockScaleConfig`.

  Example:
    >>> revax.nn.get_scaled_dot_general_config("mxfp8").block_size
    32
  """
  if mode == "nvfp4":
    one = creation.ones((1,), dtype=np.float32)
    return BlockScaleConfig(mode="nvfp4", block_size=16, data_type=ml_dtypes.float4_e2m1fn,
                            scale_type=ml_dtypes.float8_e4m3fn,
                            global_scale=one if global_scale is None else global_scale,
                            infer_only=False)
  if mode == "mxfp8":
    return BlockScaleConfig(mode="mxfp8", block_size=32, data_type=ml_dtypes.float8_e4m3fn,
                            scale_type=ml_dtypes.float8_e8m0fnu, global_scale=None,
                            infer_only=False)
  raise ValueError(f"Unsupported mode: {mode}")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
  """Block-scaled batched matmul: (B, M, K) x (B, N, K) -> (B, M, N), each operand multiplied
  by its scales (B, M or N, K / block) block by block.

  As JAX's, it runs on GPUs only: on revax's CPU and TPU backends the arguments are checked as
  JAX checks them, then NotImplementedError is raised (JAX raises it when compiling, revax at
  the call, tracing included).

  Args:
    lhs, rhs: 3-d operands (B, M, K) and (B, N, K).
    lhs_scales, rhs_scales: 3-d scales (B, M, K_blocks) and (B, N, K_blocks).
    preferred_element_type: the result dtype (default float32).

  Returns:
    An array (B, M, N) of `preferred_element_type`.

  Example:
    >>> a = np.ones((1, 4, 32), jnp.float8_e4m3fn)
    >>> s = np.ones((1, 4, 1), jnp.float8_e8m0fnu)
    >>> revax.nn.scaled_matmul(a, a, s, s)
    Traceback (most recent call last):
    ...
    NotImplementedError: ...
  """
  avals = [_Shape(np.shape(x)) for x in (lhs, rhs, lhs_scales, rhs_scales)]
  if not all(a.ndim == 3 for a in avals):
    raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
  (B_a, M_a, K_a), (B_b, N_b, K_b) = avals[0].shape, avals[1].shape
  if K_a != K_b or B_a != B_b:
    raise ValueError(f"scaled_matmul requires inputs a and b to have matching batch (B) and "
                     f"contract (K) dimensions, but got shapes {avals[0].shape} and "
                     f"{avals[1].shape}")
  (B_as, M_as, K_as), (B_bs, N_bs, K_bs) = avals[2].shape, avals[3].shape
  if K_as != K_bs or B_as != B_bs:
    raise ValueError(f"scaled_matmul requires scales to have matching batch (B) and contract "
                     f"(K) dimensions, but got shapes {avals[2].shape} and {avals[3].shape}")
  if M_as != M_a or N_bs != N_b:
    raise ValueError(f"scaled_matmul requires scales to match non-contract dimensions of "
                     f"inputs, but got shapes a: {avals[0].shape}, b: {avals[1].shape}, "
                     f"a_scales: {avals[2].shape}, b_scales: {avals[3].shape}")
  canonical_dtype_arg(preferred_element_type)  # (TypeError for a non-dtype, as JAX's check)
  raise NotImplementedError(_UNAVAILABLE)


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
  """A dot_general whose operands are quantized block by block (mxfp8/nvfp4) before the dot.

  Without `configs` it is `lax.dot_general(lhs, rhs, dimension_numbers,
  preferred_element_type=...)`. With configs (three `BlockScaleConfig`s: lhs, rhs, gradient),
  JAX quantizes for its GPU kernel and fails on CPU and TPU; revax raises that
  NotImplementedError.

  Args:
    lhs, rhs: the operands.
    dimension_numbers: as lax.dot_general's.
    preferred_element_type: the result dtype (default float32).
    configs: None, or the quantization configs.
    implementation: deprecated and ignored (a DeprecationWarning), as in JAX.

  Returns:
    The dot's result.

  Example:
    >>> revax.nn.scaled_dot_general(jnp.ones((2, 3)), jnp.ones((3, 4)), (((1,), (0,)), ((), ())))
    Array([[3., 3., 3., 3.],
           [3., 3., 3., 3.]], dtype=float32)
  """
  if implementation is not None:
    warnings.warn("Backend selector, now ignored. The system chooses the backend "
                  "automatically.", DeprecationWarning, stacklevel=2)
  if configs is None:
    return dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)
  raise NotImplementedError(_UNAVAILABLE)


class _Shape:
  __slots__ = ("shape", "ndim")

  def __init__(self, shape):
    self.shape, self.ndim = tuple(shape), len(shape)
