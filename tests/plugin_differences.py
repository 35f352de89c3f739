"""Where a PJRT plugin other than the default computes differently from the XLA JAX 0.10.2 uses.

revax's eager (NumPy) implementations and its tests follow JAX 0.10.2, whose XLA is also the
default plugin's. A newer XLA may change a result at an edge (a pole, a special value); where the
op-database suites measured such a change on a plugin, the affected checks are skipped on that
plugin with the reason below, keyed on the plugin's package (found from the selected library's
package metadata: `revax_pjrt_plugin` or env `PJRT_PLUGIN`), never deleted. See
benchmarks/bench_plugins.py and the README's "PJRT plugins" section for the suite counts.
"""
import re

import pytest

from revax._src.runtime import plugins

_DIGAMMA_AT_ZERO = (
    "the XLA of jaxlib 0.11.2 in this plugin returns -inf for digamma at +-0 (and at subnormals, "
    "which XLA:CPU flushes to zero) where JAX 0.10.2, its XLA and the default plugin return NaN; "
    "revax's eager digamma follows JAX 0.10.2")

# difference -> {normalized package name: reason}
DIFFERENCES = {
    "digamma_at_zero": {"lammps-jax-pjrt-cpu": _DIGAMMA_AT_ZERO},
}


def _normalize(name):
  return re.sub(r"[-_.]+", "-", name).lower() if name else None


def current_package():
  """The normalized package name of the plugin this process loads (None: a loose file)."""
  try:
    choice = plugins.loaded() or plugins.choose()
  except ValueError:
    return None
  return _normalize(choice.package)


def reason(difference):
  """Why `difference` applies to the selected plugin, or None where it does not."""
  package = current_package()
  why = DIFFERENCES[difference].get(package)
  return None if why is None else f"plugin {package}: {why}"


def skip_on_plugins_that_differ(difference):
  """A skipif mark for the checks that `difference` changes on the selected plugin."""
  why = reason(difference)
  return pytest.mark.skipif(why is not None, reason=why or "")
