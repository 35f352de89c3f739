"""Compiled programs as bytes: `serialize(jit(f).lower(x).compile())` and back.

This is JAX's `jax.experimental.serialize_executable`: `serialize(compiled)` returns
`(payload, in_tree, out_tree)` and `deserialize_and_load(payload, in_tree, out_tree)` returns a
callable `Compiled` again, with no tracing or compiling. The payload holds the executable (machine
code for this plugin and this CPU: load it with the same revax, plugin and kind of machine), the
argument and result avals, and the values the function closed over (they are leading operands of
revax's jit programs). `Compiled.serialize()` returns the same payload.
"""
from __future__ import annotations

import io
import json
import struct

import numpy as np

from revax._src.export import aval_from_json, aval_to_json
from revax._src.interpreters import dispatch
from revax._src.stage_info import Signature

__all__ = ["serialize", "deserialize_and_load"]

_MAGIC = b"RVXCMPLD"
_VERSION = 1
_PREFIX = struct.Struct("<8sII")  # magic, version, header length


def serialize(compiled):
  """`(payload, in_tree, out_tree)` of a `Compiled` (from `jit(f).lower(...).compile()`)."""
  from revax._src.jit import Compiled
  if not isinstance(compiled, Compiled):
    raise TypeError(f"serialize expects a Compiled (jit(f).lower(...).compile()), got "
                    f"{type(compiled).__name__}")
  return compiled.serialize(), compiled.in_tree, compiled._entry.out_tree


def payload_of(entry) -> bytes:
  """The bytes of a compiled jit cache entry: header, closed-over values, executable."""
  program = entry.program
  consts = io.BytesIO()
  np.savez(consts, *[np.asarray(c) for c in entry.consts])
  header = json.dumps({
      "name": entry.name,
      "in_avals": [aval_to_json(a) for a in program.in_avals],
      "out_avals": [aval_to_json(a) for a in program.out_avals],
      "num_consts": len(entry.consts), "consts_size": consts.tell(),
  }).encode()
  return (_PREFIX.pack(_MAGIC, _VERSION, len(header)) + header + consts.getvalue()
          + program.executable.serialize())


def deserialize_and_load(serialized, in_tree, out_tree, backend=None, execution_devices=None):
  """A callable `Compiled` from `serialize`'s payload and trees.

  Raises:
    ValueError: the payload is not a revax serialized executable or of another version.
  """
  from revax._src.jit import Compiled, _Entry
  from revax._src.runtime.client import get_backend
  del backend, execution_devices  # one backend; single-device programs run where their args are
  data = bytes(serialized)
  if len(data) < _PREFIX.size or data[:8] != _MAGIC:
    raise ValueError("not a serialized revax executable")
  _, version, head_size = _PREFIX.unpack_from(data)
  if version != _VERSION:
    raise ValueError(f"serialized executable version {version}; this revax reads {_VERSION}")
  pos = _PREFIX.size
  header = json.loads(data[pos:pos + head_size])
  pos += head_size
  with np.load(io.BytesIO(data[pos:pos + header["consts_size"]])) as npz:
    consts = [dispatch.to_array(npz[f"arr_{i}"]) for i in range(header["num_consts"])]
  pos += header["consts_size"]
  executable = get_backend().deserialize_executable(data[pos:])
  in_avals = [aval_from_json(c) for c in header["in_avals"]]
  out_avals = [aval_from_json(c) for c in header["out_avals"]]
  entry = _Entry(None, consts, out_tree, header["name"])
  entry.program = dispatch.CompiledProgram(executable, in_avals, out_avals, "", header["name"])
  dynamic = in_avals[len(consts):]
  signature = Signature(header["name"], in_tree, dynamic, [False] * len(dynamic), (), out_tree,
                        [a.update(weak_type=False) for a in out_avals])
  return Compiled(entry, in_tree, signature)
