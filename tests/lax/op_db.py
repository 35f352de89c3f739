"""The op database: one record per (primitive wrapper, case), feeding the generic suites.

A record says how to call a revax function (`fun`, a function of positional arrays with static
parameters closed over), how to make its inputs (`args(rng)` returning NumPy arrays or scalars),
and the NumPy reference (`ref`). The generic suites (test_op_db.py, and later the autodiff, vmap,
transpose and inverse suites) run every record. Families add records in `opdb/<family>.py` as a
module-level list `RECORDS`; `all_records()` gathers them.

Fields for later suites are declared here already: `grad_order` (0 = not differentiable),
`linear` (transpose suite), `invertible` (inverse round trip), `vmap` (batching suite).
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import Callable

import ml_dtypes
import numpy as np

FAMILIES = "tests.lax.opdb"

_TOLS = {np.dtype(np.float16): 2e-3, np.dtype(ml_dtypes.bfloat16): 2e-2,
         np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12,
         np.dtype(np.complex64): 1e-5, np.dtype(np.complex128): 1e-12}


@dataclasses.dataclass(frozen=True)
class OpRecord:
  name: str  # unique test id, e.g. "exp_f32_3x4"
  primitive: str  # name of the primitive the function binds (checked in its jaxpr)
  fun: Callable
  args: Callable  # rng -> tuple of inputs
  ref: Callable  # NumPy reference of the same inputs
  rtol: float | None = None  # default: by output dtype (_TOLS)
  atol: float | None = None
  grad_order: int = 2
  linear: bool = False  # linear in its first argument (others fixed): transposition suite
  invertible: bool = False
  vmap: bool = True
  check_dtype: bool = True  # the output dtype must equal the reference's

  def __str__(self):
    return self.name


def rank_broadcasting(fun):
  """The internal wrapper under public elementwise `fun` (revax.lax.add -> the one binding
  add_p): revax's elementwise primitives broadcast operands of different ranks, which
  jax.numpy, the batching rules and the libraries rely on, so records of mixed ranks test them
  through it; the public function refuses different ranks as jax.lax does
  (tests/lax/test_lax_ranks.py). (lax.mul, which has its own signature, is not a
  functools.wraps wrapper: its internal function is binary's of the same name.)"""
  from revax._src.lax import binary
  return getattr(fun, "__wrapped__", None) or getattr(binary, fun.__name__)


def tolerance(dtype, rtol=None, atol=None):
  base = _TOLS.get(np.dtype(dtype), 0.0)
  return (base if rtol is None else rtol), (base if atol is None else atol)


def assert_close(actual, expected, rtol=None, atol=None, check_dtype=True, err_msg=""):
  """Values (and, if asked, dtypes) agree within the tolerance of the expected dtype."""
  actual = np.asarray(actual)
  expected = np.asarray(expected)
  if check_dtype:
    assert actual.dtype == expected.dtype, f"{err_msg}: dtype {actual.dtype} != {expected.dtype}"
  assert actual.shape == expected.shape, f"{err_msg}: shape {actual.shape} != {expected.shape}"
  rt, at = tolerance(expected.dtype, rtol, atol)
  if expected.dtype == ml_dtypes.bfloat16 or expected.dtype == np.float16:
    actual, expected = actual.astype(np.float32), expected.astype(np.float32)
  if rt == 0 and at == 0:
    np.testing.assert_array_equal(actual, expected, err_msg=err_msg)
  else:
    np.testing.assert_allclose(actual, expected, rtol=rt, atol=at, err_msg=err_msg)


def all_records() -> list[OpRecord]:
  pkg = importlib.import_module(FAMILIES)
  records = []
  for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
    mod = importlib.import_module(f"{FAMILIES}.{info.name}")
    records.extend(getattr(mod, "RECORDS", []))
  names = [r.name for r in records]
  dup = {n for n in names if names.count(n) > 1}
  assert not dup, f"duplicate op record names: {sorted(dup)}"
  return records


# --- input generators --------------------------------------------------------------------------
def rand(shape, dtype=np.float32, low=-3.0, high=3.0):
  """Uniform values in [low, high) of `dtype` (ints: integers in that range; bool: coin flips)."""
  dtype = np.dtype(dtype)

  def make(rng):
    if dtype == np.bool_:
      return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
      info = np.iinfo(dtype)
      return rng.integers(max(int(low), info.min), min(int(high), info.max) + 1, shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
      return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dtype)
    return rng.uniform(low, high, shape).astype(dtype)
  return make


def positive(shape, dtype=np.float32, low=0.1, high=3.0):
  return rand(shape, dtype, low, high)


def args_of(*makers):
  """An `args` function from one maker per argument."""
  return lambda rng: tuple(m(rng) for m in makers)
