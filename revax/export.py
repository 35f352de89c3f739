"""revax.export: save a jitted function as StableHLO and call it later (JAX's `jax.export`)."""
from revax._src.core.shape_poly_scope import SymbolicScope as SymbolicScope
from revax._src.core.shape_poly import is_symbolic_dim as is_symbolic_dim
from revax._src.export import Exported as Exported
from revax._src.export import default_export_platform as default_export_platform
from revax._src.export import deserialize as deserialize
from revax._src.export import export as export
from revax._src.export import (
    maximum_supported_calling_convention_version as maximum_supported_calling_convention_version)
from revax._src.export import (
    minimum_supported_calling_convention_version as minimum_supported_calling_convention_version)
from revax._src.export_shape_poly import DisabledSafetyCheck as DisabledSafetyCheck
from revax._src.export_shape_poly import symbolic_args_specs as symbolic_args_specs
from revax._src.export_shape_poly import symbolic_shape as symbolic_shape
from revax._src.export_pytrees import (
    register_namedtuple_serialization as register_namedtuple_serialization)
from revax._src.export_pytrees import (
    register_pytree_node_serialization as register_pytree_node_serialization)
