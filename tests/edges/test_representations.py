"""Class 7 of issue 33: representations programs print or compare, against jax 0.10.2.

- Tree structures: a generated set of pytrees (leaves, None, tuples, lists, dicts, namedtuples,
  OrderedDicts, defaultdicts, custom nodes with and without auxiliary data, registered
  dataclasses, nested two levels deep) through both libraries: `repr`/`str` of the structure
  (jax's `PyTreeDef(...)`), `num_leaves`, `num_nodes`, `node_data`, `children`, `unflatten`,
  `flatten_up_to`, `compose`, `walk`, `from_iterable_tree`, `from_node_data_and_children`,
  `==`/`!=`/hash between every pair, pickling, and the flattened leaves' order (sorted dict keys).
- Dict keys that do not sort (mixed types): the exception type of every tree function and of a
  jitted call, as jax's.
- Jaxprs: `str(make_jaxpr(f)(*args))` for a generated set of lax functions over weak and strong
  arguments of several dtypes, and `str`/`repr` of the avals (jax's `~` marks weak types).

jax runs live here: tree functions and tracing compile nothing, so the whole file takes ~2 s.
"""
from __future__ import annotations

import collections
import dataclasses
import itertools
import pickle
import re

import numpy as np
import pytest

import revax
import revax.lax as rlax
from tests.edges.harness import builtin_base

jax = pytest.importorskip("jax")
import jax.lax as jlax  # noqa: E402
import ml_dtypes  # noqa: E402

LIBS = (jax, revax)

# --- node types, registered in both libraries -------------------------------------------------

Point = collections.namedtuple("Point", "x y")


class Node:
  """A custom node with auxiliary data."""

  def __init__(self, children, aux):
    self.children, self.aux = list(children), aux


class Bare:
  """A custom node without auxiliary data (None)."""

  def __init__(self, *children):
    self.children = list(children)


@dataclasses.dataclass
class Params:
  w: object
  b: object
  name: str = dataclasses.field(default="p", metadata=dict(static=True))


for _lib in LIBS:
  _lib.tree_util.register_pytree_node(Node, lambda n: (n.children, n.aux),
                                      lambda aux, c: Node(c, aux))
  _lib.tree_util.register_pytree_node(Bare, lambda n: (n.children, None),
                                      lambda _, c: Bare(*c))
  _lib.tree_util.register_dataclass(Params)


def _builders():
  """(name, make(children)) for every kind of node, over 0 to 2 children."""
  return [
      ("tuple", lambda cs: tuple(cs)),
      ("list", lambda cs: list(cs)),
      ("dict", lambda cs: {k: c for k, c in zip(("zeta", "alpha", "mid"), cs)}),
      ("namedtuple", lambda cs: Point(*(list(cs) + [None, None])[:2])),
      ("OrderedDict", lambda cs: collections.OrderedDict(zip(("zeta", "alpha", "mid"), cs))),
      ("defaultdict", lambda cs: collections.defaultdict(list, zip(("b", "a", "c"), cs))),
      ("custom", lambda cs: Node(cs, ("aux", 3))),
      ("custom-none", lambda cs: Bare(*cs)),
      ("dataclass", lambda cs: Params(*(list(cs) + [None, None])[:2], name="q")),
  ]


ATOMS = [("leaf", lambda: 1.5), ("None", lambda: None), ("()", lambda: ()), ("[]", lambda: []),
         ("{}", lambda: {})]


def trees():
  """(name, thunk) pairs: atoms, every node kind over 0/1/2 atom children, and every node kind
  over two children that are themselves nodes (a leaf and a nested node)."""
  out = list(ATOMS)
  builders = _builders()
  for (bname, make), n in itertools.product(builders, (0, 1, 2)):
    for combo in itertools.islice(itertools.product(ATOMS, repeat=n), 6):
      label = f"{bname}({', '.join(a for a, _ in combo)})"
      out.append((label, lambda make=make, combo=combo: make([t() for _, t in combo])))
  for (outer, make_outer), (inner, make_inner) in itertools.product(builders, builders):
    label = f"{outer}(leaf, {inner}(leaf, None))"
    out.append((label, lambda mo=make_outer, mi=make_inner: mo([2.5, mi([3.5, None])])))
  return out


TREES = trees()
TREE_IDS = [name for name, _ in TREES]


def _plain(x, depth=0):
  """A comparable, library-independent picture of a value: node types by name."""
  if depth > 20:
    return "..."
  if isinstance(x, (Node, Bare)):
    return (type(x).__name__, getattr(x, "aux", None), [_plain(c, depth + 1) for c in x.children])
  if isinstance(x, Params):
    return ("Params", _plain(x.w, depth + 1), _plain(x.b, depth + 1), x.name)
  if isinstance(x, collections.defaultdict):
    return ("defaultdict", x.default_factory, [(k, _plain(v, depth + 1)) for k, v in x.items()])
  if isinstance(x, dict):
    return (type(x).__name__, [(k, _plain(v, depth + 1)) for k, v in x.items()])
  if isinstance(x, (tuple, list)):
    return (type(x).__name__, [_plain(c, depth + 1) for c in x])
  if isinstance(x, type):
    return ("type", x.__name__)
  return x


