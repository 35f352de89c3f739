"""Run the project's tests on a TPU machine and write a RESULTS.md of what the chip did.

One program at a time can hold the chip, so each target (a test file, a folder, or several
joined by commas) runs in ONE pytest process (no -n), and the jax oracle is kept on the CPU
(JAX_PLATFORMS=cpu; revax does not read that variable). revax picks the TPU by itself where
libtpu is installed and a chip attached (REVAX_PLATFORMS=tpu,cpu makes sure).

    python tests/tpu/run_suite.py run OUT_DIR SECONDS TARGET [TARGET ...]
    python tests/tpu/run_suite.py run OUT_DIR SECONDS @tests/tpu/targets.txt[:N]
    python tests/tpu/run_suite.py merge [--collected=IDS.txt] RESULTS.md DIR_OR_TARBALL [...]

`run` gives the targets SECONDS in all, in order: each gets what is left. A target still running
at the end of its time gets SIGINT, so that pytest stops after the current test and still writes
its junit report (what it reached counts; the rest is reported as not reached). It writes
OUT_DIR/junit-N.xml and OUT_DIR/log-N.txt per target, OUT_DIR/targets.json (each target, its
seconds and whether it finished) and OUT_DIR/RESULTS.md. `@tests/tpu/targets.txt` is the whole
suite in targets of a few minutes each (`:N` starts at its N-th, for a run that continues
another). `merge` combines several runs' folders
(or `.tar.gz` archives of them, as they come back from the device tool) into one RESULTS.md: a
test run twice counts once, with its latest outcome (runs are read in the natural order of their
names: `suite_9` before `suite_10`).

RESULTS.md holds, per test file, passed / failed / errors / skipped on the chip, the date, the
libtpu version, the commands, the skips grouped by reason, and each failure's first line;
FAILURES.txt beside it holds each failure's whole text (assertion messages with the measured
differences). With `--collected=IDS.txt` (`pytest --collect-only -q > IDS.txt` on the CPU) it
also counts, per file, the tests that no run has reached.
"""
import collections
import datetime
import glob
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET

GRACE_SECONDS = 25  # after SIGINT: pytest finishes the current test and writes its report
# A target whose process holds more host memory than this is stopped like one past its time (the
# device machine has 40 GiB and is taken back when it runs out, losing every result): its log
# names the test that was running (pytest -v prints each test's name as it starts). A process
# holding the chip starts at ~13 GiB resident (libtpu), hence 30 GiB.
RSS_LIMIT_BYTES = int(float(os.environ.get("RUN_SUITE_RSS_GB", "30")) * 2**30)
POLL_SECONDS = 0.25


def libtpu_version() -> str:
  try:
    import importlib.metadata
    return importlib.metadata.version("libtpu")
  except Exception:  # noqa: BLE001 - only for the report
    return "unknown"


def run_target(index: int, target: str, out_dir: str, seconds: float) -> dict:
  """Run one target in its own pytest process for at most `seconds`; report how it ended."""
  junit = os.path.join(out_dir, f"junit-{index}.xml")
  env = dict(os.environ, JAX_PLATFORMS="cpu", REVAX_PLATFORMS=os.environ.get(
      "REVAX_PLATFORMS", "tpu,cpu"), PYTHONUNBUFFERED="1")
  command = [sys.executable, "-m", "pytest", "-v", "-p", "no:warnings", "-p", "no:cacheprovider",
             "-o", "addopts=", f"--junitxml={junit}", *target.split(",")]
  start = time.monotonic()
  with open(os.path.join(out_dir, f"log-{index}.txt"), "w") as log:
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    finished, peak, why = _wait(process, start + max(1.0, seconds))
    if not finished and why != "time":
      # memory: stop the whole process group at once (its report is lost, the machine is not;
      # the log names the test that was running)
      os.killpg(process.pid, signal.SIGKILL)
      process.wait()
    elif not finished:
      process.send_signal(signal.SIGINT)
      try:
        process.wait(timeout=GRACE_SECONDS)
      except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
  elapsed = time.monotonic() - start
  print(f"{target}: {'finished' if finished else 'stopped (' + why + ')'} after {elapsed:.0f} s,"
        f" peak RSS {peak / 2**30:.1f} GiB", flush=True)
  return {"index": index, "target": target, "seconds": round(elapsed, 1), "finished": finished,
          "stopped_by": None if finished else why, "peak_rss_gib": round(peak / 2**30, 2)}


def _rss_bytes(pid: int) -> int:
  """Resident memory of the process `pid` and all its descendants (0 when it is gone): a test's
  child processes (jax oracles, fresh interpreters) count against the machine too."""
  children = collections.defaultdict(list)
  for stat in glob.glob("/proc/[0-9]*/stat"):
    try:
      with open(stat) as f:
        fields = f.read().rsplit(")", 1)[1].split()
      children[int(fields[1])].append(int(stat.split("/")[2]))
    except (OSError, IndexError, ValueError):
      continue
  total, todo = 0, [pid]
  while todo:
    current = todo.pop()
    todo += children.get(current, [])
    try:
      with open(f"/proc/{current}/status") as f:
        for line in f:
          if line.startswith("VmRSS:"):
            total += int(line.split()[1]) * 1024
            break
    except OSError:
      pass
  return total


