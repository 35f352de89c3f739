"""jax's side of the transcript tests, recorded: a child program run with `jax` on its command
line prints the same transcript every time its inputs are the same, so the suite reads it from a
committed file instead of starting jax for it (about half of each such test's time).

A record is `tests/<folder>/expected/<program>[.<args>].jax.txt`: its first line names the key
of what the output depends on (the program's text, the text of every `tests` module it imports,
its arguments, the device count, jax's version), the rest is the program's output (the
checkout's folder written as `<checkout>`, read back as the clone's own). A record
whose key no longer matches is not used: the program runs live. `REVAX_LIVE_ORACLE=1` always
runs jax live; `REVAX_RECORD_ORACLE=1` (re)writes the records of the programs it runs live:

    REVAX_RECORD_ORACLE=1 REVAX_LIVE_ORACLE=1 python -m pytest tests/sharding tests/lax/test_refs_guide.py ...
"""
import hashlib
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the checkout's folder in a record (messages name the programs' paths): records hold this
# instead, so that they are read alike in every clone
CHECKOUT = "<checkout>"
_IMPORT = re.compile(r"^\s*(?:from|import)\s+(tests(?:\.\w+)+)", re.M)


def _sources(path: str, seen: set) -> list[bytes]:
  """The text of `path` and of every `tests` module it imports, recursively."""
  if path in seen or not os.path.exists(path):
    return []
  seen.add(path)
  text = open(path, "rb").read()
  out = [text]
  for module in _IMPORT.findall(text.decode()):
    base = os.path.join(ROOT, *module.split("."))
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
      out += _sources(candidate, seen)
  return out


def _key(script: str, args, env: dict) -> str:
  import importlib.metadata
  digest = hashlib.sha256()
  for text in _sources(os.path.abspath(script), set()):
    digest.update(hashlib.sha256(text).digest())
  digest.update(repr((tuple(args), env.get("XLA_FLAGS", ""),
                      importlib.metadata.version("jax"))).encode())
  return digest.hexdigest()


def record_path(script: str, args) -> str:
  folder, name = os.path.split(os.path.abspath(script))
  extra = "".join(f".{a}" for a in args if a != "jax")
  return os.path.join(folder, "expected", f"{os.path.splitext(name)[0]}{extra}.jax.txt")


def run_jax(script: str, args, env: dict, timeout: int) -> subprocess.CompletedProcess:
  """The result of `python script *args` (args naming `jax`), from its record where the record
  is current, else run live (and recorded with REVAX_RECORD_ORACLE=1)."""
  command = ["python", script, *args]
  path, key = record_path(script, args), _key(script, args, env)
  if os.environ.get("REVAX_LIVE_ORACLE") != "1" and os.path.exists(path):
    header, _, output = open(path).read().partition("\n")
    if header == f"# key {key}":
      return subprocess.CompletedProcess(command, 0, output.replace(CHECKOUT, ROOT), "")
  import sys
  out = subprocess.run([sys.executable, script, *args], env=env, capture_output=True, text=True,
                       timeout=timeout)
  if out.returncode == 0 and os.environ.get("REVAX_RECORD_ORACLE") == "1":
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
      f.write(f"# key {key}\n{out.stdout.replace(ROOT, CHECKOUT)}")
  return out
