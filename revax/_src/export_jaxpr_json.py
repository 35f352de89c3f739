"""A shape-polymorphic export's program as JSON: how such an export is serialized.

revax lowers to StableHLO with static shapes only, so a shape-polymorphic export keeps a closed
jaxpr with symbolic sizes (export_shape_poly.py). To serialize it, the jaxpr is written as
data, never as code: variables are numbered; equations name their primitive (looked up again by
name among the primitives that have lowering rules); avals are `[shape, dtype, weak]` with
symbolic sizes as their text (parsed again in a new `SymbolicScope` with the same
constraints); parameters are ints, floats, strings, bools, None, dtypes, tuples and lists,
symbolic sizes, nested jaxprs, NumPy arrays, NamedTuples and Enums defined by revax itself, and
the exports a program calls (their own serialized bytes). Typed PRNG keys' dtypes (`key<fry>`)
and the `impl` of the key primitives are written as their implementation's registered name.
A parameter of another kind raises NotImplementedError naming it; the rules of `custom_jvp` and
`custom_vjp` functions (Python code) are replaced by rules that raise when used, since a loaded
program is differentiated through its serialized VJP, never through them.
"""
from __future__ import annotations

import base64
import enum
import importlib

import numpy as np

from revax._src.core import dtypes, extended_dtypes, shape_poly as sp
from revax._src.core.avals import ShapedArray
from revax._src.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var
from revax._src.core.shape_poly_parse import parse_dims
from revax._src.core.shape_poly_scope import SymbolicScope
from revax._src.interpreters import mlir

__all__ = ["encode_poly_jaxpr", "decode_poly_jaxpr", "encode_aval", "decode_aval"]

_CODE_PARAMS = ("jvp", "fwd", "bwd", "rule", "jvp_jaxpr_fun", "jvp_jaxpr_thunk",
                "fwd_jaxpr_thunk")


def encode_poly_jaxpr(closed: ClosedJaxpr, scope, fun_name: str) -> dict:
  """The JSON form of a shape-polymorphic program and of its scope's constraints."""
  enc = _Encoder(fun_name)
  return {"constraints": [c[1] for c in scope._constraints] if scope is not None else [],
          "jaxpr": enc.closed(closed)}


def encode_aval(aval, fun_name: str) -> list:
  """`[shape, dtype, weak]` with symbolic sizes as text."""
  return _Encoder(fun_name).aval(aval)


def decode_aval(code, scope) -> ShapedArray:
  """The aval `encode_aval` wrote, its symbolic sizes parsed in `scope`."""
  return _Decoder(scope).aval(code)


def decode_poly_jaxpr(code: dict, load_exported):
  """(closed jaxpr, scope) from `encode_poly_jaxpr`'s output; `load_exported(bytes)` loads the
  exports the program calls."""
  scope = SymbolicScope(code["constraints"])
  return _Decoder(scope, load_exported).closed(code["jaxpr"]), scope


