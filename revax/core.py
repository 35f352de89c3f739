"""revax.core: jax.core's public names mapped to revax's core (see revax._src.core_api)."""
from revax._src.api_extras import ensure_compile_time_eval as ensure_compile_time_eval
from revax._src.core_api import AbstractValue as AbstractValue
from revax._src.core_api import Atom as Atom
from revax._src.core_api import ParamDict as ParamDict
from revax._src.core_api import ShapedArray as ShapedArray
from revax._src.core_api import Trace as Trace
from revax._src.core_api import Tracer as Tracer
from revax._src.core_api import Value as Value
from revax._src.core_api import eval_context as eval_context
from revax._src.core_api import eval_jaxpr as eval_jaxpr
from revax._src.core_api import max_dim as max_dim
from revax._src.core_api import min_dim as min_dim
