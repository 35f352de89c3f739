"""What the suite expects differently on a TPU, declared in one place, each with its reason.

The suite compares revax with NumPy and with jax 0.10.2 on the CPU (the oracle stays on the CPU
on a TPU machine: tests/tpu/run_suite.py). Where revax runs on a TPU (tests/tpu/RESULTS.md), a
few differences are the platform's, not revax's, and jax on the same chip shows them too:

- TRANSCENDENTAL: XLA:TPU evaluates log, log1p, tanh, the inverse hyperbolic functions, lgamma,
  digamma, igamma(c), the Bessel functions and the samplers built on them (normal's erf_inv,
  exponential's and gumbel's log, gamma's loop) with its own float32 approximations. Measured
  on a v5e against NumPy / XLA:CPU (max over the op database and the samplers): relative 1.4e-3
  (lgamma near its zeros), absolute 5.3e-4 (polygamma) - a few float32 ulps of each function's
  own scale, far above the CPU's 1e-5 tolerances and far below any real error.
- RNG_BIT_GENERATOR: `rng_bit_generator`'s default algorithm is the platform's, so 'rbg' and
  'unsafe_rbg' keys draw other bits on a TPU than on the CPU (jax's too).
- REDUCE_WINDOW_INIT: XLA leaves how often a reduce_window's non-identity initial value is
  folded in to the platform.
- Tests that only the CPU can run: programs calling `revax.ffi` targets or the CPU's LAPACK
  handlers (libtpu has no FFI extension; eig and schur reach the host through send/recv there
  instead, as every host callback on a TPU) run on the CPU device beside the chip
  (`on_the_cpu_device`), and tests' child processes use the CPU (tests/child_env.py), as the
  test process holds the chip.
- The chip's own arithmetic and scheduling (jax's on the chip alike, as XLA:TPU decides them):
  an unstable sort's order of ties (UNSTABLE_SORT_TIES), the order of unordered debug.print
  calls (PRINT_ORDER), float64 emulated with float32 pairs (FLOAT64_EMULATION), float8/float4
  functions (NARROW_FLOATS), matrix decompositions (XLA_LINALG), convolution padding times
  NaN/inf (CONV_PADDING), zero signs of complex products (COMPLEX_SIGNED_ZEROS), DEFAULT matmul
  precision in hand-written programs (DEFAULT_MATMUL_PRECISION), no temp bytes in memory
  analyses (NO_TEMP_BYTES), libtpu's own queue (LIBTPU_QUEUE), and the C call path serving one
  backend only (ONE_BACKEND_FAST_PATH); subnormals flushed in data movement too
  (TPU_FLUSHES_SUBNORMALS), remainders of large quotients (REM_LARGE_QUOTIENT), NaN/inf
  through atan2 and the FFT (NONFINITE_EXPANSIONS), integer narrowing (INT_NARROWING), dot
  algorithms (DOT_ALGORITHMS), non-monoid reduce_window
  computations (REDUCE_WINDOW_COMPUTATION), one program at a time (NESTED_PROGRAMS), device
  addresses (DEVICE_POINTERS); eager host NumPy against jit on the chip (HOST_EAGER).
- Confirmed by jax itself on the chip (tests/tpu/probe_numerics.py; tests compare with jax's
  recorded values there, `jax_on_the_chip`): refused accuracy requests (ACCURACY_REFUSED) and
  convolution gradients (CONV_GRADIENTS); INT_NARROWING, NONFINITE_EXPANSIONS and igammac's
  NaN/inf pairs gave jax's values exactly; a float16/bfloat16 -NaN read as +NaN
  (NARROW_NAN_SIGN: tests/tpu/probe_total_order.py, jax's total-order comparisons alike).
- Not the platform's but revax's, open: XLA_TPU_LINALG (jax's TPU eigh/svd/lu lowerings).

Nothing here changes a tolerance or a skip on the CPU: `ON_TPU` is false there.
"""
import contextlib
import pathlib
import re

import numpy as np
import pytest

from revax._src.runtime import backends

ON_TPU = backends.platform_order()[0] == "tpu"

