"""What jax and revax each compute on the chip where the suite's CPU oracle cannot say: the
questions the chip runs of 2026-12-06 left open, asked of both libraries on the same chip.

Run from the repository root on a machine with a TPU (after `source tests/tpu/setup_device.sh`),
one library per process (one program holds the chip), then compare:

    python tests/tpu/probe_numerics.py jax OUT_jax.json
    python tests/tpu/probe_numerics.py revax OUT_revax.json
    JAX_PLATFORMS=cpu python tests/tpu/probe_numerics.py jax OUT_cpu.json   # the CPU's answers

Each writes one JSON object {check name: result}. A result is {"ok": true, "value": nested
lists} or {"ok": false, "error": "Type: first line of the message"}.

- accuracy/OP/REQUEST: `lax.OP(x, accuracy=REQUEST)` jitted, and its gradient (XLA:TPU refused
  some requests with a compile error in revax; the question is whether jax's identical StableHLO
  is refused alike, as jax documents for requests the compiler cannot meet).
- conv_per_example/PRECISION: tests/lax/test_convolution.py's per-example conv gradients under
  jit(vmap(grad)), at the default precision and at "highest" (revax on the chip was 1% off the
  CPU at "highest").
- int16_narrowing, atan2_nonfinite, rfft_nonfinite, igammac_nonfinite, eigh_f64_cond1e10: the
  differences platform_tolerances.py inferred from failure texts, to confirm with jax's values.
"""
import json
import os
import sys
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPS = ["exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan", "sqrt",
       "rsqrt", "cbrt"]
X = np.linspace(0.1, 2.5, 9, dtype=np.float32)


def _library(name: str):
  if name == "jax":
    import jax
    return jax
  sys.path.insert(0, ROOT)
  import revax
  return revax


def _result(fun) -> dict:
  try:
    value = fun()
    return {"ok": True, "value": np.asarray(value).astype(np.float64).tolist()}
  except Exception as e:  # noqa: BLE001 (each check records its own failure)
    first = (str(e).strip().splitlines() or [""])[0][:300]
    return {"ok": False, "error": f"{type(e).__name__}: {first}"}


def _requests(lax):
  return {"HIGHEST": lax.AccuracyMode.HIGHEST, "DEFAULT": lax.AccuracyMode.DEFAULT,
          "atol1e-6": lax.Tolerance(atol=1e-6), "rtol1e-3_ulps2": lax.Tolerance(rtol=1e-3, ulps=2)}


def accuracy_checks(L) -> dict:
  out = {}
  for op in OPS:
    for label, req in _requests(L.lax).items():
      f = lambda x, op=op, req=req: getattr(L.lax, op)(x, accuracy=req)
      out[f"accuracy/{op}/{label}"] = _result(lambda f=f: L.jit(f)(X))
      out[f"accuracy_grad/{op}/{label}"] = _result(
          lambda f=f: L.jit(L.grad(lambda x: f(x).sum()))(X))
  return out


def conv_checks(L) -> dict:
  rng = np.random.default_rng(0)
  x = rng.uniform(-2, 2, (4, 2, 5, 5)).astype(np.float32)
  w = rng.uniform(-2, 2, (3, 2, 3, 3)).astype(np.float32)
  out = {}
  for precision in (None, "highest"):
    loss = lambda w_, x_, p=precision: L.numpy.sum(L.numpy.tanh(L.lax.conv(
        x_[None], w_, (2, 1), [(1, 0), (0, 1)], precision=p)))
    per_example = L.jit(L.vmap(L.grad(loss), in_axes=(None, 0)))
    out[f"conv_per_example/{precision}"] = _result(lambda: per_example(w, x))
    one = L.jit(L.grad(loss))
    out[f"conv_one_example/{precision}"] = _result(lambda: one(w, x[0]))
    fwd = L.jit(lambda w_, x_, p=precision: L.lax.conv(x_, w_, (2, 1), [(1, 0), (0, 1)],
                                                       precision=p))
    out[f"conv_forward/{precision}"] = _result(lambda: fwd(w, x))
  return out


def platform_checks(L) -> dict:
  jnp = L.numpy
  nonfinite = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], np.float32)
  a, b = np.meshgrid(nonfinite, nonfinite)
  out = {
      "int16_narrowing": _result(lambda: L.jit(lambda v: jnp.bitwise_count(v.astype(jnp.int16)))(
          np.array([2**31 - 1, -2**31, 70000, -70000], np.int32))),
      "int16_convert": _result(lambda: L.jit(lambda v: v.astype(jnp.int16))(
          np.array([2**31 - 1, -2**31, 70000, -70000], np.int32))),
      "atan2_nonfinite": _result(lambda: L.jit(jnp.arctan2)(a, b)),
      "rfft_nonfinite": _result(lambda: np.abs(np.asarray(L.jit(jnp.fft.rfft)(
          np.array([1.0, np.inf, 0.0, 2.0, np.nan, 1.0, 0.0, 3.0], np.float32))))),
      "igammac_nonfinite": _result(lambda: L.jit(L.lax.igammac)(np.abs(a) + 0.5, b)),
  }
  return out


def eigh_f64_check(L) -> dict:
  L.config.update("jax_enable_x64", True)
  q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((6, 6)))
  m = (q * np.logspace(0, 10, 6)) @ q.T
  m = (m + m.T) / 2
  return {"eigh_f64_cond1e10": _result(lambda: L.jit(L.numpy.linalg.eigh)(m)[0])}


def main():
  name, path = sys.argv[1], sys.argv[2]
  L = _library(name)
  results = {"library": name, "platform": L.devices()[0].platform}
  for checks in (accuracy_checks, conv_checks, platform_checks, eigh_f64_check):
    try:
      results.update(checks(L))
    except Exception:  # noqa: BLE001 (a whole group's failure is recorded, the rest run)
      results[checks.__name__] = {"ok": False, "error": traceback.format_exc()[-600:]}
    with open(path, "w") as f:
      json.dump(results, f, indent=1)
  print(f"{name} on {results['platform']}: {len(results) - 2} checks -> {path}")


if __name__ == "__main__":
  main()
