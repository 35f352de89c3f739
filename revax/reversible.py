"""revax.reversible: reversible building blocks for `revax.invertible` (revax's own module; JAX
has none): the additive coupling, the reversible residual block (RevNet / RevViT / Reformer) and
stacks of them whose reverse mode rebuilds activations instead of storing them."""
from revax._src.nn.reversible import METHODS as METHODS
from revax._src.nn.reversible import additive_coupling as additive_coupling
from revax._src.nn.reversible import reversible_block as reversible_block
from revax._src.nn.reversible import reversible_sequence as reversible_sequence
from revax._src.nn.reversible import stack_params as stack_params
