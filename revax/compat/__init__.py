"""revax's jax-compatibility mode: make `import jax` (and `jax.*`) resolve to revax.

Opt-in and never on by default. Either run a program with it:

    python -m revax.run_as_jax script.py [args...]
    python -m revax.run_as_jax -m pytest tests/        # a module, as `python -m` runs it

or call `revax.compat.install()` before anything imports jax. From then on, in this process,
`import jax` gives a module whose attributes are revax's (`jax.numpy` is `revax.numpy`,
`jax.extend.core` is `revax.extend.core`, ...) and which reports jax's version (0.10.2, the
API revax follows). A public `jax.X` module maps to `revax.X`; what revax lacks is refused with
an ImportError (or AttributeError) that names it. JAX's private modules (`jax._src.*`) are not
revax's: the few names major libraries import from there (chex, equinox, flax, optax) come from
small shims in `revax.compat.jax_src`, one module per JAX module, each saying which library uses
it and for what. Everything else under `jax._src` is refused.

`install()` refuses to run once the real jax has been imported in the process (two
implementations of `jax` in one process would mix arrays and tracers of both).

Example:

    import revax.compat
    revax.compat.install()
    import jax, jax.numpy as jnp
    jax.grad(lambda x: jnp.sin(x))(1.0)   # computed by revax
"""
from revax.compat._finder import JAX_VERSION as JAX_VERSION
from revax.compat._finder import install as install
from revax.compat._finder import is_installed as is_installed
from revax.compat._finder import uninstall as uninstall
