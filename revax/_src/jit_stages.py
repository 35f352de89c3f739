"""The stages of a jitted call, as JAX's: `Traced` (`jit(f).trace(...)`: the jaxpr), `Lowered`
(`.lower(...)`: the StableHLO module), `Compiled` (`.compile()`: the executable, callable), and
their counterparts for a call over a mesh, `ShardedLowered` and `ShardedCompiled`. Each holds the
trace cache entry it was made for, the `Signature` its attributes report (stage_info.py) and,
over a mesh, the prepared call (sharded_jit.py); compiling takes the program from
program_cache.py. They are registered with stages.py's abstract classes."""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.interpreters import dispatch, memory_kinds, mlir
from revax._src.runtime import array as _array
from revax._src.runtime.array import Array
from revax._src.runtime.client import get_backend
from revax._src import stage_info as _stage_info
from revax._src import stages as _stages
from revax._src.donation import run_donating
from revax._src.executable_payload import payload_of
from revax._src.jit_placement import commit_if_read, placed_operands
from revax._src.jit_primitive import run_with_refs
from revax._src.lax import state as _state
from revax._src.program_cache import program_for
from revax._src.sharding import SingleDeviceSharding
from revax._src.stage_info import Signature, StageAttributes
from revax._src.typed_key_jaxprs import key_impls_of_tree, with_typed_keys

__all__ = ["Traced", "Lowered", "Compiled", "ShardedLowered", "ShardedCompiled"]


class Traced(StageAttributes):
  """A jitted function traced for one signature (`jit(f).trace(*args)`): `.jaxpr` is the
  traced program (closed-over arrays are its leading inputs), `.lower()` lowers it."""

  def __init__(self, entry, signature: Signature, lower):
    self._entry, self._signature = entry, signature
    self._lower = lower  # () -> Lowered: the jitted function lowered for the same arguments

  @property
  def jaxpr(self) -> ClosedJaxpr:
    """The traced program, its key-array arguments and results typed as keys (as JAX's)."""
    return _reported_jaxpr(self)

  def lower(self):
    """The traced program lowered for the same arguments (a `Lowered`)."""
    return self._lower()


class Lowered(StageAttributes):
  """A jitted function lowered for one signature."""

  def __init__(self, entry, num_consts: int, signature: Signature):
    self._entry = entry  # (`in_tree`, the arguments' structure, is the signature's)
    self._num_consts = num_consts
    self._text = None
    self._signature = signature

  def compiler_ir(self, dialect: str | None = None):
    """The lowered module: StableHLO (`str()` of it is the text), or with dialect="hlo" XLA's
    HLO (an `XlaComputation`: `.as_hlo_text()`, see stage_info.py)."""
    return _stage_info.compiler_ir(self.as_text(), dialect)

  def as_text(self) -> str:
    """The StableHLO module, as text."""
    if self._text is None:
      entry = self._entry
      aliases = entry.aliases or ()
      if entry.ref_mask is not None:  # a ref argument's new contents may reuse its buffer
        n = len(entry.jaxpr.out_avals)
        aliases = tuple((k, n + j) for j, k in enumerate(
            k for k, m in enumerate(entry.ref_mask) if m))
      self._text = mlir.lower_jaxpr_to_module(  # for the platform it compiles for, as jax's
          entry.jaxpr, entry.name, aliases=aliases,
          platform=dispatch.default_compile_backend().platform)
    return self._text

  @property
  def jaxpr(self) -> ClosedJaxpr:
    """The program lowered, its key-array arguments and results typed as keys (as JAX's)."""
    return _reported_jaxpr(self)

  def compile(self, compiler_options=None, *, device_assignment=None) -> "Compiled":
    """Compile (JAX's signature). `compiler_options`: XLA options by name (e.g.
    {"xla_cpu_enable_fast_math": False}), handed to XLA after the jit's own
    (`jit(compiler_options=)`), as JAX does (an unknown name is XLA's error); a program with
    options given here is compiled for this Compiled only, not shared with the jit's."""
    _stage_info.check_compile_args(compiler_options, device_assignment, options_supported=True)
    entry = self._entry
    if compiler_options:
      own = type(entry).__new__(type(entry))
      for slot in type(entry).__slots__:
        setattr(own, slot, getattr(entry, slot))
      own.compiler_options = entry.compiler_options + tuple(compiler_options.items())
      own.program = dispatch.compile_jaxpr(entry.jaxpr, entry.name, entry.aliases or (),
                                           option_overrides=own.compiler_options)
      return Compiled(own, self.in_tree, self._signature)
    if entry.program is None or entry.aliases:
      entry.program = program_for(entry.jaxpr, entry.name, entry.aliases or (),
                                  entry.compiler_options)
    return Compiled(entry, self.in_tree, self._signature)

  def cost_analysis(self) -> dict:
    """XLA's cost estimates ("flops", "bytes accessed", ...): those of the compiled program
    (revax compiles to answer; JAX estimates from the unoptimized module, so figures of fused
    operations can differ)."""
    return self.compile().cost_analysis()


