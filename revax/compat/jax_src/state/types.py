"""`jax._src.state.types`: flax's nnx asks `isinstance(x, AbstractRef)` and
`isinstance(jax.typeof(x), AbstractRef)` to find mutable array references: revax's own
AbstractRef (the type of its Refs, revax.ref.AbstractRef)."""
from revax._src.core.avals import AbstractRef as AbstractRef  # noqa: F401
