"""Lowering: jaxpr -> StableHLO text.

Every primitive has a lowering rule `rule(ctx, *operands, **params)` that emits StableHLO
operations into the function being built and returns the SSA value(s) of its result(s). Operations
are written in MLIR's generic form (`%3 = "stablehlo.add"(%1, %2) : (...) -> ...`), which is one
uniform syntax for every op, with properties in `<{...}>` and regions in `({...})`. Nested jaxprs
become private functions called with `func.call`. A rule may be registered for one platform
only (`register_lowering(p, rule, platform="cpu")`), overriding the default rule there.
`lower_fun` turns a revax function into a lowering rule: it is traced at the rule's input types
and its jaxpr is lowered in place.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes, sharding_types
from revax._src.core.avals import AbstractToken, ShapedArray, physical_aval
from revax._src.core.effects import jaxpr_has_host_callbacks, jaxpr_has_ordered_effects
from revax._src.core.gc_pause import paused_gc
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from revax._src.core.rules import RuleTable
from revax._src.interpreters import memory_kinds

lowerings = RuleTable("lowering")
platform_lowerings: dict[str, RuleTable] = {}


def register_lowering(prim, rule, platform: str | None = None):
  """Register `rule(ctx, *operands, **params)` as `prim`'s lowering (on `platform` only, if given)."""
  if platform is None:
    lowerings[prim] = rule
  else:
    platform_lowerings.setdefault(platform, RuleTable(f"{platform} lowering"))[prim] = rule
  return rule


def get_lowering(prim, platform: str):
  table = platform_lowerings.get(platform)
  rule = table.get(prim) if table is not None else None
  if rule is None:
    rule = lowerings.get(prim)
  if rule is None:
    raise NotImplementedError(f"primitive '{prim.name}' has no lowering rule (platform {platform})")
  return rule


# --- types and constants -----------------------------------------------------------------------
_ELEMENT_TYPES = {dtypes.bool_: "i1", dtypes.int8: "i8", dtypes.int16: "i16", dtypes.int32: "i32",
                  dtypes.int64: "i64", dtypes.uint8: "ui8", dtypes.uint16: "ui16",
                  dtypes.uint32: "ui32", dtypes.uint64: "ui64", dtypes.float16: "f16",
                  dtypes.bfloat16: "bf16", dtypes.float32: "f32", dtypes.float64: "f64",
                  dtypes.complex64: "complex<f32>", dtypes.complex128: "complex<f64>",
                  dtypes.float0: "i1"}
# ml_dtypes' narrow types: float8_e4m3fn -> f8E4M3FN, int4 -> i4, uint4 -> ui4. The 1- and
# 2-bit integers are left out: XLA:CPU aborts the process compiling some programs on them (a
# concatenate of int2: "Check failed: bit_offset") and sorts them wrongly; they compute eagerly.
_ELEMENT_TYPES.update({d: "f" + d.name[len("float"):].replace("_", "").upper()
                       for d in dtypes.NARROW_FLOATS})
_ELEMENT_TYPES.update({dtypes.NARROW_SIGNED[2]: "i4", dtypes.NARROW_UNSIGNED[2]: "ui4"})


TOKEN_TYPE = "!stablehlo.token"


def has_ordered_effects(closed) -> bool:
  """Whether lowering `closed` (a ClosedJaxpr or Jaxpr) must thread an ordering token."""
  return jaxpr_has_ordered_effects(getattr(closed, "jaxpr", closed))


def element_type(dtype) -> str:
  try:
    return _ELEMENT_TYPES[np.dtype(dtype)]
  except KeyError:
    raise TypeError(f"revax does not compile programs on {np.dtype(dtype).name} values (XLA:CPU "
                    "aborts on some programs of 1- and 2-bit integers); they compute eagerly "
                    "only") from None


# XLA aborts the process (a CHECK failure, "overflow in static extent product") on a program
# holding an array of 2**63 bytes or more, and also on a zero-size array whose other dimensions
# multiply past that (f32[2**31, 2**31, 0]: XLA multiplies extents before it meets the zero).
# Such arrays are refused here, before lowering: the bytes of the non-zero dimensions together
# must fit in an int64 (a little stricter than XLA's prefix products, never looser).
_MAX_ARRAY_BYTES = 2 ** 63 - 1