def _run(fn):
  try:
    return ("ok", fn())
  except Exception as e:  # noqa: BLE001 -- the type is the datum
    return ("raises", builtin_base(type(e)).__name__)


def _structure_facts(lib, tree):
  """What a program can see of `tree`'s structure through `lib`."""
  tu = lib.tree_util
  leaves, treedef = tu.tree_flatten(tree)
  n = treedef.num_leaves
  facts = {
      "leaves": _run(lambda: _plain(leaves)),
      "repr": repr(treedef), "str": str(treedef),
      "num_leaves": n, "num_nodes": treedef.num_nodes,
      "node_data": _run(lambda: _plain(treedef.node_data())),
      "children": _run(lambda: [repr(c) for c in treedef.children()]),
      "unflatten": _run(lambda: _plain(treedef.unflatten(list(range(n))))),
      "unflatten too few": _run(lambda: treedef.unflatten(list(range(n + 1)))),
      "flatten_up_to": _run(lambda: _plain(treedef.flatten_up_to(tree))),
      "flatten_up_to leaf": _run(lambda: treedef.flatten_up_to(7) if treedef.num_nodes > 1
                                 else "skip"),
      "compose": _run(lambda: repr(treedef.compose(tu.tree_structure((1, [2]))))),
      "walk": _run(lambda: _plain(treedef.walk(lambda c, d: ("node", c, _plain(d)),
                                               lambda x: x * 10, list(range(n))))),
      "from_iterable_tree": _run(lambda: _plain(treedef.from_iterable_tree(
          _as_iterables(treedef)))),
      "from_node_data_and_children": _run(lambda: repr(
          tu.PyTreeDef.from_node_data_and_children(tu.default_registry, treedef.node_data(),
                                                   treedef.children()))),
      "pickle": _run(lambda: (repr(pickle.loads(pickle.dumps(treedef))),
                              pickle.loads(pickle.dumps(treedef)) == treedef)),
      "eq self": treedef == tu.tree_structure(tree),
      "hash self": hash(treedef) == hash(tu.tree_structure(tree)),
      "eq int": treedef == 3, "ne int": treedef != 3,
      "leaves fn": _run(lambda: _plain(tu.tree_leaves(tree))),
      "map": _run(lambda: _plain(tu.tree_map(lambda x: x + 1, tree))),
      "paths": _run(lambda: [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(tree)[0]]),
  }
  return facts


def _as_iterables(treedef):
  """A tree of lists nesting like `treedef`, holding 0, 1, ... at the leaves."""
  counter = itertools.count()

  def go(t):
    if t.num_nodes == 1 and t.num_leaves == 1:
      return next(counter)
    return [go(c) for c in t.children()]

  return go(treedef)


@pytest.mark.parametrize("name", TREE_IDS)
def test_tree_structure_as_jax(name):
  make = dict(TREES)[name]
  expected, actual = (_structure_facts(lib, make()) for lib in LIBS)
  diffs = {k: (actual[k], expected[k]) for k in expected if actual[k] != expected[k]}
  assert not diffs, "\n".join(f"{k}: revax {a!r}, jax {e!r}" for k, (a, e) in diffs.items())


def _pair_facts(lib):
  structures = [lib.tree_util.tree_structure(t()) for _, t in TREES]
  eq = [[a == b for b in structures] for a in structures]
  ne = [[a != b for b in structures] for a in structures]
  hashes = [[hash(a) == hash(b) for b in structures] for a in structures]
  return eq, ne, [[h for h, e in zip(row, erow) if e] for row, erow in zip(hashes, eq)]


def test_structure_equality_and_hash_between_every_pair():
  jax_eq, jax_ne, jax_hash = _pair_facts(jax)
  rx_eq, rx_ne, rx_hash = _pair_facts(revax)
  for i, j in itertools.product(range(len(TREES)), repeat=2):
    assert rx_eq[i][j] == jax_eq[i][j], (TREE_IDS[i], TREE_IDS[j])
    assert rx_ne[i][j] == jax_ne[i][j], (TREE_IDS[i], TREE_IDS[j])
  assert rx_hash == jax_hash  # equal structures hash equal


def test_dict_key_order_as_jax():
  """Flattening visits dict keys sorted; unflattening builds dicts in sorted key order."""
  for keys in (("b", "a", "c"), (3, 1, 2), (2.5, -1, 0), ((1, 2), (0, 5), (1, 0)),
               (True, 2, 0.5), ("B", "a", "_")):
    tree = {k: i for i, k in enumerate(keys)}
    facts = []
    for lib in LIBS:
      leaves, treedef = lib.tree_util.tree_flatten(tree)
      facts.append((leaves, repr(treedef), list(treedef.unflatten(leaves)),
                    list(lib.tree_util.tree_map(lambda x: x, tree))))
    assert facts[1] == facts[0], keys


