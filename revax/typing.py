"""revax.typing: type annotations, as jax.typing (ArrayLike, DTypeLike)."""
from revax._src.typing import ArrayLike as ArrayLike
from revax._src.typing import DTypeLike as DTypeLike