def _extent_bytes(aval: ShapedArray) -> int:
  """itemsize times the product of the non-zero dimensions (the size XLA's checks compute)."""
  nbytes = aval.dtype.itemsize
  for d in aval.shape:
    if d:
      nbytes *= d
  return nbytes


_ir_types: dict = {}  # aval -> its type's text (weak types aside, avals repeat)


def ir_type(aval: ShapedArray) -> str:
  """`tensor<3x4xf32>` for f32[3,4]; `tensor<f32>` for a scalar."""
  text = _ir_types.get(aval)
  if text is None:
    text = _ir_type(aval)
    if len(_ir_types) < 4096:
      _ir_types[aval] = text
  return text


def _ir_type(aval: ShapedArray) -> str:
  if type(aval) is AbstractToken:
    return TOKEN_TYPE
  if not isinstance(aval.dtype, np.dtype):  # an extended dtype (key<fry>): its data's type
    return _ir_type(physical_aval(aval))
  et = element_type(aval.dtype)
  if not aval.shape:
    return f"tensor<{et}>"
  nbytes = _extent_bytes(aval)
  if nbytes > _MAX_ARRAY_BYTES:
    what = "bytes" if aval.size else "bytes in its non-zero dimensions (XLA multiplies them out)"
    raise ValueError(f"array of type {aval.str_short()} is too large for XLA: "
                     f"{nbytes} {what}; at most 2**63 - 1 bytes can be addressed")
  return f"tensor<{'x'.join(map(str, aval.shape))}x{et}>"


def _fmt_element(x, dtype) -> str:
  dtype = np.dtype(dtype)
  if dtype == dtypes.bool_ or dtype == dtypes.float0:
    return "true" if x else "false"
  if dtypes.is_integer(dtype):
    return str(int(x))
  if dtypes.is_complex(dtype):
    part = dtypes.float32 if dtype == dtypes.complex64 else dtypes.float64
    return f"({_fmt_element(x.real, part)}, {_fmt_element(x.imag, part)})"
  f = float(x)
  if np.isfinite(f):
    digits = 16 if dtype == dtypes.float64 else 8
    return f"{f:.{digits}e}"
  bits = np.asarray(x, dtype).view(f"u{dtype.itemsize}")  # NaN and inf as bit patterns
  return f"0x{int(bits):0{2 * dtype.itemsize}X}"


def dense_attr(value: np.ndarray, aval: ShapedArray) -> str:
  """`dense<...> : tensor<...>` holding `value` exactly."""
  value = np.asarray(value)
  if aval.dtype == dtypes.float0:
    value = np.zeros(value.shape, np.bool_)
  else:
    value = value.astype(aval.dtype, copy=False)
  t = ir_type(aval)
  if value.ndim == 0 and value == value:  # a scalar (not NaN: NaNs keep their bit pattern below)
    return f"dense<{_fmt_element(value[()], aval.dtype)}> : {t}"
  if value.size == 0:
    return f"dense<> : {t}"
  flat = value.reshape(-1)
  first = flat[0]
  if (flat == first).all() and not (dtypes.is_inexact(aval.dtype) and np.isnan(flat).any()
                                    and not np.isnan(flat).all()):
    return f"dense<{_fmt_element(first, aval.dtype)}> : {t}"
  if aval.dtype == dtypes.bool_:
    return f"dense<{_nested_bools(value)}> : {t}"
  data = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False)
  return f'dense<"0x{data.tobytes().hex().upper()}"> : {t}'


def _nested_bools(v) -> str:
  if v.ndim == 0:
    return "true" if v else "false"
  return "[" + ", ".join(_nested_bools(x) for x in v) + "]"


def i64_array(xs) -> str:
  """`array<i64: 1, 2>`, the form of StableHLO's dimension-list properties."""
  xs = tuple(int(x) for x in xs)
  return f"array<i64: {', '.join(map(str, xs))}>" if xs else "array<i64>"


