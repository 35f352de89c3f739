"""Class 4 of issue 33: low-precision and unusual dtypes, against jax 0.10.2.

(a) The dtype hierarchy: `jnp.issubdtype` and `jax.dtypes.issubdtype` of every scalar type of
    jax.numpy (float16, bfloat16, every float8/float4 variant, int2/int4/uint2/uint4, the
    standard ones, typed PRNG keys, float0) against every abstract category and every dtype;
    `finfo`/`iinfo` of each; `jnp.dtype` and `jax.dtypes.canonicalize_dtype` of each;
    `promote_types` and `result_type` of every pair (weak Python scalars included).
(b) Creation and element-wise functions on float8 and int4 arrays: what jax accepts (values,
    dtype) and what it refuses (the exception type).
(c) linalg (`jnp.linalg.*`, `lax.linalg.*`) on float16 and bfloat16: result dtypes, values to
    the dtype's precision, or the exception type.
(d) Python ints out of a small integer type's range with every binary operator and binary
    ufunc of jax.numpy, eagerly and under jit: where jax raises OverflowError and where it wraps.

jax's outcomes for (b)-(d) are recorded in tests/edges/expected/ (they compile): re-record with
`python -m tests.edges.record test_dtypes_lowp`; (a) runs jax live (no compilation).
"""
from __future__ import annotations

import builtins
import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.edges.harness import LIVE, Leaf, Raised, builtin_base, difference, outcome, recorded
from tests.platform_tolerances import NARROW_FLOATS, ON_TPU, TPU_RTOL

jax = pytest.importorskip("jax")
jnp = jax.numpy

LIBS = (jax, revax)
NP = {jax: jnp, revax: rnp}

NARROW = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
          "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "int2", "int4",
          "uint2", "uint4"]
STANDARD = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
SCALAR_TYPES = NARROW + STANDARD
CATEGORIES = ["generic", "number", "inexact", "floating", "complexfloating", "integer",
              "signedinteger", "unsignedinteger", "bool_", "character", "flexible"]


def _run(fn):
  try:
    return ("ok", fn())
  except Exception as e:  # noqa: BLE001 -- the type is the datum
    return ("raises", builtin_base(type(e)).__name__)


def _key_dtype(lib):
  return lib.random.key(0).dtype


def _operands(lib):
  """name -> what a program passes as a dtype: the scalar types of lib.numpy, NumPy's dtypes
  (ml_dtypes' for the narrow ones), names, and typed keys' dtype and float0."""
  m = NP[lib]
  out = {f"jnp.{n}": getattr(m, n) for n in SCALAR_TYPES}
  out.update({f"np.dtype({n})": np.dtype(getattr(ml_dtypes, n, None) or n.rstrip("_"))
              for n in SCALAR_TYPES})
  out.update({f"'{n}'": n for n in NARROW + ["bfloat16", "float16"]})
  out["key<fry>"] = _key_dtype(lib)
  out["float0"] = lib.dtypes.float0
  out["f32 array"] = NP[lib].ones(2)  # (an array stands for its dtype)
  out["key array"] = lib.random.key(0)  # (ValueError: NumPy has no dtype for it, in jax too)
  return out


def _categories(lib):
  m = NP[lib]
  out = {f"jnp.{c}": getattr(m, c) for c in CATEGORIES}
  out.update({"prng_key": lib.dtypes.prng_key, "extended": lib.dtypes.extended,
              "int": int, "float": float, "complex": complex, "bool": bool})
  return out


def _hierarchy(lib):
  ops, cats = _operands(lib), _categories(lib)
  out = {}
  for (an, a), (bn, b) in itertools.product(ops.items(), list(cats.items()) + list(ops.items())):
    out[f"jnp.issubdtype({an}, {bn})"] = _run(lambda: bool(NP[lib].issubdtype(a, b)))
    out[f"dtypes.issubdtype({an}, {bn})"] = _run(lambda: bool(lib.dtypes.issubdtype(a, b)))
  return out


