"""Run the JAX ecosystem's own test suites on jax and on revax (jax-compatibility mode).

For each library (optax, chex, equinox, flax) at the version installed in the given Python
environment, this gets the library's tests, runs each test file twice in a fresh process with
one worker -- `python -m pytest FILE` (jax) and `python -m revax.run_as_jax -m pytest FILE`
(revax) -- and records every test's outcome. `tests/ecosystem/raw/<lib>.json` keeps the
outcomes (so libraries can be run at different times); `tests/ecosystem/RESULTS.md` is written
from all of them: per library, how many tests pass on jax and which share of those also pass on
revax; per file, passed/failed/skipped on each side.

Where the tests come from: optax, chex and flax ship them in their source distributions
(`pip download --no-deps --no-binary=:all: NAME==VERSION`, unpacked under --suites); equinox's
has none, so its tests at the matching tag are read from --equinox-tests (the project keeps
them in ../shared/ecosystem/equinox-<version>/tests).

The environment needs jax 0.10.2, the libraries, pytest, and revax importable (PYTHONPATH or an
editable install). The full run takes hours on two cores: run one library at a time, with
`nice`, and `--files` to take a subset. Examples:

    nice -n 10 python tests/ecosystem/run_suites.py --python /work/venv-eco/bin/python \\
        --lib optax
    nice -n 10 python tests/ecosystem/run_suites.py --python ... --lib flax \\
        --files 'tests/nnx/*' --timeout 900
    python tests/ecosystem/run_suites.py --report-only     # rewrite RESULTS.md from raw/
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import glob
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
RAW = HERE / "raw"
LIBS = ("optax", "chex", "equinox", "flax")
# which files of each library's tests are its suite (paths relative to the unpacked sdist, or
# to the equinox checkout); flax: nnx and the linen/core tests (as the issue measures it)
SUITE_GLOBS = {
    "optax": ["optax/**/*_test.py"],
    "chex": ["chex/_src/*_test.py"],
    "equinox": ["tests/test_*.py"],
    "flax": ["tests/nnx/**/*_test.py", "tests/nnx/test_*.py", "tests/linen/*_test.py",
             "tests/core/*_test.py"],
}


def installed_version(python: str, lib: str) -> str:
  out = subprocess.run([python, "-c", f"import importlib.metadata as m; "
                        f"print(m.version({lib!r}))"], capture_output=True, text=True, check=True)
  return out.stdout.strip()


def suite_root(python: str, lib: str, suites: pathlib.Path, equinox_tests) -> pathlib.Path:
  """The directory the library's test paths are relative to (fetched if missing)."""
  version = installed_version(python, lib)
  if lib == "equinox":
    for cand in equinox_tests:
      root = pathlib.Path(cand).expanduser() / f"equinox-{version}"
      if (root / "tests").is_dir():
        return root
    raise SystemExit(f"equinox {version}'s tests not found under {equinox_tests}")
  root = suites / f"{lib}-{version}"
  if not root.is_dir():
    suites.mkdir(parents=True, exist_ok=True)
    subprocess.run([python, "-m", "pip", "download", "--no-deps", "--no-binary=:all:",
                    f"{lib}=={version}", "-d", str(suites)], check=True)
    with tarfile.open(suites / f"{lib}-{version}.tar.gz") as tar:
      tar.extractall(suites, filter="data")
  return root


def test_files(lib: str, root: pathlib.Path, pattern: str | None) -> list[str]:
  files = set()
  for g in SUITE_GLOBS[lib]:
    files.update(str(pathlib.Path(p).relative_to(root)) for p in
                 glob.glob(str(root / g), recursive=True))
  files = sorted(f for f in files if "__pycache__" not in f)
  if pattern:
    files = [f for f in files if any(fnmatch.fnmatch(f, p) for p in pattern.split(","))]
  return files


