"""Gradient destinations for `vjp(...)[1].with_refs(...)` (jax.ad)."""
from revax._src.autodiff import DidntWant as DidntWant
from revax._src.autodiff import DontWant as DontWant
from revax._src.autodiff import GradRef as GradRef
from revax._src.autodiff import GradValue as GradValue