def test_issubdtype_as_jax():
  expected, actual = _hierarchy(jax), _hierarchy(revax)
  diffs = [f"{k}: revax {actual[k]}, jax {v}" for k, v in expected.items() if actual[k] != v]
  assert not diffs, f"{len(diffs)} of {len(expected)} differ:\n" + "\n".join(diffs[:60])


_FINFO = ("bits", "eps", "epsneg", "max", "min", "tiny", "smallest_normal",
          "smallest_subnormal", "resolution", "nmant", "nexp", "maxexp", "minexp", "dtype")


def _info(lib):
  out = {}
  m = NP[lib]
  for name, x in _operands(lib).items():
    for fn in ("finfo", "iinfo"):
      def facts(fn=fn, x=x):
        info = getattr(m, fn)(x)
        attrs = _FINFO if fn == "finfo" else ("bits", "min", "max", "dtype")
        return tuple(str(getattr(info, a, None)) for a in attrs)
      out[f"{fn}({name})"] = _run(facts)
    out[f"jnp.dtype({name})"] = _run(lambda x=x: str(m.dtype(x)))
    out[f"canonicalize_dtype({name})"] = _run(lambda x=x: str(lib.dtypes.canonicalize_dtype(x)))
    out[f"itemsize_bits({name})"] = _run(lambda x=x: lib.dtypes.itemsize_bits(x))
  return out


def test_finfo_iinfo_and_dtype_canonicalization_as_jax():
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    expected, actual = _info(jax), _info(revax)
  diffs = [f"{k}: revax {actual[k]}, jax {v}" for k, v in expected.items() if actual[k] != v]
  assert not diffs, f"{len(diffs)} of {len(expected)} differ:\n" + "\n".join(diffs[:60])


def _promotion(lib):
  m = NP[lib]
  types = {n: getattr(m, n) for n in SCALAR_TYPES}
  out = {}
  for (an, a), (bn, b) in itertools.product(types.items(), repeat=2):
    out[f"promote_types({an}, {bn})"] = _run(lambda: str(m.promote_types(a, b)))
    out[f"result_type({an}, {bn})"] = _run(lambda: str(m.result_type(a, b)))
  for (an, a), (sn, s) in itertools.product(types.items(), [("1", 1), ("1.0", 1.0),
                                                            ("1j", 1j), ("True", True)]):
    out[f"result_type({an}, {sn})"] = _run(lambda: str(m.result_type(a, s)))
    out[f"dtypes.result_type({an}, {sn}) weak"] = _run(
        lambda: tuple(map(str, lib.dtypes.result_type(a, s, return_weak_type_flag=True))))
  return out


def test_promotion_among_narrow_types_as_jax():
  expected, actual = _promotion(jax), _promotion(revax)
  diffs = [f"{k}: revax {actual[k]}, jax {v}" for k, v in expected.items() if actual[k] != v]
  assert not diffs, f"{len(diffs)} of {len(expected)} differ:\n" + "\n".join(diffs[:60])


# --- (b) creation and element-wise functions on float8 / int4 arrays ---------------------------

# (int2 and uint2 are left out: jax 0.10.2's XLA:CPU aborts the process concatenating them and
# sorts them wrongly, so jax gives no outcome to compare with)
ARRAY_TYPES = [n for n in NARROW if n not in ("int2", "uint2")]
JIT_TYPES = ("float8_e4m3fn", "float8_e5m2", "int4", "uint4", "float4_e2m1fn")


def _values(dname):
  if dname == "float8_e8m0fnu":  # (powers of two only, no sign, no zero)
    return np.array([0.5, 1., 2., 4., 8.], np.float32)
  if dname.startswith("uint"):
    return np.array([0., 1., 2., 3., 1.], np.float32)
  if dname == "int2":
    return np.array([0., 1., -2., -1., 1.], np.float32)
  return np.array([0.5, 1., -2., 3., 0.], np.float32) if "float" in dname \
      else np.array([1., 2., -3., 0., 5.], np.float32)


