"""Run the project's tests on a TPU machine and write tests/tpu/RESULTS.md.

One program at a time can hold the chip, so each chunk of test files runs in ONE pytest process
(no -n), and the jax oracle is kept on the CPU (JAX_PLATFORMS=cpu; revax does not read that
variable). revax picks the TPU by itself where libtpu is installed and a chip attached
(REVAX_PLATFORMS=tpu,cpu makes sure). Each chunk has a time limit; what a chunk did not reach is
reported as not run.

    python tests/tpu/run_suite.py OUT_DIR CHUNK_SECONDS FILE_OR_DIR [FILE_OR_DIR ...]

writes OUT_DIR/junit-N.xml per chunk and OUT_DIR/RESULTS.md (per test file: passed / failed /
skipped / errors on the chip, the date, the libtpu version, the command, and each failure's
first line).
"""
import collections
import datetime
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def libtpu_version() -> str:
  try:
    import importlib.metadata
    return importlib.metadata.version("libtpu")
  except Exception:  # noqa: BLE001 - only for the report
    return "unknown"


def run_chunk(index: int, target: str, out_dir: str, seconds: int) -> str:
  junit = os.path.join(out_dir, f"junit-{index}.xml")
  env = dict(os.environ, JAX_PLATFORMS="cpu", REVAX_PLATFORMS=os.environ.get(
      "REVAX_PLATFORMS", "tpu,cpu"), PYTHONUNBUFFERED="1")
  command = [sys.executable, "-m", "pytest", "-q", "-p", "no:warnings", "-p", "no:cacheprovider",
             f"--junitxml={junit}", *target.split(",")]
  try:
    subprocess.run(command, env=env, timeout=seconds, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
  except subprocess.TimeoutExpired:
    print(f"{target}: stopped after {seconds} s", flush=True)
  return junit


def read(junit: str, counts, failures) -> None:
  if not os.path.exists(junit):
    return
  try:
    root = ET.parse(junit).getroot()
  except ET.ParseError:
    return
  for case in root.iter("testcase"):
    name = case.get("classname", "").replace(".", "/") + ".py"
    outcome = "passed"
    for child in case:
      if child.tag in ("failure", "error"):
        outcome = "failed" if child.tag == "failure" else "errors"
        message = (child.get("message") or "").strip().splitlines()
        failures[name].append(f"{case.get('name')}: {(message or [''])[0][:160]}")
      elif child.tag == "skipped":
        outcome = "skipped"
    counts[name][outcome] += 1


def main() -> None:
  out_dir, seconds, targets = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
  os.makedirs(out_dir, exist_ok=True)
  counts = collections.defaultdict(collections.Counter)
  failures = collections.defaultdict(list)
  for i, target in enumerate(targets):
    read(run_chunk(i, target, out_dir, seconds), counts, failures)
  total = collections.Counter()
  lines = ["# revax's tests on a TPU", "",
           f"Run {datetime.date.today()} on {os.environ.get('TPU_NAME', 'one TPU v5e chip')}, "
           f"libtpu {libtpu_version()}, with `python tests/tpu/run_suite.py OUT "
           f"{seconds} {' '.join(targets)}` (one pytest process per target, the jax oracle on "
           "the CPU). Targets that ran past their time limit list only what they reached.", "",
           "| test file | passed | failed | errors | skipped |", "|---|---|---|---|---|"]
  for name in sorted(counts):
    c = counts[name]
    total.update(c)
    lines.append(f"| {name} | {c['passed']} | {c['failed']} | {c['errors']} | {c['skipped']} |")
  lines.append(f"| **all** | {total['passed']} | {total['failed']} | {total['errors']} | "
               f"{total['skipped']} |")
  ran = total["passed"] + total["failed"] + total["errors"]
  if ran:
    lines += ["", f"Passed: {total['passed']} of {ran} run ({100 * total['passed'] / ran:.1f}%)."]
  lines += ["", "## Failures", ""]
  for name in sorted(failures):
    lines.append(f"- {name}")
    lines += [f"  - {f}" for f in failures[name]]
  with open(os.path.join(out_dir, "RESULTS.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines[:12 + len(counts)]))


if __name__ == "__main__":
  main()
