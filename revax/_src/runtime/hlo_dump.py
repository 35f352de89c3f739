"""XLA's HLO of a StableHLO module, as XLA itself converts it.

JAX's `Lowered.compiler_ir("hlo")` converts the lowered module to an HLO computation with XLA's
converter, which jaxlib links in. revax reaches XLA only through the PJRT C API, which has no
conversion entry point; but XLA converts every module it compiles and can dump the HLO it got
("before optimizations") as text and as a serialized `HloModuleProto`, by the debug options
`xla_dump_to`, `xla_dump_hlo_as_text`, `xla_dump_hlo_as_proto`. `hlo_before_optimizations`
compiles the module once with those options into a temporary directory (bypassing the
persistent compilation cache, so the dump always happens), reads the two files and drops the
executable. The text is the plugin's XLA's printer's (its version may print names with `%`
where jaxlib's newer XLA does not); metadata is left out, as JAX's `as_hlo_text()` does.

`optimized_hlo` is the module XLA made of a compiled program (JAX's `Compiled.as_text()`,
`LoadedExecutable.hlo_modules()`): XLA's optimized HLO, for a program over a mesh the
SPMD-partitioned module with its collectives. An executable built by `Backend.compile` or
`sharded.compile_spmd` records the bytes and compile options it was built from
(`Executable._source`); they are compiled once more, into a temporary directory, with the dump
options added (nothing else changes, so XLA makes the same module as for the real executable),
and XLA's `*after_optimizations.txt` is read. An executable loaded from serialized bytes has no
source: its own optimized `HloModuleProto` (`PJRT_Executable_OptimizedProgram`) is compiled
again with every HLO pass disabled and the module XLA got is dumped. Metadata is left out
(revax's modules have no source locations: XLA's would name lines of the MLIR text). The
result is kept on the executable: the second call costs nothing.
"""
from __future__ import annotations

import ctypes as C
import glob
import os
import tempfile

from revax._src.runtime import pjrt
from revax._src.runtime.pjrt import CompileError

__all__ = ["hlo_before_optimizations", "optimized_hlo", "optimized_module_proto", "HloModule"]

# PJRT_Executable_OptimizedProgram_Args (pjrt.py binds only what the execute path uses)
pjrt.ARGS.setdefault("Executable_OptimizedProgram", pjrt._struct(
    "PJRT_Executable_OptimizedProgram_Args", [("executable", C.c_void_p), ("program", C.c_void_p)]))

# the dump options: the HLO as text and as a serialized HloModuleProto, without metadata
_DUMP = (("xla_dump_hlo_as_text", True), ("xla_dump_hlo_as_proto", True),
         ("xla_dump_disable_metadata", True), ("xla_dump_hlo_module_re", ""))


def hlo_before_optimizations(backend, mlir_text: str, *,
                             print_large_constants: bool = False) -> tuple[str, bytes]:
  """The HLO XLA converts `mlir_text` to, before its optimization passes.

  Args:
    backend: the `Backend` whose XLA converts (and compiles) the module.
    mlir_text: a one-device StableHLO module (`Lowered.as_text()`).
    print_large_constants: print every element of large constants (else `{...}`, as XLA's
      `as_hlo_text()` does by default).

  Returns:
    `(text, proto)`: the HLO module as text and as a serialized `xla.HloModuleProto`.

  Raises:
    CompileError: XLA rejected the module before converting it (if it converted the module
      and then failed to compile it, the converted HLO is returned all the same).

  Example:
    >>> from revax._src.runtime.client import get_backend
    >>> from revax._src.runtime.hlo_dump import hlo_before_optimizations
    >>> text = revax.jit(lambda x: x * 2).lower(jnp.ones(3)).as_text()
    >>> hlo, proto = hlo_before_optimizations(get_backend(), text)
    >>> print(hlo.split("\\n")[0])
    HloModule jit__lambda, entry_computation_layout={(f32[3]{0})->f32[3]{0}}
  """
  options = pjrt.compile_options(portable=True, option_overrides=(
      ("xla_dump_large_constants", bool(print_large_constants)),))
  return _dump(backend, mlir_text, options, "before_optimizations")