TRANSCENDENTAL = ("XLA:TPU's own float32 approximations of transcendental functions (log, tanh, "
                  "lgamma, erf_inv, ...) differ from NumPy's and XLA:CPU's by a few ulps "
                  "(tests/platform_tolerances.py)")
RNG_BIT_GENERATOR = ("rng_bit_generator's default algorithm is the platform's: 'rbg' and "
                     "'unsafe_rbg' keys draw other bits on a TPU than jax on the CPU")
REM_AT_INFINITY = ("XLA:TPU's remainder of a finite value by an infinite divisor is NaN where "
                   "C's fmod (NumPy, XLA:CPU) returns the dividend")
REM_LARGE_QUOTIENT = ("XLA:TPU's float32 remainder is exact only while the quotient x / y fits "
                      "float32's 24-bit significand: rem(1.0, 1e-30) gave 5.96e-08 on the chip "
                      "where C's fmod (NumPy, XLA:CPU) gives 7.27e-31")
ACCURACY_REFUSED = ("XLA:TPU refuses some `accuracy=` requests with a compile error (a Tolerance "
                    "of atol 1e-6 for exp/log/sqrt/tan..., any request for cbrt: 'No "
                    "implementation found for requested accuracy'), jax's identical StableHLO "
                    "alike (tests/tpu/results/numerics_jax_tpu_2026-12-06.json), as jax documents "
                    "for requests the compiler cannot meet")
CONV_GRADIENTS = ("XLA:TPU's gradients of convolutions differ from the CPU's beyond float32 "
                  "rounding even at HIGHEST precision (6.9e-2 relative on small elements of "
                  "tests/lax/test_convolution.py's per-example gradients), jax's on the chip "
                  "alike: revax's agree with jax's on the chip to 4.8e-5")
REDUCE_WINDOW_INIT = ("XLA leaves how often a non-identity reduce_window init value is applied to "
                      "the platform (XLA:TPU and XLA:CPU differ)")
NO_FFI = ("libtpu has no FFI extension: revax.ffi targets and the CPU's LAPACK handlers run on "
          "the CPU only")
NO_COMPLEX128 = ("XLA:TPU aborts the process on complex128 programs: revax refuses them there with "
                 "a TypeError (revax/_src/runtime/platform_limits.py)")
RNG_UNIFORM_BATCHED = ("vmap of lax.rng_uniform (a scan over the examples) aborted XLA:TPU on "
                       "2026-12-06, not yet diagnosed (platform_limits.py)")
HOLDS_THE_CHIP = ("a child process would open the TPU that this test process holds (one program "
                  "per chip)")
UNSTABLE_SORT_TIES = ("an unstable sort leaves the order of equal keys (0.0 and -0.0 too) to the "
                      "platform: XLA:TPU's differs from XLA:CPU's (jax's on the chip too)")
COMPLEX_SIGNED_ZEROS = ("XLA:TPU's complex products give some zero parts the other sign than "
                        "XLA:CPU's (1j * x at x = -0.0, 1.0: measured on the chip 2026-12-06)")
CONV_PADDING = ("XLA:TPU's convolutions multiply the zero padding with the operand's elements, so "
                "a NaN or infinity reaches outputs whose windows hold it only against padding "
                "(0 * inf is NaN; XLA:CPU skips the padding): jnp.poly of NaN/inf roots")
PRINT_ORDER = ("debug.print without ordered=True prints in XLA's schedule: XLA:TPU's order of the "
               "prints differs from XLA:CPU's (jax's on the chip too); compared as sorted lines")
FLOAT64_EMULATION = ("XLA:TPU emulates float64 (a pair of float32 values: about 48 significant "
                     "bits, float32's exponent range): float64 data and programs are not bit for "
                     "bit the CPU's")
NARROW_FLOATS = ("XLA:TPU computes float8/float4 functions through its own intermediate type and "
                 "converts values such a type cannot hold (NaN in float4_e2m1fn, zero in "
                 "float8_e8m0fnu) its own way: results differ from XLA:CPU's by a step of the "
                 "narrow type, or where XLA:CPU gives 0 or NaN")
