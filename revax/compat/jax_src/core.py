"""`jax._src.core`: flax (fp8_ops, nnx) and others read `ShapedArray`, `Tracer`, `Primitive`
and the jaxpr classes from here; they are revax's (`revax.core`, `revax.extend.core`)."""
from revax.core import *  # noqa: F401,F403
from revax.core import AbstractValue as AbstractValue
from revax.core import ShapedArray as ShapedArray
from revax.core import Trace as Trace
from revax.core import Tracer as Tracer
from revax.extend.core import *  # noqa: F401,F403
from revax.extend.core import ClosedJaxpr as ClosedJaxpr
from revax.extend.core import Jaxpr as Jaxpr
from revax.extend.core import Literal as Literal
from revax.extend.core import Primitive as Primitive
from revax.extend.core import Var as Var
from revax._src.core.avals import get_aval as get_aval
