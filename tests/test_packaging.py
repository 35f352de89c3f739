"""What a user gets from `pip install`: every dependency inside the range pyproject.toml says
was tested (lower and upper bound, the lower bound pinned by constraints/lowest.txt), one
version written in one place, a license stated in the metadata and shipped as a file, and a
changelog that names the current version.

`test_installed_versions_are_in_tested_ranges` is what fails when a dependency outside its
tested range is installed (an environment resolved before a bound changed, or by hand);
constraints/latest-check and lowest-check run it in a fresh environment at either end of the
ranges.
"""
import importlib.metadata
import pathlib
import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import revax
import revax.version

ROOT = pathlib.Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
# the extras that the README's commands install and the suite, the docs and the examples exercise
EXTRAS = ("test", "examples", "docs")


def _requirements() -> list[Requirement]:
  texts = list(PROJECT["dependencies"])
  for extra in EXTRAS:
    texts += PROJECT["optional-dependencies"][extra]
  texts += PYPROJECT["build-system"]["requires"]
  return [Requirement(t) for t in texts]


def _name(text: str) -> str:
  return re.sub(r"[-_.]+", "-", text).lower()


def _lowest_pins() -> dict[str, Version]:
  pins = {}
  for line in (ROOT / "constraints" / "lowest.txt").read_text().splitlines():
    line = line.split("#")[0].strip()
    if line:
      req = Requirement(line)
      (spec,) = req.specifier
      assert spec.operator == "==", line
      pins[_name(req.name)] = Version(spec.version)
  return pins


def _bounds(spec: SpecifierSet) -> tuple[str | None, str | None]:
  low = [s.version for s in spec if s.operator in (">=", "==")]
  high = [s.version for s in spec if s.operator in ("<", "<=", "==")]
  return (low[0] if low else None), (high[0] if high else None)


@pytest.mark.parametrize("req", _requirements(), ids=str)
def test_every_dependency_has_a_tested_range(req):
  low, high = _bounds(req.specifier)
  assert low is not None, f"{req} has no lower bound"
  assert high is not None, f"{req} has no upper bound: a new release could break a fresh install"
  pins = _lowest_pins()
  assert _name(req.name) in pins, f"constraints/lowest.txt does not pin {req.name}"
  assert pins[_name(req.name)] in req.specifier, (
      f"constraints/lowest.txt pins {req.name}=={pins[_name(req.name)]}, outside {req}")
  assert pins[_name(req.name)] == Version(low), (
      f"{req}: its lower bound is not what constraints/lowest.txt tests "
      f"({pins[_name(req.name)]})")


def test_one_range_per_dependency():
  """The same package in two extras gets the same range (one tested range, not two)."""
  seen = {}
  for req in _requirements():
    other = seen.setdefault(_name(req.name), req.specifier)
    assert other == req.specifier, f"{req.name}: {other} and {req.specifier}"
  assert set(_lowest_pins()) == set(seen), "constraints/lowest.txt pins exactly the dependencies"


def test_installed_versions_are_in_tested_ranges():
  """Fails where an installed dependency lies outside the range pyproject.toml says was tested
  (the README's install command gives versions inside; older environments may not have)."""
  outside = []
  for req in _requirements():
    if req in [Requirement(t) for t in PYPROJECT["build-system"]["requires"]]:
      continue  # the build backend lives in pip's isolated build environment, not here
    try:
      installed = importlib.metadata.version(req.name)
    except importlib.metadata.PackageNotFoundError:
      continue  # an extra that is not installed (the docs tests skip themselves then)
    if not req.specifier.contains(installed, prereleases=True):
      outside.append(f"{req.name} {installed} (tested: {req.specifier})")
  assert not outside, ("dependencies outside their tested ranges (reinstall with the README's "
                       "command in a fresh environment): " + ", ".join(outside))


def test_version_is_written_once():
  assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
  assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
      "attr": "revax.version._version"}
  assert revax.__version__ == revax.version.__version__ == revax.version._version
  assert revax.version.__version_info__ == tuple(int(p) for p in revax.__version__.split("."))
  assert Version(revax.__version__) == Version(
      ".".join(map(str, revax.version.__version_info__)))


def test_installed_metadata_matches_version():
  """The installed distribution's version (the wheel's or the editable install's metadata) is
  revax.__version__, so `pip show revax` and the code agree."""
  try:
    installed = importlib.metadata.version("revax")
  except importlib.metadata.PackageNotFoundError:
    pytest.skip("revax is not installed (run from a source tree on PYTHONPATH)")
  assert installed == revax.__version__


def test_license_and_metadata():
  assert PROJECT["license"] == "Apache-2.0"
  text = (ROOT / "LICENSE").read_text()
  assert "Apache License" in text and "Version 2.0, January 2004" in text
  assert PROJECT["license-files"] == ["LICENSE"]
  classifiers = PROJECT["classifiers"]
  assert not [c for c in classifiers if c.startswith("License ::")], (
      "PEP 639: the SPDX `license` field replaces license classifiers")
  supported = re.fullmatch(r">=3\.(\d+)", PROJECT["requires-python"]).group(1)
  assert f"Programming Language :: Python :: 3.{supported}" in classifiers
  assert PROJECT["urls"] and all(u.startswith("https://") for u in PROJECT["urls"].values())


def test_changelog_names_the_current_version():
  text = (ROOT / "CHANGELOG.md").read_text()
  headings = re.findall(r"^## \[?([^\]\s]+)\]?", text, flags=re.M)
  assert headings[:2] == ["Unreleased", revax.__version__], headings


def test_ci_runs_the_readme_commands():
  """CI runs exactly the README's install and test commands, in a venv of its own."""
  readme = (ROOT / "README.md").read_text()
  command = "python -m pip install -e '.[test]' && python -m pytest -n 2 tests"
  assert f"\n    {command}\n" in readme
  ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
  install, test = command.split(" && ")
  assert install in ci_lines and test in ci_lines
  assert ci_lines.index(install) < ci_lines.index(test)
  assert any("-m venv" in line for line in ci_lines)


def test_check_scripts_name_existing_tests():
  text = (ROOT / "constraints" / "check-env").read_text()
  block = text[text.index("FAST_TESTS=(") + len("FAST_TESTS=("):]
  paths = block[:block.index(")")].split()
  assert paths and all((ROOT / p.split("::")[0]).exists() for p in paths), paths
  for script in ("latest-check", "lowest-check", "check-env"):
    assert (ROOT / "constraints" / script).stat().st_mode & 0o111, f"{script} is not executable"
