"""revax.lax: the primitive operations, as in jax.lax.

(While the families are being filled in this re-exports them wholesale; it becomes an explicit
list of `import x as x` lines once they settle.)
"""
from revax._src.lax import *  # noqa: F401,F403
