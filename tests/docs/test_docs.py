"""The documentation site: it builds in strict mode (every guide's code executed, no broken
reference, no warning), every public name of every public module is in the API reference, and
the built pages render (screenshots in headless Chromium, kept under docs-screenshots/)."""
import importlib.util
import os
import pathlib
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


def test_every_public_name_is_in_the_reference(site):
  sys.path.insert(0, str(ROOT / "docs"))
  try:
    import hooks
  finally:
    sys.path.pop(0)
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
