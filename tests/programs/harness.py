"""Runs one program of this folder with jax and with revax and compares what each printed.

A program is an ordinary JAX script (it runs as `python tests/programs/NAME.py` with jax). For
revax only its import lines change: `import jax` becomes `import revax as jax`,
`import jax.X as Y` becomes `import revax.X as Y` and `from jax... import` becomes
`from revax... import`; nothing else in the text is touched.

The two printed outputs are compared token by token, whitespace ignored (so numpy's line
wrapping of a wider number does not matter): a number must match the other side's within the
program's tolerance (integers exactly), every other token (dtype names, `weak_type=True`, key
paths, shapes) must be identical. A program may set `TOLERANCE = dict(rtol=..., atol=...)`.

JAX's side is recorded: running all programs with jax costs about two minutes (its eager ops
compile one by one), far over this suite's budget, so `expected/NAME.txt` holds what the
program printed with jax, under a header naming the jax version and the SHA-256 of the exact
source text that printed it. The test refuses a record whose hash or jax version does not match
(a program edited without re-recording). Re-record with `python -m tests.programs.harness
[NAME ...]`; set REVAX_PROGRAMS_LIVE_JAX=1 to run jax live instead of reading the records.
"""
import contextlib
import hashlib
import io
import pathlib
import re
import sys

import numpy as np

HERE = pathlib.Path(__file__).parent
EXPECTED = HERE / "expected"
DEFAULT_TOLERANCE = dict(rtol=2e-4, atol=2e-5)

_IMPORT = re.compile(r"^(\s*)import jax(\s*(#.*)?)$", re.M)
_IMPORT_SUB = re.compile(r"^(\s*)import jax\.", re.M)
_FROM = re.compile(r"^(\s*)from jax(\.|\s)", re.M)
_NUMBER = re.compile(  # an imaginary part ends in j (numpy prints 1.5-0.25j as two numbers)
    r"(?<![\w.])[-+]?(?:(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|inf|nan)j?(?![\w])")


def program_names():
  return sorted(p.stem for p in HERE.glob("*.py")
                if p.stem not in ("harness", "__init__") and not p.stem.startswith("test_"))


def source(name, pkg):
  text = (HERE / f"{name}.py").read_text()
  if pkg == "revax":
    text = _IMPORT.sub(r"\1import revax as jax\2", text)
    text = _IMPORT_SUB.sub(r"\1import revax.", text)
    text = _FROM.sub(r"\1from revax\2", text)
  return text


def run(name, pkg):
  """Executes the program's text (as a module, not as __main__) and returns (stdout, namespace)."""
  namespace = {"__name__": f"program_{name}_{pkg}"}
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    exec(compile(source(name, pkg), f"<{name} with {pkg}>", "exec"), namespace)
  return out.getvalue(), namespace


def tokens(text):
  """[(token, is_number, line_number)] of a printed output, whitespace dropped."""
  result = []
  for lineno, line in enumerate(text.splitlines(), 1):
    pos = 0
    for m in _NUMBER.finditer(line):
      result += [(t, False, lineno) for t in line[pos:m.start()].split()]
      result.append((m.group(), True, lineno))
      pos = m.end()
    result += [(t, False, lineno) for t in line[pos:].split()]
  return result


def _is_int(tok):
  return not any(c in tok for c in ".eEna")


def _same_number(a, b, rtol, atol):
  if a.endswith("j") != b.endswith("j"):  # a real part is never an imaginary one
    return False
  a, b = a.removesuffix("j"), b.removesuffix("j")
  if _is_int(a) and _is_int(b):
    return int(a) == int(b)
  fa, fb = float(a), float(b)
  if np.isnan(fa) or np.isnan(fb):
    return np.isnan(fa) and np.isnan(fb)
  if np.isinf(fa) or np.isinf(fb):
    return fa == fb
  return abs(fa - fb) <= atol + rtol * abs(fb)


def compare(revax_out, jax_out, rtol, atol):
  """None when the outputs agree; else a message quoting the first differing lines."""
  r, j = tokens(revax_out), tokens(jax_out)
  rlines, jlines = revax_out.splitlines(), jax_out.splitlines()
  for (rt, rn, rl), (jt, jn, jl) in zip(r, j):
    same = (rn and jn and _same_number(rt, jt, rtol, atol)) or (not rn and not jn and rt == jt)
    if not same:
      return (f"revax printed {rt!r} where jax printed {jt!r}\n"
              f"  revax line {rl}: {rlines[rl - 1]}\n  jax   line {jl}: {jlines[jl - 1]}")
  if len(r) != len(j):
    return (f"revax printed {len(r)} tokens, jax {len(j)}\n--- revax:\n{revax_out}\n"
            f"--- jax:\n{jax_out}")
  return None


def _header(name):
  import jax
  digest = hashlib.sha256((HERE / f"{name}.py").read_bytes()).hexdigest()
  return f"# recorded with jax {jax.__version__} from source sha256 {digest}\n"


def record(name):
  """Runs `name` with jax and writes its output under the header naming jax and the source."""
  out, _ = run(name, "jax")
  EXPECTED.mkdir(exist_ok=True)
  (EXPECTED / f"{name}.txt").write_text(_header(name) + out)
  return out


def expected(name):
  """The recorded jax output of `name`; AssertionError if the record is stale or missing."""
  path = EXPECTED / f"{name}.txt"
  assert path.exists(), f"no jax record for {name}: run python -m tests.programs.harness {name}"
  header, _, out = path.read_text().partition("\n")
  assert header + "\n" == _header(name), (
      f"the jax record of {name} is stale (the program or jax changed): run "
      f"python -m tests.programs.harness {name}")
  return out


if __name__ == "__main__":
  for n in sys.argv[1:] or program_names():
    record(n)
    print(f"recorded {n}")