def i64_dense(xs, shape=None) -> str:
  """`dense<[[1, 2], [0, 1]]> : tensor<2x2xi64>` for nested int lists (padding and the like)."""
  arr = np.asarray(xs, np.int64)
  if shape is not None:
    arr = arr.reshape(shape)
  body = np.array2string(arr, separator=", ", threshold=10**9).replace("\n", "") if arr.ndim else str(int(arr))
  return f"dense<{body}> : {ir_type(ShapedArray(arr.shape, np.int64))}"


# --- builders ------------------------------------------------------------------------------------
class ModuleBuilder:
  """Collects the functions of one StableHLO module."""

  def __init__(self, name: str, platform: str):
    self.name = _sanitize(name).rstrip("_") or "_"  # (as JAX's: `jit__lambda` for a lambda)
    self.platform = platform
    self.funcs: list[str] = []
    self._func_names: set[str] = {"main"}
    self._lowered_calls: dict = {}  # (id(jaxpr), name) -> private function name
    self._keepalive: list = []  # jaxprs whose ids key _lowered_calls
    self.counter = [0]  # SSA names are unique across the module,
    self.value_types: dict[str, str] = {}  # so one table maps each value to its type
    self.all_default_mem_kind = True  # (memory_kinds.py: every value in device memory)

  def add_keepalive(self, value) -> None:
    """Keep `value` alive as long as this module (JAX's ModuleContext.add_keepalive: equinox
    keeps the host callback of its noinline lowering there)."""
    self._keepalive.append(value)

  def fresh_func_name(self, hint: str) -> str:
    base = _sanitize(hint) or "f"
    name, k = base, 0
    while name in self._func_names:
      k += 1
      name = f"{base}_{k}"
    self._func_names.add(name)
    return name

  def to_text(self, num_partitions: int = 1, num_replicas: int = 1) -> str:
    attrs = f"mhlo.num_partitions = {num_partitions} : i32, mhlo.num_replicas = {num_replicas} : i32"
    body = "\n".join(self.funcs)
    return f"module @{self.name} attributes {{{attrs}}} {{\n{body}\n}}\n"


def _sanitize(name: str) -> str:
  out = "".join(c if c.isalnum() or c == "_" else "_" for c in str(name))
  return out if out and not out[0].isdigit() else "_" + out


class FuncBuilder:
  """Emits the operations of one function body (and of the regions nested in it)."""

  def __init__(self, module: ModuleBuilder, indent: int = 4):
    self.module = module
    self.lines: list[str] = []
    self._counter = module.counter
    self._types = module.value_types
    self.indent = indent
    self._body_values: dict = {}  # see body_value

  def fresh(self) -> str:
    n = self._counter[0]
    self._counter[0] += 1
    return f"%{n}"

  def op(self, name: str, operands, result_types, *, props: dict | None = None,
         attrs: dict | None = None, regions: list[str] | None = None) -> list[str]:
    """Emit `name(operands)` with results of `result_types`; returns the result values."""
    operands = list(operands)
    result_types = list(result_types)
    types = self._types
    text = f'"{name}"({", ".join(operands)})'
    if props:
      text += " <{" + ", ".join([f"{k} = {v}" for k, v in props.items()]) + "}>"
    if regions:
      text += " (" + ", ".join(regions) + ")"
    if attrs:
      text += " {" + ", ".join([f"{k} = {v}" for k, v in attrs.items()]) + "}"
    n = len(result_types)
    outs_t = result_types[0] if n == 1 else f"({', '.join(result_types)})"
    text = f"{text} : ({', '.join([types[v] for v in operands])}) -> {outs_t}"
    pad = " " * self.indent
    if not n:
      self.lines.append(pad + text)
      return []
    counter = self._counter
    res = f"%{counter[0]}"
    counter[0] += 1
    if n == 1:
      self.lines.append(f"{pad}{res} = {text}")
      types[res] = result_types[0]
      return [res]
    self.lines.append(f"{pad}{res}:{n} = {text}")
    outs = [f"{res}#{i}" for i in range(n)]
    for v, t in zip(outs, result_types, strict=True):
      types[v] = t
    return outs

  def type_of(self, value: str) -> str:
    return self._types[value]

  # Ordered side effects (ordered host callbacks) run in program order: each body threads one
  # `!stablehlo.token` through them, and through the loops, branches and calls that hold them.
  def ordering_token(self) -> str:
    """This body's current ordering token (a fresh `after_all` if it has none yet)."""
    token = getattr(self, "_ordering_token", None)
    if token is None:
      (token,) = self.op("stablehlo.after_all", [], [TOKEN_TYPE])
      self._ordering_token = token
    return token

  def set_ordering_token(self, token: str) -> None:
    self._ordering_token = token

  def body_value(self, key: str, make) -> str:
    """A value emitted once in this body (a function or one region) and shared by later ops.

    The first request runs `make(self)`, which emits the value here; later requests for `key`
    in the same body get that value (it dominates them: lines are emitted in order). Nested
    regions are bodies of their own.
    """
    if key not in self._body_values:
      self._body_values[key] = make(self)
    return self._body_values[key]

  def constant(self, value, aval: ShapedArray) -> str:
    (out,) = self.op("stablehlo.constant", [], [ir_type(aval)],
                     props={"value": dense_attr(value, aval)})
    return out

  def region(self, arg_types, body) -> str:
    """A one-block region: `body(fb, *block_args)` emits ops and returns the values to return."""
    sub = FuncBuilder(self.module, self.indent + 2)
    args = [sub.fresh() for _ in arg_types]
    for a, t in zip(args, arg_types, strict=True):
      self._types[a] = t
    results = body(sub, *args)
    sub.op("stablehlo.return", results, [])
    inner = "\n".join(sub.lines)
    if not arg_types:  # a region without arguments (the branches of `if`, `case`) has no label
      return f"{{\n{inner}\n{' ' * self.indent}}}"
    head = ", ".join(f"{a}: {t}" for a, t in zip(args, arg_types, strict=True))
    return f"{{\n{' ' * (self.indent)}^bb0({head}):\n{inner}\n{' ' * self.indent}}}"


