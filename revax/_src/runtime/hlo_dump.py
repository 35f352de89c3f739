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
"""
from __future__ import annotations

import glob
import os
import tempfile

from revax._src.runtime import pjrt
from revax._src.runtime.pjrt import CompileError

__all__ = ["hlo_before_optimizations"]


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
  with tempfile.TemporaryDirectory(prefix="revax-hlo-") as tmp:
    overrides = (("xla_dump_to", tmp), ("xla_dump_hlo_as_text", True),
                 ("xla_dump_hlo_as_proto", True), ("xla_dump_disable_metadata", True),
                 ("xla_dump_large_constants", bool(print_large_constants)),
                 ("xla_dump_hlo_module_re", ""))
    options = pjrt.compile_options(portable=True, option_overrides=overrides)
    code = mlir_text.encode() if isinstance(mlir_text, str) else bytes(mlir_text)
    failure = None
    try:
      executable = backend._compile(code, options, True)
      del executable  # (only its dump is wanted)
    except CompileError as e:
      failure = e
    texts = sorted(glob.glob(os.path.join(tmp, "*.before_optimizations.txt")))
    if not texts:
      if failure is not None:
        raise failure
      raise CompileError("XLA wrote no HLO dump for the module (xla_dump_to had no effect)")
    with open(texts[0], encoding="utf-8") as f:
      text = f.read()
    with open(texts[0][:-len(".txt")] + ".hlo.pb", "rb") as f:
      proto = f.read()
  return text, proto