class _Encoder:

  def __init__(self, fun_name):
    self.fun_name = fun_name
    self.ids: dict = {}

  def unsupported(self, what):
    raise NotImplementedError(f"serializing the shape-polymorphic export {self.fun_name}: {what} "
                              "has no serialized form")

  def aval(self, a):
    if type(a) is not ShapedArray:
      self.unsupported(f"a value of type {a}")
    if isinstance(a.dtype, extended_dtypes.KeyTy):
      dtype = {"key": self.prng_impl(a.dtype._impl, f"a value of type {a}")}
    elif isinstance(a.dtype, np.dtype):
      dtype = _dtype_name(a.dtype)
    else:
      self.unsupported(f"a value of type {a}")
    return [[str(d) if sp.is_symbolic_dim(d) else int(d) for d in a.shape], dtype, a.weak_type]

  def prng_impl(self, impl, where) -> str:
    if not _is_prng_impl(impl):
      self.unsupported(where)
    return impl.name

  def var(self, v):
    if isinstance(v, DropVar):
      return {"drop": self.aval(v.aval)}
    n = self.ids.setdefault(v, len(self.ids))
    return [n, self.aval(v.aval)]

  def atom(self, a):
    if type(a) is Literal:
      return {"lit": self.value(a.val), "aval": self.aval(a.aval)}
    return self.ids[a]

  def closed(self, c: ClosedJaxpr):
    return {"jaxpr": self.jaxpr(c.jaxpr), "consts": [self.value(x) for x in c.consts]}

  def jaxpr(self, j: Jaxpr):
    out = {"constvars": [self.var(v) for v in j.constvars],
           "invars": [self.var(v) for v in j.invars]}
    eqns = []
    for e in j.eqns:
      params = {}
      for k, v in e.params.items():
        if k in _CODE_PARAMS and not isinstance(v, (int, str, tuple, ClosedJaxpr, Jaxpr)):
          params[k] = {"code": type(v).__name__}
        else:
          params[k] = self.param(v, f"the parameter {k}={v!r} of {e.primitive.name}")
      eqns.append({"prim": e.primitive.name, "in": [self.atom(a) for a in e.invars],
                   "params": params, "out": [self.var(v) for v in e.outvars]})
    out["eqns"] = eqns
    out["outvars"] = [self.atom(a) for a in j.outvars]
    return out

  def value(self, x):
    if isinstance(x, (bool, int, str)) or x is None:
      return x
    if isinstance(x, float):
      return {"float": repr(x)}
    if isinstance(x, complex):
      return {"complex": [repr(x.real), repr(x.imag)]}
    if isinstance(x, (np.ndarray, np.generic)):
      if not isinstance(x.dtype, np.dtype) or x.dtype == object:
        self.unsupported(f"an array of dtype {x.dtype}")
      arr = np.asarray(x)  # tobytes() writes C order (ascontiguousarray would make 0-d 1-d)
      return {"array": base64.b64encode(arr.tobytes()).decode("ascii"),
              "dtype": _dtype_name(arr.dtype), "shape": list(arr.shape),
              "scalar": isinstance(x, np.generic)}
    if hasattr(x, "__array__") and hasattr(x, "aval"):  # a revax Array constant
      return self.value(np.asarray(x))
    self.unsupported(f"the value {x!r} of type {type(x).__name__}")

  def param(self, v, where):
    if sp.is_symbolic_dim(v):
      return {"dim": str(v)}
    if isinstance(v, enum.Enum):
      return {"enum": _qualname(type(v), where, self), "name": v.name}
    if isinstance(v, tuple) and hasattr(v, "_fields"):
      return {"namedtuple": _qualname(type(v), where, self),
              "items": [self.param(x, where) for x in v]}
    if type(v) in (tuple, list):
      return {type(v).__name__: [self.param(x, where) for x in v]}
    if isinstance(v, np.dtype):
      return {"dtype": _dtype_name(v)}
    if isinstance(v, ClosedJaxpr):
      return {"closed_jaxpr": self.closed(v)}
    if isinstance(v, Jaxpr):
      return {"open_jaxpr": self.jaxpr(v)}
    if isinstance(v, ShapedArray):
      return {"aval": self.aval(v)}
    if _is_prng_impl(v):
      return {"prng_impl": v.name}  # (random_seed's, random_wrap's implementation)
    if type(v).__name__ == "Exported" and hasattr(v, "serialize"):  # a call of another export
      return {"exported": base64.b64encode(bytes(v.serialize())).decode("ascii")}
    if isinstance(v, (bool, int, str, float, complex, np.ndarray, np.generic)) or v is None:
      return self.value(v)
    self.unsupported(where)


def _is_prng_impl(v) -> bool:
  name = getattr(v, "name", None)
  return isinstance(name, str) and extended_dtypes.prng_impls_by_name.get(name) is v


def _dtype_name(dt) -> str:
  return "float0" if dt == dtypes.float0 else np.dtype(dt).name


def _qualname(cls, where, enc) -> str:
  if not cls.__module__.startswith("revax."):
    enc.unsupported(f"{where} (of type {cls.__module__}.{cls.__qualname__}, not revax's own)")
  return f"{cls.__module__}:{cls.__qualname__}"


_DTYPES = {"bfloat16": dtypes.bfloat16, "float0": dtypes.float0}
_PARAM_TAGS = ("dim", "enum", "namedtuple", "tuple", "list", "closed_jaxpr", "open_jaxpr", "aval",
               "code", "exported", "dtype", "prng_impl")


class _CodeStub:
  """Stands for a custom rule (Python code) of a loaded program: it was not serialized."""

  def __init__(self, kind):
    self.kind = kind

  def __getattr__(self, name):
    if name.startswith("__"):
      raise AttributeError(name)
    self()

  def __call__(self, *args, **kwargs):
    raise NotImplementedError(
        f"the {self.kind} of a custom_jvp/custom_vjp function inside a deserialized export is "
        "Python code and was not serialized: differentiate the loaded function through its "
        "serialized VJP (serialize(vjp_order=k))")