class LoweringRuleContext:
  """What a lowering rule sees: the builder, and the avals of the equation's inputs and outputs."""
  __slots__ = ("fb", "avals_in", "avals_out", "platform")

  def __init__(self, fb: FuncBuilder, avals_in, avals_out, platform: str):
    self.fb = fb
    self.avals_in = avals_in
    self.avals_out = avals_out
    self.platform = platform

  @property
  def module(self) -> ModuleBuilder:
    return self.fb.module

  @property
  def module_context(self) -> ModuleBuilder:
    """The module being built (JAX's `ctx.module_context`; it has `add_keepalive`)."""
    return self.fb.module

  def op(self, name, operands, result_avals, **kw) -> list[str]:
    return self.fb.op(name, operands, [ir_type(a) for a in result_avals], **kw)

  def op1(self, name, operands, result_aval=None, **kw) -> str:
    """Emit a one-result op (default result type: the equation's single output)."""
    aval = self.avals_out[0] if result_aval is None else result_aval
    return self.fb.op(name, operands, [ir_type(aval)], **kw)[0]

  def constant(self, value, aval) -> str:
    return self.fb.constant(value, aval)


# --- lowering jaxprs -----------------------------------------------------------------------------
def jaxpr_subcomp(fb: FuncBuilder, jaxpr: Jaxpr, consts, args) -> list[str]:
  """Lower the equations of `jaxpr` into `fb`; `consts`/`args` are SSA values for its vars."""
  env = {}
  for v, x in zip(jaxpr.constvars, consts, strict=True):
    env[v] = x
  for v, x in zip(jaxpr.invars, args, strict=True):
    env[v] = x
  platform = fb.module.platform

  def read(a):
    if type(a) is Literal:
      return fb.constant(np.asarray(a.val), a.aval)
    return env[a]

  rules = {}
  for eqn in jaxpr.eqns:
    prim = eqn.primitive
    rule = rules.get(prim)
    if rule is None:
      rule = rules[prim] = get_lowering(prim, platform)
    ctx = LoweringRuleContext(fb, [a.aval for a in eqn.invars], [v.aval for v in eqn.outvars],
                              platform)
    if extended_lowering is not None and prim not in key_aware and _on_extended(ctx, eqn.params):
      outs = extended_lowering(ctx, prim, list(map(read, eqn.invars)), eqn.params)
    else:
      outs = rule(ctx, *map(read, eqn.invars), **eqn.params)
    if not eqn.primitive.multiple_results and not isinstance(outs, (list, tuple)):
      outs = [outs]  # (a rule may return a single result as a one-element list, as JAX's do)
    outs = list(outs)
    if len(outs) != len(eqn.outvars):
      raise RuntimeError(f"lowering of '{eqn.primitive.name}' returned {len(outs)} values for "
                         f"{len(eqn.outvars)} outputs")
    for v, x in zip(eqn.outvars, outs, strict=True):
      if getattr(v.aval, "sharding", None) is not None and typed_constraint is not None:
        x = typed_constraint(ctx, x, v.aval)  # laid out as its type says (Explicit axes)
      env[v] = x
  return [read(v) for v in jaxpr.outvars]


