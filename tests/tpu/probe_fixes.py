"""What the chip does with the pieces the CPU cannot show: non-symmetric eigenproblems by
send/recv host callbacks, population counts, sub-byte transfers and 64-bit types.

Run from the repository root on a machine with a TPU (after `source tests/tpu/setup_device.sh`):

    python tests/tpu/probe_fixes.py OUT.jsonl

Each check writes one JSON line to OUT.jsonl (name, ok, and what was measured or the error).
64-bit programs are compiled in child processes, one per library, because XLA:TPU has been
seen to abort the process compiling a 64-bit decomposition: a child that dies is started again
after the check it died in, and that check is recorded as `"aborted": true`. The child
processes open the chip one after another, so the parent must not hold it: the in-process
checks run last.
"""
import json
import os
import subprocess
import sys
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# 64-bit checks: (name, source of a function of the numpy module `np` and the library `L`
# returning a value computed on the default device). Each runs with 64-bit types enabled.
X64_CHECKS = [
    ("f64_add", "lambda: L.numpy.add(L.numpy.arange(4.0), 1.5)"),
    ("f64_mul_exp", "lambda: L.numpy.exp(L.numpy.linspace(0.0, 1.0, 5) * 3.0)"),
    ("i64_add", "lambda: L.numpy.arange(5, dtype='int64') * (2**40)"),
    ("u64_shift", "lambda: L.numpy.left_shift(L.numpy.arange(3, dtype='uint64'), 40)"),
    ("f64_matmul", "lambda: L.numpy.ones((8, 8)) @ L.numpy.arange(8.0)"),
    ("f64_sum", "lambda: L.numpy.sum(L.numpy.arange(1000.0) * 0.1)"),
    ("f64_sort", "lambda: L.numpy.sort(L.numpy.array([3.0, 1.0, 2.0]))"),
    ("f64_cholesky", "lambda: L.numpy.linalg.cholesky(L.numpy.eye(4) * 4.0 + 1.0)"),
    ("f64_qr", "lambda: L.numpy.linalg.qr(L.numpy.eye(4) + 0.5)[1]"),
    ("f64_eigh", "lambda: L.numpy.linalg.eigh(L.numpy.eye(4) * 2.0 + 1.0)[0]"),
    ("f64_svd", "lambda: L.numpy.linalg.svd(L.numpy.eye(4) + 0.25, compute_uv=False)"),
    ("f64_lu_solve", "lambda: L.numpy.linalg.solve(L.numpy.eye(4) * 3.0 + 1.0, L.numpy.ones(4))"),
    ("f64_triangular", "lambda: L.scipy.linalg.solve_triangular("
                       "L.numpy.tril(L.numpy.ones((4, 4))) + L.numpy.eye(4), L.numpy.ones(4),"
                       " lower=True)"),
    ("c128_mul", "lambda: (L.numpy.arange(3.0) + 1j) * (2.0 - 1j)"),
    ("c128_fft", "lambda: L.numpy.fft.fft(L.numpy.arange(8.0))"),
]


def _child(lib: str, skip: int) -> None:
  """Runs X64_CHECKS[skip:] with `lib`, printing one JSON line after each check."""
  import numpy as np
  if lib == "jax":
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.linalg  # noqa: F401
    L = jax
  else:
    sys.path.insert(0, ROOT)
    import revax
    revax.config.update("jax_enable_x64", True)
    import revax.scipy.linalg  # noqa: F401
    L = revax
  platform = L.devices()[0].platform
  for index, (name, source) in enumerate(X64_CHECKS[skip:], start=skip):
    print(json.dumps({"started": index}), flush=True)
    row = {"name": f"x64/{lib}/{name}", "lib": lib, "platform": platform}
    try:
      value = L.jit(eval(source, {"L": L, "np": np}))()
      host = np.asarray(value)
      row.update(ok=True, dtype=str(host.dtype), value=np.ravel(host)[:6].tolist()
                 if host.dtype.kind != "c" else [str(v) for v in np.ravel(host)[:6]])
    except Exception as e:  # noqa: BLE001 -- the probe records every failure
      row.update(ok=False, error=f"{type(e).__name__}: {str(e)[:600]}")
    print(json.dumps(row), flush=True)


def _x64_rows(lib: str) -> list[dict]:
  """Runs the 64-bit checks of `lib` in children, restarting after a check that aborts one."""
  rows, skip = [], 0
  env = dict(os.environ)
  if lib == "jax":
    env.pop("JAX_PLATFORMS", None)  # jax on the chip: the comparison is jax's own TPU answer
  while skip < len(X64_CHECKS):
    done = subprocess.run([sys.executable, __file__, "--child", lib, str(skip)], env=env,
                          capture_output=True, text=True, timeout=400)
    started = skip
    for line in done.stdout.splitlines():
      if line.startswith("{"):
        record = json.loads(line)
        if "started" in record:
          started = record["started"]
        else:
          rows.append(record)
          started += 1
    if done.returncode == 0:
      break
    name = X64_CHECKS[started][0] if started < len(X64_CHECKS) else "?"
    rows.append({"name": f"x64/{lib}/{name}", "lib": lib, "ok": False, "aborted": True,
                 "returncode": done.returncode, "stderr_tail": done.stderr[-1500:]})
    skip = started + 1
  return rows


