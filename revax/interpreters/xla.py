"""revax.interpreters.xla: eager evaluation of one primitive and the backend (PJRT client)
class (jax.interpreters.xla)."""
from revax._src.extend.xla import apply_primitive as apply_primitive
from revax._src.runtime.client import Backend as Backend