MIXED_KEYS = [{1: 1.0, "b": 2.0}, {"a": 1.0, None: 2.0}, {(1,): 1.0, "a": 2.0},
              {1.5: 1.0, "x": 2.0, 3: 3.0}, [{"a": 1.0}, {2: 1.0, "c": 2.0}],
              {"outer": {1: 1.0, "b": 2.0}}]


def _mixed_key_calls(lib):
  tu = lib.tree_util
  return {
      "tree_flatten": lambda t: tu.tree_flatten(t),
      "tree_structure": lambda t: tu.tree_structure(t),
      "tree_leaves": lambda t: tu.tree_leaves(t),
      "tree_map": lambda t: tu.tree_map(lambda x: x, t),
      "tree_flatten_with_path": lambda t: tu.tree_flatten_with_path(t),
      "jit": lambda t: lib.jit(lambda x: x)(t),
  }


@pytest.mark.parametrize("index", range(len(MIXED_KEYS)))
def test_mixed_type_dict_keys_raise_as_jax(index):
  tree = MIXED_KEYS[index]
  calls = {lib.__name__: _mixed_key_calls(lib) for lib in LIBS}
  for name in calls["jax"]:
    actual = _run(lambda: calls["revax"][name](tree))
    expected = _run(lambda: calls["jax"][name](tree))
    if expected[0] == "ok":
      assert actual[0] == "ok", (name, actual)
    else:
      assert actual == expected, (name, actual, expected)


# --- jaxprs --------------------------------------------------------------------------------------

UNARY = ["neg", "sin", "exp", "abs", "sign", "floor", "tanh", "sqrt", "logistic", "square"]
BINARY = ["add", "sub", "mul", "div", "max", "min", "pow", "atan2", "rem", "nextafter"]
f32, bf16 = np.float32, ml_dtypes.bfloat16
ARGS = {
    "py float": 1.5, "py int": 2,
    "f32[3]": np.linspace(1, 2, 3, dtype=f32), "f32[]": f32(1.25),
    "bf16[2]": np.array([1.5, 2.5], bf16), "f16[]": np.float16(0.5),
    "i32[2]": np.array([1, 3], np.int32), "u8[2]": np.array([1, 3], np.uint8),
    "i8[]": np.int8(-3), "bool[2]": np.array([True, False]),
}


def _jaxpr_cases():
  """(label, fn(lib), args) for lax functions of one and two arguments, and two-equation
  programs mixing a weak constant with each argument."""
  cases = []
  for name, (aname, a) in itertools.product(UNARY, ARGS.items()):
    cases.append((f"{name}({aname})", lambda m, n=name: getattr(m, n), (a,)))
  for name, (aname, a) in itertools.product(BINARY, ARGS.items()):
    cases.append((f"{name}({aname}, {aname})", lambda m, n=name: getattr(m, n), (a, a)))
  for aname, a in ARGS.items():
    cases.append((f"x * 2.0 + 1 ({aname})", lambda m: (lambda x: x * 2.0 + 1), (a,)))
    cases.append((f"(x, x + x, 3.0) ({aname})", lambda m: (lambda x: (x, x + x, 3.0)), (a,)))
  return cases


JAXPR_CASES = _jaxpr_cases()


def _jaxpr_facts(lib, fn, args):
  mod = jlax if lib is jax else rlax
  try:
    closed = lib.make_jaxpr(fn(mod))(*args)
  except Exception as e:  # noqa: BLE001
    return ("raises", builtin_base(type(e)).__name__)
  atoms = [v for e in closed.jaxpr.eqns for v in e.invars] + list(closed.jaxpr.outvars)
  return (str(closed), [str(a) for a in closed.in_avals], [repr(a) for a in closed.in_avals],
          [str(a) for a in closed.out_avals], [repr(a) for a in closed.out_avals],
          [re.sub(r"id=\d+", "id=N", repr(v)) for v in atoms])


def test_jaxprs_print_as_jax():
  diffs = []
  for label, fn, args in JAXPR_CASES:
    expected, actual = (_jaxpr_facts(lib, fn, args) for lib in LIBS)
    if expected != actual:
      diffs.append(f"{label}:\n  revax {actual}\n  jax   {expected}")
  assert not diffs, f"{len(diffs)} of {len(JAXPR_CASES)} differ:\n" + "\n".join(diffs)


@pytest.mark.xfail(strict=True, reason="optree registers collections.deque and structseqs "
                   "(sys.float_info) as nodes in every namespace and cannot unregister them; "
                   "jax treats both as leaves. Making them leaves needs an is_leaf callback on "
                   "every flatten (a Python call per node).")
def test_deque_and_structseq_are_leaves_as_in_jax():
  import sys
  for tree in (collections.deque([1, 2]), sys.float_info):
    assert len(revax.tree_util.tree_leaves(tree)) == len(jax.tree_util.tree_leaves(tree)) == 1