# Values of an extended dtype (typed keys, key<fry>[4]) are their data in programs (ir_type
# gives `tensor<4x2xui32>`). The primitives in `key_aware` lower such values themselves (the
# key primitives, and call primitives, whose bodies are lowered equation by equation); any
# other primitive with an operand or result of an extended dtype (slice, reshape, select_n, ...
# on keys) is lowered by `extended_lowering(ctx, prim, args, params)` (set by
# lax/prng_keys.py): the primitive on the data with its trailing key dims mapped over.
extended_lowering = None
key_aware: set = set()


def _on_extended(ctx: LoweringRuleContext, params) -> bool:
  for a in (*ctx.avals_in, *ctx.avals_out):
    dtype = getattr(a, "dtype", None)
    if dtype is not None and not isinstance(dtype, np.dtype):
      break
  else:
    return False
  for v in params.values():  # (a call primitive's body carries its own key-typed values)
    if isinstance(v, (ClosedJaxpr, Jaxpr)) or (
        isinstance(v, tuple) and any(isinstance(b, (ClosedJaxpr, Jaxpr)) for b in v)):
      return False
  return True


# Set by lax/sharding_constraint.py: (ctx, value, aval) -> the value constrained to
# aval.sharding in a program over a mesh (itself in a single-device program).
typed_constraint = None


def inline_closed_jaxpr(fb: FuncBuilder, closed: ClosedJaxpr, args) -> list[str]:
  """Lower `closed` in place into `fb` (a function body or a region) on the SSA values `args`:
  the lowering of every call primitive that simply evaluates its jaxpr."""
  return jaxpr_subcomp(fb, closed.jaxpr, _consts_as_values(fb, closed), list(args))


def _consts_as_values(fb, closed: ClosedJaxpr) -> list[str]:
  return [fb.constant(np.asarray(c), v.aval)
          for v, c in zip(closed.jaxpr.constvars, closed.consts, strict=True)]


def lower_function(module: ModuleBuilder, name: str, closed: ClosedJaxpr, *, public: bool,
                   arg_attrs=None, result_attrs=None, result_placements=None) -> str:
  """Emit `closed` as a function of the module; returns its name. `arg_attrs`, `result_attrs`:
  an attribute dictionary's text (or None) per parameter / result; `result_placements`: a
  memory kind (or None) per result, whose value goes through `annotate_device_placement`."""
  fb = FuncBuilder(module)
  in_types = [ir_type(a) for a in closed.in_avals]
  args = [fb.fresh() for _ in in_types]
  for a, t in zip(args, in_types, strict=True):
    fb._types[a] = t
  outs = jaxpr_subcomp(fb, closed.jaxpr, _consts_as_values(fb, closed), args)
  out_types = [ir_type(a) for a in closed.out_avals]
  if result_placements:
    outs = [o if k is None else memory_kinds.annotate_placement(fb, o, k, t)
            for o, k, t in zip(outs, result_placements, out_types, strict=True)]
  fb.op("func.return", outs, [])
  params = ", ".join(f"{a}: {t}" + (f" {arg_attrs[i]}" if arg_attrs and arg_attrs[i] else "")
                     for i, (a, t) in enumerate(zip(args, in_types, strict=True)))
  vis = "public" if public else "private"
  results = f"({', '.join(out_types)})" if not result_attrs else "(" + ", ".join(
      t + (f" {r}" if r else "") for t, r in zip(out_types, result_attrs, strict=True)) + ")"
  body = "\n".join(fb.lines)
  module.funcs.append(f"  func.func {vis} @{name}({params}) -> {results} {{\n{body}\n  }}")
  return name


