"""A small, fast subset of each ecosystem library's own tests, run under revax's
jax-compatibility mode (`python -m revax.run_as_jax -m pytest FILE`): every test in these files
passes on jax 0.10.2 and must pass on revax. The full suites are a documented command
(tests/ecosystem/run_suites.py, results in tests/ecosystem/RESULTS.md).

Skipped, with the reason, where a library is not installed (they are not revax test
dependencies) or its test sources are not found: optax, chex and flax ship their tests in
their source distributions, unpacked (by run_suites.py) under $REVAX_ECOSYSTEM_SUITES (default:
the directory next to the repository, `eco-suites/`); equinox's are in
`../shared/ecosystem/equinox-<version>/tests`.
"""
import importlib.metadata
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUITES = pathlib.Path(os.environ.get("REVAX_ECOSYSTEM_SUITES", ROOT.parent / "eco-suites"))
SHARED = [ROOT.parent / "shared" / "ecosystem", ROOT.parents[1] / "shared" / "ecosystem"]

SUBSETS = {
    "optax": ["optax/_src/update_test.py", "optax/schedules/_join_test.py",
              "optax/losses/_smoothing_test.py"],
    "chex": ["chex/_src/dimensions_test.py", "chex/_src/warnings_test.py"],
    "equinox": ["tests/test_update.py", "tests/test_stateful.py", "tests/test_eval_shape.py"],
    "flax": ["tests/nnx/containers_test.py", "tests/nnx/filters_test.py"],
}


def _root(lib: str):
  version = importlib.metadata.version(lib)
  candidates = ([d / f"equinox-{version}" for d in SHARED] if lib == "equinox"
                else [SUITES / f"{lib}-{version}"])
  return next((c for c in candidates if c.is_dir()), None), version


@pytest.mark.parametrize("lib", sorted(SUBSETS))
def test_library_subset_passes_on_revax(lib):
  if importlib.util.find_spec(lib) is None:
    pytest.skip(f"{lib} is not installed (not a revax test dependency)")
  root, version = _root(lib)
  if root is None:
    pytest.skip(f"{lib} {version}'s test sources not found (run tests/ecosystem/run_suites.py "
                "once, or set REVAX_ECOSYSTEM_SUITES)")
  env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1",
         "JAX_PLATFORMS": "cpu"}
  files = SUBSETS[lib]
  cmd = [sys.executable, "-W", "ignore", "-m", "revax.run_as_jax", "-m", "pytest", "-q",
         "-p", "no:cacheprovider"]
  if lib == "equinox":
    cwd = root
  else:
    cwd = root.parent
    cmd += ["--import-mode=importlib", f"--rootdir={root}"]
    files = [str(pathlib.Path(root.name) / f) for f in files]
  out = subprocess.run(cmd + files, cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=900)
  assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
  assert " passed" in out.stdout and "failed" not in out.stdout.splitlines()[-1]
