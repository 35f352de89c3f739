"""`jax._src.api_util`: flax builds flat functions with `flatten_fun` and `debug_info` (the same
names as the public `jax.api_util`)."""
from revax.api_util import debug_info as debug_info
from revax.api_util import flatten_fun as flatten_fun
from revax.api_util import flatten_fun_nokwargs as flatten_fun_nokwargs