class _Decoder:

  def __init__(self, scope, load_exported=None):
    self.scope = scope
    self.load_exported = load_exported
    self.vars: dict = {}
    self.prims = _primitives_by_name()

  def dim(self, text):
    d, = parse_dims(text, None, repr(text), self.scope)
    return d

  def aval(self, code):
    shape, name, weak = code
    if isinstance(name, dict):  # a typed key's dtype, by its implementation's name
      dt = extended_dtypes.KeyTy(_prng_impl(name["key"]))
    else:
      dt = _DTYPES.get(name) or np.dtype(name)
    return ShapedArray(tuple(self.dim(d) if isinstance(d, str) else int(d) for d in shape), dt,
                       bool(weak))

  def var(self, code):
    if isinstance(code, dict):
      return DropVar(self.aval(code["drop"]))
    n, aval = code
    v = self.vars[n] = Var(self.aval(aval))
    return v

  def atom(self, code):
    if isinstance(code, dict):
      return Literal(self.value(code["lit"]), self.aval(code["aval"]))
    return self.vars[code]

  def closed(self, code):
    return ClosedJaxpr(self.jaxpr(code["jaxpr"]), [self.value(x) for x in code["consts"]])

  def jaxpr(self, code):
    constvars = [self.var(v) for v in code["constvars"]]
    invars = [self.var(v) for v in code["invars"]]
    eqns = []
    for e in code["eqns"]:
      prim = self.prims.get(e["prim"])
      if prim is None or prim is _AMBIGUOUS:
        what = "unknown" if prim is None else "ambiguous (two primitives have the name)"
        raise ValueError(f"revax export: {what} primitive {e['prim']!r}")
      ins = [self.atom(a) for a in e["in"]]
      params = {k: self.param(v) for k, v in e["params"].items()}
      eqns.append(JaxprEqn(prim, ins, [self.var(v) for v in e["out"]], params))
    outvars = [self.atom(a) for a in code["outvars"]]
    return Jaxpr(constvars, invars, outvars, eqns)

  def value(self, code):
    if not isinstance(code, dict):
      return code
    if "float" in code:
      return float(code["float"])
    if "complex" in code:
      return complex(float(code["complex"][0]), float(code["complex"][1]))
    dt = _DTYPES.get(code["dtype"]) or np.dtype(code["dtype"])
    arr = np.frombuffer(base64.b64decode(code["array"]), dt).reshape(code["shape"])
    return arr[()] if code["scalar"] else arr.copy()

  def param(self, code):
    if not isinstance(code, dict):
      return code
    if "array" in code or "float" in code or "complex" in code:
      return self.value(code)
    # a tagged dict (its keys may come back in any order: find the tag by name)
    kind = next((k for k in _PARAM_TAGS if k in code), None)
    body = code.get(kind)
    if kind == "dim":
      return self.dim(body)
    if kind == "enum":
      return getattr(_revax_class(body), code["name"])
    if kind == "namedtuple":
      return _revax_class(body)(*[self.param(x) for x in code["items"]])
    if kind in ("tuple", "list"):
      seq = [self.param(x) for x in body]
      return tuple(seq) if kind == "tuple" else seq
    if kind == "dtype":
      return np.dtype(_DTYPES.get(body) or body)
    if kind == "closed_jaxpr":
      return self.closed(body)
    if kind == "open_jaxpr":
      return self.jaxpr(body)
    if kind == "aval":
      return self.aval(body)
    if kind == "code":
      return _CodeStub(body)
    if kind == "exported":
      return self.load_exported(base64.b64decode(body))
    if kind == "prng_impl":
      return _prng_impl(body)
    return self.value(code)


def _prng_impl(name: str):
  impl = extended_dtypes.prng_impls_by_name.get(name)
  if impl is None:
    raise ValueError(f"revax export: unknown PRNG implementation {name!r} (registered: "
                     f"{', '.join(extended_dtypes.prng_impls_by_name)})")
  return impl


def _revax_class(path: str):
  module, _, qualname = path.partition(":")
  if not module.startswith("revax."):
    raise ValueError(f"revax export: refusing to load the type {path} (not revax's own)")
  obj = importlib.import_module(module)
  for part in qualname.split("."):
    obj = getattr(obj, part)
  return obj


_AMBIGUOUS = object()


def _primitives_by_name() -> dict:
  """The primitives that have lowering rules, by name (a name two primitives share is marked,
  and refused when a program names it)."""
  prims: dict = {}
  for table in [mlir.lowerings, *mlir.platform_lowerings.values()]:
    for p in table:
      if prims.setdefault(p.name, p) is not p:
        prims[p.name] = _AMBIGUOUS
  return prims