def call_jaxpr(ctx: LoweringRuleContext, closed: ClosedJaxpr, args, name: str = "call") -> list[str]:
  """Lower `closed` as a private function (once per module) and call it on `args`."""
  if has_ordered_effects(closed):  # inlined, so that the body's ordering token flows through
    return inline_closed_jaxpr(ctx.fb, closed, args)
  module = ctx.module
  key = (id(closed), name)
  fname = module._lowered_calls.get(key)
  if fname is None and jaxpr_has_host_callbacks(closed.jaxpr):  # each call its own channels
    return inline_closed_jaxpr(ctx.fb, closed, args)
  if fname is None:
    fname = lower_function(module, module.fresh_func_name(name), closed, public=False)
    module._lowered_calls[key] = fname
    module._keepalive.append(closed)
  return ctx.fb.op("func.call", args, [ir_type(a) for a in closed.out_avals],
                   props={"callee": f"@{fname}"})


def lower_jaxpr_to_module(closed: ClosedJaxpr, name: str = "main", platform: str = "cpu",
                          aliases=(), result_kinds=None) -> str:
  """StableHLO module text whose public @main computes `closed`.

  Args:
    aliases: (parameter, result) pairs: XLA may write the result into the parameter's buffer
      (`tf.aliasing_output`, how JAX marks a donated argument).
    result_kinds: per result, the memory kind jit's `out_shardings` name for it (or None):
      the result goes through `annotate_device_placement` to that memory, as JAX lowers it.
  """
  from revax._src.interpreters import discharge
  if discharge.has_refs(closed.jaxpr):  # refs created inside: their contents become values
    closed = discharge.discharge_state(closed)
  module = ModuleBuilder(f"jit_{name}", platform)
  arg_dicts = [{} for _ in closed.in_avals]
  for k, result in aliases:
    arg_dicts[k]["tf.aliasing_output"] = f"{result} : i32"
  result_dicts = [{} for _ in closed.out_avals]
  # where values live (JAX's rule): once any value or transfer names a memory other than the
  # device's own, every result says its memory, and every argument in host memory says so
  module.all_default_mem_kind = memory_kinds.all_default(closed) and all(
      k in (None, "device") for k in (result_kinds or ()))
  if not module.all_default_mem_kind:
    for d, a in zip(arg_dicts, closed.in_avals, strict=True):
      kind = memory_kinds.kind_of(a)
      if kind not in (None, "device"):
        d["mhlo.memory_kind"] = f'"{kind}"'
    for i, (d, a) in enumerate(zip(result_dicts, closed.out_avals, strict=True)):
      kind = (result_kinds[i] if result_kinds and result_kinds[i] is not None
              else memory_kinds.kind_of(a))
      if kind is not None:
        d["mhlo.memory_kind"] = f'"{kind}"'
  with paused_gc():
    lower_function(module, "main", closed, public=True,
                   arg_attrs=list(map(memory_kinds.attr_text, arg_dicts)),
                   result_attrs=list(map(memory_kinds.attr_text, result_dicts)),
                   result_placements=None if module.all_default_mem_kind else result_kinds)
    return module.to_text()


def lower_fun(fun, multiple_results: bool):
  """A lowering rule that lowers `fun(*args, **params)` (a revax function) traced at the rule's
  input avals. Used to write expansions (e.g. an integer dot as a sum of products) in revax."""
  from revax._src.interpreters import staging

  def rule(ctx, *args, **params):
    with sharding_types.internal_expansion():
      jaxpr, consts = staging.trace_to_jaxpr(lambda *xs: _as_list(fun(*xs, **params)),
                                             ctx.avals_in)
    const_vals = [ctx.fb.constant(np.asarray(c), v.aval) for v, c in zip(jaxpr.constvars, consts)]
    outs = jaxpr_subcomp(ctx.fb, jaxpr, const_vals, args)
    return outs if multiple_results else outs[0]

  return rule


def _as_list(x):
  return list(x) if isinstance(x, (list, tuple)) else [x]
