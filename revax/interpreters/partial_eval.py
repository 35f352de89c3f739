"""revax.interpreters.partial_eval: partial evaluation and DCE (jax.interpreters.partial_eval).
DynamicJaxprTracer is the tracer of revax's staging trace (jit, make_jaxpr)."""
from revax._src.extend.partial_eval import PartialVal as PartialVal
from revax._src.extend.partial_eval import trace_to_jaxpr_nounits as trace_to_jaxpr_nounits
from revax._src.extend.partial_eval import trace_to_jaxpr_dynamic as trace_to_jaxpr_dynamic
from revax._src.extend.dce import dce_jaxpr as dce_jaxpr
from revax._src.extend.dce import dce_jaxpr_consts as dce_jaxpr_consts
from revax._src.extend.dce import dce_rules as dce_rules
from revax._src.extend.dce import dce_jaxpr_call_rule as dce_jaxpr_call_rule
from revax._src.extend.dce import dce_jaxpr_closed_call_rule as dce_jaxpr_closed_call_rule
from revax._src.interpreters.staging import JaxprTracer as DynamicJaxprTracer
