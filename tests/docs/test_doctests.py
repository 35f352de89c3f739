"""Every `>>>` example in revax's docstrings runs as a doctest (one test per docstring).

The collector asks the standard `doctest.DocTestFinder` for the examples of every name the
public modules export (classes with their methods), then of every module of the package (revax/_src
too, which is what `--doctest-modules` would visit) for the docstrings no public name reaches; a
docstring runs once however many names it has. A test is named by the object's public name where
it has one (`pytest -k revax.numpy.linalg.solve`), else by its place in revax/_src.

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
from tests.platform_tolerances import ON_TPU, as_the_oracles_device, skip_on_tpu, tolerance

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# Examples whose printed output is the platform's own, shown as on the CPU (the docs' platform);
# on a TPU they print the chip's, which no tolerance makes the CPU's (tests/tpu/RESULTS.md)
CPU_OUTPUTS = {
    "revax._src.runtime.hlo_dump.hlo_before_optimizations": (
        "prints the HLO module's entry layouts, which are the platform's (the TPU's tiled "
        "f32[3]{0:T(128)} where the CPU's is f32[3]{0})"),
    "revax._src.stage_info.XlaComputation": "prints the HLO module's entry layouts (as above)",
    "revax._src.jit_stages.Compiled.as_text": ("prints XLA:CPU's optimized module (its layouts "
                                               "and fusions; a TPU's are the chip's)"),
    "revax._src.runtime.client.Executable.get_hlo_text": "prints the entry layouts (as above)",
    "revax._src.runtime.hlo_dump.optimized_hlo": "prints the entry layouts (as above)",
    "revax.lax.platform_dependent": ("shows the branch the CPU takes (sin); a TPU takes the "
                                     "default one, as the example says"),
}
NAMESPACE = {"revax": revax, "jnp": revax.numpy, "lax": revax.lax, "np": np}


def _all_modules() -> list[types.ModuleType]:
  """revax and every module under it, as `--doctest-modules` would visit them."""
  modules = [revax]
  for info in pkgutil.walk_packages(revax.__path__, "revax."):
    modules.append(importlib.import_module(info.name))
  return modules


def _public_objects(modules):
  """(public name, object) for every name a public module exports that revax defines, each
  object once, under its shortest name (revax.grad, not revax.api.grad)."""
  public = [m for m in modules if "._src" not in m.__name__
            and not any(p.startswith("_") for p in m.__name__.split(".")[1:])]
  seen = set()
  for module in sorted(public, key=lambda m: (m.__name__.count("."), m.__name__)):
    yield module.__name__, module
    exported = getattr(module, "__all__", None) or [n for n in vars(module)
                                                    if not n.startswith("_")]
    for name in exported:
      obj = getattr(module, name, None)
      target = inspect.unwrap(obj) if callable(obj) else obj
      if (isinstance(obj, types.ModuleType) or id(target) in seen
          or not (getattr(target, "__module__", None) or "").startswith("revax")):
        continue  # submodules have their own turn; NumPy's or Python's objects are not ours
      seen.add(id(target))
      yield f"{module.__name__}.{name}", obj


def _docstring_line(fun) -> int:
  """The 0-based line of `fun`'s docstring in its file (doctest counts example lines from it)."""
  lines, start = inspect.getsourcelines(fun)
  opening = next(i for i, line in enumerate(lines) if line.lstrip().startswith(('"', "'")))
  return start - 1 + opening


