"""Programs a platform's compiler is known to abort the process on, refused before compiling.

XLA reports most programs it cannot compile as an error (revax raises it as `CompileError`),
but some it meets with a CHECK failure that ends the process, taking every array and the
user's session with it. Those found on a chip are listed here, each with what was measured;
`check_program` refuses them with a clear Python exception instead. JAX compiles them and the
process aborts, so the refusal is revax's own behaviour (a better one than a crash).

Measured on a TPU v5e, libtpu 0.0.42.1 (tests/tpu/probe_fixes.py, tests/tpu/RESULTS.md):

- complex128: a program holding complex128 values aborts XLA:TPU (`(x + 1j) * (2 - 1j)` with
  64-bit types on, jax's and revax's alike; complex weights of `nn.initializers` in complex128).
  float64 and int64 programs compile and run (emulated); complex128 FFTs are a clean error.

Seen once and not yet diagnosed, so not refused here (a guess would refuse programs that run):
`vmap` of `lax.rng_uniform` (batched as a scan over the examples) aborted XLA:TPU in
tests/runtime/test_robustness.py, while `rng_uniform` itself, eager and jitted, runs there.
"""
__all__ = ["check_program"]

_COMPLEX128 = b"complex<f64>"


def check_program(platform: str, code: bytes) -> None:
  """Raise where `platform`'s compiler is known to abort on the StableHLO program `code`.

  Args:
    platform: the backend's platform name ("tpu", "cpu", ...).
    code: the program's MLIR text, as bytes.

  Raises:
    TypeError: a complex128 program for a TPU (use complex64 there, or the CPU device).

  Example:
    >>> from revax._src.runtime.platform_limits import check_program
    >>> check_program("cpu", b"tensor<2xcomplex<f64>>")  # the CPU compiles complex128
  """
  if platform != "tpu":
    return
  if _COMPLEX128 in code:
    raise TypeError(
        "XLA:TPU cannot compile complex128 values (it aborts the process on them): compute in "
        "complex64 on the TPU, or put the complex128 arrays on the CPU device "
        "(revax.device_put(x, revax.devices('cpu')[0])) and compute there")
