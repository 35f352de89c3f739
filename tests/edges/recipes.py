"""What the edge suites enumerate: the public callables of a jax module and how many array
arguments each requires (from jax's signatures, never from memory)."""
import inspect


def public_callables(module):
  """Sorted public function names of `module` (no classes, no submodules)."""
  return sorted(n for n in dir(module) if not n.startswith("_")
                and callable(getattr(module, n)) and not inspect.isclass(getattr(module, n))
                and not inspect.ismodule(getattr(module, n)))


def required_args(fun):
  """(number of required positional parameters, set of all parameter names) of a jax function;
  a jax.numpy ufunc object counts its inputs."""
  if hasattr(fun, "nin") and hasattr(fun, "reduce"):
    return fun.nin, set()
  params = inspect.signature(fun).parameters
  req = [p for p in params.values() if p.default is p.empty
         and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  return len(req), set(params)
