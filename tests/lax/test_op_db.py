"""Generic suites over the op database: NumPy reference, jit vs eager, jaxpr checks, coverage."""
import importlib
import os
import pkgutil
import zlib

import numpy as np
import pytest

import revax
from revax._src.core.trace import Primitive
from revax._src.core.typecheck import check_jaxpr
from tests.lax.op_db import all_records, assert_close
from tests import platform_tolerances
from tests.plugin_differences import skip_on_plugins_that_differ

RECORDS = all_records()


# Inputs are seeded by a stable hash of the record's name (str hashes are salted per process,
# which would draw different inputs on every run). REVAX_OPDB_SEED=N draws another fixed set,
# for soak runs that look for inputs a rule or tolerance does not handle.
_SEED_OFFSET = int(os.environ.get("REVAX_OPDB_SEED", "0"))


def _inputs(record):
  return record.args(np.random.default_rng([zlib.crc32(record.name.encode()), _SEED_OFFSET]))


# Records whose jit result differs on some plugins (tests/plugin_differences.py).
_PLUGIN_DIFFERENCES = {"digamma_f32_edges": "digamma_at_zero"}


def _with_platform_skips(records, plugins=False):
  """The records with their skips on a TPU (tests/platform_tolerances.py) and, with `plugins`,
  on the plugins whose jit results differ (tests/plugin_differences.py)."""
  return [pytest.param(r, id=str(r), marks=_marks(r, plugins)) for r in records]


def _marks(record, plugins):
  marks = platform_tolerances.record_marks(record)
  if plugins and record.name in _PLUGIN_DIFFERENCES:
    marks.append(skip_on_plugins_that_differ(_PLUGIN_DIFFERENCES[record.name]))
  return marks


@pytest.mark.parametrize("record", _with_platform_skips(RECORDS), ids=str)
def test_against_numpy_reference(record):
  args = _inputs(record)
  expected = record.ref(*args)
  actual = record.fun(*args)
  rtol, atol = platform_tolerances.record_tolerance(record)
  assert_close(actual, expected, rtol, atol, record.check_dtype, record.name)


@pytest.mark.parametrize("record", _with_platform_skips(RECORDS, plugins=True), ids=str)
def test_jit_matches_eager(record):
  """Eager runs the NumPy implementation, jit runs XLA: two independent implementations."""
  args = _inputs(record)
  eager = record.fun(*args)
  jitted = revax.jit(record.fun)(*args)
  rtol, atol = platform_tolerances.record_tolerance(record)
  assert_close(jitted, eager, rtol, atol, True, record.name)


@pytest.mark.parametrize("record", _with_platform_skips(RECORDS), ids=str)
def test_jaxpr_typechecks_and_binds_primitive(record):
  args = _inputs(record)
  closed = revax.make_jaxpr(record.fun)(*args)
  check_jaxpr(closed)
  names = {e.primitive.name for e in closed.jaxpr.eqns}
  assert record.primitive in names, f"{record.name}: expected {record.primitive} in {names}"


def _lax_primitives():
  import revax._src.lax as lax_pkg
  prims = {}
  for info in pkgutil.iter_modules(lax_pkg.__path__):
    mod = importlib.import_module(f"revax._src.lax.{info.name}")
    for v in vars(mod).values():
      if isinstance(v, Primitive):
        prims[v.name] = v
  return prims


# Primitives that cannot have an op-database record, and the suite that tests them instead.
_TESTED_ELSEWHERE = {
    name: ("a collective over a named axis exists only inside the named vmap/shard_map that binds "
           "it, which replaces it by ordinary operations (so no jaxpr of a callable record binds "
           "it); tests/lax/test_parallel.py compares values, grads, jvps, nesting and loops with "
           "jax, and tests/sharding with jax's shard_map")
    for name in ("psum", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "all_to_all",
                 "axis_index")}
_TESTED_ELSEWHERE.update({
    name: ("a typed collective or cast that exists only inside a shard_map body with check_vma "
           "(pvary, psum_invariant, all_gather_invariant); tests/sharding/test_vma.py compares "
           "the types, values, grads and jaxprs with jax's")
    for name in ("pvary", "psum_invariant", "all_gather_invariant")})
_TESTED_ELSEWHERE.update({
    name: ("a collective over a named axis (as above); tests/sharding/test_collectives_more.py "
           "checks values, JVP and VJP against jax's documented equivalents on 4 devices")
    for name in ("pbroadcast", "ragged_all_to_all")})
_TESTED_ELSEWHERE.update({
    name: ("a mutable array ref primitive: its operands and results are Refs (effects), which "
           "the database's array-in/array-out suites do not model; tests/lax/test_state.py runs "
           "hand-written and 60 generated ref programs eager, jit, vmap and grad against jax")
    for name in ("new_ref", "get", "swap", "addupdate", "freeze")})
_TESTED_ELSEWHERE["dim_as_value"] = (
    "a symbolic dimension size as a value: bound only while tracing at symbolic shapes (a "
    "concrete size is a constant), which the database's concrete inputs cannot reach; "
    "tests/export/test_shape_poly.py runs it through every rule against jax.export")
_TESTED_ELSEWHERE.update({
    name: ("an XLA token primitive: its result (and after_all's operands) is a token, not an "
           "array, which the database's array-in/array-out suites do not model; "
           "tests/lax/test_tokens.py compares jaxprs, StableHLO, eager and jitted results, "
           "control flow, grads, vmap and errors with jax")
    for name in ("create_token", "after_all")})
_TESTED_ELSEWHERE.update({
    name: ("a typed-PRNG-key primitive: its operands or results are key arrays (an extended "
           "dtype, key<fry>), which the database's array-in/array-out suites do not model; "
           "tests/random/test_key_primitives.py compares jaxprs with jax's and values bit for "
           "bit under jit, vmap, scan and grad for every PRNG implementation")
    for name in ("random_seed", "random_split", "random_fold_in", "random_bits", "random_wrap",
                 "random_unwrap", "random_clone")})
_TESTED_ELSEWHERE["inspect_sharding"] = (
    "a debugging primitive that calls back with a value's sharding and has no array result; "
    "tests/sharding/test_inspect_sharding.py compares it with jax's on 4 devices")


def test_every_lax_primitive_has_records():
  covered = {r.primitive for r in RECORDS}
  assert not covered & set(_TESTED_ELSEWHERE), "records exist now: drop them from the list"
  missing = sorted(set(_lax_primitives()) - covered - set(_TESTED_ELSEWHERE))
  assert not missing, f"primitives without op-database records: {missing}"
