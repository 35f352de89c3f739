"""Differential comparison of one call through jax 0.10.2 and through revax.

`outcome(fn, *args)` runs a call and records either the exception's type or, per output leaf,
the dtype, weak type, shape and values; `difference(expected, actual)` says in words how revax's
outcome differs from jax's (None when they agree). Values agree when NaN, +inf and -inf sit at
the same positions and the finite values are close (integers and booleans exactly).

An exception agrees when revax raises an instance of the first built-in class in the mro of
jax's exception (jax's ConcretizationTypeError is a TypeError; its shape errors are TypeError or
ValueError): programs catch built-in classes, not jax's private ones.
"""
from __future__ import annotations

import builtins
import dataclasses

import numpy as np


@dataclasses.dataclass
class Raised:
  kind: type
  message: str


@dataclasses.dataclass
class Leaf:
  dtype: np.dtype
  weak_type: bool
  shape: tuple
  value: np.ndarray


def _leaves(tree):
  if isinstance(tree, (tuple, list)):
    return [leaf for t in tree for leaf in _leaves(t)]
  if isinstance(tree, dict):
    return [leaf for k in sorted(tree, key=repr) for leaf in _leaves(tree[k])]
  if hasattr(tree, "_fields") or dataclasses.is_dataclass(tree):
    return _leaves(tuple(tree))
  return [tree]


def _leaf(x):
  weak = bool(getattr(x, "weak_type", False))
  if isinstance(x, (bool, int, float, complex)):
    weak = False  # a Python scalar result: both sides give plain numbers
  a = np.asarray(x)
  return Leaf(a.dtype, weak, a.shape, a)


def outcome(fn, *args, **kwargs):
  """Calls fn; returns a Raised, or the list of output Leaf records."""
  try:
    out = fn(*args, **kwargs)
    return [_leaf(x) for x in _leaves(out)]
  except Exception as e:  # noqa: BLE001 -- the type is the datum
    return Raised(type(e), str(e).split("\n")[0][:200])


def builtin_base(kind):
  """The first built-in exception class in kind's mro."""
  for k in kind.__mro__:
    if getattr(builtins, k.__name__, None) is k:
      return k
  return Exception


def _values_differ(e, a, rtol):
  if e.dtype.kind in "biuO" or e.dtype.kind not in "fc" or a.size == 0:
    return not np.array_equal(e, a)
  e64 = e.astype(np.complex128 if e.dtype.kind == "c" else np.float64)
  a64 = a.astype(e64.dtype)
  for part in ((lambda v: v.real, lambda v: v.imag) if e.dtype.kind == "c" else (lambda v: v,)):
    pe, pa = part(e64), part(a64)
    for special in (np.isnan, np.isposinf, np.isneginf):
      if not np.array_equal(special(pe), special(pa)):
        return True
    fin = np.isfinite(pe)
    if not np.allclose(pa[fin], pe[fin], rtol=rtol, atol=rtol):
      return True
  return False


def difference(expected, actual, rtol=1e-5, check_weak=True):
  """How revax's outcome differs from jax's, in words; None when they agree."""
  if isinstance(expected, Raised):
    if not isinstance(actual, Raised):
      return f"jax raises {expected.kind.__name__} ({expected.message}); revax returns"
    base = builtin_base(expected.kind)
    if not issubclass(actual.kind, base):
      return (f"jax raises {expected.kind.__name__} ({expected.message}); revax raises "
              f"{actual.kind.__name__} ({actual.message})")
    return None
  if isinstance(actual, Raised):
    return f"revax raises {actual.kind.__name__} ({actual.message}); jax returns"
  if len(expected) != len(actual):
    return f"{len(actual)} outputs, jax has {len(expected)}"
  for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
    if e.dtype != a.dtype:
      return f"output {i}: dtype {a.dtype}, jax {e.dtype}"
    if e.shape != a.shape:
      return f"output {i}: shape {a.shape}, jax {e.shape}"
    if check_weak and e.weak_type != a.weak_type:
      return f"output {i}: weak_type {a.weak_type}, jax {e.weak_type}"
    if _values_differ(e.value, a.value, rtol):
      return f"output {i}: values {a.value.ravel()[:6]}, jax {e.value.ravel()[:6]}"
  return None


# --- recorded oracle -----------------------------------------------------------------------------
# jax compiles every primitive it meets eagerly (tens of ms each), so a suite of a thousand calls
# costs it a minute, revax a second. Each suite records jax's outcomes once, under a header naming
# jax's version and the SHA-256 of the suite's source (and of this file); a stale or missing
# record fails with the command that re-records it. REVAX_EDGES_LIVE_JAX=1 runs jax live instead.
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402

EXPECTED = pathlib.Path(__file__).parent / "expected"
LIVE = os.environ.get("REVAX_EDGES_LIVE_JAX") == "1"


def _encode_value(v):
  if v.dtype.kind == "c":
    return [_encode_value(v.real), _encode_value(v.imag)]
  if v.dtype.kind == "f" or v.dtype.name in ("bfloat16",) or v.dtype.kind == "V":
    return [repr(float(x)) for x in v.astype(np.float64).ravel()]
  return [x.item() if hasattr(x, "item") else x for x in v.ravel()]


def _decode_value(dtype, shape, data):
  if dtype.kind == "c":
    re, im = (_decode_value(np.dtype(np.float64), shape, d) for d in data)
    return (re + 1j * im).astype(dtype)
  if dtype.kind == "f" or (dtype.kind == "V" and not dtype.names):  # (ml_dtypes' types too)
    return np.array([float(x) for x in data], np.float64).astype(dtype).reshape(shape)
  return np.array(data, dtype).reshape(shape)


def encode(out):
  if isinstance(out, Raised):
    return {"raises": builtin_base(out.kind).__name__, "message": out.message}
  return [{"dtype": leaf.dtype.name, "weak": leaf.weak_type, "shape": list(leaf.shape),
           "value": _encode_value(leaf.value)} for leaf in out]


def decode(data):
  if isinstance(data, dict):
    return Raised(getattr(builtins, data["raises"]), data["message"])
  import ml_dtypes  # noqa: F401 -- registers bfloat16 and friends with NumPy
  leaves = []
  for d in data:
    dtype = np.dtype(d["dtype"])
    shape = tuple(d["shape"])
    leaves.append(Leaf(dtype, d["weak"], shape, _decode_value(dtype, shape, d["value"])))
  return leaves


def _header(suite_file):
  import jax
  digest = hashlib.sha256(pathlib.Path(suite_file).read_bytes()
                          + pathlib.Path(__file__).read_bytes()).hexdigest()
  return f"jax {jax.__version__}, source sha256 {digest}"


def record(suite_file, cases):
  """Runs every (key, thunk) of `cases` with jax and writes the outcomes."""
  outcomes = {key: encode(thunk()) for key, thunk in cases}
  EXPECTED.mkdir(exist_ok=True)
  path = EXPECTED / (pathlib.Path(suite_file).stem + ".json")
  path.write_text(json.dumps({"header": _header(suite_file), "outcomes": outcomes}, indent=0,
                             sort_keys=True) + "\n")


def recorded(suite_file):
  """{key: outcome} as recorded for the suite; AssertionError when stale or missing."""
  stem = pathlib.Path(suite_file).stem
  path = EXPECTED / (stem + ".json")
  how = f"re-record with: python -m tests.edges.record {stem}"
  assert path.exists(), f"no jax record for {stem}: {how}"
  data = json.loads(path.read_text())
  assert data["header"] == _header(suite_file), f"the jax record of {stem} is stale: {how}"
  return {k: decode(v) for k, v in data["outcomes"].items()}