NARROW_NAN_SIGN = ("XLA:TPU reads a float16/bfloat16 -NaN as +NaN (a bitcast to integers "
                   "included: tests/tpu/probe_total_order.py), so total-order comparisons see "
                   "-NaN as +NaN there; jax's on the chip alike (same lowering, same answers)")
NO_TEMP_BYTES = ("XLA:TPU's memory analysis reports 0 temp bytes (jax's compiled programs on the "
                 "chip too): temporaries are not measured there")
DEFAULT_MATMUL_PRECISION = ("a hand-written StableHLO dot at DEFAULT precision rounds float32 "
                            "operands to bfloat16 on a TPU (JAX's documented default there)")
XLA_LINALG = ("XLA:TPU decomposes matrices (QR, Cholesky, eigh, triangular solves) with XLA's own "
              "algorithms, not LAPACK's: float32 results differ by roundoff, amplified by the "
              "matrix's conditioning")
ONE_BACKEND_FAST_PATH = ("the C call path serves a plan only while one backend is open "
                         "(call_plans.CallPlan.one_device): on a TPU the CPU backend is open "
                         "beside the chip")
LIBTPU_QUEUE = ("libtpu bounds its own queue of launches and revax asks it for no completion "
                "events (tests/runtime/test_async_dispatch.py: untracked windows), so revax's "
                "in-flight count and effects_barrier's wait for programs without effects are "
                "XLA:CPU's only (jax's effects_barrier on libtpu alike)")

STEP_CONTROL = ("an adaptive ODE solver stopped by mxstep extrapolates from wherever its step "
                "control stopped: the chip's float32 rounding (its own summation order and fused "
                "multiply-adds) accepts or rejects other steps near the error bound, so the "
                "truncated answers differ by percents (the rows before the truncation agree)")
HOST_EAGER = ("eager operations on host values run their NumPy implementations on the host (the "
              "CPU's semantics, revax's design: DESIGN.md 'Eager'), jit runs on the chip: where "
              "a test compares the two, it compares NumPy with XLA:TPU")
TPU_FLUSHES_SUBNORMALS = ("XLA:TPU flushes float32 subnormals to +0 everywhere, data movement "
                          "included (concatenate, reduce_precision, min/max windows), and loses "
                          "the sign of a flushed negative one: XLA:CPU and the host's NumPy "
                          "(FTZ/DAZ) keep them through data movement and keep -0")
NONFINITE_EXPANSIONS = ("XLA:TPU's expansions of atan2 and the FFT spread NaN and infinities "
                        "into other outputs than XLA:CPU's and NumPy's (atan2 of a NaN gave -0; "
                        "rfft's NaN/inf placement): measured 2026-12-06, jax's on the chip alike "
                        "(the same StableHLO ops)")
INT_NARROWING = ("XLA:TPU converts int32 to int16 without re-wrapping the value in its 32-bit "
                 "lanes: abs of int16(2**31 - 1) (-1 on XLA:CPU) stayed -1, so its population "
                 "count was 16 where XLA:CPU's is 1 (StableHLO leaves out-of-range integer "
                 "conversions implementation-defined; jax emits the same convert)")
DOT_ALGORITHMS = ("XLA:CPU ignores a dot algorithm's operand types (jax's CPU lowering refuses "
                  "every preset but seven), XLA:TPU implements them: BF16_BF16_F32 and the "
                  "DEFAULT preset round float32 operands to bfloat16 there, and it refuses "
                  "F16_F16_F16, F32_F32_F32, F64_F64_F64 and the TF32 presets with its own compile "
                  "error (jax's TPU lowering passes them through alike)")
REDUCE_WINDOW_COMPUTATION = ("XLA assumes a reduce_window's computation is a monoid with its "
                             "init value as identity and may apply it in any order and any "
                             "number of times: XLA:TPU's tree differs from XLA:CPU's, so "
                             "non-monoid computations (a + 2 b + c, a non-identity init) give "
                             "other values (jax's on the chip alike)")
NESTED_PROGRAMS = ("the chip runs one program at a time: a compiled program launched from the "
                   "host callback of a running program would wait behind it forever, so revax "
                   "raises there (on the CPU XLA runs such callbacks inline)")
