"""The pytree structures of an export's arguments and results, as JSON, and the registrations
that let custom node types (and namedtuples) be serialized (JAX's
`register_pytree_node_serialization` / `register_namedtuple_serialization`).

A structure is encoded node by node from `PyTreeDef.node_data()` and `children()`: `"*"` for a
leaf, `null` for None, `{"tuple": [...]}`, `{"list": [...]}`, `{"dict": [[key, child], ...]}`
(string keys only) and, for a registered type, `{"custom": name, "auxdata": base64 bytes,
"children": [...]}`. Decoding builds a tree of placeholder leaves (custom nodes through their
`from_children`) and takes its structure.
"""
from __future__ import annotations

import base64
import json

from revax._src import tree_util

__all__ = ["register_pytree_node_serialization", "register_namedtuple_serialization",
           "encode_tree", "decode_tree"]

# type -> (serialized name, serialize_auxdata); name -> (type, deserialize_auxdata, from_children)
serialization_registry: dict = {}
deserialization_registry: dict = {}

_UNREGISTERED = ("Use `export.register_pytree_node_serialization` or "
                 "`export.register_namedtuple_serialization`.")


def register_pytree_node_serialization(nodetype, *, serialized_name: str, serialize_auxdata,
                                       deserialize_auxdata, from_children=None):
  """Register how to serialize the pytree nodes of `nodetype` in an export's structures.

  Args:
    nodetype: a type registered with `revax.tree_util.register_pytree_node` (unless
      `from_children` is given).
    serialized_name: the name recorded in the serialization (unique).
    serialize_auxdata: `aux_data -> bytes`.
    deserialize_auxdata: `bytes -> aux_data`.
    from_children: `(aux_data, children) -> node`; default: the type's unflatten function.

  Returns:
    `nodetype` (so this can decorate a class).

  Example:
    >>> class Pair:
    ...   def __init__(self, a, b): self.a, self.b = a, b
    >>> revax.tree_util.register_pytree_node(Pair, lambda p: ((p.a, p.b), None),
    ...                                      lambda _, c: Pair(*c))
    >>> _ = revax.export.register_pytree_node_serialization(
    ...     Pair, serialized_name="doc.Pair", serialize_auxdata=lambda _: b"",
    ...     deserialize_auxdata=lambda _: None)
  """
  if nodetype in serialization_registry:
    raise ValueError(f"Duplicate serialization registration for type `{nodetype}`. Previous "
                     f"registration was with serialized_name "
                     f"`{serialization_registry[nodetype][0]}`.")
  if serialized_name in deserialization_registry:
    raise ValueError(f"Duplicate serialization registration for serialized_name "
                     f"`{serialized_name}`. Previous registration was for type "
                     f"`{deserialization_registry[serialized_name][0]}`.")
  if from_children is None:
    entry = tree_util.registry_entry(nodetype)
    if entry is None:
      raise ValueError(f"If `from_children` is not present, you must call first"
                       f"`revax.tree_util.register_pytree_node` for `{nodetype}`")
    from_children = entry.unflatten_func
  serialization_registry[nodetype] = (serialized_name, serialize_auxdata)
  deserialization_registry[serialized_name] = (nodetype, deserialize_auxdata, from_children)
  return nodetype


def register_namedtuple_serialization(nodetype, *, serialized_name: str):
  """Register a `collections.namedtuple` type for serialization in an export's structures (its
  field names are recorded; on loading the type must have the same fields).

  Args:
    nodetype: the namedtuple class.
    serialized_name: the name recorded in the serialization (unique).

  Returns:
    `nodetype`.

  Example:
    >>> import collections
    >>> Point = collections.namedtuple("Point", "x y")
    >>> _ = revax.export.register_namedtuple_serialization(Point, serialized_name="doc.Point")
  """
  if not (isinstance(nodetype, type) and issubclass(nodetype, tuple)
          and hasattr(nodetype, "_fields")):
    raise ValueError("Use `revax.export.register_pytree_node_serialization` for types other "
                     "than `collections.namedtuple`.")

  def serialize_auxdata(aux_data) -> bytes:
    del aux_data
    return json.dumps(nodetype._fields).encode("utf-8")

  def deserialize_auxdata(data: bytes):
    return json.loads(data.decode("utf-8"))

  def from_children(keys, children):
    return nodetype(**dict(zip(keys, children, strict=True)))

  return register_pytree_node_serialization(
      nodetype, serialized_name=serialized_name, serialize_auxdata=serialize_auxdata,
      deserialize_auxdata=deserialize_auxdata, from_children=from_children)


def encode_tree(treedef) -> object:
  """The JSON form of a pytree structure (ValueError/TypeError for what cannot be encoded)."""
  data = treedef.node_data()
  if data is None:
    return "*"
  typ, aux = data
  kids = [encode_tree(c) for c in treedef.children()]
  if typ is type(None):
    return None
  if typ is tuple:
    return {"tuple": kids}
  if typ is list:
    return {"list": kids}
  if typ is dict:
    for k in aux:
      if not isinstance(k, str):
        raise TypeError("Serialization is supported only for dictionaries with string keys. "
                        f"Found key {k} of type {type(k)}.")
    return {"dict": [[k, c] for k, c in zip(aux, kids, strict=True)]}
  if typ in serialization_registry:
    name, serialize_auxdata = serialization_registry[typ]
    blob = serialize_auxdata(aux)
    if not isinstance(blob, (bytes, bytearray)):
      raise ValueError("The custom serialization function for `node_type` must return a "
                       f"`bytes` object. It returned a {type(blob)}.")
    return {"custom": name, "auxdata": base64.b64encode(bytes(blob)).decode("ascii"),
            "children": kids}
  raise ValueError(f"Cannot serialize PyTreeDef containing an unregistered type `{typ}`. "
                   + _UNREGISTERED)


class _Leaf:
  """Stands for a leaf while a structure is rebuilt."""


def decode_tree(code):
  """The pytree structure that `encode_tree` wrote as `code`."""
  return tree_util.tree_structure(_decode_node(code))


def _decode_node(code):
  if code == "*":
    return _Leaf()
  if code is None:
    return None
  if "custom" in code:
    name = code["custom"]
    if name not in deserialization_registry:
      raise ValueError(f"Cannot deserialize a PyTreeDef containing an unregistered type "
                       f"`{name}`. " + _UNREGISTERED)
    _, deserialize_auxdata, from_children = deserialization_registry[name]
    aux = deserialize_auxdata(base64.b64decode(code["auxdata"]))
    return from_children(aux, [_decode_node(c) for c in code["children"]])
  (kind, children), = code.items()
  if kind == "tuple":
    return tuple(_decode_node(c) for c in children)
  if kind == "list":
    return [_decode_node(c) for c in children]
  if kind == "dict":
    return {k: _decode_node(v) for k, v in children}
  raise ValueError(f"unknown pytree node kind {kind!r}")