def run_file(python: str, lib: str, root: pathlib.Path, rel: str, side: str,
             timeout: int) -> dict:
  """{"status": ok|timeout|crash, "tests": {test id: outcome}} for one file on one side."""
  with tempfile.TemporaryDirectory() as tmp:
    xml = pathlib.Path(tmp) / "out.xml"
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           f"--junitxml={xml}", "-o", "junit_family=xunit1", rel]
    if side == "revax":
      cmd[1:3] = ["-m", "revax.run_as_jax", "-m", "pytest"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    # equinox's tests import `tests.helpers`: run from the checkout's root (pytest puts it on
    # sys.path); the sdists' tests run from outside the package, against the installed library
    cwd = root if lib == "equinox" else root.parent
    target = rel if lib == "equinox" else str(pathlib.Path(root.name) / rel)
    cmd[-1] = target
    if lib != "equinox":
      cmd.insert(-1, "--import-mode=importlib")
      cmd.insert(-1, f"--rootdir={root}")
    try:
      proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
      status = "ok"
      tail = proc.stdout[-2000:] + proc.stderr[-2000:]
    except subprocess.TimeoutExpired:
      status, tail = "timeout", ""
    tests = parse_junit(xml) if xml.exists() else {}
    if status == "ok" and not tests and proc.returncode not in (0, 5):
      status = "crash"
    return {"status": status, "tests": tests, "tail": tail if status != "ok" or not tests
            else ""}


def parse_junit(path: pathlib.Path) -> dict:
  out = {}
  for case in ET.parse(path).getroot().iter("testcase"):
    name = f"{case.get('classname')}::{case.get('name')}"
    kinds = {child.tag for child in case}
    if "failure" in kinds or "error" in kinds:
      outcome = "failed"
    elif "skipped" in kinds:
      outcome = "skipped"
    else:
      outcome = "passed"
    if out.get(name) not in ("failed",):  # (a test failing in teardown counts as failed)
      out[name] = outcome
  return out


def counts(tests: dict) -> tuple[int, int, int]:
  vals = list(tests.values())
  return vals.count("passed"), vals.count("failed"), vals.count("skipped")


def run_library(args, lib: str) -> None:
  root = suite_root(args.python, lib, pathlib.Path(args.suites), args.equinox_tests)
  files = test_files(lib, root, args.files)
  raw_path = RAW / f"{lib}.json"
  data = json.loads(raw_path.read_text()) if raw_path.exists() else {}
  if data.get("version") != installed_version(args.python, lib):
    data = {}
  data.update({"version": installed_version(args.python, lib),
               "jax": installed_version(args.python, "jax"),
               "date": datetime.date.today().isoformat(), "python": sys.version.split()[0]})
  data.setdefault("files", {})
  for i, rel in enumerate(files):
    entry = {}
    for side in ("jax", "revax"):
      entry[side] = run_file(args.python, lib, root, rel, side, args.timeout)
    data["files"][rel] = entry
    j, r = (counts(entry[s]["tests"]) for s in ("jax", "revax"))
    print(f"[{lib} {i + 1}/{len(files)}] {rel}: jax {j} {entry['jax']['status']}, "
          f"revax {r} {entry['revax']['status']}", flush=True)
    RAW.mkdir(exist_ok=True)
    raw_path.write_text(json.dumps(data, indent=1, sort_keys=True))


def report() -> str:
  lines = ["# The JAX ecosystem's test suites on jax and on revax", "",
           "Written by `tests/ecosystem/run_suites.py` (see its docstring for the commands) "
           "from `tests/ecosystem/raw/*.json`. Each test file runs in a fresh process with one "
           "worker, on jax 0.10.2 and on revax in its jax-compatibility mode "
           "(`python -m revax.run_as_jax -m pytest FILE`). *Share* is the share of the tests "
           "that pass on jax that also pass on revax.", ""]
  summary = ["| library | version | date | files run | passing on jax | also on revax | "
             "share |", "|---|---|---|---|---|---|---|"]
  details = []
  for lib in LIBS:
    path = RAW / f"{lib}.json"
    if not path.exists():
      continue
    data = json.loads(path.read_text())
    both = also = 0
    rows = []
    for rel, entry in sorted(data["files"].items()):
      jt, rt = entry["jax"]["tests"], entry["revax"]["tests"]
      jp = [t for t, o in jt.items() if o == "passed"]
      ok = sum(rt.get(t) == "passed" for t in jp)
      both += len(jp)
      also += ok
      (a, b, c), (d, e, f) = counts(jt), counts(rt)
      note = "; ".join(f"{s}: {entry[s]['status']}" for s in ("jax", "revax")
                       if entry[s]["status"] != "ok")
      rows.append(f"| {rel} | {a} / {b} / {c} | {d} / {e} / {f} | {ok}/{len(jp)} | {note} |")
    share = f"{100 * also / both:.1f}%" if both else "-"
    summary.append(f"| {lib} | {data['version']} | {data['date']} | {len(data['files'])} | "
                   f"{both} | {also} | {share} |")
    details += ["", f"## {lib} {data['version']} (jax {data['jax']}, {data['date']})", "",
                "| file | jax passed / failed / skipped | revax passed / failed / skipped | "
                "jax's passes also passing on revax | note |", "|---|---|---|---|---|", *rows]
  notes = RAW / "NOTES.md"  # what the recorded runs covered (subsets, timeouts), by hand
  extra = ["", notes.read_text().strip()] if notes.exists() else []
  return "\n".join(lines + summary + extra + details) + "\n"


def main(argv=None) -> None:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--python", default=sys.executable,
                 help="the Python with jax, the libraries and pytest installed")
  p.add_argument("--lib", action="append", choices=LIBS, help="library (repeatable; default all)")
  p.add_argument("--files", help="comma-separated glob(s) selecting test files (a subset)")
  p.add_argument("--timeout", type=int, default=900, help="seconds per file and side")
  p.add_argument("--suites", default=str(REPO.parent / "eco-suites"),
                 help="where the source distributions are unpacked")
  p.add_argument("--equinox-tests", action="append",
                 default=[str(REPO.parent / "shared" / "ecosystem"),
                          str(REPO.parents[1] / "shared" / "ecosystem")])
  p.add_argument("--report-only", action="store_true")
  args = p.parse_args(argv)
  if not args.report_only:
    for lib in args.lib or LIBS:
      run_library(args, lib)
  (HERE / "RESULTS.md").write_text(report())
  print(f"wrote {HERE / 'RESULTS.md'}")


if __name__ == "__main__":
  main()
