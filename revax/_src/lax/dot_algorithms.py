"""Dot algorithms (the `precision=` of dot_general beyond DEFAULT/HIGH/HIGHEST), as in JAX.

A `DotAlgorithm` names the types the operands are rounded to, the accumulation type and how
many component products emulate a higher precision; `DotAlgorithmPreset` lists the known ones
(by enum member or by name). dot_general with an algorithm converts its operands to the
algorithm's input types, accumulates in its accumulation type and converts the result to the
output dtype, emitting StableHLO's `algorithm` attribute. XLA:CPU runs the presets JAX allows
there (DEFAULT, F16_F16_F16, F32_F32_F32, F64_F64_F64, BF16_BF16_F32 and its _X3/_X6 forms);
the others raise JAX's ValueError when the dot runs or is compiled.

Also the type names jax.lax exports for annotations: `PrecisionLike`, `DotDimensionNumbers`.
"""
from __future__ import annotations

import enum
from typing import NamedTuple, Sequence, Union

import numpy as np

from revax._src.core import dtypes
from revax._src.core.config import config
from revax._src.interpreters import mlir

__all__ = ["DotAlgorithm", "DotAlgorithmPreset", "PrecisionLike", "DotDimensionNumbers",
           "config_precision"]

# `jax_default_matmul_precision` values that name a precision (the others name algorithms).
_CONFIG_PRECISIONS = {"default": "DEFAULT", "bfloat16": "DEFAULT", "high": "HIGH",
                      "tensorfloat32": "HIGH", "bfloat16_3x": "HIGH", "highest": "HIGHEST",
                      "float32": "HIGHEST"}


def config_precision():
  """The (lhs, rhs) precision that `jax_default_matmul_precision` gives dots and convolutions
  that name none (as JAX's lowering does), or None (no setting, or an algorithm name).
  XLA:CPU computes float32 products in float32 whatever it says; a TPU rounds their operands to
  bfloat16 at DEFAULT."""
  name = config.default_matmul_precision
  precision = _CONFIG_PRECISIONS.get(name.lower()) if isinstance(name, str) else None
  return None if precision is None else (precision, precision)


class DotAlgorithm(NamedTuple):
  """A dot product algorithm: operand rounding types, accumulation type, and the number of
  component products (for algorithms emulating a higher precision; 1 otherwise)."""
  lhs_precision_type: object
  rhs_precision_type: object
  accumulation_type: object
  lhs_component_count: int = 1
  rhs_component_count: int = 1
  num_primitive_operations: int = 1
  allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
  """Known dot algorithms, named LHS_RHS_ACCUM (input types and accumulation type)."""
  DEFAULT = enum.auto()
  ANY_F8_ANY_F8_F32 = enum.auto()
  ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
  ANY_F8_ANY_F8_ANY = enum.auto()
  ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
  F16_F16_F16 = enum.auto()
  F16_F16_F32 = enum.auto()
  BF16_BF16_BF16 = enum.auto()
  BF16_BF16_F32 = enum.auto()
  BF16_BF16_F32_X3 = enum.auto()
  BF16_BF16_F32_X6 = enum.auto()
  BF16_BF16_F32_X9 = enum.auto()
  TF32_TF32_F32 = enum.auto()
  TF32_TF32_F32_X3 = enum.auto()
  F32_F32_F32 = enum.auto()
  F64_F64_F64 = enum.auto()

  def __repr__(self) -> str:
    return f"{type(self).__name__}.{self.name}"

  def __str__(self) -> str:
    return self.name

  @property
  def supported_lhs_types(self):
    """The operand types the algorithm computes in (None: any)."""
    name = self.name
    if name == "DEFAULT" or name.startswith("ANY_F8"):
      return None
    if name.startswith("F16"):
      return (np.dtype(np.float16),)
    if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
      return (np.dtype(dtypes.bfloat16), np.dtype(np.float32))
    if name == "F64_F64_F64":
      return (np.dtype(np.float64),)
    return (np.dtype(np.float32),)

  @property
  def supported_rhs_types(self):
    return self.supported_lhs_types

  @property
  def accumulation_type(self):
    """The accumulation type (None: chosen by the operand and output types)."""
    name = self.name
    if name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
      return None
    return {"F16_F16_F16": np.dtype(np.float16), "BF16_BF16_BF16": np.dtype(dtypes.bfloat16),
            "F64_F64_F64": np.dtype(np.float64)}.get(name, np.dtype(np.float32))

  def supported_output_types(self, lhs_dtype, rhs_dtype):
    """The output types the algorithm can produce directly (None: any)."""
    if self.name.startswith("ANY_F8_ANY_F8_F32"):
      return (np.dtype(np.float32), np.dtype(np.float16), np.dtype(dtypes.bfloat16))
    if self.name in ("F16_F16_F32", "BF16_BF16_F32"):
      narrow = np.dtype(np.float16 if self.name.startswith("F16") else dtypes.bfloat16)
      if np.promote_types(lhs_dtype, rhs_dtype) == narrow:
        return (np.dtype(np.float32), narrow)
      return (np.dtype(np.float32),)
    acc = self.accumulation_type
    return None if acc is None else (acc,)


