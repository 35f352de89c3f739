"""Compiled programs of jit jaxprs on one device, each compiled once and kept while its jaxpr
lives (a weak key): one per jaxpr, and one per set of donated (operand, result) aliases and of
XLA options. A jaxpr that names a mesh of several devices (a shard_map, a sharding constraint)
gets a `MeshProgram` over that mesh (spmd_program.py), which has the same interface.

The compile (or cache) step of a jit call: jit.py, the jit primitive's eager rule
(jit_primitive.py), the stages and sharded_jit.py all take their programs from here."""
from __future__ import annotations

import threading
import weakref

from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.interpreters import dispatch
from revax._src.spmd_program import mesh_program, names_mesh

__all__ = ["program_for"]


_programs: "weakref.WeakKeyDictionary[ClosedJaxpr, dispatch.CompiledProgram]" = (
    weakref.WeakKeyDictionary())
_aliased_programs: "weakref.WeakKeyDictionary[ClosedJaxpr, dict]" = weakref.WeakKeyDictionary()
_programs_lock = threading.Lock()


def program_for(jaxpr: ClosedJaxpr, name: str, aliases: tuple = (),
                compiler_options: tuple = (), backend=None,
                result_kinds: tuple | None = None) -> dispatch.CompiledProgram:
  """The compiled program of a jit jaxpr (compiled once, kept while the jaxpr lives).

  Args:
    aliases: (operand, result) pairs of donated operands and the results XLA may write into
      their buffers (see donation.py); each set of pairs is its own program.
    compiler_options: (name, value) pairs of XLA options (`jit(compiler_options=)`); each set
      of options is its own program.
    backend: the backend to compile for first, where the call runs (None: the default
      device's); the program compiles for another backend when it runs there.
    result_kinds: per result, the memory kind jit's out_shardings name (or None); each tuple
      of kinds is its own program.
  """
  if compiler_options and names_mesh(jaxpr):
    raise NotImplementedError(f"jit(compiler_options=...) of {name}, a program over a mesh: "
                              "revax hands XLA options to one-device programs only")
  if aliases or compiler_options or result_kinds:
    key = (aliases, compiler_options, result_kinds)
    with _programs_lock:
      program = _aliased_programs.setdefault(jaxpr, {}).get(key)
    if program is None:
      program = dispatch.compile_jaxpr(jaxpr, name, aliases, backend,
                                       option_overrides=compiler_options,
                                       result_kinds=result_kinds)
      with _programs_lock:
        program = _aliased_programs[jaxpr].setdefault(key, program)
    return program
  program = _programs.get(jaxpr)
  if program is None:
    program = mesh_program(jaxpr, name) or dispatch.compile_jaxpr(jaxpr, name, backend=backend)
    with _programs_lock:
      program = _programs.setdefault(jaxpr, program)
  return program
