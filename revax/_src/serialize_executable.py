"""Compiled programs as bytes: `serialize(jit(f).lower(x).compile())` and back.

This is JAX's `jax.experimental.serialize_executable`: `serialize(compiled)` returns
`(payload, in_tree, out_tree)` and `deserialize_and_load(payload, in_tree, out_tree)` returns a
callable `Compiled` again, with no tracing or compiling. The payload holds the executable (machine
code for this plugin and this CPU: load it with the same revax, plugin and kind of machine), the
argument and result avals, and the values the function closed over (they are leading operands of
revax's jit programs). `Compiled.serialize()` returns the same payload.
"""
from __future__ import annotations

from revax._src.executable_payload import load_payload
from revax._src.jit_stages import Compiled
from revax._src.trace_cache import Entry as _Entry
from revax._src.stage_info import Signature

__all__ = ["serialize", "deserialize_and_load"]


def serialize(compiled):
  """`(payload, in_tree, out_tree)` of a `Compiled` (from `jit(f).lower(...).compile()`)."""
  if not isinstance(compiled, Compiled):
    raise TypeError(f"serialize expects a Compiled (jit(f).lower(...).compile()), got "
                    f"{type(compiled).__name__}")
  return compiled.serialize(), compiled.in_tree, compiled._entry.out_tree


def deserialize_and_load(serialized, in_tree, out_tree, backend=None, execution_devices=None):
  """A callable `Compiled` from `serialize`'s payload and trees.

  Raises:
    ValueError: the payload is not a revax serialized executable or of another version.
  """
  del backend, execution_devices  # one backend; single-device programs run where their args are
  name, consts, program = load_payload(serialized)
  entry = _Entry(None, consts, out_tree, name)
  entry.program = program
  dynamic = program.in_avals[len(consts):]
  signature = Signature(name, in_tree, dynamic, [False] * len(dynamic), (), out_tree,
                        [a.update(weak_type=False) for a in program.out_avals])
  return Compiled(entry, in_tree, signature)
