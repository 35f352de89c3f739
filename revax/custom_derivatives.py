"""revax.custom_derivatives: the custom-derivative API under the module path JAX gives it
(jax.custom_derivatives), for code that imports it from there."""
from revax._src.api_extras import custom_gradient as custom_gradient
from revax._src.closure_convert import closure_convert as closure_convert
from revax._src.custom_derivatives import custom_jvp as custom_jvp
from revax._src.custom_derivatives import custom_jvp_call_p as custom_jvp_call_p
from revax._src.custom_derivatives import custom_vjp as custom_vjp
from revax._src.custom_derivatives import custom_vjp_call_p as custom_vjp_call_p
