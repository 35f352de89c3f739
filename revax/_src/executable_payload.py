"""The bytes of a compiled one-device jit program: a header (name, argument and result avals,
how many values it closed over), those values (an `.npz`), then the executable as the plugin
serializes it. `Compiled.serialize()` writes them; serialize_executable.py reads them back."""
from __future__ import annotations

import io
import json
import struct

import numpy as np

from revax._src.aval_json import aval_from_json, aval_to_json
from revax._src.interpreters import dispatch, memory_kinds
from revax._src.runtime.client import get_backend

__all__ = ["payload_of", "load_payload"]

_MAGIC = b"RVXCMPLD"
_VERSION = 1
_PREFIX = struct.Struct("<8sII")  # magic, version, header length


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


def load_payload(serialized):
  """`(name, consts, program)` from `payload_of`'s bytes: the closed-over values as Arrays and
  the executable loaded as a `dispatch.CompiledProgram` (closed-over values first).

  Raises:
    ValueError: the bytes are not a revax serialized executable or of another version.
  """
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
  name = header["name"]
  kinds = tuple(memory_kinds.kind_of(a) for a in out_avals)
  if any(k not in (None, "device") for k in kinds):  # results typed in other memories go there
    executable.place_outputs_in(kinds)
  return name, consts, dispatch.CompiledProgram(executable, in_avals, out_avals, "", name)
