"""The documentation site: it builds in strict mode (every guide's code executed, no broken
reference, no warning), every public name of every public module is in the API reference, and
the built pages render (screenshots in headless Chromium, kept under docs-screenshots/)."""
import importlib
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs-screenshots"
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                                reason="the docs extra is not installed (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
  out = tmp_path_factory.mktemp("site")
  env = dict(os.environ, PYTHONPATH=str(ROOT), NO_MKDOCS_2_WARNING="1")
  run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
  assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
  return out


def _docs_module(name):
  sys.path.insert(0, str(ROOT / "docs"))
  try:
    return importlib.import_module(name)
  finally:
    sys.path.pop(0)


def test_importing_the_hooks_leaves_the_environment_alone():
  """The hooks give the build 4 devices when it starts; importing them (as these tests do) must
  not, or every later test in the process would get 4 devices."""
  before = dict(os.environ)
  _docs_module("hooks")
  assert dict(os.environ) == before


def test_every_public_name_is_in_the_reference(site):
  hooks = _docs_module("hooks")
  missing = []
  for module, names in hooks.public_api().items():
    page = (site / "reference" / module / "index.html").read_text()
    missing += [f"{module}.{n}" for n in names if f'id="{module}.{n}"' not in page]
  assert not missing, f"public names missing from the API reference: {missing[:20]}"


def test_guides_ran_their_code(site):
  page = (site / "guides" / "invertible" / "index.html").read_text()
  assert "invertible temp" in page and "KiB" in page  # the executed depth sweep's table
  assert "Traceback" not in page
  page = (site / "guides" / "sharding" / "index.html").read_text()
  assert "loss on 4 devices" in page and "manual_computation" in page  # ran on 4 devices
  assert "Traceback" not in page
  # debug.print writes to sys.stdout from the running program: the page shows what it printed
  page = (site / "guides" / "debugging" / "index.html").read_text()
  assert "x = [0. 1. 2.], sum of squares = 5.0" in page
  assert page.count("x = [1. 1. 1.], sum of squares = 3.0") == 2  # once per vmapped example
  assert "markdown-exec" not in page and "_capture" not in page  # the capture lines are hidden


def test_site_holds_no_build_sources(site):
  """docs/hooks.py and the griffe extension run the build; they are not pages."""
  assert not list(site.rglob("*.py"))


def test_every_documented_name_has_a_docstring():
  """A function or class of revax that the reference renders with mkdocstrings has a docstring:
  otherwise its entry is a bare signature (as `revax.local_device_count` once was)."""
  hooks = _docs_module("hooks")
  bare = []
  for module, names in hooks.public_api().items():
    for name in names:
      obj = getattr(importlib.import_module(module), name)
      if hooks._documented_by_mkdocstrings(obj) and not (obj.__doc__ or "").strip():
        bare.append(f"{module}.{name}")
  assert not bare, f"public names without a docstring: {bare}"


def test_reference_lists_each_parameter_once(site):
  """`a, b: ...` Args entries render as one row per parameter with its own default (the griffe
  extension docs/griffe_grouped_params.py), and prose Returns sections as one row."""
  grouped = []  # a first cell `a, b` (a Returns row's type cell `(v, w)` is a tuple: fine)
  for page in (site / "reference").rglob("index.html"):
    grouped += [f"{page.parent.name}: {m}" for m in re.findall(
        r'<tr class="doc-section-item">\s*<td>\s*<code>([^<(]*,[^<]*)</code>', page.read_text())]
  assert not grouped, f"grouped parameter rows: {grouped[:10]}"
  page = (site / "reference" / "revax" / "index.html").read_text()
  jit = page[page.index('id="revax.jit"'):page.index('id="revax.jvp"')]
  for name, default in [("in_shardings", "None"), ("out_shardings", "None"),
                        ("keep_unused", "False"), ("inline", "False")]:
    row = re.search(rf"<code>{name}</code>.*?</tr>", jit, flags=re.S)
    assert row and f"<code>{default}</code>" in row.group(0), name
  returns = jit[jit.index("Returns:"):jit.index("Examples:")]
  assert returns.count('class="doc-section-item"') == 1


def test_split_grouped_params():
  pytest.importorskip("griffe")
  split = _docs_module("griffe_grouped_params").split_grouped_params
  text = """Summary, a, b: not an entry.

  Args:
    x, *args, **kwargs: passed on,
      all three.
    y: one.

  Returns:
    a, b: prose, left alone."""
  assert split(text) == """Summary, a, b: not an entry.

  Args:
    x: passed on,
      all three.
    *args: passed on,
      all three.
    **kwargs: passed on,
      all three.
    y: one.

  Returns:
    a, b: prose, left alone."""


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="headless Chromium is not installed (apt-get install chromium)")
def test_rendered_pages(site):
  import matplotlib.image
  SHOTS.mkdir(exist_ok=True)
  pages = {"index": site / "index.html",
           "revax_grad": site / "reference" / "revax" / "index.html",
           "invertible_guide": site / "guides" / "invertible" / "index.html"}
  for name, page in pages.items():
    shot = SHOTS / f"{name}.png"
    url = page.as_uri()
    if name == "revax_grad":  # headless Chromium draws nothing when scrolled to a fragment of
      frame = site / "_screenshot_frame.html"  # a long page; a frame scrolled to it works
      frame.write_text(f'<html><body style="margin:0"><iframe src="{url}#revax.grad" '
                       'style="border:0;width:1280px;height:900px"></iframe></body></html>')
      url = frame.as_uri()
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", "--virtual-time-budget=5000",
                    "--allow-file-access-from-files", f"--screenshot={shot}",
                    "--window-size=1280,900", url],
                   capture_output=True, timeout=120, check=True)
    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] == 900 and pixels.shape[1] == 1280
    assert pixels.std() > 0.05, f"{shot} looks blank"