DEVICE_POINTERS = ("unsafe_buffer_pointer() of an array on the chip is an address in the chip's "
                   "memory, which the host cannot read")
XLA_TPU_LINALG = ("jax lowers eigh and svd on a TPU by QDWH (jax/_src/tpu/linalg) and lu by a TPU "
                  "custom call; revax lowers its own Jacobi eigh/SVD and blocked LU on every "
                  "platform: on emulated float64 these lose digits (NaN eigenvalues at "
                  "condition 1e10): a revax gap on the chip, open (tests/tpu/RESULTS.md)")

# float32 tolerances on a TPU where a transcendental function is in the computation (measured
# maxima above, with a factor of about 2)
TPU_RTOL, TPU_ATOL = 3e-3, 1e-3

# op-database records (tests/lax/op_db.py) that the TPU computes differently, by reason
RECORD_DIFFERENCES = {
    **dict.fromkeys([
        "acosh_c64", "acosh_f32", "acosh_f32_0d", "asin_c64", "asinh_c64", "asinh_f32",
        "atanh_f32", "atanh_f32_0d", "bessel_i0e_f32", "cumlogsumexp_f32",
        "cumlogsumexp_f32_neg_inf", "digamma_f32", "igammac_f32",
        "igammac_f32_edges", "lgamma_f32", "lgamma_f32_0d", "log1p_f32", "log_c64", "log_f32",
        "log_f32_0d", "polygamma_f32", "pow_f32_0d", "random_gamma_batched_keys_log_space",
        "random_gamma_grad_f32", "scan_tanh_rnn", "scan_tanh_rnn_reverse", "tanh_f32"],
        TRANSCENDENTAL),
    **dict.fromkeys(["reduce_window_generic_add_non_identity_init",
                     "reduce_window_generic_mul_non_identity_init",
                     "reduce_window_generic_sub_lambda"], REDUCE_WINDOW_INIT),
    "rng_bit_generator_rng_default_uint32": RNG_BIT_GENERATOR,
    **dict.fromkeys([f"{op}_{t}_special_pairs" for op in ("eq_to", "le_to", "lt_to")
                     for t in ("bf16", "f16")], NARROW_NAN_SIGN),
    **dict.fromkeys(["rem_f32_signs", "rem_f32_special"], REM_AT_INFINITY),
    "ffi_call_python_target": NO_FFI,
}
# op-database records whose batched/differentiated forms (tests/runtime/test_robustness.py) the
# TPU cannot run, by reason
BATCHED_RECORD_DIFFERENCES = {"rng_uniform_bucket": RNG_UNIFORM_BATCHED}
_SKIPPED_REASONS = (REDUCE_WINDOW_INIT, RNG_BIT_GENERATOR, NO_FFI, REM_AT_INFINITY,
                    NARROW_NAN_SIGN)


def tolerance(rtol, atol):
  """(rtol, atol) for a comparison that involves transcendental functions: as given on the CPU
  (None: the comparison's default), at least TPU_RTOL / TPU_ATOL on a TPU (TRANSCENDENTAL)."""
  if not ON_TPU:
    return rtol, atol
  return max(rtol or 0.0, TPU_RTOL), max(atol or 0.0, TPU_ATOL)


def allclose_tol(rtol: float = 1e-7, atol: float = 0.0) -> dict:
  """`rtol=, atol=` for np.testing.assert_allclose (its defaults as given) in a comparison that
  runs transcendental functions on the device: on a TPU at least TPU_RTOL / TPU_ATOL."""
  rtol, atol = tolerance(rtol, atol)
  return {"rtol": rtol, "atol": atol}


def linalg_tol(rtol: float = 1e-7, atol: float = 0.0) -> dict:
  """`rtol=, atol=` for np.testing.assert_allclose of a result computed through a matrix
  decomposition on the device: as given on the CPU, at least TPU_RTOL / TPU_ATOL on a TPU
  (XLA_LINALG; the measured differences are a few float32 ulps of the matrix's scale)."""
  rtol, atol = tolerance(rtol, atol)
  return {"rtol": rtol, "atol": atol}