def _narrow_calls():
  """name -> call(m, x, d): m the numpy module, x an array of the narrow dtype d."""
  calls = {
      "zeros": lambda m, x, d: m.zeros((3,), d), "ones": lambda m, x, d: m.ones((2, 2), d),
      "full": lambda m, x, d: m.full((3,), 2, d),
      "array of list": lambda m, x, d: m.array([1, 2, 0], d),
      "asarray": lambda m, x, d: m.asarray(x),
      "arange": lambda m, x, d: m.arange(3, dtype=d),
      "eye": lambda m, x, d: m.eye(2, dtype=d),
      "linspace": lambda m, x, d: m.linspace(0, 2, 3, dtype=d),
      "zeros_like": lambda m, x, d: m.zeros_like(x),
      "full_like": lambda m, x, d: m.full_like(x, 1),
      "astype float32": lambda m, x, d: m.asarray(x).astype(m.float32),
      "float32 astype": lambda m, x, d: m.asarray(_values(np.dtype(d).name)).astype(d),
      "x + 1": lambda m, x, d: m.asarray(x) + 1, "x * 2.0": lambda m, x, d: m.asarray(x) * 2.0,
      "1.0 - x": lambda m, x, d: 1.0 - m.asarray(x), "x ** 2": lambda m, x, d: m.asarray(x) ** 2,
      "x / 2": lambda m, x, d: m.asarray(x) / 2,
      "x + float32": lambda m, x, d: m.asarray(x) + m.ones(5, m.float32),
      "x + int8": lambda m, x, d: m.asarray(x) + m.ones(5, m.int8),
      "x + bfloat16": lambda m, x, d: m.asarray(x) + m.ones(5, m.bfloat16),
      "x == x": lambda m, x, d: m.asarray(x) == x, "x < 1": lambda m, x, d: m.asarray(x) < 1,
      "where": lambda m, x, d: m.where(m.asarray(x) > 0, x, 0),
      "clip": lambda m, x, d: m.clip(x, 0, 2), "sort": lambda m, x, d: m.sort(x),
      "concatenate": lambda m, x, d: m.concatenate([x, x]),
      "reverse": lambda m, x, d: m.asarray(x)[::-1],
      "reshape": lambda m, x, d: m.reshape(m.asarray(x)[:4], (2, 2)),
      "dot": lambda m, x, d: m.dot(x, x), "sum": lambda m, x, d: m.sum(x),
      "max": lambda m, x, d: m.max(x), "mean": lambda m, x, d: m.mean(x),
      "prod": lambda m, x, d: m.prod(x), "argmax": lambda m, x, d: m.argmax(x),
      "cumsum": lambda m, x, d: m.cumsum(x),
  }
  for u in ("negative", "positive", "abs", "sign", "floor", "ceil", "round", "sqrt", "exp",
            "log", "sin", "tanh", "square", "reciprocal", "isnan", "isfinite", "logical_not",
            "invert", "exp2", "log1p"):
    calls[u] = lambda m, x, d, u=u: getattr(m, u)(x)
  for b in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "equal", "less",
            "power", "floor_divide", "remainder", "arctan2", "bitwise_and", "left_shift",
            "copysign", "nextafter"):
    calls[b] = lambda m, x, d, b=b: getattr(m, b)(x, m.asarray(x)[::-1])
  return calls


