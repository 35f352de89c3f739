"""Run every docstring example with jax in revax's place and list the ones whose output differs.

    python -m tests.docs.doctests_vs_jax [name-substring ...]

A manual check (a few minutes: jax compiles every example), not part of the suite: the doctests
pin revax's outputs, and this says which of them JAX would print differently. Examples of
revax-only names (invertible, custom_ivjp, the runtime client, ...) are listed apart.
"""
from __future__ import annotations

import doctest
import importlib
import sys

import numpy as np

from tests.docs import test_doctests as T


def _jax_namespace():
  import jax
  for module in ("jax.numpy", "jax.lax", "jax.nn", "jax.random", "jax.scipy.linalg",
                 "jax.scipy.signal", "jax.scipy.fft", "jax.scipy.integrate", "jax.scipy.ndimage",
                 "jax.scipy.optimize", "jax.scipy.stats", "jax.scipy.cluster.vq", "jax.export",
                 "jax.example_libraries.stax", "jax.example_libraries.optimizers",
                 "jax.experimental", "jax.sharding", "jax.tree_util", "jax.ffi"):
    importlib.import_module(module)
  return {"jax": jax, "jnp": jax.numpy, "lax": jax.lax, "np": np}


def main(substrings: list[str]) -> int:
  namespace = _jax_namespace()
  differ, revax_only = [], []
  for test in T.TESTS:
    if substrings and not any(s in test.name for s in substrings):
      continue
    examples = [doctest.Example(e.source.replace("revax", "jax"), e.want, e.exc_msg, e.lineno,
                                e.indent, e.options) for e in test.examples]
    as_jax = doctest.DocTest(examples, dict(namespace), test.name, test.filename, test.lineno,
                             test.docstring)
    runner = doctest.DocTestRunner(checker=T._FloatTolerantChecker(),
                                   optionflags=T.FLAGS | doctest.REPORT_ONLY_FIRST_FAILURE)
    report = []
    runner.run(as_jax, out=report.append, clear_globs=True)
    if runner.failures:
      text = "".join(report)
      missing = "has no attribute" in text or "No module named 'jax._src" in text
      (revax_only if missing else differ).append((test.name, text))
  for name, text in differ:
    print(text)
  print(f"{len(differ)} examples print differently under jax: {[n for n, _ in differ]}")
  print(f"{len(revax_only)} use names jax does not have: {[n for n, _ in revax_only]}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
