"""Generated dtype tables: one function over every combination of operand kinds, through jax and
revax, compared case by case.

An operand *kind* is a dtype with a weak type and a way of being passed: a strong Array of each
dtype, a weakly typed Array (what `lax.broadcast(2.0, ...)` gives), a 0-d Array, a NumPy array
(float64 and int64 ones are canonicalized), a Python scalar (bool, int, float, complex; a few
ints outside int32's range), and a NumPy scalar. A *case* is one function applied to one tuple
of kinds; the same code builds it for jax and for revax (`Lib` holds the two modules).

What jax does with a case is read from `jax.eval_shape` (the exception type it raises, or the
shape, dtype and weak type of each output), and its values from one `jax.jit` of all the
accepted cases of a function at once (one compilation per function). That costs minutes for
all the tables, so it is recorded once per test module (`records.py`, `data/`; re-record with
`python -m tests.dtype_tables.record`), and the tests compare revax with the record;
REVAX_LIVE_ORACLE=1 computes jax's outcomes live instead and checks the record against them.
revax runs each case eagerly (values, dtype, weak type, or the exception) and, where `trace`
is set, through `revax.eval_shape` too.

`differences(cases, want)` returns one line per case where revax differs from jax's outcomes
`want`: accepted by one and not the other, a different exception type, shape, dtype, weak type
or value.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
from typing import Callable

import ml_dtypes
import numpy as np

import revax
import revax.lax as rlax
import revax.numpy as rnp
from tests.dtype_tables import records
from tests.dtype_tables.records import Outcome
from tests.platform_tolerances import ON_TPU, tolerance

import jax  # the oracle: tests import it, revax never does
import jax.lax as jlax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Lib:
  """One implementation: the top-level module, its lax and its numpy."""
  name: str
  top: object
  lax: object
  numpy: object


JAX = Lib("jax", jax, jlax, jnp)
REVAX = Lib("revax", revax, rlax, rnp)

BF16 = np.dtype(ml_dtypes.bfloat16)
_VALUES = {"b": [True, False], "i": [2, 3], "u": [2, 3], "f": [1.5, 2.5],
           "c": [1.5 + 0.5j, 2.5 - 1j], "V": [1.5, 2.5]}  # "V": bfloat16's NumPy kind


@dataclasses.dataclass(frozen=True)
class Kind:
  """How one operand is made: `make(lib)` builds it for jax or revax."""
  name: str
  make: Callable


def _dtype_name(dtype):
  return "bfloat16" if np.dtype(dtype) == BF16 else np.dtype(dtype).name


def array_kind(dtype, shape=(2,)):
  """A strong Array of `dtype` and `shape` (named by its dtype, with the shape unless (2,))."""
  dtype = np.dtype(dtype)
  vals = np.resize(np.array(_VALUES[dtype.kind], dtype), shape)
  suffix = "" if shape == (2,) else f"[{','.join(map(str, shape))}]"
  return Kind(_dtype_name(dtype) + suffix, lambda lib: lib.numpy.asarray(vals))


def weak_kind(value, shape=(2,)):
  """A weakly typed Array holding Python scalar `value`, broadcast to `shape`."""
  name = f"weak_{type(value).__name__}" + ("" if shape == (2,) else str(list(shape)))
  return Kind(name, lambda lib: lib.lax.broadcast(value, shape))


def _host_kind(value, name):
  return Kind(name, lambda lib: value)


STRONG_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32,
                 BF16, np.float16, np.float32, np.complex64]
STRONG = [array_kind(d) for d in STRONG_DTYPES]
WEAK = [weak_kind(2), weak_kind(2.5), weak_kind(2.5 + 1j)]
PYTHON = [_host_kind(True, "py_bool"), _host_kind(2, "py_int"), _host_kind(2.5, "py_float"),
          _host_kind(2.5 + 1j, "py_complex")]
NUMPY = [_host_kind(np.array([1.5, 2.5]), "np_float64[2]"),
         _host_kind(np.array([2, 3]), "np_int64[2]"),
         _host_kind(np.float32(2.5), "np.float32"), _host_kind(np.float64(2.5), "np.float64"),
         _host_kind(np.int8(2), "np.int8")]
ZERO_D = [array_kind(np.float32, ()), array_kind(np.int32, ())]
ALL_KINDS = STRONG + WEAK + PYTHON + NUMPY + ZERO_D
BIG_INTS = [_host_kind(v, f"py_int({v})") for v in (-1, 300, 2**31, -2**31 - 1, 2**32)]
# identities of the monoids (reductions take their fast paths on these)
IDENTITIES = [_host_kind(0, "py_int(0)"), _host_kind(1, "py_int(1)"),
              _host_kind(0.0, "py_float(0.0)"), _host_kind(-np.inf, "py_float(-inf)"),
              _host_kind(False, "py_bool(False)")]


@dataclasses.dataclass(frozen=True)
class Case:
  """`fn(lib, *operands)` applied to operands of `kinds`."""
  fn_name: str
  fn: Callable
  kinds: tuple

  @property
  def label(self):
    return f"{self.fn_name}({', '.join(k.name for k in self.kinds)})"

  def operands(self, lib):
    return [_operand(k, lib) for k in self.kinds]

  def call(self, lib):
    return self.fn(lib, *self.operands(lib))


_OPERANDS = {}


def _operand(kind, lib):
  """`kind.make(lib)`, made once (Arrays are immutable; host values are never written). Keyed
  by the kind itself, not its name: kinds of different modules may share a name (the unary
  table's `weak_int[]` holds 2, the index operands' `weak_int[]` of the lax table holds 0), and
  one process runs several modules."""
  key = (kind, lib.name)
  if key not in _OPERANDS:
    _OPERANDS[key] = kind.make(lib)
  return _OPERANDS[key]


def product_cases(fn_name, fn, kinds_per_position):
  """A case for every tuple in the product of the kinds allowed at each position."""
  return [Case(fn_name, fn, ks) for ks in itertools.product(*kinds_per_position)]


# --- outcomes -------------------------------------------------------------------------------
def _builtin_exception_type(e):
  """The first builtin class in the mro of `e`'s type (jax's errors subclass builtin ones)."""
  return next(t for t in type(e).__mro__ if t.__module__ == "builtins")


def _avals(out):
  leaves = out if isinstance(out, (tuple, list)) else (out,)
  return tuple((tuple(x.shape), np.dtype(x.dtype).name, bool(getattr(x, "weak_type", False)))
               for x in leaves)


def _abstract(lib, case):
  ops = case.operands(lib)  # made outside the trace, so they are concrete values
  try:
    out = lib.top.eval_shape(lambda: case.fn(lib, *ops))
  except Exception as e:  # noqa: BLE001 (any exception type is data here)
    return Outcome(_builtin_exception_type(e), str(e))
  return Outcome(avals=_avals(out))


def _eager(lib, case):
  try:
    out = case.call(lib)
  except Exception as e:  # noqa: BLE001
    return Outcome(_builtin_exception_type(e), str(e))
  leaves = out if isinstance(out, (tuple, list)) else (out,)
  return Outcome(avals=_avals(out), values=tuple(np.asarray(x) for x in leaves))


@contextlib.contextmanager
def _unfiltered_jax_tracebacks():
  """jax filters every traceback it raises, which costs milliseconds per exception: off while
  a table runs (the exception types are the same)."""
  before = jax.config.jax_traceback_filtering
  jax.config.update("jax_traceback_filtering", "off")
  try:
    yield
  finally:
    jax.config.update("jax_traceback_filtering", before)


def jax_outcomes(cases, values_per_signature=None, values=True, eager_errors=False,
                 no_values=None):
  """jax's outcome per case: types from eval_shape, values from one jit of the accepted cases
  (of at most `values_per_signature` cases per distinct output type, where it is given: the
  jit of a costly function such as igamma over every case would take seconds). A case jax
  accepts abstractly but fails to lower or compile is an error case. Without `values` nothing
  runs: the outcomes are abstract (random results; XLA:CPU aborts the process on some
  rng_uniform dtypes). With `eager_errors`, a case jax refuses abstractly is run eagerly too,
  and a success there is the outcome (a traced-only refusal such as a concrete-value check).
  `no_values(case)` names cases whose values jax cannot compute (its compiler crashes)."""
  with _unfiltered_jax_tracebacks():
    outcomes = [_abstract(JAX, c) for c in cases]
    for i, o in enumerate(outcomes):
      if eager_errors and o.error is not None:
        eager = _eager(JAX, cases[i])
        outcomes[i] = eager if eager.error is None else o
  accepted = [i for i, o in enumerate(outcomes)
              if o.error is None and (no_values is None or not no_values(cases[i]))]
  if values_per_signature is not None:
    seen = collections.Counter()
    keep = []
    for i in accepted:
      seen[outcomes[i].avals] += 1
      if seen[outcomes[i].avals] <= values_per_signature:
        keep.append(i)
    accepted = keep
  if values:
    _jax_values(cases, accepted, outcomes)
  return outcomes


def _jax_values(cases, indices, outcomes):
  """Fill in the values of `cases[indices]` from one jax.jit of all of them; where that jit
  fails, halve the batch until the failing cases are alone, and record their errors."""
  if not indices:
    return
  # operands are made outside the jit, so Python scalars stay Python scalars inside it
  operands = [cases[i].operands(JAX) for i in indices]

  def run_all(arrays):
    res = []
    for i, ops in zip(indices, arrays, strict=True):
      out = cases[i].fn(JAX, *ops)
      res.append(tuple(out) if isinstance(out, (tuple, list)) else (out,))
    return res

  try:
    results = _jit_with_static_scalars(run_all, operands)
  except Exception as e:  # noqa: BLE001
    if len(indices) == 1:
      outcomes[indices[0]] = Outcome(_builtin_exception_type(e), str(e))
      return
    half = len(indices) // 2
    _jax_values(cases, indices[:half], outcomes)
    _jax_values(cases, indices[half:], outcomes)
    return
  for i, vals in zip(indices, results, strict=True):
    outcomes[i].values = tuple(np.asarray(v) for v in vals)


def _jit_with_static_scalars(run_all, operands):
  """`run_all(operands)` under jax.jit, the Arrays traced and everything else (Python and NumPy
  scalars, NumPy arrays) closed over as it is, so each keeps its own typing rules."""
  flat = [(i, j) for i, ops in enumerate(operands) for j, x in enumerate(ops)
          if isinstance(x, jax.Array)]

  def traced(arrays):
    ops = [list(o) for o in operands]
    for (i, j), a in zip(flat, arrays, strict=True):
      ops[i][j] = a
    return run_all(ops)

  with _unfiltered_jax_tracebacks():
    return jax.jit(traced)([operands[i][j] for i, j in flat])


def _tolerance(dtype_name):
  return {"float16": 2e-3, "bfloat16": 1.6e-2, "complex64": 2e-6}.get(dtype_name, 2e-6)


# functions whose values the chip computes with its own approximations where revax runs on a TPU
# (platform_tolerances.TRANSCENDENTAL: igamma's eager values differed by 1.4e-5 on 2026-12-06)
_CHIP_APPROXIMATIONS = {"igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "lgamma",
                        "digamma", "polygamma", "zeta", "betainc", "regularized_incomplete_beta"}


def _value_tolerance(case, dtype_name):
  tol = _tolerance(dtype_name)
  if ON_TPU and case.label.split("(", 1)[0] in _CHIP_APPROXIMATIONS:
    tol = tolerance(tol, None)[0]
  return tol


def _compare(case, want: Outcome, got: Outcome, how: str):
  if want.error is not None or got.error is not None:
    if want.error is got.error:
      return None
    return f"{case.label} [{how}]: jax {want.describe()}, revax {got.describe()}"
  if want.avals != got.avals:
    return f"{case.label} [{how}]: jax {want.describe()}, revax {got.describe()}"
  if want.values is None or got.values is None:
    return None
  for (_, dtype, _), w, g in zip(want.avals, want.values, got.values, strict=True):
    if dtype in ("float16", "bfloat16", "float32", "complex64", "float64", "complex128"):
      w64, g64 = w.astype(np.complex128), g.astype(np.complex128)
      # values are of order 1: an absolute floor of a few ulps covers a rounded zero
      tol = _value_tolerance(case, dtype)
      ok = np.allclose(g64, w64, rtol=tol, atol=tol / 16,
                       equal_nan=True)
    else:
      ok = np.array_equal(w, g)
    if not ok:
      return f"{case.label} [{how}]: values jax {w.tolist()}, revax {g.tolist()}"
  return None


def differences(cases, want, trace: bool = True, values=True):
  """One line per case where revax differs from jax's outcomes `want` (eagerly, and traced
  where `trace`; only traced without `values`)."""
  diffs = []
  for case, w in zip(cases, want, strict=True):
    d = _compare(case, w, _eager(REVAX, case), "eager") if values else None
    if d is None and (trace or not values):
      d = _compare(case, dataclasses.replace(w, values=None), _abstract(REVAX, case), "traced")
    if d is not None:
      diffs.append(d)
  return diffs


@dataclasses.dataclass(frozen=True)
class Table:
  """A named family of cases (`make()` builds them) and how to compare them."""
  name: str
  make: Callable
  values_per_signature: int | None = None
  trace: bool = True
  values: bool = True  # False for random results
  eager_errors: bool = False  # jax refuses some cases only when tracing (see jax_outcomes)
  known: tuple = ()  # (case label, why revax differs there on purpose) pairs
  no_values: Callable | None = None  # cases whose values jax cannot compute (see jax_outcomes)

  def jax_outcomes(self, cases):
    """jax's outcome of each case, computed live (what `records` holds)."""
    return jax_outcomes(cases, self.values_per_signature, self.values, self.eager_errors,
                        self.no_values)

  def oracle(self, suite_file, cases):
    """(jax's outcome of each case, lines where the record differs from live jax): recorded
    outcomes and no lines by default; with REVAX_LIVE_ORACLE=1, live outcomes and the record
    checked against them. `suite_file` is the test module's file (its record's name)."""
    if not records.LIVE:
      return records.recorded_outcomes(suite_file, self.name, cases), []
    live = self.jax_outcomes(cases)
    return live, records.stale_outcomes(suite_file, self.name, cases, live)

  def differences(self, suite_file):
    """Every differing case, the known ones included."""
    cases = self.make()
    want, _ = self.oracle(suite_file, cases)
    return differences(cases, want, self.trace, self.values)

  def check(self, suite_file, show: int = 40):
    """Fail on a differing case that is not known, and on a known case that no longer
    differs; print the known ones with their reasons. With REVAX_LIVE_ORACLE=1, fail too
    where the record of jax's outcomes differs from live jax."""
    cases = self.make()
    want, stale_record = self.oracle(suite_file, cases)
    diffs = differences(cases, want, self.trace, self.values)
    known = dict(self.known)
    for label, reason in known.items():
      print(f"known difference: {label}: {reason}")
    unexpected = [d for d in diffs if d.split(" [", 1)[0] not in known]
    assert not unexpected, (f"{len(unexpected)} of {len(cases)} cases differ from jax:\n  "
                            + "\n  ".join(unexpected[:show]))
    stale = set(known) - {d.split(" [", 1)[0] for d in diffs}
    assert not stale, f"known differences that no longer differ: {sorted(stale)}"
    assert not stale_record, (
        f"the record of {self.name!r} differs from live jax in {len(stale_record)} cases "
        f"({records.rerecord_hint(suite_file)}):\n  " + "\n  ".join(stale_record[:20]))


def table_params(tables):
  """pytest parameters, one per table, with the table's name as id."""
  import pytest
  return [pytest.param(t, id=t.name) for t in tables]
