"""revax.api_util: helpers for flattening functions (jax.api_util)."""
from revax._src.extend.linear_util import flatten_fun as flatten_fun
from revax._src.extend.linear_util import flatten_fun_nokwargs as flatten_fun_nokwargs
from revax._src.extend.linear_util import debug_info as debug_info