def _reported_jaxpr(stage) -> ClosedJaxpr:
  """The jaxpr a Traced or Lowered reports: its entry's program with the data of key arrays
  among the arguments and results typed as keys (typed_key_jaxprs.py); made once per stage."""
  typed = stage.__dict__.get("_typed_jaxpr")
  if typed is None:
    entry = stage._entry
    closed = entry.jaxpr
    in_impls = key_impls_of_tree(stage.in_tree)
    out_impls = key_impls_of_tree(entry.out_tree)
    n_consts = len(closed.jaxpr.invars) - len(in_impls)
    if n_consts < 0 or len(out_impls) != len(closed.jaxpr.outvars):
      typed = closed  # (a program of another shape, e.g. one that takes refs: as traced)
    else:
      typed = with_typed_keys(closed, [None] * n_consts + in_impls, out_impls)
    stage.__dict__["_typed_jaxpr"] = typed
  return typed


class Compiled(StageAttributes):
  """A compiled program. Calling it with arguments of other types raises TypeError."""

  def __init__(self, entry, in_tree, signature: Signature):
    self._entry = entry  # (`in_tree`, the arguments' structure, is the signature's)
    self._signature = signature

  def __call__(self, *args, **kwargs):
    leaves, treedef = tree_util.tree_flatten((args, kwargs))
    if treedef != self.in_tree:
      raise TypeError(f"compiled function {self._entry.name} was compiled for arguments of "
                      f"structure {self.in_tree}, got {treedef}")
    avals = [x.aval if type(x) is Array else get_aval(x) for x in leaves]
    if self._entry.ref_mask is not None:  # a program that takes refs
      dispatch.check_arg_avals(self._entry.name, self._entry.jaxpr.in_avals,
                               [get_aval(c) for c in self._entry.consts] + avals)
      _state.check_distinct_refs([x for x in self._entry.consts + leaves if _state.is_ref(x)],
                                 f"the compiled function {self._entry.name}")
      outs = run_with_refs(self._entry, self._entry.consts + leaves)
      return tree_util.tree_unflatten(self._entry.out_tree, outs)
    program = self._entry.program
    program.check_avals([c.aval for c in self._entry.consts] + avals)
    _check_memories(leaves, avals, self._signature.avals)
    operands = self._entry.consts + leaves
    if _array.committed_live:  # placed and committed as a jit call's (Jitted._call)
      operands = placed_operands(self._entry, leaves, operands, self._entry.name)
    aliases = self._entry.aliases
    outs = (run_donating(program, aliases, operands) if aliases
            else program.call_arrays(operands))
    if _array.committed_live:
      commit_if_read(self._entry, leaves, outs)
    return tree_util.tree_unflatten(self._entry.out_tree, outs)

  def as_text(self) -> str:
    """XLA's optimized HLO of the compiled program, as text (JAX's: what XLA made of the
    module after its passes, with fusions; `Lowered.as_text()` is the StableHLO). XLA
    compiles the module once more to print it, on the first call only (runtime/hlo_dump.py).

    Example:
      >>> compiled = revax.jit(lambda x: jnp.sin(x) * 2).lower(jnp.ones(3)).compile()
      >>> print(compiled.as_text().strip())
      HloModule jit__lambda, is_scheduled=true, entry_computation_layout={(f32[3]{0})->f32[3]{0}}
      <BLANKLINE>
      %fused_computation (param_0.1: f32[3]) -> f32[3] {
        %param_0.1 = f32[3]{0} parameter(0)
        %sine.0 = f32[3]{0} sine(%param_0.1)
        %constant.0 = f32[] constant(2)
        %broadcast.0 = f32[3]{0} broadcast(%constant.0), dimensions={}
        ROOT %multiply.0 = f32[3]{0} multiply(%sine.0, %broadcast.0)
      }
      <BLANKLINE>
      ENTRY %main.1 (Arg_0.1: f32[3]) -> f32[3] {
        %Arg_0.1 = f32[3]{0} parameter(0)
        ROOT %broadcast_multiply_fusion = f32[3]{0} fusion(%Arg_0.1), kind=kLoop,
          calls=%fused_computation
      }
    """
    return self._entry.program.executable.get_hlo_text()

  def serialize(self) -> bytes:
    """The executable (and the values it closed over) as bytes; load them with
    `revax.experimental.serialize_executable.deserialize_and_load(data, in_tree, out_tree)`."""
    return payload_of(self._entry)

  def memory_analysis(self):
    """Compiled memory statistics: `temp_size_in_bytes`, `argument_size_in_bytes`, ..."""
    return self._entry.program.memory_stats()

  def cost_analysis(self) -> dict:
    """XLA's cost analysis of the program: "flops", "bytes accessed", ... (floats)."""
    return self._entry.program.executable.cost_analysis()

  def runtime_executable(self):
    """The runtime's loaded executable (revax's `Executable`)."""
    return self._entry.program.executable

  @property
  def input_shardings(self):
    """Where each dynamic argument goes (the default device, in the memory its type says), as
    the pytree of `in_avals`."""
    sig = self._signature
    return tree_util.tree_unflatten(sig.in_tree, list(map(_on_first_device, sig.avals)))

  @property
  def output_shardings(self):
    sig = self._signature
    return tree_util.tree_unflatten(sig.out_tree, list(map(_on_first_device, sig.out_avals)))


