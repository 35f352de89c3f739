"""Memories of a device and the buffers placed in them (PJRT memory spaces).

A device addresses several memories (on CPU: "device", "pinned_host", "unpinned_host"; on a TPU
its HBM and host memory). A buffer is put into one (`Backend.buffer_from_numpy(..., memory=)`)
or copied between them (`Buffer.copy_to_memory`), and PJRT says where it is
(`Buffer.memory`).

A compiled program says where its results go by `mhlo.memory_kind` attributes on the results
of its `@main`. The XLA:CPU plugin (0.81) compiles them into its layouts (`S(5)`) yet returns
every result in the device's default memory, and it does not implement
PJRT_Executable_OutputMemoryKinds; so revax reads the kinds from the program text
(`output_memory_kinds`) and `place_outputs` copies each result the plugin left elsewhere into
its memory (one Buffer_Memory call per result of such programs, a copy only where needed). The
same plugin cannot compile the `annotate_device_placement` custom call JAX puts on results
placed by `out_shardings` ("No registered implementation for untyped custom call"):
`strip_placement_annotations` turns it into an identity there (the result attribute keeps the
placement). A plugin that places results itself (a TPU's) needs no copy.
"""
from __future__ import annotations

import re

__all__ = ["memory_of", "output_memory_kinds", "place_outputs", "strip_placement_annotations",
           "in_memory"]


# The platforms whose host memories revax uses (pinned_host, unpinned_host): the CPU, where every
# memory is host memory and a program's arguments have one layout wherever they are.
HOST_MEMORIES_ON = ("cpu",)


def memory_of(device, kind: str):
  """The memory of `kind` that `device` addresses.

  Raises:
    ValueError: the device has no memory of that kind (JAX's message).
    NotImplementedError: a host memory of a device not in HOST_MEMORIES_ON (a TPU's).
  """
  memories = device.addressable_memories()
  platform = device.platform
  for m in memories:
    if m.kind == kind:
      if kind != "device" and platform not in HOST_MEMORIES_ON:
        raise NotImplementedError(
            f"memory kind {kind!r} on a {platform} device: revax places arrays in host "
            f"memories on {', '.join(HOST_MEMORIES_ON)} devices only. On a TPU a program "
            "must also be compiled with each host-memory argument's memory and layout, which "
            "revax does not do yet (its first run on a chip failed there); use device memory "
            "(memory_kind='device' or None)")
      return m
  kinds = ", ".join(m.kind for m in memories)
  raise ValueError(f"Could not find memory addressable by device {platform}. Device {platform} "
                   f"can address the following memory kinds: {kinds}. Got memory kind: {kind}")


def in_memory(buffer, kind: str):
  """`buffer` itself where it is in memory `kind` of its device, else a copy there."""
  memory = memory_of(buffer.device, kind)
  if buffer.memory == memory:
    return buffer
  return buffer.copy_to_memory(memory)


_MAIN = re.compile(rb"func\.func public @main\(")
_KIND = re.compile(rb'mhlo\.memory_kind = "([a-z_]+)"')


def _split_top(text: bytes) -> list[bytes]:
  """`text` split at its commas outside brackets."""
  parts, depth, start = [], 0, 0
  for i, c in enumerate(text):
    if c in b"(<[{":
      depth += 1
    elif c in b")>]}":
      depth -= 1
    elif c == ord(",") and depth == 0:
      parts.append(text[start:i])
      start = i + 1
  parts.append(text[start:])
  return parts


def output_memory_kinds(code: bytes) -> tuple | None:
  """The memory kind of each result of `code`'s `@main` (None where it names none); None when
  no result names one other than "device"."""
  if b"mhlo.memory_kind" not in code:
    return None
  m = _MAIN.search(code)
  if m is None:
    return None
  i, depth = m.end(), 1
  while depth:  # past the parameter list
    c = code[i]
    depth += (c == ord("(")) - (c == ord(")"))
    i += 1
  rest = code[i:].lstrip()
  if not rest.startswith(b"-> ("):
    return None
  i, depth = 4, 1
  while depth:
    c = rest[i]
    depth += (c == ord("(")) - (c == ord(")"))
    i += 1
  results = _split_top(rest[4:i - 1])
  kinds = []
  for r in results:
    k = _KIND.search(r)
    kinds.append(None if k is None else k.group(1).decode())
  if all(k in (None, "device") for k in kinds):
    return None
  return tuple(kinds)


def place_outputs(outputs, kinds, device) -> bool:
  """Move each output buffer pointer (in the list `outputs`, replaced in place) the plugin left
  outside the memory its `kinds` entry names; returns whether any moved (its copy may still be
  in flight)."""
  backend = device.client
  api = backend._api
  moved = False
  for i, kind in enumerate(kinds):
    if kind is None:
      continue
    memory = memory_of(device, kind)
    pointer = outputs[i]
    if api.call("Buffer_Memory", buffer=pointer).memory == memory._ptr:
      continue
    copy = api.call("Buffer_CopyToMemory", buffer=pointer, dst_memory=memory._ptr).dst_buffer
    backend._destroy_buffer(pointer)
    outputs[i] = copy
    moved = True
  return moved


_ANNOTATION = re.compile(
    rb'^( *)(%[\w#]+) = "?stablehlo\.custom_call"?[ (@](?:annotate_device_placement)?\(?'
    rb'(%[\w#]+)\).*annotate_device_placement.* : \(([^()\n]+)\) -> ([^\n]+)$|'
    rb'^( *)(%[\w#]+) = stablehlo\.custom_call @annotate_device_placement\((%[\w#]+)\)'
    rb'.* : \(([^()\n]+)\) -> ([^\n]+)$', re.M)


def _identity(m) -> bytes:
  g = m.groups()
  pad, out, x, t_in, t_out = g[:5] if g[0] is not None else g[5:]
  return pad + out + b" = stablehlo.reshape " + x + b" : (" + t_in + b") -> " + t_out


def strip_placement_annotations(code: bytes) -> bytes:
  """`code` with each `annotate_device_placement` custom call (JAX's pretty form or revax's
  generic one) made an identity (a reshape to its own type), for a plugin that has no such
  target (XLA:CPU)."""
  return _ANNOTATION.sub(_identity, code)
