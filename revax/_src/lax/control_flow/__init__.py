"""Control flow: cond, switch, while_loop, fori_loop, scan and map, and their primitives."""
from revax._src.lax.control_flow.conditionals import cond as cond
from revax._src.lax.control_flow.conditionals import cond_p as cond_p
from revax._src.lax.control_flow.conditionals import switch as switch
from revax._src.lax.control_flow.loops import fori_loop as fori_loop
from revax._src.lax.control_flow.loops import map as map  # noqa: A004 (jax.lax's name)
from revax._src.lax.control_flow.loops import scan as scan
from revax._src.lax.control_flow.loops import scan_p as scan_p
from revax._src.lax.control_flow.loops import while_loop as while_loop
from revax._src.lax.control_flow.loops import while_p as while_p

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map",
           "cond_p", "while_p", "scan_p"]