def _in_process_rows() -> list[dict]:
  """eig/schur by send/recv, bitwise_count, sub-byte transfers: on the chip, in this process."""
  import ml_dtypes
  import numpy as np
  sys.path.insert(0, ROOT)
  import revax
  import revax.numpy as jnp
  import revax.scipy.linalg
  from revax._src.runtime import host_transfer

  rows = []

  def check(name, fn):
    row = {"name": name}
    try:
      row.update(fn())
    except Exception as e:  # noqa: BLE001
      row.update(ok=False, error=f"{type(e).__name__}: {str(e)[:800]}",
                 trace=traceback.format_exc()[-1500:])
    rows.append(row)
    print(json.dumps(row), flush=True)

  rng = np.random.default_rng(0)
  a = rng.standard_normal((5, 5)).astype(np.float32)
  tpu = revax.devices()[0]
  cpu = revax.devices("cpu")[0]

  def eigvals():
    got = np.sort_complex(np.asarray(revax.jit(jnp.linalg.eigvals)(a)))
    want = np.sort_complex(np.linalg.eigvals(a.astype(np.float64)))
    return {"ok": bool(np.allclose(got, want, rtol=1e-3, atol=1e-3)),
            "platform": tpu.platform, "mechanism": host_transfer.callback_mechanism(tpu.platform),
            "max_abs_diff": float(np.max(np.abs(got - want)))}

  def eig_vectors():
    w, v = revax.jit(jnp.linalg.eig)(a)
    w, v = np.asarray(w), np.asarray(v)
    residual = np.max(np.abs(a.astype(np.complex128) @ v - v * w))
    return {"ok": bool(residual < 1e-3), "residual": float(residual)}

  def schur():
    t, z = revax.jit(revax.scipy.linalg.schur)(a)
    t, z = np.asarray(t), np.asarray(z)
    back = np.max(np.abs(z @ t @ z.T - a))
    return {"ok": bool(back < 1e-3 and np.allclose(np.tril(t, -2), 0)), "reconstruction": float(back)}

  def bitwise_count():
    cases = {}
    for dtype in ("uint8", "int8", "uint16", "int16", "uint32", "int32"):
      x = np.array([0, 1, 3, 127, 128, 255, -1, -128], np.int64).astype(dtype)
      got = np.asarray(revax.jit(jnp.bitwise_count)(x))
      want = np.bitwise_count(x) if hasattr(np, "bitwise_count") else np.array(
          [bin(int(v) & ((1 << (8 * x.itemsize)) - 1) if int(v) >= 0 else abs(int(v))).count("1")
           for v in x])
      cases[dtype] = {"got": got.tolist(), "want": np.asarray(want).tolist(),
                      "ok": bool(np.array_equal(got, want))}
    return {"ok": all(c["ok"] for c in cases.values()), "cases": cases}

  def subbyte():
    cases = {}
    for dtype in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2,
                  ml_dtypes.float4_e2m1fn):
      name = np.dtype(dtype).name
      x = np.arange(-3, 13).astype(dtype)[:13]
      try:
        on_chip = revax.device_put(x, tpu)
        back = np.asarray(on_chip)
        plus = np.asarray(revax.jit(lambda y: y + y)(on_chip))
        plus_cpu = np.asarray(revax.jit(lambda y: y + y)(revax.device_put(x, cpu)))
        cases[name] = {"round_trip": bool(np.array_equal(back.view(np.uint8),
                                                         x.view(np.uint8))),
                       "jit_same_as_cpu": bool(np.array_equal(plus.view(np.uint8),
                                                              plus_cpu.view(np.uint8))),
                       "back": back.astype(np.float32).tolist()}
      except Exception as e:  # noqa: BLE001
        cases[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    ok = all(c.get("round_trip") and c.get("jit_same_as_cpu") for c in cases.values())
    return {"ok": ok, "cases": cases}

  check("eigvals_sendrecv", eigvals)
  check("eig_vectors_sendrecv", eig_vectors)
  check("schur_sendrecv", schur)
  check("bitwise_count", bitwise_count)
  check("subbyte_transfers", subbyte)
  return rows


def main():
  if sys.argv[1] == "--child":
    _child(sys.argv[2], int(sys.argv[3]))
    return
  out = sys.argv[1]
  rows = _x64_rows("revax") + _x64_rows("jax")
  with open(out, "w") as f:
    for row in rows:
      f.write(json.dumps(row) + "\n")
  for row in _in_process_rows():
    with open(out, "a") as f:
      f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
  main()