CPU_PRESETS = frozenset(DotAlgorithmPreset[n] for n in (
    "DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32",
    "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"))

# What `precision=` of a dot may be, and what `dimension_numbers` of dot_general are.
PrecisionLike = Union[None, str, tuple, DotAlgorithm, DotAlgorithmPreset]
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]


def is_algorithm(precision) -> bool:
  return isinstance(precision, (DotAlgorithm, DotAlgorithmPreset))


def check_supported(algorithm, platform: str) -> None:
  """JAX's ValueError for an algorithm XLA cannot run on `platform`."""
  if platform == "cpu" and algorithm not in CPU_PRESETS:
    raise ValueError(f"The precision '{algorithm}' is not supported by dot_general on CPU")


def compute_types(algorithm, lhs_dtype, rhs_dtype, out_dtype):
  """(lhs type, rhs type, accumulation type) a dot with `algorithm` computes in."""
  if isinstance(algorithm, DotAlgorithm):
    return tuple(np.dtype(t) for t in (algorithm.lhs_precision_type,
                                       algorithm.rhs_precision_type,
                                       algorithm.accumulation_type))

  def pick(dtype, allowed):
    return np.dtype(dtype) if allowed is None or np.dtype(dtype) in allowed else allowed[0]

  lhs = pick(lhs_dtype, algorithm.supported_lhs_types)
  rhs = pick(rhs_dtype, algorithm.supported_rhs_types)
  return lhs, rhs, pick(out_dtype, algorithm.supported_output_types(lhs, rhs))


def _is_float8(dtype) -> bool:
  """Whether `dtype` is one of the float8 types jax's ANY_F8 presets accept."""
  return np.dtype(dtype).name.startswith("float8_")


def algorithm_attr(algorithm, lhs_dtype, rhs_dtype) -> str:
  """StableHLO's `#stablehlo.dot_algorithm<...>` for an algorithm (not DEFAULT)."""
  if isinstance(algorithm, DotAlgorithmPreset) and algorithm.name.startswith("ANY_F8"):
    # (as jax: the operands' own float8 types, accumulated in float32, whatever the name says;
    # only ANY_F8_ANY_F8_F32_FAST_ACCUM allows imprecise accumulation)
    if not (_is_float8(lhs_dtype) and _is_float8(rhs_dtype)):
      raise ValueError(f"The dot algorithm '{algorithm}' requires both inputs to have float8 "
                       f"dtypes. Got {np.dtype(lhs_dtype)} and {np.dtype(rhs_dtype)} instead.")
    fast = algorithm.name == "ANY_F8_ANY_F8_F32_FAST_ACCUM"
    fields = (mlir.element_type(lhs_dtype), mlir.element_type(rhs_dtype),
              mlir.element_type(np.float32), 1, 1, 1, fast)
  elif isinstance(algorithm, DotAlgorithmPreset):
    x3, x6 = algorithm.name.endswith("_X3"), algorithm.name.endswith("_X6")
    acc = algorithm.accumulation_type
    base = {"F16": np.float16, "BF16": dtypes.bfloat16, "F32": np.float32, "F64": np.float64,
            "TF32": np.float32}[algorithm.name.split("_")[0]]
    lhs_t = rhs_t = mlir.element_type(base)
    if algorithm.name.startswith("TF32"):
      lhs_t = rhs_t = "tf32"
    count = 3 if x3 else 6 if x6 else 9 if algorithm.name.endswith("_X9") else 1
    fields = (lhs_t, rhs_t, mlir.element_type(acc), 1, 1, count, False)
  else:
    a = algorithm
    fields = (mlir.element_type(a.lhs_precision_type), mlir.element_type(a.rhs_precision_type),
              mlir.element_type(a.accumulation_type), a.lhs_component_count,
              a.rhs_component_count, a.num_primitive_operations,
              a.allow_imprecise_accumulation)
  names = ("lhs_precision_type", "rhs_precision_type", "accumulation_type",
           "lhs_component_count", "rhs_component_count", "num_primitive_operations",
           "allow_imprecise_accumulation")
  text = ", ".join(f"{n} = {str(v).lower() if isinstance(v, bool) else v}"
                   for n, v in zip(names, fields, strict=True))
  return f"#stablehlo.dot_algorithm<{text}>"