def _narrow_cases():
  """(key, call(lib)) for every call on every narrow dtype eagerly, and under jit for five."""
  cases = []
  for (name, f), dname in itertools.product(_narrow_calls().items(), ARRAY_TYPES):
    def eager(lib, f=f, dname=dname):
      d = getattr(NP[lib], dname)
      return f(NP[lib], _values(dname).astype(np.dtype(d)), d)

    cases.append((f"{name} [{dname}]", eager))
    if dname in JIT_TYPES:
      def jitted(lib, f=f, dname=dname):
        d = getattr(NP[lib], dname)
        return lib.jit(lambda x: f(NP[lib], x, d))(_values(dname).astype(np.dtype(d)))

      cases.append((f"{name} [{dname}] jit", jitted))
  return cases


NARROW_CASES = _narrow_cases()
NARROW_KEYS = sorted(k for k, _ in NARROW_CASES)
NARROW_SHARDS = 3

_JAX_IINFO = ("jax fails inside its implementation (np.iinfo of int4: ValueError 'Invalid "
              "integer data type'); revax computes it")
_E8M0 = ("float8_e8m0fnu has no zero, sign or infinity: jax's identities (0, -inf) become NaN "
         "inside its implementation; revax's NumPy computation has no identity to start from")
# Where revax differs from jax on purpose, with the reason (a listed case that starts agreeing
# fails the test).
KNOWN_NARROW = {
    **{f"{f} [{d}]{j}": _JAX_IINFO for f in ("sum", "prod", "power") for d in ("int4", "uint4")
       for j in ("", " jit")},
    "argmax [float8_e8m0fnu]": _E8M0, "cumsum [float8_e8m0fnu]": _E8M0,
    "nextafter [float8_e8m0fnu]": "jax steps the bits of a type without a sign bit as if it had "
                                  "one (nextafter(1, 2) is 0.25); revax steps to the next value",
}


# Where a TPU computes otherwise than XLA:CPU (the oracle's platform), measured on the chip
# 2026-12-06: narrow floats (platform_tolerances.NARROW_FLOATS); transcendental functions of
# int4/uint4 (float32 results) compare at TPU_RTOL (TRANSCENDENTAL).
KNOWN_NARROW_TPU = dict.fromkeys([
    "linspace [float8_e8m0fnu]", "log [float4_e2m1fn] jit", "remainder [float4_e2m1fn] jit",
    "sqrt [float4_e2m1fn] jit", "exp2 [float8_e4m3fn] jit", "exp2 [float8_e5m2] jit",
    "log1p [float4_e2m1fn] jit", "mean [float4_e2m1fn] jit", "exp2 [float4_e2m1fn] jit"],
    NARROW_FLOATS)


@pytest.mark.parametrize("shard", range(NARROW_SHARDS))
def test_narrow_arrays_as_jax(shard):
  keys = set(NARROW_KEYS[shard::NARROW_SHARDS])
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    expected = _recorded_or_live(keys, NARROW_CASES)
    diffs = []
    for key, call in NARROW_CASES:
      if key in keys:
        d = difference(_half_as_float32(expected[key]), _half_as_float32(outcome(call, revax)),
                       rtol=TPU_RTOL if ON_TPU else 1e-6)
        if d:
          diffs.append(f"{key}: {d}")
  known = KNOWN_NARROW | KNOWN_NARROW_TPU if ON_TPU else KNOWN_NARROW
  new = [d for d in diffs if d.split(": ")[0] not in known]
  assert not new, f"{len(new)} of {len(keys)} differ:\n" + "\n".join(new)
  if ON_TPU:
    return  # (KNOWN_NARROW is what the CPU computes: a case may agree with jax on a TPU)
  stale = {k for k in KNOWN_NARROW if k in keys} - {d.split(": ")[0] for d in diffs}
  assert not stale, f"these now agree with jax: remove them from KNOWN_NARROW: {sorted(stale)}"


def test_known_narrow_differences_are_cases():
  assert set(KNOWN_NARROW) <= set(NARROW_KEYS) and set(KNOWN_NARROW_TPU) <= set(NARROW_KEYS)


# --- (c) linalg on float16 and bfloat16 ----------------------------------------------------------