def _wait(process, deadline: float) -> tuple[bool, int, str]:
  """Wait for `process` until `deadline`, watching the memory of it and its children:
  (finished, peak RSS, why not)."""
  peak = 0
  while True:
    try:
      process.wait(timeout=max(0.01, min(POLL_SECONDS, deadline - time.monotonic())))
      return True, peak, ""
    except subprocess.TimeoutExpired:
      pass
    peak = max(peak, _rss_bytes(process.pid))
    if peak > RSS_LIMIT_BYTES:
      return False, peak, f"RSS over {RSS_LIMIT_BYTES / 2**30:.0f} GiB"
    if time.monotonic() >= deadline:
      return False, peak, "time"


def run(out_dir: str, seconds: float, targets: list[str]) -> None:
  os.makedirs(out_dir, exist_ok=True)
  deadline = time.monotonic() + seconds
  ended = []
  for i, target in enumerate(targets):
    left = deadline - time.monotonic() - GRACE_SECONDS
    if left < 20:
      ended.append({"index": i, "target": target, "seconds": 0, "finished": False})
      continue
    ended.append(run_target(i, target, out_dir, left))
  command = f"python tests/tpu/run_suite.py run OUT {seconds:g} {' '.join(targets)}"
  with open(os.path.join(out_dir, "targets.json"), "w") as f:
    json.dump({"date": str(datetime.date.today()), "libtpu": libtpu_version(),
               "command": command, "targets": ended}, f, indent=1)
  write_results([out_dir], os.path.join(out_dir, "RESULTS.md"))


# --- reading and merging reports ----------------------------------------------------------------
def _folders(sources: list[str], scratch: str) -> list[str]:
  """Each source as a folder of junit files (archives unpacked into `scratch`)."""
  folders = []
  for n, source in enumerate(sources):
    if source.endswith((".tar.gz", ".tgz", ".tar")):
      target = os.path.join(scratch, str(n))
      with tarfile.open(source) as archive:
        archive.extractall(target, filter="data")
      inner = glob.glob(os.path.join(target, "**", "targets.json"), recursive=True)
      folders.append(os.path.dirname(inner[0]) if inner else target)
    else:
      folders.append(source)
  return folders


def _outcome(case) -> tuple[str, str]:
  for child in case:
    if child.tag in ("failure", "error"):
      text = (child.get("message") or "") + "\n" + (child.text or "")
      return ("failed" if child.tag == "failure" else "errors"), text.strip()
    if child.tag == "skipped":
      return "skipped", (child.get("message") or "").strip()
  return "passed", ""


def read_cases(folder: str, stopped: set) -> dict:
  """{(file, test name): (outcome, text)} of every junit report in `folder`. A target stopped at
  its time limit (index in `stopped`) loses its last test: the one SIGINT interrupted."""
  cases = {}
  for junit in sorted(glob.glob(os.path.join(folder, "junit-*.xml"))):
    try:
      root = ET.parse(junit).getroot()
    except ET.ParseError:
      continue
    index = int(os.path.basename(junit)[len("junit-"):-len(".xml")])
    reported = list(root.iter("testcase"))
    for case in reported[:-1] if index in stopped else reported:
      name = case.get("classname", "").replace(".", "/") + ".py"
      cases[(name, case.get("name"))] = _outcome(case)
  return cases


def node_key(node_id: str) -> tuple[str, str]:
  """A collected pytest node id (`tests/x/test_y.py::Class::test_z[p]`) as read_cases keys a
  junit case: (file, test name), the class joined to the file as junit's classname joins it."""
  path, _, rest = node_id.partition("::")
  head, bracket, params = rest.partition("[")  # (a parameter's id may hold "::": a slice)
  parts = head.split("::")
  name = parts[-1] + bracket + params
  if len(parts) > 1:
    return path[:-3] + "/" + "/".join(parts[:-1]) + ".py", name
  return path, name


def skip_lines(cases: dict) -> list[str]:
  """The skipped tests grouped by their reasons, most frequent first: one line per reason with
  its count and a few of its files."""
  reasons = collections.defaultdict(list)
  for (name, _), (outcome, text) in cases.items():
    if outcome == "skipped":
      reasons[text.splitlines()[0][:220] if text else "(no reason given)"].append(name)
  lines = []
  for reason, names in sorted(reasons.items(), key=lambda item: (-len(item[1]), item[0])):
    files = sorted(set(names))
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more files" if len(files) > 3 else "")
    lines.append(f"- {len(names)}: {reason} ({shown})")
  return lines


