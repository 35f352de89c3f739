"""revax.extend.core: primitives and jaxprs for libraries (jax.extend.core)."""
from revax._src.extend.core import Primitive as Primitive
from revax._src.extend.core import Effect as Effect
from revax._src.extend.core import Effects as Effects
from revax._src.extend.core import no_effects as no_effects
from revax._src.extend.core import mapped_aval as mapped_aval
from revax._src.extend.core import unmapped_aval as unmapped_aval
from revax._src.extend.core import jaxpr_as_fun as jaxpr_as_fun
from revax._src.extend.core import get_opaque_trace_state as get_opaque_trace_state
from revax._src.extend.core import find_top_trace as find_top_trace
from revax._src.extend.core import new_jaxpr_eqn as new_jaxpr_eqn
from revax._src.extend.core import jaxprs_in_params as jaxprs_in_params
from revax._src.extend.core import subjaxprs as subjaxprs
from revax._src.extend.core import primal_dtype_to_tangent_dtype as primal_dtype_to_tangent_dtype
from revax._src.extend.core import valid_jaxtype as valid_jaxtype
from revax._src.core.jaxpr import ClosedJaxpr as ClosedJaxpr
from revax._src.core.jaxpr import Jaxpr as Jaxpr
from revax._src.core.jaxpr import JaxprEqn as JaxprEqn
from revax._src.core.jaxpr import Var as Var
from revax._src.core.jaxpr import Literal as Literal
from revax._src.core.jaxpr import DropVar as DropVar
from revax._src.core.typecheck import check_jaxpr as check_jaxpr
from revax._src.core.trace import set_current_trace as set_current_trace
from revax._src.core.errors import JaxprTypeError as JaxprTypeError
from revax._src.core.errors import InconclusiveDimensionOperation as InconclusiveDimensionOperation
from revax.extend.core import primitives as primitives
from revax._src.core.avals import AbstractToken as AbstractToken
from revax._src.core.avals import Token as Token
from revax._src.extend.linear_util import DebugInfo as DebugInfo
from revax._src.extend.trace_queries import array_types as array_types
from revax._src.extend.trace_queries import concrete_or_error as concrete_or_error
from revax._src.extend.trace_queries import gensym as gensym
from revax._src.extend.trace_queries import take_current_trace as take_current_trace
from revax._src.extend.trace_queries import nonempty_axis_env as nonempty_axis_env_DO_NOT_USE
from revax._src.extend.trace_queries import (
    unsafe_am_i_under_a_jit as unsafe_am_i_under_a_jit_DO_NOT_USE)
from revax._src.extend.trace_queries import (
    unsafe_am_i_under_a_vmap as unsafe_am_i_under_a_vmap_DO_NOT_USE)
from revax._src.extend.trace_queries import (
    unsafe_get_axis_names as unsafe_get_axis_names_DO_NOT_USE)
