"""`revax.memory`: the memory spaces of a device, as `jax.memory` (a namespace, not a module).

`revax.memory.Space` is `MemorySpace` (core/memory_space.py): `Device`, `Host` (pinned host
memory) and `Any`. `revax.device_put(x, revax.memory.Space.Host)` moves `x` to its device's
pinned host memory; its type then reads `float32<host>[...]`.
"""
from __future__ import annotations

from types import SimpleNamespace

from revax._src.core.memory_space import MemorySpace

__all__ = ["memory"]

memory = SimpleNamespace(Space=MemorySpace)
