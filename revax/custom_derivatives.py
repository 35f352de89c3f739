"""revax.custom_derivatives: custom differentiation rules (as jax.custom_derivatives)."""
from revax._src.api_extras import custom_gradient as custom_gradient
from revax._src.closure_convert import closure_convert as closure_convert
from revax._src.custom_derivatives import custom_jvp as custom_jvp
from revax._src.custom_derivatives import custom_jvp_call_p as custom_jvp_call_p
from revax._src.custom_derivatives import custom_vjp as custom_vjp
from revax._src.custom_derivatives import custom_vjp_call_p as custom_vjp_call_p
from revax._src.custom_derivatives_helpers import CustomVJPPrimal as CustomVJPPrimal
from revax._src.custom_derivatives_helpers import SymbolicZero as SymbolicZero
from revax._src.custom_derivatives_helpers import (
    custom_vjp_primal_tree_values as custom_vjp_primal_tree_values)
from revax._src.custom_derivatives_helpers import zero_from_primal as zero_from_primal
from revax._src.linear_call import linear_call as linear_call
