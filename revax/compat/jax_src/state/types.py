"""`jax._src.state.types`: flax's nnx asks `isinstance(x, AbstractRef)` and
`isinstance(jax.typeof(x), AbstractRef)` to find mutable array references. revax has no mutable
references, so no value or type is an `AbstractRef` (the checks answer False, as they do in jax
for every ordinary array)."""


class AbstractRef:
  """The abstract type of a mutable array reference (revax makes none)."""

  def __init__(self, *args, **kwargs):
    raise NotImplementedError("revax has no mutable array references (jax's AbstractRef)")
