"""revax.interpreters.mlir: lowering rules (jax.interpreters.mlir); StableHLO text, so a
library primitive lowers through lower_fun. The *_TYPE constants are StableHLO's channel types
revax writes in its collectives and host transfers."""
from revax._src.interpreters.mlir import register_lowering as register_lowering
from revax._src.interpreters.mlir import LoweringRuleContext as LoweringRuleContext
from revax._src.extend.rules import lower_fun as lower_fun
from revax._src.lax.callbacks import emit_python_callback as emit_python_callback
from revax._src.runtime.host_transfer import DEVICE_TO_DEVICE as DEVICE_TO_DEVICE_TYPE
from revax._src.runtime.host_transfer import SEND_TO_HOST as SEND_TO_HOST_TYPE
from revax._src.runtime.host_transfer import RECV_FROM_HOST as RECV_FROM_HOST_TYPE
from revax._src.sharding import Mesh as Mesh