def never_run_lines(cases: dict, collected_path: str) -> list[str]:
  """Of the tests a collection lists (one node id per line: `pytest --collect-only -q`), those
  no run reported, counted per file."""
  collected = [line.strip() for line in open(collected_path) if "::" in line]
  missing = collections.Counter(node_key(n)[0] for n in collected if node_key(n) not in cases)
  total = sum(missing.values())
  lines = [f"Of the {len(collected)} tests collected on the CPU, {len(collected) - total} "
           f"have run on the chip; {total} never have:", ""]
  lines += [f"- {name}: {n}" for name, n in sorted(missing.items(), key=lambda i: (-i[1], i[0]))]
  return lines


def write_results(sources: list[str], path: str, collected: str | None = None) -> None:
  with tempfile.TemporaryDirectory() as scratch:
    folders = _folders(sources, scratch)
    cases, runs = {}, []
    for folder in folders:  # later runs win: a test re-run after a fix counts with its new outcome
      meta = os.path.join(folder, "targets.json")
      stopped = set()
      if os.path.exists(meta):
        runs.append(json.load(open(meta)))
        stopped = {t["index"] for t in runs[-1]["targets"] if t["seconds"] and not t["finished"]}
      cases.update(read_cases(folder, stopped))
  counts = collections.defaultdict(collections.Counter)
  failures = collections.defaultdict(list)
  for (name, test), (outcome, text) in sorted(cases.items()):
    counts[name][outcome] += 1
    if outcome in ("failed", "errors"):
      failures[name].append((test, text))
  total = collections.Counter()
  for c in counts.values():
    total.update(c)
  ran = total["passed"] + total["failed"] + total["errors"]
  lines = ["# revax's tests on a TPU", ""]
  for meta in runs:
    reached = [t["target"] for t in meta["targets"] if t["seconds"] and not t["finished"]]
    missed = [t["target"] for t in meta["targets"] if not t["seconds"]]
    lines.append(f"- {meta['date']}, libtpu {meta['libtpu']}: `{meta['command']}`"
                 + (f"; stopped at its time limit: {', '.join(reached)}" if reached else "")
                 + (f"; not reached: {', '.join(missed)}" if missed else ""))
  lines += ["", "One pytest process per target, the jax oracle on the CPU; a test run in several "
            "runs counts once, with its latest outcome.", "",
            "| test file | passed | failed | errors | skipped |", "|---|---|---|---|---|"]
  for name in sorted(counts):
    c = counts[name]
    lines.append(f"| {name} | {c['passed']} | {c['failed']} | {c['errors']} | {c['skipped']} |")
  lines.append(f"| **all** | {total['passed']} | {total['failed']} | {total['errors']} | "
               f"{total['skipped']} |")
  if ran:
    lines += ["", f"Passed: {total['passed']} of {ran} run ({100 * total['passed'] / ran:.2f}%); "
              f"{total['skipped']} skipped."]
  if collected:
    lines += ["", "## Tests never run on the chip", ""] + never_run_lines(cases, collected)
  if total["skipped"]:
    lines += ["", "## Skips on the chip, by reason (count: reason (files))", ""]
    lines += skip_lines(cases)
  lines += ["", "## Failures (first lines; whole texts in FAILURES.txt)", ""]
  full = []
  for name in sorted(failures):
    lines.append(f"- {name}")
    for test, text in failures[name]:
      first = text.splitlines()[0] if text else ""
      lines.append(f"  - {test}: {first[:160]}")
      full += [f"=== {name}::{test}", text[:4000], ""]
  with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
  with open(os.path.join(os.path.dirname(path) or ".", "FAILURES.txt"), "w") as f:
    f.write("\n".join(full) + "\n")
  print("\n".join(lines[:16 + len(counts)]))


def expand(targets: list[str]) -> list[str]:
  """Targets as given, where `@PATH` stands for the lines of the file PATH (its `#` comments and
  blank lines left out) and `@PATH:N` for its lines from the N-th on (0-based)."""
  out = []
  for target in targets:
    if not target.startswith("@"):
      out.append(target)
      continue
    path, _, start = target[1:].partition(":")
    lines = [line.split("#")[0].strip() for line in open(path)]
    out += [line for line in lines if line][int(start or 0):]
  return out


def natural_key(name: str) -> list:
  """Sort key reading digit runs as numbers: a shell's glob puts `suite_10` before `suite_2`,
  and the later run must win a merge."""
  import re
  return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def main() -> None:
  mode, rest = sys.argv[1], sys.argv[2:]
  if mode == "run":
    run(rest[0], float(rest[1]), expand(rest[2:]))
  elif mode == "merge":
    collected = None
    if rest[0].startswith("--collected="):
      collected, rest = rest[0].split("=", 1)[1], rest[1:]
    write_results(sorted(rest[1:], key=natural_key), rest[0], collected)
  else:
    sys.exit(__doc__)


if __name__ == "__main__":
  main()