_SPD = np.array([[4., 1., .5], [1., 3., .25], [.5, .25, 2.]], np.float32)
_RECT = np.array([[1., 2.], [.5, -1.], [2., 0.]], np.float32)
_TRI = np.array([[2., 0., 0.], [1., 3., 0.], [.5, .25, 4.]], np.float32)


def _linalg_cases():
  """(key, call(lib)) for every function of jax.numpy.linalg and jax.lax.linalg on float16 and
  bfloat16 matrices (and the determinant's 2x2/3x3/4x4 paths in float32 too)."""
  def jnl(lib):
    return NP[lib].linalg

  def lxl(lib):
    return lib.lax.linalg

  def mats(dt):
    return _SPD.astype(dt), _RECT.astype(dt), _TRI.astype(dt)

  numpy_calls = {
      "cholesky": lambda m, a, r, t: m.cholesky(a), "cond": lambda m, a, r, t: m.cond(a),
      "cross": lambda m, a, r, t: m.cross(a, t), "det": lambda m, a, r, t: m.det(a),
      "diagonal": lambda m, a, r, t: m.diagonal(a), "eig": lambda m, a, r, t: m.eig(a),
      "eigh": lambda m, a, r, t: m.eigh(a), "eigvals": lambda m, a, r, t: m.eigvals(a),
      "eigvalsh": lambda m, a, r, t: m.eigvalsh(a), "inv": lambda m, a, r, t: m.inv(a),
      "lstsq": lambda m, a, r, t: m.lstsq(a, r), "matmul": lambda m, a, r, t: m.matmul(a, r),
      "matrix_norm": lambda m, a, r, t: m.matrix_norm(a),
      "matrix_power": lambda m, a, r, t: m.matrix_power(a, 3),
      "matrix_power -2": lambda m, a, r, t: m.matrix_power(a, -2),
      "matrix_rank": lambda m, a, r, t: m.matrix_rank(a),
      "matrix_transpose": lambda m, a, r, t: m.matrix_transpose(r),
      "multi_dot": lambda m, a, r, t: m.multi_dot([a, t, r]), "norm": lambda m, a, r, t: m.norm(a),
      "norm 2": lambda m, a, r, t: m.norm(a, 2), "norm nuc": lambda m, a, r, t: m.norm(a, "nuc"),
      "outer": lambda m, a, r, t: m.outer(a[0], r[0]), "pinv": lambda m, a, r, t: m.pinv(r),
      "qr": lambda m, a, r, t: m.qr(r), "slogdet": lambda m, a, r, t: m.slogdet(a),
      "solve": lambda m, a, r, t: m.solve(a, r), "svd": lambda m, a, r, t: m.svd(r),
      "svdvals": lambda m, a, r, t: m.svdvals(r),
      "tensordot": lambda m, a, r, t: m.tensordot(a, t), "tensorinv": lambda m, a, r, t:
      m.tensorinv(a.reshape(3, 3), ind=1), "tensorsolve": lambda m, a, r, t:
      m.tensorsolve(a, r[:, 0]), "trace": lambda m, a, r, t: m.trace(a),
      "vecdot": lambda m, a, r, t: m.vecdot(a, t), "vector_norm": lambda m, a, r, t:
      m.vector_norm(a),
      "det 2x2": lambda m, a, r, t: m.det(a[:2, :2]), "det 4x4": lambda m, a, r, t:
      m.det(np.kron(np.eye(2, dtype=np.float32), a[:2, :2]).astype(a.dtype)),
      "det batch 3x3": lambda m, a, r, t: m.det(np.stack([a, t])),
  }
  lax_calls = {
      "cholesky": lambda m, a, r, t: m.cholesky(a), "eig": lambda m, a, r, t: m.eig(a),
      "eigh": lambda m, a, r, t: m.eigh(a), "hessenberg": lambda m, a, r, t: m.hessenberg(a),
      "householder_product": lambda m, a, r, t: m.householder_product(r, r[0]),
      "lu": lambda m, a, r, t: m.lu(a), "qr": lambda m, a, r, t: m.qr(r),
      "schur": lambda m, a, r, t: m.schur(a), "svd": lambda m, a, r, t: m.svd(r),
      "symmetric_product": lambda m, a, r, t: m.symmetric_product(r, a),
      "triangular_solve": lambda m, a, r, t: m.triangular_solve(t, r, left_side=True,
                                                                lower=True),
      "tridiagonal": lambda m, a, r, t: m.tridiagonal(a),
      "tridiagonal_solve": lambda m, a, r, t: m.tridiagonal_solve(a[0], a[1], a[2],
                                                                  r[:, :1]),
      "cholesky_update": lambda m, a, r, t: m.cholesky_update(t.T, a[0]),
      "qdwh": lambda m, a, r, t: m.qdwh(a),
  }
  cases = []
  for dt in (np.float16, ml_dtypes.bfloat16):
    for name, f in numpy_calls.items():
      cases.append((f"jnp.linalg.{name} [{np.dtype(dt).name}]",
                    lambda lib, f=f, dt=dt: f(jnl(lib), *mats(dt))))
    for name, f in lax_calls.items():
      cases.append((f"lax.linalg.{name} [{np.dtype(dt).name}]",
                    lambda lib, f=f, dt=dt: f(lxl(lib), *mats(dt))))
  for name in ("det", "det 2x2", "det 4x4", "det batch 3x3"):
    f = numpy_calls[name]
    cases.append((f"jnp.linalg.{name} [float32]",
                   lambda lib, f=f: f(jnl(lib), *mats(np.float32))))
  return cases


