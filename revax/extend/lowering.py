"""revax.extend.lowering: the context a lowering rule gets (jax.extend.lowering)."""
from revax._src.interpreters.mlir import LoweringRuleContext as LoweringRuleContext
