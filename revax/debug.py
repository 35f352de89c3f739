"""Debugging inside transformed code (jax.debug)."""
from revax._src.debugging import callback as callback
from revax._src.debugging import debug_print as print  # noqa: A001 (jax.debug's name)
from revax._src.debugging import debug_log as log
from revax._src.debugger import breakpoint as breakpoint  # noqa: A004 (jax.debug's name)
from revax._src.sharding_visualize import inspect_array_sharding as inspect_array_sharding
from revax._src.sharding_visualize import visualize_array_sharding as visualize_array_sharding
from revax._src.sharding_visualize import visualize_sharding as visualize_sharding
from revax._src.core.effect_types import DebugEffect as DebugEffect
from revax._src.core.effect_types import OrderedDebugEffect as OrderedDebugEffect
