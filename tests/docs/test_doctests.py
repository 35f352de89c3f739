"""Every `>>>` example in revax's docstrings runs as a doctest (one test per docstring).

The collector imports every module of the package (the public ones and revax/_src, which is
what `--doctest-modules` would visit) and asks the standard `doctest.DocTestFinder` for the
examples of everything defined there; objects re-exported under several names run once. A test
is named by the object's public name where it has one (`revax.numpy.linalg.solve`), else by its
place in revax/_src.

Every example runs in a fresh copy of one namespace, the names JAX's own docs assume with revax
in jax's place: `revax`, `jnp` (revax.numpy), `lax` (revax.lax) and `np` (NumPy); anything else
an example needs it imports itself, so each docstring reads on its own. Flags: ELLIPSIS and
NORMALIZE_WHITESPACE, and floats in the output compare to about 6 significant digits (XLA and
NumPy round the last bits of float32 results differently on different CPUs).
"""
from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re
import types

import numpy as np
import pytest

import revax
import revax.lax
import revax.numpy

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
NAMESPACE = {"revax": revax, "jnp": revax.numpy, "lax": revax.lax, "np": np}


def _all_modules() -> list[types.ModuleType]:
  modules = [revax]
  for info in pkgutil.walk_packages(revax.__path__, "revax."):
    modules.append(importlib.import_module(info.name))
  return modules


def _is_public_module(name: str) -> bool:
  return "._src" not in name and not any(p.startswith("_") for p in name.split(".")[1:])


def _public_names(modules) -> dict[int, str]:
  """id(object) -> its first public name (the shortest module path wins: revax.grad, not
  revax.api.grad)."""
  names: dict[int, str] = {}
  for module in sorted((m for m in modules if _is_public_module(m.__name__)),
                       key=lambda m: (m.__name__.count("."), m.__name__)):
    exported = getattr(module, "__all__", None) or [n for n in vars(module)
                                                    if not n.startswith("_")]
    for name in exported:
      obj = getattr(module, name, None)
      if obj is not None and not isinstance(obj, types.ModuleType):
        names.setdefault(id(inspect.unwrap(obj) if callable(obj) else obj),
                         f"{module.__name__}.{name}")
  return names


def _collect() -> list[doctest.DocTest]:
  modules = _all_modules()
  public = _public_names(modules)
  finder = doctest.DocTestFinder(exclude_empty=True)
  tests, seen = [], set()
  for module in modules:
    for test in finder.find(module, module=module, globs={}):
      key = (test.filename, test.lineno, test.docstring)
      if not test.examples or key in seen:
        continue
      seen.add(key)
      test.name = _display_name(module, test.name, public)
      tests.append(test)
  return sorted(tests, key=lambda t: t.name)


def _display_name(module, name: str, public: dict[int, str]) -> str:
  """revax._src.numpy.linalg.solve -> revax.numpy.linalg.solve (when that is where users find
  it); methods follow their class (revax.Array.at.get)."""
  qualname = name[len(module.__name__) + 1:].split(".") if name != module.__name__ else []
  objects = [module]
  for part in qualname:
    objects.append(getattr(objects[-1], part, None))
  for cut in range(len(objects) - 1, 0, -1):
    obj = objects[cut]
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if obj is not None and id(obj) in public:
      return ".".join([public[id(obj)], *qualname[cut:]])
  return name


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\binf\b|\bnan\b")


class _FloatTolerantChecker(doctest.OutputChecker):
  """The standard checker, then a second chance where the text around the numbers is the same
  (up to whitespace: NumPy pads columns to the widest number) and every number with a decimal
  point or an exponent agrees to rtol 1e-5 (integers exactly), so an example may show the
  exact value, `Array([1., 1.], dtype=float32)`, where float32 prints 0.99999994."""

  def check_output(self, want, got, optionflags):
    if super().check_output(want, got, optionflags):
      return True
    want_numbers, got_numbers = _NUMBER.findall(want), _NUMBER.findall(got)
    if len(want_numbers) != len(got_numbers) or not want_numbers:
      return False
    if re.sub(r"\s+", "", _NUMBER.sub("0", want)) != re.sub(r"\s+", "", _NUMBER.sub("0", got)):
      return False
    for w, g in zip(want_numbers, got_numbers, strict=True):
      if w == g:
        continue
      if not any(c in w + g for c in ".eEni"):  # integers (shapes, counts, indices) exactly
        return False
      if not np.isclose(float(w), float(g), rtol=1e-5, atol=1e-6, equal_nan=True):
        return False
    return True


TESTS = _collect()


def test_collected_the_examples():
  # a collector that silently finds nothing must not pass: revax has hundreds of examples
  assert len(TESTS) > 150, len(TESTS)


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_docstring_examples(test):
  test = doctest.DocTest(test.examples, dict(NAMESPACE), test.name, test.filename,
                         test.lineno, test.docstring)
  runner = doctest.DocTestRunner(checker=_FloatTolerantChecker(), optionflags=FLAGS)
  report = []
  runner.run(test, out=report.append, clear_globs=True)
  assert not runner.failures, "".join(report)