def scaled_tol(expected, rtol: float = 1e-7, atol: float = 0.0) -> dict:
  """`allclose_tol`, with atol on a TPU at least TPU_RTOL times the largest magnitude of
  `expected`: for sums of transcendental terms that cancel (a gradient element far smaller than
  its array's other elements), whose error is of the scale of the terms, not of the sum."""
  tol = allclose_tol(rtol, atol)
  if ON_TPU:
    tol["atol"] = max(tol["atol"], TPU_RTOL * float(np.max(np.abs(expected), initial=0.0)))
  return tol


def record_tolerance(record) -> tuple[float, float]:
  """An op-database record's (rtol, atol) on this platform."""
  if ON_TPU and RECORD_DIFFERENCES.get(record.name) == TRANSCENDENTAL:
    return tolerance(record.rtol, record.atol)
  return record.rtol, record.atol


def record_marks(record) -> list:
  """The skip marks of an op-database record on this platform."""
  why = RECORD_DIFFERENCES.get(record.name) if ON_TPU else None
  return [pytest.mark.skip(reason=f"TPU: {why}")] if why in _SKIPPED_REASONS else []


JAX_ON_THE_CHIP = (pathlib.Path(__file__).parent / "tpu" / "results"
                   / "numerics_jax_tpu_2026-12-06.json")


def jax_on_the_chip(check: str) -> dict:
  """What jax 0.10.2 itself computed on a TPU v5e (libtpu 0.0.42.1) for one check of
  tests/tpu/probe_numerics.py: {"ok": True, "value": ...} or {"ok": False, "error": ...}. Where
  the chip's answer is the platform's (accuracy requests XLA:TPU refuses, its convolution
  gradients), a test on a TPU compares revax with jax on the same chip, not with the CPU
  oracle."""
  import json
  return json.loads(JAX_ON_THE_CHIP.read_text())[check]


def on_the_cpu_device():
  """A context where work without committed inputs runs on the CPU device when the default is a
  TPU (what only the CPU plugin can run: NO_FFI); nothing on the CPU."""
  if not ON_TPU:
    return contextlib.nullcontext()
  import revax
  return revax.default_device(revax.devices("cpu")[0])


def printed_lines(text: str) -> str:
  """Printed output as compared across platforms: as printed on the CPU, its lines sorted on a
  TPU (PRINT_ORDER)."""
  return "".join(sorted(text.splitlines(keepends=True))) if ON_TPU else text


def skip_on_tpu(reason: str):
  """A skipif mark for what the TPU cannot or need not run, with the reason."""
  return pytest.mark.skipif(ON_TPU, reason=f"TPU: {reason}")


def as_the_oracles_device(text: str) -> str:
  """A repr naming revax's devices, with the TPU's device names as the CPU's: the jax oracle runs
  on the CPU, so a repr compared with jax's names a TpuDevice where jax's names a CpuDevice."""
  return text.replace("TpuDevice(", "CpuDevice(") if ON_TPU else text


def as_the_oracles_platforms(text: str) -> str:
  """An error message listing revax's platforms, as the jax oracle (on the CPU only) lists
  them: on a TPU, revax's "tpu,cpu" / ['tpu', 'cpu'] are the oracle's "cpu" / ['cpu']."""
  if not ON_TPU:
    return text
  return text.replace("tpu,cpu", "cpu").replace("['tpu', 'cpu']", "['cpu']")


def as_the_oracles_output(text: str) -> str:
  """A program's printed output as the jax oracle (on the CPU) prints it: on a TPU, revax's
  device reprs and the platform's name (the word "tpu") are the CPU's."""
  return re.sub(r"\btpu\b", "cpu", as_the_oracles_device(text)) if ON_TPU else text


def assert_same_values(actual, expected) -> None:
  """Equal arrays; on a TPU, floating arrays equal to TRANSCENDENTAL's tolerance (samplers turn
  the same random bits into floats through the chip's log/erf_inv)."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  if ON_TPU and np.issubdtype(actual.dtype, np.inexact):
    np.testing.assert_allclose(actual, expected, rtol=TPU_RTOL, atol=TPU_ATOL)
  else:
    np.testing.assert_array_equal(actual, expected)
