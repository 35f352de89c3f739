"""revax.interpreters.batching: vmap's rule tables (jax.interpreters.batching)."""
from revax._src.interpreters.batching import primitive_batchers as primitive_batchers
from revax._src.interpreters.batching import defvectorized as defvectorized
from revax._src.extend.rules import axis_primitive_batchers as axis_primitive_batchers
from revax._src.extend.rules import fancy_primitive_batchers as fancy_primitive_batchers
from revax._src.extend.rules import bdim_at_front as bdim_at_front
from revax._src.extend.rules import broadcast as broadcast
from revax._src.extend.rules import defbroadcasting as defbroadcasting
from revax._src.extend.rules import defreducer as defreducer
