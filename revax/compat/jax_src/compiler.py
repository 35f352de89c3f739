"""`jax._src.compiler`: chex's `restrict_backends` replaces `backend_compile_and_load` with a
wrapper that raises for a forbidden platform, then restores it. Every revax compile calls this
module's current `backend_compile_and_load(backend)` first (through the runtime's
`compile_checks`), so the wrapper sees each compile with the backend it is for; the function
itself only checks and returns (the program is compiled by revax's runtime)."""
import sys as _sys

from revax._src.runtime import client as _client


def backend_compile_and_load(backend, *args, **kwargs):
  """Called with the backend before each revax compile; a wrapper may raise to refuse it."""
  del backend, args, kwargs


def _check(backend) -> None:
  _sys.modules[__name__].backend_compile_and_load(backend)


if _check not in _client.compile_checks:
  _client.compile_checks.append(_check)