LINALG_CASES = _linalg_cases()


def _half_as_float32(out):
  """`out` with the values of ml_dtypes' floats (bfloat16, float8_*, float4_*) held as float32
  (dtypes kept), so that they are compared as float16 ones are, NaN matching NaN
  (harness.difference compares ml_dtypes' values bit for bit)."""
  if isinstance(out, Raised):
    return out
  return [Leaf(x.dtype, x.weak_type, x.shape, x.value.astype(np.float32))
          if x.dtype.kind == "V" and x.dtype.name.startswith(("bfloat", "float")) else x
          for x in out]


def test_linalg_on_half_precision_as_jax():
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    expected = _recorded_or_live({k for k, _ in LINALG_CASES}, LINALG_CASES)
    diffs = []
    for key, call in LINALG_CASES:
      rtol = 1e-5 if "float32" in key else 3e-2  # (half precision: a few ulps of 2**-8)
      d = difference(_half_as_float32(expected[key]), _half_as_float32(outcome(call, revax)),
                     rtol=rtol)
      if d:
        diffs.append(f"{key}: {d}")
  assert not diffs, f"{len(diffs)} of {len(LINALG_CASES)} differ:\n" + "\n".join(diffs)


# --- (d) Python ints out of a small integer type's range ----------------------------------------

BINARY_UFUNCS = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide",
                 "remainder", "mod", "fmod", "power", "pow", "float_power", "maximum", "minimum",
                 "fmax", "fmin", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                 "right_shift", "bitwise_left_shift", "bitwise_right_shift", "equal",
                 "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
                 "logical_or", "logical_xor", "arctan2", "atan2", "hypot", "copysign",
                 "nextafter", "heaviside", "gcd", "lcm", "logaddexp", "logaddexp2", "divmod",
                 "ldexp"]
OPERATORS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
             "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
             "**": lambda a, b: a ** b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
             "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
             "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
             "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
SMALL_INTS = {"u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32,
              "i32": np.int32}
BIG = {"300": 300, "-1": -1, "-200": -200, "2**31": 2 ** 31, "2**32": 2 ** 32,
       "-2**31-1": -2 ** 31 - 1}


