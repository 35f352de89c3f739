"""The TPU issue's acceptance checks, run on a TPU machine in one process (argv[1]: a JSON file
for the findings). Each check compares the chip's result with the CPU backend's in the same
process (arrays moved with device_put), so no second program needs the chip, except the last
check, which starts one on purpose to see the error a held chip gives."""
import json
import subprocess
import sys
import time
import traceback

import numpy as np

import revax
import revax.numpy as jnp
from revax import lax

found = {}


def check(name):
  def wrap(fn):
    start = time.perf_counter()
    try:
      found[name] = fn()
    except Exception as e:  # noqa: BLE001 -- record and go on
      found[name] = "ERROR " + "".join(traceback.format_exception_only(e)).strip()[:1500]
    print(f"{name}: {str(found[name])[:300]} ({time.perf_counter() - start:.1f} s)", flush=True)
    return fn
  return wrap


tpu, cpu = revax.devices()[0], revax.devices("cpu")[0]
found["devices"] = [repr(tpu), repr(cpu), revax.default_backend()]
rng = np.random.RandomState(0)


def on(device, fn, *args):
  return np.asarray(revax.jit(fn)(*[revax.device_put(a, device) for a in args]))


CASES = {
    "transpose": (lambda x: x.transpose(0, 2, 1), (rng.randn(2, 3, 4),)),
    "dot_batch_middle": (lambda x: lax.dot_general(x, x, (((2,), (2,)), ((1,), (1,))),
                                                   precision="highest"), (rng.randn(3, 4, 5),)),
    "conv_nhwc_hwio": (lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), precision="highest"),
        (rng.randn(2, 6, 6, 3), rng.randn(3, 3, 3, 4))),
    "conv_odd_dnums": (lambda x, w: lax.conv_general_dilated(
        x, w, (2, 1), ((1, 0), (0, 2)), dimension_numbers=("HNCW", "OHWI", "CWNH"),
        precision="highest"), (rng.randn(7, 2, 3, 5), rng.randn(4, 3, 2, 3))),
    "sort_axis0": (lambda x: jnp.sort(x, axis=0), (rng.randn(5, 7),)),
    "shift_broadcast": (lambda x, s: lax.shift_left(x, s), (
        rng.randint(0, 100, (4, 5)).astype(np.int32), np.arange(5, dtype=np.int32))),
    "scatter": (lambda x, i, u: x.at[i].add(u), (
        rng.randn(6, 3), np.array([0, 2, 2, 5]), rng.randn(4, 3))),
    "strided_slice": (lambda x: x[::2, 1::3, ::-1], (rng.randn(6, 7, 3),)),
}
for name, (fn, args) in CASES.items():
  args = tuple(a.astype(np.float32) if a.dtype == np.float64 else a for a in args)

  @check(name)
  def _(fn=fn, args=args):
    got, want = on(tpu, fn, *args), on(cpu, fn, *args)
    return {"equal": bool(np.allclose(got, want, rtol=1e-4, atol=1e-4)),
            "max_abs_diff": float(np.max(np.abs(got.astype(np.float64) - want)))}


def cnn_loss(params, images, labels):
  w1, w2 = params
  h = lax.conv_general_dilated(images, w1, (1, 1), "SAME",
                               dimension_numbers=("NHWC", "HWIO", "NHWC"))
  h = jnp.maximum(h, 0)
  h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
  h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
  logits = h.reshape(h.shape[0], -1) @ w2
  return -jnp.mean(jnp.sum(revax.nn.log_softmax(logits) * labels, axis=-1))


@check("maxpool_cnn_training")
def _():
  params = (rng.randn(3, 3, 1, 8).astype(np.float32) * 0.3,
            rng.randn(4 * 2 * 4, 10).astype(np.float32) * 0.1)
  images = rng.randn(16, 8, 8, 1).astype(np.float32)
  labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 16)]
  step = revax.jit(lambda p, x, y: (cnn_loss(p, x, y), revax.grad(cnn_loss)(p, x, y)))
  results = {}
  with revax.default_matmul_precision("highest"):
    for where in (tpu, cpu):
      p = revax.device_put(params, where)
      x, y = revax.device_put(images, where), revax.device_put(labels, where)
      losses, first_grads = [], None
      for _ in range(20):
        loss, grads = step(p, x, y)
        first_grads = first_grads or [np.asarray(g) for g in grads]
        p = revax.tree.map(lambda a, g: a - 0.1 * g, p, grads)
        losses.append(float(loss))
      results[where.platform] = (losses, first_grads)
  (lt, gt), (lc, gc) = results["tpu"], results["cpu"]
  return {"losses_tpu": lt[::5], "losses_cpu": lc[::5],
          "losses_close": bool(np.allclose(lt, lc, rtol=2e-3, atol=2e-3)),
          "grads_close": all(bool(np.allclose(a, b, rtol=2e-3, atol=2e-4))
                             for a, b in zip(gt, gc))}


@check("maxpool2d_grad")
def _():
  plane = rng.randn(8, 8).astype(np.float32)
  g = lambda p: revax.grad(lambda q: lax.reduce_window(  # noqa: E731
      q, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID").sum())(p)
  return bool(np.array_equal(on(tpu, g, plane), on(cpu, g, plane)))


@check("memory_stats")
def _():
  before = tpu.memory_stats()
  big = revax.device_put(np.ones((1024, 1024), np.float32), tpu)
  after = tpu.memory_stats()
  compiled = revax.jit(lambda a: jnp.tanh(a @ a) @ a).lower(big).compile()
  return {"in_use_grew_by": after["bytes_in_use"] - before["bytes_in_use"],
          "limit": after.get("bytes_limit"), "peak": after.get("peak_bytes_in_use"),
          "memory_analysis": str(compiled.memory_analysis())}


@check("debug_print_jit_vmap")
def _():
  f = revax.jit(revax.vmap(lambda x: (revax.debug.print("x = {}", x), x * 2)[1]))
  return np.asarray(f(jnp.arange(3.0))).tolist()


@check("held_chip_error")
def _():
  code = "import revax; revax.devices()"
  done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=120, env=dict(__import__("os").environ, REVAX_PLATFORMS="tpu"))
  return (done.returncode, done.stderr.strip().splitlines()[-1][:600] if done.stderr else "")


json.dump(found, open(sys.argv[1], "w"), indent=1, default=str)
