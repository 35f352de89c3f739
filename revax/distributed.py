"""revax.distributed: multi-process initialization (as jax.distributed; one process only)."""
from revax._src.distributed import initialize as initialize
from revax._src.distributed import is_initialized as is_initialized
from revax._src.distributed import shutdown as shutdown