def _collect() -> list[doctest.DocTest]:
  """The public objects first (so a test is named as users reach the object), then every module
  for what they leave out (docstrings of revax/_src objects that no public name exports)."""
  modules = _all_modules()
  finder = doctest.DocTestFinder(exclude_empty=True)
  tests, seen = [], set()

  def add(found, wrapped=None):
    for test in found:
      key = (test.filename, test.docstring)
      if test.examples and key not in seen:
        seen.add(key)
        if wrapped is not None and test.docstring == wrapped.__doc__:
          test.lineno = _docstring_line(wrapped)  # not the line of the decorator's wrapper
        tests.append(test)

  for name, obj in _public_objects(modules):
    target = inspect.unwrap(obj) if callable(obj) else obj
    home = obj if isinstance(obj, types.ModuleType) else inspect.getmodule(target)
    add(finder.find(obj, name, module=home, globs={}),
        target if inspect.isfunction(target) and target is not obj else None)
  for module in modules:
    add(finder.find(module, module=module, globs={}))
  return sorted(tests, key=lambda t: t.name)


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\binf\b|\bnan\b")


class _FloatTolerantChecker(doctest.OutputChecker):
  """The standard checker, then a second chance where the text around the numbers is the same
  (up to whitespace: NumPy pads columns to the widest number) and every number with a decimal
  point or an exponent agrees to rtol 1e-5 (integers exactly), so an example may show the
  exact value, `Array([1., 1.], dtype=float32)`, where float32 prints 0.99999994.

  On a TPU the examples still show the CPU's output: device reprs name the chip's devices as the
  CPU's (`as_the_oracles_device`) and numbers agree to the chip's tolerance (TRANSCENDENTAL)."""

  def check_output(self, want, got, optionflags):
    got = as_the_oracles_device(got)
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
      if not np.isclose(float(w), float(g), *tolerance(1e-5, 1e-6), equal_nan=True):
        return False
    return True


TESTS = _collect()


def test_collected_the_examples():
  # a collector that silently finds nothing must not pass: revax has hundreds of examples
  assert len(TESTS) > 150, len(TESTS)


def test_examples_sit_in_an_example_section():
  # the API reference (griffe, Google style) renders them as code only under this exact title
  loose = [t.name for t in TESTS if not re.search(r"^\s*Examples?:\s*$", t.docstring, re.M)]
  assert not loose, f"docstrings whose >>> examples are outside an 'Example:' section: {loose}"


@pytest.mark.parametrize("test", [
    pytest.param(t, marks=[skip_on_tpu(CPU_OUTPUTS[t.name])] if t.name in CPU_OUTPUTS else [])
    for t in TESTS], ids=[t.name for t in TESTS])
def test_docstring_examples(test):
  test = doctest.DocTest(test.examples, dict(NAMESPACE), test.name, test.filename,
                         test.lineno, test.docstring)
  runner = doctest.DocTestRunner(checker=_FloatTolerantChecker(), optionflags=FLAGS)
  report = []
  options = revax.config.values
  try:
    runner.run(test, out=report.append, clear_globs=True)
  finally:  # an example that sets an option (x64, say) must not change the next one's outputs
    for name, value in options.items():
      if revax.config.values[name] != value:
        revax.config.update(name, value)
  assert not runner.failures, "".join(report)


@pytest.mark.parametrize("want, got, ok", [
    ("Array([1., 1.], dtype=float32)\n", "Array([0.99999994, 0.9999998 ], dtype=float32)\n", True),
    ("Array(-2., dtype=float32)\n", "Array(-1.9999999, dtype=float32)\n", True),
    ("Array([1., 1.], dtype=float32)\n", "Array([1., 1.001], dtype=float32)\n", False),
    ("Array([1, 2], dtype=int32)\n", "Array([1, 3], dtype=int32)\n", False),  # integers exactly
    ("Array([1., 2.], dtype=float32)\n", "Array([1., 2.], dtype=float64)\n", False),
    ("Array(1., dtype=float32)\n", "Array(1., dtype=float32, weak_type=True)\n", False),
    ("(3, 4)\n", "(4, 3)\n", False),
])
def test_float_tolerant_checker(want, got, ok):
  if ON_TPU and "1.001" in got:
    ok = True  # (within the chip's tolerance)
  assert _FloatTolerantChecker().check_output(want, got, FLAGS) == ok


def test_platform_specific_examples_exist():
  assert set(CPU_OUTPUTS) <= {t.name for t in TESTS}
