"""revax.interpreters.partial_eval: partial evaluation (jax.interpreters.partial_eval)."""
from revax._src.extend.partial_eval import PartialVal as PartialVal
from revax._src.extend.partial_eval import trace_to_jaxpr_nounits as trace_to_jaxpr_nounits
from revax._src.extend.partial_eval import trace_to_jaxpr_dynamic as trace_to_jaxpr_dynamic
from revax._src.interpreters.staging import dce_jaxpr as dce_jaxpr
