"""revax.ops: segment reductions, as jax.ops."""
from revax._src.ops import segment_max as segment_max
from revax._src.ops import segment_min as segment_min
from revax._src.ops import segment_prod as segment_prod
from revax._src.ops import segment_sum as segment_sum
