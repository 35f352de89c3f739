"""Mutable array references (jax.ref)."""
from revax._src.core.avals import AbstractRef as AbstractRef
from revax._src.lax.state import Ref as Ref
from revax._src.lax.state import empty_ref as empty_ref
from revax._src.lax.state import free_ref as free_ref
from revax._src.lax.state import freeze as freeze
from revax._src.lax.state import new_ref as new_ref
from revax._src.lax.state import ref_addupdate as addupdate
from revax._src.lax.state import ref_get as get
from revax._src.lax.state import ref_set as set  # noqa: A004 (jax.ref's name)
from revax._src.lax.state import ref_swap as swap