def _check_memories(leaves, avals, compiled_avals) -> None:
  """ValueError (JAX's) for an Array argument in another memory space than the program was
  compiled for (NumPy values go where the program wants them).

  Raises:
    ValueError: naming each mismatched argument with the sharding passed and the one required.
  """
  bad = []
  for i, (x, a, want) in enumerate(zip(leaves, avals, compiled_avals)):
    if isinstance(x, Array) and getattr(a, "memory_space", None) is not getattr(
        want, "memory_space", None):
      bad.append(f"Argument {i} with shape {a}:\n  Passed sharding: {x.sharding}\n  Required "
                 f"sharding: {_on_first_device(want)}")
  if bad:
    raise ValueError("Computation was compiled for input shardings that disagree with the "
                     "shardings of arguments passed to it. Here are the "
                     f"{len(bad)} mismatches:\n" + "\n".join(bad))


def _on_first_device(aval) -> SingleDeviceSharding:
  """The first device's sharding, in the memory `aval`'s memory space names."""
  kind = memory_kinds.kind_of(aval)
  return SingleDeviceSharding(get_backend().devices[0],
                              memory_kind=None if kind == "device" else kind)


class ShardedLowered(StageAttributes):
  """A jitted function lowered for a mesh: `.as_text()` is the Shardy-annotated StableHLO."""

  def __init__(self, entry, flat, program, out_shardings, arg_shardings, signature):
    self._entry, self._flat, self._program = entry, flat, program
    self._out_shardings, self._arg_shardings = out_shardings, arg_shardings
    self._signature = signature

  def compiler_ir(self, dialect: str | None = None):
    """The lowered StableHLO module (`str()` of it is the text); dialect="hlo" (XLA's HLO)
    only for a program on one device (XLA converts a program over a mesh as it partitions
    it, which revax's HLO dump does not do)."""
    if dialect == "hlo" and self._program is not None:
      raise NotImplementedError("compiler_ir('hlo') of a program over a mesh: revax converts "
                                "one-device programs only; use compiler_ir() (StableHLO)")
    return _stage_info.compiler_ir(self.as_text(), dialect)

  def as_text(self) -> str:
    if self._program is None:
      return mlir.lower_jaxpr_to_module(self._entry.jaxpr, self._entry.name,
                                        result_kinds=self._result_kinds(),
                                        platform=dispatch.default_compile_backend().platform)
    return self._program.text

  def _result_kinds(self):
    """Per result, the memory kind the out_shardings name (None: all the device's own)."""
    from revax._src.sharded_jit import finish_actions, result_kinds
    return result_kinds(finish_actions(self._out_shardings))

  @property
  def jaxpr(self):
    return self._entry.jaxpr

  def compile(self, compiler_options=None, *, device_assignment=None) -> "ShardedCompiled":
    """Compile (JAX's signature; revax passes no XLA options: only None or {} is accepted)."""
    _stage_info.check_compile_args(compiler_options, device_assignment)
    return ShardedCompiled(self)