def _dump(backend, code, options: bytes, stage: str, program_format: bytes = b"mlir"):
  """Compile `code` with `options` and XLA's dump options into a temporary directory; return
  the `(text, proto)` of the module XLA dumped at `stage` ("before_optimizations" or
  "after_optimizations"; the first, should XLA dump several)."""
  with tempfile.TemporaryDirectory(prefix="revax-hlo-") as tmp:
    options = options + pjrt.option_override_fields((("xla_dump_to", tmp),) + _DUMP)
    code = code.encode() if isinstance(code, str) else bytes(code)
    failure = None
    try:  # (Backend._compile: never the persistent cache, which would skip the dump)
      executable = backend._compile(code, options, True, program_format=program_format)
      del executable  # (only its dump is wanted)
    except CompileError as e:
      failure = e
    # XLA:CPU names the optimized module `cpu_after_optimizations`, others `after_optimizations`
    texts = sorted(glob.glob(os.path.join(tmp, f"*{stage}.txt")))
    if not texts:
      if failure is not None:
        raise failure
      raise CompileError("XLA wrote no HLO dump for the module (xla_dump_to had no effect)")
    with open(texts[0], encoding="utf-8") as f:
      text = f.read()
    with open(texts[0][:-len(".txt")] + ".hlo.pb", "rb") as f:
      proto = f.read()
  return text, proto


class HloModule:
  """An optimized HLO module of a compiled program, as jaxlib's `HloModule` objects that
  `LoadedExecutable.hlo_modules()` returns: `name`, `to_string()` (XLA's text) and
  `as_serialized_hlo_module_proto()`."""
  __slots__ = ("_text", "_proto")

  def __init__(self, text: str, proto: bytes):
    self._text, self._proto = text, proto

  @property
  def name(self) -> str:
    """The module's name (`jit_f` for `jit(f)`)."""
    return self._text.split(",", 1)[0].split()[1]

  def to_string(self) -> str:
    """The module as XLA prints it."""
    return self._text

  def as_serialized_hlo_module_proto(self) -> bytes:
    """The module as a serialized `xla.HloModuleProto`."""
    return self._proto

  def __repr__(self):
    return f"<HloModule {self.name}>"


def optimized_module_proto(executable) -> bytes:
  """The serialized `xla.HloModuleProto` XLA compiled `executable` from (after its passes:
  for a program over a mesh, the partitioned module), by `PJRT_Executable_OptimizedProgram`."""
  api = executable._api
  e = api.call("LoadedExecutable_GetExecutable", loaded_executable=executable._ptr).executable
  try:
    prog = pjrt.Program(struct_size=pjrt.Program.STRUCT_SIZE)
    api.call("Executable_OptimizedProgram", executable=e, program=C.addressof(prog))
    buf = C.create_string_buffer(max(prog.code_size, 1))
    prog.code = C.addressof(buf)
    api.call("Executable_OptimizedProgram", executable=e, program=C.addressof(prog))
    code = buf.raw[:prog.code_size]
    fmt = C.string_at(prog.format, prog.format_size).decode()
  finally:
    api.call("Executable_Destroy", executable=e)
  if fmt == "hlo_with_config":  # HloModuleProtoWithConfig { hlo_module = 1, config = 2 }
    return next(v for f, _, v in pjrt.proto_fields(code) if f == 1)
  return code


def optimized_hlo(executable) -> tuple[str, bytes]:
  """XLA's optimized HLO of a compiled program, as text and as a serialized HloModuleProto
  (computed on the first call, then kept on the executable).

  Args:
    executable: a `client.Executable`.

  Returns:
    `(text, proto)`.

  Example:
    >>> from revax._src.runtime.hlo_dump import optimized_hlo
    >>> compiled = revax.jit(lambda x: jnp.sin(x) * 2).lower(jnp.ones(3)).compile()
    >>> text, proto = optimized_hlo(compiled.runtime_executable())
    >>> print(text.split("\\n")[0])
    HloModule jit__lambda, is_scheduled=true, entry_computation_layout={(f32[3]{0})->f32[3]{0}}
    >>> "fusion(" in text
    True
  """
  got = getattr(executable, "_optimized_hlo", None)
  if got is None:
    if executable._source is not None:
      code, options = executable._source
      got = _dump(executable._backend, code, options, "after_optimizations")
    else:  # loaded from bytes: its own module, printed without running a pass
      ids = None if executable._portable else [[d.id] for d in executable.devices]
      options = pjrt.compile_options(
          executable.num_replicas, executable.num_partitions, portable=executable._portable,
          device_assignment=ids, option_overrides=(("xla_disable_all_hlo_passes", True),))
      got = _dump(executable._backend, optimized_module_proto(executable), options,
                  "before_optimizations", program_format=b"hlo")
    executable._optimized_hlo = got
  return got
