"""The remaining scalar types and dtype categories of jax.numpy: `bool`, the narrow float and
integer types of ml_dtypes (float8_*, float6_*, float4_e2m1fn, int1/2/4, uint1/2/4), NumPy's
abstract categories `character` and `flexible`, `object_`, and ComplexWarning.

The narrow types are dtypes for storage and conversion (`np.dtype(rnp.float8_e4m3fn)`,
`x.astype(...)` where the backend supports them); as in JAX, arithmetic on them is defined by
the backend.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from revax._src.numpy.dtype_api import _scalar_type

bool = _scalar_type("bool", np.bool_)  # noqa: A001 (jax.numpy's name)

float4_e2m1fn = _scalar_type("float4_e2m1fn", ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _scalar_type("float6_e2m3fn", ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type("float6_e3m2fn", ml_dtypes.float6_e3m2fn)
float8_e3m4 = _scalar_type("float8_e3m4", ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type("float8_e4m3", ml_dtypes.float8_e4m3)
float8_e4m3b11fnuz = _scalar_type("float8_e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = _scalar_type("float8_e4m3fn", ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = _scalar_type("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = _scalar_type("float8_e5m2", ml_dtypes.float8_e5m2)
float8_e5m2fnuz = _scalar_type("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = _scalar_type("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu)
int1 = _scalar_type("int1", ml_dtypes.int1)
int2 = _scalar_type("int2", ml_dtypes.int2)
int4 = _scalar_type("int4", ml_dtypes.int4)
uint1 = _scalar_type("uint1", ml_dtypes.uint1)
uint2 = _scalar_type("uint2", ml_dtypes.uint2)
uint4 = _scalar_type("uint4", ml_dtypes.uint4)

character = np.character
flexible = np.flexible
object_ = np.object_
ComplexWarning = np.exceptions.ComplexWarning