class ShardedCompiled:
  """A compiled jit program over a mesh; call it with arguments of the lowered types."""

  def __init__(self, lowered: ShardedLowered):
    self._lowered = lowered
    entry = lowered._entry
    self._placing = None  # (program, finish actions) where out_shardings name other memories
    if lowered._program is None:
      if entry.program is None:
        entry.program = program_for(entry.jaxpr, entry.name)
      kinds = lowered._result_kinds()
      if kinds is not None:
        from revax._src.sharded_jit import finish_actions
        self._placing = (program_for(entry.jaxpr, entry.name, result_kinds=kinds),
                         finish_actions(lowered._out_shardings))

  def as_text(self) -> str:
    """XLA's optimized HLO of the compiled program, as `Compiled.as_text()`; over a mesh, the
    SPMD-partitioned module each device runs (with its collectives: `all-reduce`, ...)."""
    return self.runtime_executable().get_hlo_text()

  def runtime_executable(self):
    """The runtime's loaded executable (revax's `Executable`)."""
    p = self._lowered._program
    return p.executable if p is not None else self._lowered._entry.program.executable

  @property
  def input_shardings(self):
    p = self._lowered._program
    if p is None:  # one device: as requested, or the whole array on it
      first = SingleDeviceSharding(get_backend().devices[0])
      return [s if s is not None else first for s in self._lowered._arg_shardings]
    return p.in_shardings[len(self._lowered._entry.consts):]

  @property
  def output_shardings(self):
    p = self._lowered._program
    if p is None:
      first = SingleDeviceSharding(get_backend().devices[0])
      return [s if s is not None else first for s in self._lowered._out_shardings]
    return p.out_shardings

  def __call__(self, *args, **kwargs):
    entry = self._lowered._entry
    leaves = tree_util.tree_leaves((args, kwargs))
    flat = list(entry.consts) + leaves
    dispatch.check_arg_avals(entry.name, entry.jaxpr.in_avals,
                             [x.aval if isinstance(x, Array) else get_aval(x) for x in flat])
    p = self._lowered._program
    if self._placing is not None:
      from revax._src.sharded_jit import finish_one_device
      program, actions = self._placing
      outs = finish_one_device(program.call_arrays(flat), actions)
    else:
      outs = p(flat) if p is not None else entry.program.call_arrays(flat)
    return outs[0] if entry.out_is_leaf else tree_util.tree_unflatten(entry.out_tree, outs)

  def memory_analysis(self):
    """XLA's memory figures for the program, per device for a program over a mesh."""
    p = self._lowered._program
    return p.memory_stats() if p is not None else self._lowered._entry.program.memory_stats()

  def cost_analysis(self) -> dict:
    """XLA's cost analysis of the program ("flops", "bytes accessed", ... as floats), as
    `Compiled.cost_analysis()`; for a program over a mesh, the partitioned program's."""
    return self.runtime_executable().cost_analysis()


_stages.Traced.register(Traced)
_stages.Lowered.register(Lowered)
_stages.Lowered.register(ShardedLowered)
_stages.Compiled.register(Compiled)
_stages.Compiled.register(ShardedCompiled)
