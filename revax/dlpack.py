"""revax.dlpack: arrays from DLPack producers (as jax.dlpack)."""
from revax._src.dlpack import from_dlpack as from_dlpack
from revax._src.dlpack import is_supported_dtype as is_supported_dtype
