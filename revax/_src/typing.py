"""Type annotations for revax programs (what jax.typing holds): ArrayLike, DTypeLike."""
from __future__ import annotations

from typing import Any, Protocol, Union

import numpy as np

from revax._src.runtime.basearray import Array


class SupportsDType(Protocol):
  """Anything with a `.dtype` attribute (a scalar type, an array, a ShapeDtypeStruct)."""

  @property
  def dtype(self) -> Any: ...


# Values revax functions accept where an array is expected (Python scalars included).
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]

# Values accepted where a dtype is expected.
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]
