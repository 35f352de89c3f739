"""Imports point down only: core <- runtime <- interpreters <- lax <- api <- numpy/random/nn."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "revax"
LAYERS = ["core", "runtime", "interpreters", "lax", "api", "libraries"]
# (extend: the extension API, jax.extend, sits over the libraries it names: extend.random hands
# out the random library's PRNG implementations; nothing of revax imports it)
LIBRARIES = {"numpy", "random", "nn", "example_libraries", "scipy", "ops", "image",
             "experimental", "extend"}
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


# --- import circles --------------------------------------------------------------------------
# The graph of revax._src: module -> the revax._src modules it imports, at the top or inside a
# function (an import done lazily inside a function to dodge a circle is still an edge of it).
# `from revax._src.x import y` names the module revax._src.x.y where that is a module, else
# revax._src.x. (Importing a submodule also runs its packages' __init__; those implicit edges
# are left out: a package's __init__ re-exporting its modules is not a circle of design.)

def _src_modules() -> dict:
  mods = {}
  for path in (ROOT / "_src").rglob("*.py"):
    parts = ("revax",) + path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
      parts = parts[:-1]
    mods[".".join(parts)] = path
  return mods


def _resolve(name: str, mods) -> str | None:
  """The revax._src module `name` (a module or a name inside one) belongs to, or None."""
  while name and name not in mods:
    name = name.rpartition(".")[0]
  return name or None


def _module_imports(module: str, path: pathlib.Path, mods) -> set:
  package = module if path.name == "__init__.py" else module.rpartition(".")[0]
  found = set()
  for node in ast.walk(ast.parse(path.read_text())):
    names = []
    if isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:  # relative: from the package, up `level - 1` packages
        up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
        base = ".".join(up + ([node.module] if node.module else []))
      names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    elif isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    for name in names:
      target = _resolve(name, mods)
      if target is not None and target != module:
        found.add(target)
  return found


def _import_graph() -> dict:
  mods = _src_modules()
  return {m: _module_imports(m, p, mods) for m, p in mods.items()}


def _circles(graph) -> list:
  """The strongly connected components of more than one module (Tarjan's algorithm, without
  recursion): the sets of modules that import each other in a circle."""
  index, low, on_stack, stack, circles = {}, {}, set(), [], []
  for root in sorted(graph):
    if root in index:
      continue
    work = [(root, iter(sorted(graph[root])))]
    index[root] = low[root] = len(index)
    stack.append(root)
    on_stack.add(root)
    while work:
      node, children = work[-1]
      child = next(children, None)
      if child is not None:
        if child not in index:
          index[child] = low[child] = len(index)
          stack.append(child)
          on_stack.add(child)
          work.append((child, iter(sorted(graph[child]))))
        elif child in on_stack:
          low[node] = min(low[node], index[child])
        continue
      work.pop()
      if work:
        low[work[-1][0]] = min(low[work[-1][0]], low[node])
      if low[node] == index[node]:
        members = set()
        while True:
          m = stack.pop()
          on_stack.discard(m)
          members.add(m)
          if m == node:
            break
        if len(members) > 1:
          circles.append(frozenset(members))
  return circles


def _short(modules) -> list:
  return sorted(m.removeprefix("revax._src.") for m in modules)


# The dispatch pipeline of a jit call, lowest first: a module imports only modules of lower
# tiers (issue 31: trace -> lower -> compile or load -> execute, with sharding, donation,
# layouts and the device handed down as data, never a module calling back into one above it).
DISPATCH_TIERS = [
    # records and the helpers over them, importing nothing of the pipeline
    {"aval_json", "shape_dtype_struct", "stages", "sharded_place", "trace_cache",
     "jit_placement", "donation", "call_plans"},
    # what the stages report, executable bytes, programs over a mesh
    {"stage_info", "executable_payload", "spmd_program"},
    # compile or take from the cache (one device), eager primitives over a mesh
    {"program_cache", "sharded_eager"},
    # calls over shardings, the devices and device_put over shardings
    {"sharded_jit", "sharded_api"},
    # the jit primitive and its rules (running a program that takes refs among them)
    {"jit_primitive"},
    # the stage objects
    {"jit_stages"},
    {"jit"},
    # entry points built on jit
    {"serialize_executable", "api", "autodiff"},
    {"export"},
]
DISPATCH = {f"revax._src.{m}" for tier in DISPATCH_TIERS for m in tier}

# Circles outside the dispatch pipeline, as they are today. This list may only shrink: a new
# circle, a module joining one, or a circle no longer there (remove or narrow its entry) fails.
KNOWN_CIRCLES = {
    frozenset({"core.effects", "core.jaxpr"}):
        "jaxpr's effect helpers import effects inside a function; effects names jaxpr's types",
    frozenset({"runtime.array", "runtime.client", "runtime.ffi", "runtime.host_transfer",
               "runtime.lapack"}):
        "Array reaches the PJRT client inside its methods; the client loads the FFI, host "
        "transfer and LAPACK modules on first use, which import the client",
    frozenset({"interpreters.ad", "interpreters.transpose"}):
        "linearize (ad) runs the backward pass inside a function; transpose reads ad's Zero "
        "and UndefinedPrimal",
    frozenset({"lax.batch_util", "lax.binary", "lax.comparison", "lax.conversion",
               "lax.creation", "lax.reductions", "lax.shapes", "lax.slicing", "lax.standard",
               "lax.unary"}):
        "the core primitive families' rules call each other's wrappers, imported inside "
        "the rules",
    frozenset({"numpy.indexing", "numpy.reductions", "numpy.searching", "numpy.shape_ops",
               "numpy.sorting", "numpy.ufuncs"}):
        "jax.numpy's families call each other inside functions",
}


def test_dispatch_modules_import_no_circle():
  """No import circle (top-level or inside functions) involves a module of the jit pipeline."""
  bad = [_short(c) for c in _circles(_import_graph()) if c & DISPATCH]
  assert not bad, f"import circles through the dispatch modules: {bad}"


def test_dispatch_pipeline_imports_point_down():
  """Within the jit pipeline a module imports only modules of lower tiers (DISPATCH_TIERS)."""
  tier = {f"revax._src.{m}": k for k, names in enumerate(DISPATCH_TIERS) for m in names}
  graph = _import_graph()
  missing = sorted(m for m in tier if m not in graph)
  assert not missing, f"DISPATCH_TIERS names modules that do not exist: {missing}"
  bad = [f"{src} (tier {tier[src]}) imports {dst} (tier {tier[dst]})"
         for src in sorted(tier) for dst in sorted(graph[src])
         if dst in tier and tier[dst] >= tier[src]]
  assert not bad, "dispatch imports that do not point down:\n" + "\n".join(bad)


def test_no_import_circles_but_the_known_ones():
  """Every import circle of revax._src is one of KNOWN_CIRCLES, exactly."""
  found = {frozenset(_short(c)) for c in _circles(_import_graph())}
  new = [sorted(c) for c in found - set(KNOWN_CIRCLES)]
  gone = [sorted(c) for c in set(KNOWN_CIRCLES) - found]
  assert not new and not gone, (
      f"import circles not in KNOWN_CIRCLES (new, or a known one that grew): {new}; "
      f"KNOWN_CIRCLES entries that are gone or changed (shrink the list): {gone}")


def test_circle_finder_finds_circles():
  """The graph and circle finder see function-local imports and report each circle once."""
  graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
  assert _circles(graph) == [frozenset({"a", "b", "c"})]
  mods = _src_modules()
  jit_edges = _module_imports("revax._src.api_extras", mods["revax._src.api_extras"], mods)
  assert "revax._src.jit" in jit_edges  # imported inside clear_caches only
