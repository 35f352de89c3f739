"""revax.interpreters.mlir: lowering rules (jax.interpreters.mlir); StableHLO text, so a
library primitive lowers through lower_fun."""
from revax._src.interpreters.mlir import register_lowering as register_lowering
from revax._src.interpreters.mlir import LoweringRuleContext as LoweringRuleContext
from revax._src.extend.rules import lower_fun as lower_fun
from revax._src.lax.callbacks import emit_python_callback as emit_python_callback
