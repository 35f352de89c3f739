"""Imports point down only: core <- runtime <- interpreters <- lax <- api <- numpy/random/nn."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "revax"
LAYERS = ["core", "runtime", "interpreters", "lax", "api", "libraries"]
LIBRARIES = {"numpy", "random", "nn", "example_libraries", "scipy", "ops", "image",
             "experimental"}
UTILITIES = {"tree_util", "pytreedef"}  # leaf utilities importable from any layer but core


def _layer(module: str) -> str | None:
  parts = module.split(".")
  if parts[:2] != ["revax", "_src"] or len(parts) < 3:
    return "public" if parts[0] == "revax" else None
  head = parts[2]
  if head in UTILITIES:
    return "util"
  if head in LIBRARIES:
    return "libraries"
  if head in ("core", "runtime", "interpreters", "lax"):
    return head
  return "api"  # api.py, jit.py and other transformation entry points


def _imports(path: pathlib.Path):
  tree = ast.parse(path.read_text())
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      for alias in node.names:  # `from revax._src import lax` names the module revax._src.lax
        yield f"{node.module}.{alias.name}" if node.module == "revax._src" else node.module
    elif isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name


def test_no_upward_imports():
  bad = []
  for path in (ROOT / "_src").rglob("*.py"):
    module = "revax." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
    src = _layer(module)
    for imp in _imports(path):
      dst = _layer(imp)
      if dst is None or dst == "util" and src != "core":
        continue
      if dst == "public" or (dst == "util" and src == "core"):
        bad.append(f"{module} imports {imp} (public modules sit above everything)")
      elif dst != "util" and LAYERS.index(dst) > LAYERS.index(src):
        bad.append(f"{module} ({src}) imports {imp} ({dst})")
  assert not bad, "upward imports:\n" + "\n".join(bad)


# revax.compat, the jax-compatibility mode (an import hook and the shims of JAX's private names
# that libraries import), is a separate package on top of revax: it holds code of its own
COMPAT = ROOT / "compat"


def _public_module_files():
  return [p for p in ROOT.rglob("*.py")
          if "_src" not in p.relative_to(ROOT).parts and COMPAT not in p.parents]


def test_only_the_compat_package_knows_the_compat_mode():
  """Nothing in revax imports revax.compat (the mode is opt-in, never on by default), except
  `python -m revax.run_as_jax`, its command-line entry point."""
  bad = []
  for path in ROOT.rglob("*.py"):
    if COMPAT in path.parents or path.name == "run_as_jax.py":
      continue
    bad += [f"{path} imports {imp}" for imp in _imports(path) if imp.startswith("revax.compat")]
  assert not bad, "\n".join(bad)


def test_public_modules_only_reexport():
  for path in _public_module_files():
    tree = ast.parse(path.read_text())
    for node in tree.body:
      if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        raise AssertionError(f"{path.name} defines {node.name}; public modules only re-export")


def test_revax_never_imports_jax():
  for path in ROOT.rglob("*.py"):
    for imp in _imports(path):
      assert imp.split(".")[0] not in ("jax", "jaxlib"), f"{path} imports {imp}"