def _small_int_operand(lib, dname, form):
  """A uint8/int8/... operand: an array of 3 values, or a 0-d scalar of the type."""
  values = np.array([1, 2, 5], SMALL_INTS[dname])
  if form == "scalar":
    return getattr(NP[lib], np.dtype(SMALL_INTS[dname]).name)(5)
  return NP[lib].asarray(values)


def _overflow_cases():
  """(key, call(lib), traced) for every binary operator (both operand orders) and binary
  ufunc with a small-int operand and a Python int, eagerly (values) and traced (eval_shape)."""
  cases = []
  fns = [(f"x {op} v", lambda lib, f=f: (lambda x, v: f(x, v))) for op, f in OPERATORS.items()]
  fns += [(f"v {op} x", lambda lib, f=f: (lambda x, v: f(v, x))) for op, f in OPERATORS.items()]
  fns += [(f"{u}(x, v)", lambda lib, u=u: (lambda x, v: getattr(NP[lib], u)(x, v)))
          for u in BINARY_UFUNCS]
  for (fname, fn), dname, (vname, v) in itertools.product(fns, SMALL_INTS, BIG.items()):
    form = "scalar" if "*" in fname and dname in ("u8", "i8") else "array"
    key = f"{fname} [x: {dname} {form}, v = {vname}]"

    def eager(lib, fn=fn, dname=dname, form=form, v=v):
      return fn(lib)(_small_int_operand(lib, dname, form), v)

    def traced(lib, fn=fn, dname=dname, form=form, v=v):
      x = _small_int_operand(lib, dname, form)
      out = lib.eval_shape(lambda x: fn(lib)(x, v), x)
      return [(str(o.dtype), bool(o.weak_type), o.shape) for o in lib.tree_util.tree_leaves(out)]

    cases.append((key + " eager", eager))
    cases.append((key + " jit", traced))
  return cases


OVERFLOW_CASES = _overflow_cases()


def _overflow_outcome(lib, key, call):
  if key.endswith(" jit"):
    r = _run(lambda: call(lib))
    return r if r[0] == "raises" else ("ok", [list(x) for x in r[1]])
  return outcome(call, lib)


def oracle_cases():
  """(key, thunk computing jax's outcome) per recorded case, for tests/edges/record.py."""
  out = [(key, lambda call=call: outcome(call, jax)) for key, call in LINALG_CASES + NARROW_CASES]
  for key, call in OVERFLOW_CASES:
    if key.endswith(" jit"):
      out.append((key, lambda key=key, call=call: _as_record(_overflow_outcome(jax, key, call))))
    else:
      out.append((key, lambda call=call: outcome(call, jax)))
  return out


def _as_record(r):
  """A traced outcome as an outcome record: Raised, or one Leaf per output's (dtype, weak)."""
  if r[0] == "raises":
    return Raised(getattr(builtins, r[1]), "")
  return [Leaf(np.dtype(d), w, tuple(s), np.zeros(s, np.dtype(d))) for d, w, s in r[1]]


def _recorded_or_live(keys, cases):
  if LIVE:
    return {k: t() for k, t in oracle_cases() if k in keys}
  return recorded(__file__)


SHARDS = 3
OVERFLOW_KEYS = sorted(k for k, _ in OVERFLOW_CASES)


@pytest.mark.parametrize("shard", range(SHARDS))
def test_python_ints_out_of_range_as_jax(shard):
  keys = set(OVERFLOW_KEYS[shard::SHARDS])
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    expected = _recorded_or_live(keys, OVERFLOW_CASES)
    diffs = []
    for key, call in OVERFLOW_CASES:
      if key not in keys:
        continue
      actual = _overflow_outcome(revax, key, call)
      if key.endswith(" jit"):
        actual = _as_record(actual)
      d = difference(expected[key], actual)
      if d:
        diffs.append(f"{key}: {d}")
  assert not diffs, f"{len(diffs)} of {len(keys)} differ:\n" + "\n".join(diffs[:80])
